/* Private to the async-profiler launcher (asprof.c, asprof_cmd.c, asprof_fs.c): the options
 * gProfiler derives from its flags, the exact start/stop argument strings, and the files
 * placed in the target's mount namespace. */
#ifndef PP_ASPROF_INT_H
#define PP_ASPROF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "runtimes/runtime.h"

#define PP_ASPROF_MAX_OUTPUT (256u << 20) /* largest collapsed output read */

typedef struct pp_asprof_opts {
    char event[8];      /* "cpu", "itimer" or "alloc" */
    long interval_ns;   /* cpu/itimer: int(1e9 / frequency) */
    long alloc_bytes;   /* alloc: --alloc-interval, default 2 MiB */
    int safemode;       /* --java-async-profiler-safemode, default 0 */
    char features[96];  /* --java-async-profiler-features with ',' -> '+', default probesp+vtable */
    int timeout_s;      /* duration + 30: async-profiler stops by itself after it */
    int mcache;         /* --java-async-profiler-mcache, default 30 */
    int attach_timeout; /* --java-jattach-timeout, default 30 s */
    bool threads;       /* --java-collect-thread-names */
    bool includemm;     /* --java-include-method-modifiers */
    bool includeln;     /* --java-line-numbers line-of-function */
    bool lib;           /* --insert-dso-name */
    bool meminfolog;    /* unless --java-async-profiler-no-report-meminfo */
    char extra[256];    /* --java-async-profiler-args, appended after ',' */
} pp_asprof_opts;

/* Options from the session's context (NULL ctx = gProfiler's defaults at 11 Hz) for a session of
 * duration_s seconds. The event follows --java-async-profiler-mode (auto: "cpu" when
 * perf_works, else "itimer"); --mode allocation forces "alloc". */
void pp_asprof_opts_init(pp_asprof_opts *o, const pp_runtime_ctx *ctx, int duration_s,
                         bool perf_works);
/* Whether perf_event_open works for us (a software CPU-clock event on ourselves). */
bool pp_asprof_perf_works(void);

/* gProfiler's start argument ("start,event=...,timeout=N[,lib][,extra]") and stop argument
 * ("stop,log=...,mcache=N[,threads],file=...,collapsed,ann,sig...[,lib],meminfolog[,extra]";
 * with_output false leaves out the [,threads],file=... block). The paths are as seen by the
 * JVM. 0, or -1 when it does not fit in len. */
int pp_asprof_start_arg(const pp_asprof_opts *o, const char *out, const char *log, char *buf,
                        size_t len);
int pp_asprof_stop_arg(const pp_asprof_opts *o, const char *out, const char *log, bool with_output,
                       char *buf, size_t len);

/* ---- files in the target's mount namespace (asprof_fs.c) ---- */

/* Opens (creating missing components, mode 0755, root-owned) the absolute directory path as
 * seen from pid's root, never following symlinks. With require_root, every existing component
 * after the first must be owned by root. Components created are appended to created (as paths
 * relative to the root, deepest last, at most max), so they can be removed; max < 0 opens
 * existing directories only. Returns a directory fd, or -1 with err. */
int pp_asprof_open_dir(int pid, const char *path, bool require_root, char created[][4096],
                       int *ncreated, int max, char *err, size_t errlen);
/* Copies the library src into dirfd/name atomically (temp file with O_EXCL, then rename),
 * mode 0755, unless a file of the same size is already there. 0 or -1 with err. */
int pp_asprof_copy_lib(const char *src, int dirfd, const char *name, char *err, size_t errlen);
/* The library next to asprof (upstream layout ../lib/, then lib/, then gProfiler's glibc/ or
 * musl/ folder, then the same folder) and its version tag (async-profiler-version file, else
 * size and mtime). 0 or -1 with err. */
int pp_asprof_find_lib(const char *asprof, bool musl, char *lib, size_t liblen, char *ver,
                       size_t verlen, char *err, size_t errlen);
/* Effective uid/gid of pid from /proc/<pid>/status. */
int pp_asprof_proc_ids(int pid, uid_t *uid, gid_t *gid);

#endif
