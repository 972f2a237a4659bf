/* Where polyprof finds the files it ships beside its binary: the external profilers it runs
 * (`java/asprof`, `python/py-spy`, ...), named by their path below a resources directory. One
 * search path, used by every launcher, the same for a build tree, `make install` and the image
 * (README "Resources", docs/ARCHITECTURE.md). First match wins:
 *
 *   1. each absolute directory in $POLYPROF_RESOURCES (':'-separated; relative entries ignored)
 *   2. <exe dir>/resources                   an unpacked archive: the binary beside resources/
 *   3. <exe dir>/../share/polyprof/resources `make install` (PREFIX/bin, PREFIX/share), the image
 *   4. <exe dir>/../resources                the build tree (build/polyprof, resources/)
 *   5. tools only: each absolute directory on $PATH, with the tool's base name
 *
 * <exe dir> is the directory of /proc/self/exe, so an installed tree works from any PREFIX,
 * DESTDIR or chroot without a path compiled in. A match is returned canonical (symbolic links
 * resolved), so a tool finds its own files next to its real location. */
#ifndef PP_RESOURCE_H
#define PP_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>

/* The inputs of a search; NULL members are absent. */
typedef struct pp_resource_env {
    const char *exe;       /* polyprof's binary (readlink /proc/self/exe) */
    const char *resources; /* $POLYPROF_RESOURCES */
    const char *path;      /* $PATH */
} pp_resource_env;

/* Searches rel (e.g. "python/py-spy") along the path above, with env's inputs, or this
 * process's (/proc/self/exe, $POLYPROF_RESOURCES, $PATH) when env is NULL. tool: an executable
 * regular file, also looked up on PATH by its base name; else any regular file, in resources
 * directories only. Returns 0 with the canonical path in out, or -1 when nothing matches (or the
 * path does not fit in len). */
int pp_resource_lookup(const pp_resource_env *env, const char *rel, bool tool, char *out,
                       size_t len);

/* pp_resource_lookup(NULL, rel, true, ...): an external profiler polyprof runs. */
int pp_resource_tool(const char *rel, char *out, size_t len);

/* The places pp_resource_lookup searches for rel, in order, for a message: "/a/resources/x/t,
 * /b/share/polyprof/resources/x/t, ... or t on PATH"; truncated to len. */
void pp_resource_describe(const pp_resource_env *env, const char *rel, bool tool, char *out,
                          size_t len);

/* Calls fn with each resources directory of steps 1-4 (which may not exist), in search order,
 * with env's inputs or this process's when env is NULL; stops at the first nonzero return of fn
 * and returns it (else 0). */
int pp_resource_each_dir(const pp_resource_env *env, int (*fn)(const char *dir, void *arg),
                         void *arg);

#endif
