/* The system-wide sampler: samples every CPU at -f Hz (CPU-clock perf events) and yields, per
 * pid, symbolized native stacks (kernel frames suffixed _[k]). Two backends: eBPF (in-kernel
 * aggregation, the default) and perf_event mmap ring buffers (user-space aggregation). */
#ifndef PP_SAMPLER_H
#define PP_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge/profile.h"
#include "runtimes/symbols/symbolizer.h"

typedef enum { PP_SAMPLER_AUTO = 0, PP_SAMPLER_BPF, PP_SAMPLER_PERF_EVENT } pp_sampler_kind;

typedef struct pp_sampler_opts {
    pp_sampler_kind kind; /* AUTO: BPF, falling back to perf-event with a log line */
    int frequency;        /* Hz */
    const int *pids;      /* restrict to these tgids (NULL = whole host) */
    size_t npids;
    size_t stack_cache; /* BPF: stack traces kept before the cache rotates; 0 = the default
                           (tests set it low to exercise rotation) */
} pp_sampler_opts;

/* Cumulative counters since start. */
typedef struct pp_sampler_stats {
    uint64_t samples;       /* samples taken */
    uint64_t map_full;      /* dropped: aggregation map full */
    uint64_t ustacks_lost;  /* user stack trace lost (its ring buffer was full) */
    uint64_t kstacks_lost;  /* kernel stack trace lost */
    uint64_t ustack_errors; /* user stack unavailable (e.g. no frame pointers at all) */
    uint64_t lost;          /* perf-event mode: samples lost by the ring buffer */
    uint64_t filtered;      /* samples of pids outside --pids */
    uint64_t news;          /* processes announced when first sampled */
    uint64_t news_lost;     /* announcements lost (full ring buffer or queue) */
    uint64_t drains;        /* drain passes */
} pp_sampler_stats;

typedef struct pp_sampler pp_sampler;

/* Starts sampling now. On failure returns NULL with a message in err. */
pp_sampler *pp_sampler_start(const pp_sampler_opts *opts, pp_symbolizer *sym, char *err,
                             size_t errlen);
/* "bpf" or "perf-event". */
const char *pp_sampler_kind_name(const pp_sampler *s);
/* Moves everything sampled since the last drain into out (symbolized, summed per stack). Safe
 * to call often; sampling goes on during and after the call. Returns 0 or -1. */
int pp_sampler_drain(pp_sampler *s, pp_profile *out);
/* A descriptor that becomes readable when processes were sampled for the first time (or after
 * an exec); -1 when the backend has none. pp_sampler_take_news() then reads their mappings
 * (pp_symbolizer_note_pid), so that a process that exits before the next drain keeps named
 * frames. Call both from the thread that drains. */
int pp_sampler_news_fd(pp_sampler *s);
void pp_sampler_take_news(pp_sampler *s);
void pp_sampler_get_stats(pp_sampler *s, pp_sampler_stats *st);
void pp_sampler_stop(pp_sampler *s);

#endif
