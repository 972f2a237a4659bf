/* The runtime descriptor: everything polyprof knows about one runtime, exported by its folder
 * runtimes/<rt>/ as `const pp_runtime pp_rt_<rt>` and listed once in runtimes/registry.h.
 * Discovery, the CLI, identity and the session loop iterate over the registry and call these
 * fields; none of them names a runtime ("adding a runtime" in docs/ARCHITECTURE.md).
 *
 * Profiling goes through backends (pp_backend): a runtime lists the profilers it can run, each
 * serving some --<rt>-mode values; "auto" takes the first available one. Backends run
 * concurrently with the sampler and with each other (runner.h). Perf-only runtimes (Go, and
 * Node today) have no backend: their stacks come from the system sampler. */
#ifndef PP_RUNTIME_H
#define PP_RUNTIME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/options.h"
#include "merge/profile.h"
#include "runtimes/registry.h"

/* What a backend gets from the configuration: narrow options, not the CLI's pp_config. */
typedef struct pp_runtime_ctx {
    const pp_runtime *rt;       /* the runtime being profiled */
    const char *mode;           /* its --<rt>-mode value (after alias mapping), never NULL */
    int frequency;              /* -f, Hz */
    int duration;               /* -d, seconds */
    const char *profiling_mode; /* --mode: "cpu" or "allocation" */
    bool insert_dso_name;       /* --insert-dso-name */
    /* options stored by name (the runtime's own rows, and gProfiler options such as
     * --alloc-interval): read with pp_runtime_opt */
    const pp_opt_value *values;
    size_t nvalues;
    const char *tmpdir; /* the session's private temp directory (for external profilers) */
    /* the directory for files a target reads, as seen inside each target's root
     * (pp_target_tmpdir: /tmp/polyprof-<random>), created there by its users; NULL if none */
    const char *target_tmpdir;
    /* the system sampler, for in-sampler walks (pp_inwalk_attach); NULL when none runs */
    struct pp_sampler *sampler;
    /* > 0: a descriptor readable once polyprof is to stop (the session's signalfd: poll it,
     * never read it), for hooks that wait on processes; 0: none */
    int stop_fd;
} pp_runtime_ctx;

/* The value of option name (long name without dashes) as given: "" for a flag or an option
 * given without a value, NULL when not given (then the row's .def_str, if the runtime declares
 * the row). */
const char *pp_runtime_opt(const pp_runtime_ctx *ctx, const char *name);

/* One runtime profiler. start() begins profiling procs until the monotonic deadline and
 * returns a session handle (NULL: error logged, the pids get an error stack). collect() blocks
 * until the session's data is complete and fills out (a profile of its own: pid entries with
 * comm, runtime, stacks); it must return by the deadline plus a second or two. stop() makes a
 * blocked collect() return promptly (called from another thread when collect() overruns).
 * free() releases the handle. Stacks for failures come from pp_error_stack (runner.h). */
typedef struct pp_backend {
    const char *name;         /* "jfr", "async-profiler", "builtin", "py-spy", ... */
    const char *const *modes; /* the --<rt>-mode values it serves (NULL-terminated) */
    /* NULL, or whether it can run here (an external tool is found): "auto" skips a backend
     * that is not available; an explicit mode reports why (in why) and profiles nothing. */
    bool (*available)(char *why, size_t len);
    void *(*start)(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline);
    int (*collect)(void *session, pp_profile *out);
    void (*stop)(void *session);
    void (*free)(void *session);
    /* It registers its processes with the runtime's in-sampler walker when the sampler can walk
     * (pp_inwalk_attach): the session then registers those it discovers during the session too
     * (first sampled, or exec'd, after the session started). */
    bool walks_new_processes;
} pp_backend;

/* An in-sampler walker (runtimes/system/sampler.h, docs/ARCHITECTURE.md "In-sampler walkers"):
 * the system sampler's BPF program walks the runtime's frames of a registered process at each
 * of its samples. */
typedef enum pp_inwalk_status {
    PP_INWALK_OK = 0,
    PP_INWALK_UNSUPPORTED, /* a version or build the walker does not know (err says which) */
    PP_INWALK_GONE,        /* the process exited */
    PP_INWALK_ERROR,       /* anything else (err says what) */
} pp_inwalk_status;

typedef struct pp_inwalker {
    unsigned kind; /* the BPF walker: enum pp_walker_kind of bpf/sampler.h */
    /* Fills the per-process table's data for pid (info, at most len bytes: addresses, the
     * version's offsets) and returns the state its frames are named with (ops below); NULL with
     * *status and err otherwise. */
    void *(*prepare)(const pp_runtime_ctx *ctx, int pid, void *info, size_t len,
                     pp_inwalk_status *status, char *err, size_t errlen);
    const struct pp_walker_ops *ops;
} pp_inwalker;

/* Registers p with the system sampler's walker of ctx->rt (a process already registered is
 * kept). PP_INWALK_ERROR when the sampler cannot walk (no sampler, perf-event mode). */
pp_inwalk_status pp_inwalk_attach(const pp_runtime_ctx *ctx, const pp_proc *p, char *err,
                                  size_t errlen);
/* Whether ctx's sampler can walk ctx->rt's processes now (BPF mode and a walker). */
bool pp_inwalk_possible(const pp_runtime_ctx *ctx);

/* For a backend whose profile records threads (pp_pid_add_tid): the system sampler counts pid's
 * samples per thread from now on, so that the merge scales the runtime's stacks per thread
 * (merge/scale.h). No-op without a sampler. */
void pp_runtime_count_threads(const pp_runtime_ctx *ctx, int pid);

/* Discovery rule: what the regex is matched against. */
typedef enum {
    PP_MATCH_MAPS = 0, /* each distinct file mapping's maps line */
    PP_MATCH_EXE,      /* the executable's path (readlink /proc/<pid>/exe) */
} pp_match_on;

/* A detection check beyond the regex (e.g. an ELF note), with state kept across passes. */
typedef struct pp_detector {
    void *(*create)(void);
    void (*destroy)(void *state);
    /* Sets *match for pid's executable. 0, or -1 when it cannot be examined (gone, denied). */
    int (*check)(void *state, int pid, bool *match);
    unsigned long (*files_parsed)(const void *state); /* for statistics */
} pp_detector;

/* The appid rule set over a command line (runtimes/appid.h describes the arguments). */
typedef char *(*pp_appid_rule)(char *const *argv, int argc, const char *cwd, const char *root);

struct pp_runtime {
    const char *name;  /* kind name: discovery, logs, benchmarks ("java", ..., "node", "go") */
    const char *label; /* name in options and the profile's `runtime` label ("nodejs") */

    /* ---- detection (docs/discovery.md) ---- */
    pp_match_on match_on;
    const char *default_regex; /* PCRE2, NULL for none; --<label>-<regex_option> overrides */
    const char *regex_option;  /* "maps-regex" or "exe-regex" */
    const char *regex_help;
    const pp_detector *detector; /* NULL, or a check that applies whatever the regex */
    /* An interpreter or VM: when its own executable matches, it wins over libraries of other
     * runtimes it maps, and a process classified as it keeps the class until it execs. */
    bool interpreter;
    /* NULL, or whether a matching process must not be runtime-profiled (gProfiler's Python
     * blacklist). scratch: a buffer for reading /proc files. */
    bool (*excluded)(int pid, const char *exe, size_t exelen, char *scratch, size_t cap);

    /* ---- options ---- */
    const pp_choice *modes; /* --<label>-mode values, NULL: no mode option */
    const char *default_mode;
    const char *mode_metavar, *mode_help;
    /* modes its hooks serve rather than a backend (e.g. preparing processes for the system
     * sampler), NULL-terminated, or NULL */
    const char *const *hook_modes;
    const pp_opt *options; /* the runtime's own rows (stored by name) */
    size_t noptions;

    /* ---- frames ---- */
    const char *const *suffixes;       /* suffixes of its frames: "_[j]", ... (NULL-terminated) */
    const char *const *frame_prefixes; /* frames recognised by a prefix instead, or NULL */

    /* ---- identity ---- */
    /* Runtime keys of the application metadata (a new object, in gProfiler's order), or NULL;
     * pp_app_metadata adds exe, execfn and arch. */
    json_t *(*metadata)(int pid);
    pp_appid_rule appid; /* NULL: no appid */

    /* ---- profiling ---- */
    const pp_backend *const *backends; /* NULL-terminated, in "auto" preference order */
    const pp_inwalker *walker;         /* NULL, or its in-sampler walker (used by its backends) */

    /* ---- hooks (NULL: none) ---- */
    void (*at_start)(void); /* before the first session (remove what a killed run left) */
    /* At the start of a session and shortly before its last drain, with every process of the
     * session (all kinds) and the runtime's context (its mode may be "disabled": e.g. JIT
     * symbols for the system sampler are wanted all the same). */
    void (*session_begin)(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n);
    void (*before_last_drain)(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n);
    void (*at_exit)(const pp_runtime_ctx *ctx); /* at the end of the run, signals included */
    /* At the session end: stacks for processes the hooks could not prepare ([Profiling
     * skipped/error: ...] through pp_error_stack), added to out (a profile of its own, merged
     * like a backend's). 0, or -1 out of memory. */
    int (*hook_stacks)(const pp_runtime_ctx *ctx, pp_profile *out);
    /* Why this runtime must not run with mode beside a running gProfiler (both would drive the
     * same profiler inside the same processes), or NULL. */
    const char *(*gprofiler_conflict)(const char *mode);
};

/* Application metadata of pid: runtime keys first, then "exe", "execfn", "arch" (gProfiler
 * §2.4). NULL for native processes and runtimes without metadata. New reference. */
json_t *pp_app_metadata(int pid, pp_proc_kind kind);

/* The three base keys appended to obj. */
void pp_app_metadata_base(json_t *obj, int pid);

/* The appid of pid (without "appid: "), malloc'd, or NULL. */
char *pp_runtime_appid(int pid, pp_proc_kind kind);

/* The backend of rt serving mode: "disabled" gives NULL; "auto" the first available backend
 * (NULL if none, why says so); another mode the backend that serves it (NULL if none), also
 * when it is not available: then why says what is missing, and its start() fails, so that its
 * processes get an error stack. */
const pp_backend *pp_runtime_backend(const pp_runtime *rt, const char *mode, char *why, size_t len);

#endif
