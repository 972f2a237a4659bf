/* Private to the async-profiler driver (asprof.c, asprof_cmd.c, asprof_fs.c, asprof_jar.c): the
 * options gProfiler derives from its flags, the start/stop argument strings (gProfiler's, mapped
 * to upstream async-profiler 4.x), and the files placed in the target's mount namespace. */
#ifndef PP_ASPROF_INT_H
#define PP_ASPROF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "runtimes/java/asprof.h"
#include "runtimes/runtime.h"

#define PP_ASPROF_MAX_OUTPUT (256u << 20) /* largest collapsed output read */
#define PP_ASPROF_MAX_LIB (64u << 20)     /* largest library read out of a jar */

typedef struct pp_asprof_opts {
    char event[8];      /* "cpu", "itimer" or "alloc" */
    long interval_ns;   /* cpu/itimer: int(1e9 / frequency) */
    long alloc_bytes;   /* alloc: --alloc-interval, default 2 MiB */
    int safemode;       /* --java-async-profiler-safemode, default 0: no upstream equivalent */
    char features[96];  /* --java-async-profiler-features with ',' -> '+' minus probesp (gone
                           upstream); default probesp,vtable gives "vtable" */
    int timeout_s;      /* duration + 30: async-profiler stops by itself after it */
    int mcache;         /* --java-async-profiler-mcache, default 30 */
    int attach_timeout; /* --java-jattach-timeout, default 30 s */
    bool threads;       /* --java-collect-thread-names */
    bool includemm;     /* --java-include-method-modifiers: no upstream equivalent */
    bool includeln;     /* --java-line-numbers line-of-function: no upstream equivalent */
    bool lib;           /* --insert-dso-name */
    bool meminfolog;    /* unless --java-async-profiler-no-report-meminfo: no upstream equivalent */
    char extra[256];    /* --java-async-profiler-args, appended after ',' */
} pp_asprof_opts;

/* Options from the session's context (NULL ctx = gProfiler's defaults at 11 Hz) for a session of
 * duration_s seconds. The event follows --java-async-profiler-mode (auto: "cpu" when
 * perf_works, else "itimer"); --mode allocation forces "alloc". */
void pp_asprof_opts_init(pp_asprof_opts *o, const pp_runtime_ctx *ctx, int duration_s,
                         bool perf_works);
/* Whether perf_event_open works for us (a software CPU-clock event on ourselves). */
bool pp_asprof_perf_works(void);

/* The start argument ("start,event=...,timeout=N[,lib][,extra]") and stop argument
 * ("stop,log=...,mcache=N[,threads],file=...,collapsed,ann,sig[,lib][,extra]"; with_output false
 * leaves out the [,threads],file=... block): gProfiler's strings without the arguments upstream
 * async-profiler 4.x does not know (includemm, includeln, safemode, meminfolog, the probesp
 * feature; docs/java.md has the table). The paths are as seen by the JVM. 0, or -1 when it does
 * not fit in len. */
int pp_asprof_start_arg(const pp_asprof_opts *o, const char *out, const char *log, char *buf,
                        size_t len);
int pp_asprof_stop_arg(const pp_asprof_opts *o, const char *out, const char *log, bool with_output,
                       char *buf, size_t len);

/* The options set that upstream async-profiler has no equivalent for ("--java-...,
 * --java-..."), for a notice; returns its length (0: none). */
size_t pp_asprof_ignored(const pp_asprof_opts *o, char *buf, size_t len);

/* ---- files in the target's mount namespace (asprof_fs.c) ---- */

/* Opens the absolute directory path as seen from pid's root, never following symlinks; with
 * create, missing components are created (mode 0755, root-owned). With require_root, every
 * existing component after the first must be owned by root. Returns a directory fd, or -1 with
 * err. */
int pp_asprof_open_dir(int pid, const char *path, bool require_root, bool create, char *err,
                       size_t errlen);
/* Writes the library into dirfd/name atomically (temp file with O_EXCL, then rename), mode
 * 0755, unless a root-owned file of the same size is already there. 0 or -1 with err. */
int pp_asprof_lib_write(const pp_asprof_lib *lib, int dirfd, const char *name, char *err,
                        size_t errlen);
/* Removes the directory path (as seen from pid's root, below base) and then its parents up to
 * base included, each only if it is empty, reached without following symlinks. The directories
 * are shared by the JVMs of one mount namespace: the last one out removes them. */
void pp_asprof_rmdirs(int pid, const char *path, const char *base);
/* Effective uid/gid of pid from /proc/<pid>/status. */
int pp_asprof_proc_ids(int pid, uid_t *uid, gid_t *gid);

#endif
