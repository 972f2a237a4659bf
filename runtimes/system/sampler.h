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
    size_t stack_cache;  /* BPF: stack traces kept before the cache rotates; 0 = the default
                            (tests set it low to exercise rotation) */
    bool fp_only;        /* --perf-mode fp: user stacks by frame pointers only (no CFI) */
    unsigned stack_size; /* perf-event: user stack bytes copied per sample for the CFI unwinder
                            (--perf-dwarf-stack-size; 0 = PP_SAMPLER_STACK_SIZE) */
} pp_sampler_opts;

#define PP_SAMPLER_STACK_SIZE 8192 /* gProfiler's --perf-dwarf-stack-size default */

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
    /* in-sampler walks (BPF mode): samples of registered processes by outcome */
    uint64_t walk_ok, walk_no_thread, walk_idle, walk_read, walk_partial, walk_truncated, walk_lost,
        walk_stale;
    uint64_t walk_inherited;   /* walks of forks with a registered ancestor's data (any outcome) */
    uint64_t walk_frames_lost; /* runtime frames user space could not name (freed, reused) */
    uint64_t threads_full;     /* perf-event mode: samples of tracked threads not counted (the
                                  per-thread table was full) */
    /* native user stacks (CFI; both backends): frames unwound by CFI rows and by frame-pointer
     * fallback (no row for the pc); samples unwound by CFI rows only, with at least one fallback
     * frame, whose walk stopped before the stack's end (BPF: the depth limit; perf-event: also a
     * short stack copy or an address in no mapping); BPF only: samples of processes whose
     * mappings were not loaded yet (frame pointers throughout) and the rows' bytes loaded */
    uint64_t unwind_cfi_frames, unwind_fp_frames, unwind_cfi, unwind_fallback, unwind_truncated,
        unwind_unloaded, unwind_table_bytes;
    uint64_t bpf_maps_bytes; /* BPF mode: the kernel memory of the sampler's maps (a level) */
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
/* Hands the BPF unwinder the CFI rows the per-file cache finished building since the last call
 * (cheap when there are none; the perf-event backend asks the cache at each sample). Same
 * thread as the drain; called between drains (PP_SAMPLER_ROWS_POLL_MS). */
#define PP_SAMPLER_ROWS_POLL_MS 100
void pp_sampler_load_rows(pp_sampler *s);
/* The processes announced (first sampled, or sampled in a new image after an exec) since the
 * last call, at most cap (BPF mode; 0 otherwise). Same thread as pp_sampler_take_news. */
size_t pp_sampler_new_pids(pp_sampler *s, int *pids, size_t cap);
void pp_sampler_get_stats(pp_sampler *s, pp_sampler_stats *st);
/* From now on, pid's samples are counted per thread (pp_pid_add_tid), for a runtime profiler
 * that reports threads (the per-thread merge, merge/scale.h). Sticky: until the pid is gone, or
 * pushed out by 4096 newer ones. Thread-safe; NULL s is a no-op. */
void pp_sampler_count_threads(pp_sampler *s, int pid);
void pp_sampler_stop(pp_sampler *s);

/* ---- in-sampler walkers ----
 * In BPF mode a runtime may have its frames walked by the sampler itself, at the sample instant,
 * for the processes it registers here (bpf/walkers.bpf.h; docs/ARCHITECTURE.md, "In-sampler
 * walkers"). Each sample of such a process then carries a runtime trace, which the drain hands
 * to the runtime's name() and splices into the native stack: kernel frames, native frames above
 * the innermost interpreter-loop frame, the runtime's frames, native frames below the outermost
 * interpreter-loop frame. */
typedef struct pp_walker_ops {
    /* Native frames whose name starts with one of these are the interpreter loop (replaced by
     * the runtime's frames). NULL-terminated. */
    const char *const *loop_symbols;
    /* NULL, or whether ip is in the runtime's generated code (its native frames there are
     * replaced by the runtime's frames, as the loop's are). Called by the draining thread. */
    bool (*loop_code)(void *state, uint64_t ip);
    /* At the start of each drain (NULL: none). */
    void (*begin)(void *state);
    /* Names one runtime trace: nframes pairs of words (innermost first, as the BPF walker
     * recorded them) and its PP_RT_* flags. Writes at most cap frame ids of out, ROOT first, into
     * ids; counts frames it could not name in *lost. Returns the number written. */
    size_t (*name)(void *state, pp_profile *out, const uint64_t *words, size_t nframes,
                   unsigned flags, uint32_t *ids, size_t cap, uint64_t *lost);
    void (*free)(void *state);
} pp_walker_ops;

/* True when the sampler can walk runtimes (BPF mode). */
bool pp_sampler_can_walk(const pp_sampler *s);
/* Registers pid (started at start_ticks) for walker (enum pp_walker_kind of bpf/sampler.h) with
 * its data (info, len bytes, at most PP_RT_INFO_BYTES); the sampler owns state from now on
 * (ops->free, on failure too). A pid already registered for the same start is left as it is.
 * 0, or -1 with err. Thread-safe. */
int pp_sampler_walk_attach(pp_sampler *s, int pid, unsigned long long start_ticks, unsigned walker,
                           const void *info, size_t len, const pp_walker_ops *ops, void *state,
                           char *err, size_t errlen);
/* Whether pid (started at start_ticks) is registered. Thread-safe. */
bool pp_sampler_walk_attached(pp_sampler *s, int pid, unsigned long long start_ticks);
/* Whether the sampler walks pid with a registered ancestor's data (a fork of it that has not
 * exec'd since: bpf/sampler.h, PP_RT_FORK_DEPTH). Thread-safe. */
bool pp_sampler_walk_forked(pp_sampler *s, int pid);

/* Coverage of one registered process since the last call (pp_sampler_walk_coverage). */
typedef struct pp_walk_cov {
    int pid;
    unsigned walker;
    uint64_t rt_samples; /* sampler samples that carried runtime frames */
    uint64_t samples;    /* all its sampler samples */
} pp_walk_cov;
/* The coverage of every registered process with samples since the last call (malloc'd array in
 * *out, count returned; the counts are reset). */
size_t pp_sampler_walk_coverage(pp_sampler *s, pp_walk_cov **out);

/* ---- sampled threads (perf-event mode) ----
 * A runtime sampler that reads stacks from user space (no in-sampler walk) reads only the
 * threads the system sampler sampled, right after: it tracks its processes, and at each of its
 * ticks takes the threads of those processes sampled since its previous take and how many times
 * (the perf ring buffers are read at the take, so a sample is seen at most one tick after it
 * was taken). docs/ARCHITECTURE.md, "Sampled threads". */
typedef struct pp_thread_hits {
    int pid, tid; /* in the sampler's pid namespace */
    uint32_t samples;
} pp_thread_hits;

/* True when the sampler counts samples per thread of tracked processes (perf-event mode). */
bool pp_sampler_can_track_threads(const pp_sampler *s);
/* Starts (on) or ends (off) counting the samples of pid's threads; calls nest (each on needs an
 * off). 0, or -1 when the sampler cannot track or is out of memory. Thread-safe. */
int pp_sampler_track_threads(pp_sampler *s, int pid, bool on);
/* Reads the samples taken so far and moves into out (at most cap entries; the rest stay for the
 * next call) the threads of pids (sorted ascending, tracked by the caller) sampled since the
 * last call, with their sample counts. Returns the number written. Thread-safe. */
size_t pp_sampler_sampled_threads(pp_sampler *s, const int *pids, size_t npids, pp_thread_hits *out,
                                  size_t cap);

#endif
