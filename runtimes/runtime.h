/* The runtime driver interface. Every runtime polyprof knows implements some of: start/collect/
 * stop (a runtime profiler for a set of processes during one session), application metadata and
 * appid. Perf-only runtimes (Go, Node) implement only metadata and appid: their stacks come from
 * the system sampler. Drivers run concurrently with the sampler and with each other (see
 * runner.h). */
#ifndef PP_RUNTIME_H
#define PP_RUNTIME_H

#include <jansson.h>
#include <stddef.h>

#include "merge/profile.h"
#include "orchestrator/cli.h"
#include "orchestrator/discovery.h"

typedef struct pp_runtime_ctx {
    const pp_config *cfg;
    const char *tmpdir; /* the session's private temp directory (for external profilers) */
    /* the directory for files a target reads, as seen inside each target's root
     * (pp_target_tmpdir: /tmp/polyprof-<random>), created there by its users; NULL if none */
    const char *target_tmpdir;
} pp_runtime_ctx;

typedef struct pp_runtime_driver {
    const char *name;  /* "java", "python", "go", ... (also the `runtime` label) */
    pp_proc_kind kind; /* the processes it handles */
    int cli_runtime;   /* pp_runtime_id of its --<rt>-mode flag, or -1 (no flag, e.g. Go) */

    /* Runtime profiling; NULL for perf-only runtimes. start() begins profiling procs until the
     * monotonic deadline and returns a session handle (NULL: error logged, pids get an error
     * stack). collect() blocks until the session's data is complete and fills out (a profile of
     * its own: pid entries with comm, stacks, and optionally appid/metadata); it must return by
     * the deadline plus a second or two. stop() makes a blocked collect() return promptly (it is
     * called from another thread when collect() overruns). free() releases the handle. */
    void *(*start)(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline);
    int (*collect)(void *session, pp_profile *out);
    void (*stop)(void *session);
    void (*free)(void *session);

    /* Runtime-specific application metadata keys of pid (a new object, keys in gProfiler's
     * order), or NULL. The base keys (exe, execfn, arch) are added by pp_app_metadata. */
    json_t *(*metadata)(int pid);
    /* The appid without the "appid: " prefix (malloc'd), or NULL. */
    char *(*appid)(int pid);
} pp_runtime_driver;

/* The driver for a kind of process, or NULL (native, or a runtime with no driver yet). */
const pp_runtime_driver *pp_runtime_for_kind(pp_proc_kind kind);

/* Application metadata of pid: runtime keys first, then "exe", "execfn", "arch" (gProfiler
 * §2.4). NULL (index 0) for native processes and runtimes without metadata. New reference. */
json_t *pp_app_metadata(int pid, pp_proc_kind kind);

/* The three base keys appended to obj. */
void pp_app_metadata_base(json_t *obj, int pid);

#endif
