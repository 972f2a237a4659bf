/* Application identifiers ("appids"), the optional `appid: <id>` frame after the comm
 * (decisions in docs/containers-and-appids.md).
 *
 * Every pp_appid_* function returns a malloc'd string WITHOUT the "appid: " prefix, e.g.
 * "python: lister.py (/app/lister.py)", or NULL when its rules give none (or on OOM).
 *   argv/argc: the process's command line, split the way psutil does (pp_appid_split_cmdline).
 *   cwd:       its working directory as the process sees it (NULL when unknown: every rule that
 *              needs a path then gives nothing, as gProfiler's failing cwd() does).
 *   root:      the directory the process's paths are resolved under: "/proc/<pid>/root" in
 *              production, "/" or a fixture directory in tests.
 * "(path)" in the formats is pp_appid_path(root, cwd, arg). Nothing here caches; the caller
 * caches per process. All functions are thread-safe (no global state). */
#ifndef PP_APPID_H
#define PP_APPID_H

#include <stddef.h>

/* Python rules, first match wins: gunicorn process title, gunicorn, uvicorn, uwsgi (-w,
 * --wsgi-file, --ini/--ini-paste/--ini-paste-logged or one bare *.ini read for
 * `[uwsgi] module`), celery (-A/--app, else -Q/--queues), `python -m pyspark.daemon`, plain
 * python (`-m X`, or argv[1] ending in .py). */
char *pp_appid_python(char *const *argv, int argc, const char *cwd, const char *root);

/* Java, from the command line instead of gProfiler's `jcmd VM.command_line` (same first token of
 * sun.java.command): "java: <jar>" for `-jar <jar>`, "java: <module>[/<class>]" for
 * `-m`/`--module`/`--module=`, else "java: <main class>" = the first argument after argv[0] that
 * is not a launcher option (options -cp/-classpath/--class-path/-p/--module-path/
 * --upgrade-module-path/--add-modules/--limit-modules/--add-reads/--add-exports/--add-opens/
 * --patch-module/--enable-native-access/--source/--describe-module/-d take the next argument;
 * @argfiles are skipped). NULL when there is none (e.g. `java -version`). */
char *pp_appid_java(char *const *argv, int argc, const char *cwd, const char *root);

/* "nodejs: <arg> (path)": the first argument after argv[0] ending in .js, skipping -r X,
 * --require X and --require=X. */
char *pp_appid_node(char *const *argv, int argc, const char *cwd, const char *root);

/* "ruby: <arg> (path)": the first argument ending in .rb, scanning from argv[0], skipping -r X
 * and -rX. */
char *pp_appid_ruby(char *const *argv, int argc, const char *cwd, const char *root);

/* Reads /proc/<pid>/cmdline (first 256 KiB) and /proc/<pid>/cwd and calls the rule set for
 * runtime: "python", "java", "node" (or "nodejs") or "ruby"; root is "/proc/<pid>/root".
 * NULL for other runtimes, for processes that are gone, and when no rule matches. */
char *pp_appid_for_pid(int pid, const char *runtime);

/* join(cwd, arg) (arg wins when absolute), resolved component by component inside root:
 * "." and empty components are dropped, ".." goes up but never above root, symlinks are
 * followed (at most 40) with absolute targets re-rooted under root, so the result never escapes
 * root; components that do not exist are kept lexically. Returns the malloc'd absolute path
 * with the root prefix stripped ("/" at least), or NULL when cwd is NULL/OOM. A relative cwd is
 * taken as relative to "/". */
char *pp_appid_path(const char *root, const char *cwd, const char *arg);

/* Splits raw /proc/<pid>/cmdline bytes as psutil's Process.cmdline() does: one trailing NUL (or
 * space, when the data does not end in NUL) is dropped and the rest is split on NUL; data
 * ending in NUL that holds a single argument containing spaces is split on spaces instead
 * (processes that rewrote their title). Returns a malloc'd NULL-terminated vector whose
 * strings live in the same allocation (one free()), with *argc set; NULL for empty data/OOM. */
char **pp_appid_split_cmdline(const char *data, size_t len, int *argc);

#endif
