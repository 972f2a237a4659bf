/* The INFO line that ends every session, for whoever reads the log rather than the profiles:
 *
 *   session summary: 21 processes (native 17, java 1, python 2, ruby 1); 1432 samples;
 *   runtime stacks: java 1 of 1, python 1 of 2 (1 error); upload: Pyroscope 3 sent, 1 waiting;
 *   2 repeated messages not logged
 *
 * "processes" are those discovery classified, per kind (pp_proc_kind_name); "samples" the counts
 * in the session's profile; "runtime stacks" per kind whose runtime profiler ran this session and
 * had processes: how many of the processes handed to it (blacklisted ones are not) got runtime
 * stacks (from the runtime profiler, or walked by the system sampler: one count per process),
 * and how many an error or skip stack instead (the rest were idle, or exited before a
 * sample), "none" when no runtime profiler had any; "upload"
 * is pp_uploader_status; the last part counts the per-process messages that pp_log_proc counted
 * instead of logging during the session (left out when none). */
#ifndef PP_SUMMARY_H
#define PP_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "merge/profile.h"
#include "orchestrator/discovery.h"
#include "orchestrator/upload.h"
#include "runtimes/registry.h"
#include "runtimes/runner.h"
#include "runtimes/system/sampler.h"

typedef struct pp_summary_pid {
    int pid;
    pp_proc_kind kind;
    unsigned char outcome; /* PP_SUMMARY_* below: what the process got this session */
} pp_summary_pid;

enum { PP_SUMMARY_NONE, PP_SUMMARY_RUNTIME, PP_SUMMARY_ERROR, PP_SUMMARY_SKIPPED };

typedef struct pp_summary {
    size_t nprocs;
    size_t procs[PP_KIND_COUNT];  /* discovered, per kind */
    size_t handed[PP_KIND_COUNT]; /* given to a runtime profiler (0 for kinds without one) */
    pp_summary_pid *pids;         /* those processes, sorted by pid, with their outcomes */
    size_t npids;
    unsigned long long repeats0; /* pp_log_repeats_counted() at the start */
} pp_summary;

/* At the start of a session: the processes discovered, and the session's runtime profilers. */
void pp_summary_begin(pp_summary *s, const pp_proc_list *procs, const pp_runner_task *tasks,
                      size_t ntasks);
/* One runtime profiler's profile, before it is merged. */
void pp_summary_runtime(pp_summary *s, const pp_profile *rt);
/* The in-sampler walks' coverage: a process whose samples carried runtime frames got runtime
 * stacks (they are in the sampler's profile, not in a runtime profiler's). */
void pp_summary_walked(pp_summary *s, const pp_walk_cov *cov, size_t ncov);
/* Logs the line for the session's final profile, and frees what begin allocated. */
void pp_summary_end(pp_summary *s, const pp_profile *prof, pp_uploader *up);

/* The line without the "session summary: " prefix (for the tests). */
void pp_summary_format(const pp_summary *s, uint64_t samples, const char *upload,
                       unsigned long long repeats, char *out, size_t len);

#endif
