/* The runtime registry: the one list of the runtimes polyprof knows. Every runtime is one folder
 * runtimes/<rt>/ exporting one descriptor (runtimes/runtime.h) and one row here. The kinds of
 * processes, their names, the --<rt>-mode / --no-<rt> / --<rt>-maps-regex options, discovery's
 * default rules, the runtime profilers, identity and the session hooks are all generated from
 * or iterate over this list; nothing outside runtimes/<rt>/ names a runtime.
 *
 * Order matters: discovery picks, among the runtimes a process matches, the one its executable
 * belongs to, else the first in this order (docs/discovery.md); help lists runtimes in it. */
#ifndef PP_REGISTRY_H
#define PP_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

/* X(ID, symbol): ID names the kind constant PP_KIND_<ID>, symbol the descriptor pp_rt_<symbol>
 * defined in runtimes/<symbol>/. */
#define PP_RUNTIME_LIST(X)                                                                         \
    X(JAVA, java)                                                                                  \
    X(PYTHON, python)                                                                              \
    X(RUBY, ruby)                                                                                  \
    X(PHP, php)                                                                                    \
    X(DOTNET, dotnet)                                                                              \
    X(NODE, node)                                                                                  \
    X(GO, go)

typedef enum {
    PP_KIND_NATIVE = 0, /* no runtime: only the system sampler's frames */
#define PP_KIND_ENUM_(id, sym) PP_KIND_##id,
    PP_RUNTIME_LIST(PP_KIND_ENUM_)
#undef PP_KIND_ENUM_
        PP_KIND_COUNT
} pp_proc_kind;

/* One process as discovery classified it. */
typedef struct pp_proc {
    int pid;
    int ppid;
    pp_proc_kind kind;
    char comm[17];                  /* comm of /proc/<pid>/stat (= Name: of status, unescaped) */
    unsigned long long start_ticks; /* field 22 of /proc/<pid>/stat */
    bool blacklisted;               /* matched the runtime but must not be runtime-profiled
                                       (its descriptor's exclusion hook said so) */
    /* Bit (1u << k) for every kind whose rule matched; kind is the one chosen
     * (docs/discovery.md: the executable's runtime first, then list order). 0 for native. */
    unsigned kinds;
} pp_proc;

typedef struct pp_runtime pp_runtime;

/* The descriptor of a kind, NULL for native (and out-of-range kinds). */
const pp_runtime *pp_runtime_get(pp_proc_kind kind);
/* The kind's name: "native", then each descriptor's name ("java", "python", ..., "node", "go");
 * "unknown" out of range. */
const char *pp_proc_kind_name(pp_proc_kind kind);

#endif
