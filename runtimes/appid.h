/* Application identifiers ("appids"), the optional `appid: <id>` frame after the comm
 * (decisions in docs/containers-and-appids.md).
 *
 * Every runtime's rule set (pp_appid_fn, in runtimes/<rt>/appid.c) returns a malloc'd string
 * WITHOUT the "appid: " prefix, e.g. "python: lister.py (/app/lister.py)", or NULL when its rules
 * give none (or on OOM). argv/argc: the process's command line, split the way psutil does
 * (pp_appid_split_cmdline). cwd:       its working directory as the process sees it (NULL when
 * unknown: every rule that needs a path then gives nothing, as gProfiler's failing cwd() does).
 *   root:      the directory the process's paths are resolved under: "/proc/<pid>/root" in
 *              production, "/" or a fixture directory in tests.
 * "(path)" in the formats is pp_appid_path(root, cwd, arg). Nothing here caches; the caller
 * caches per process. All functions are thread-safe (no global state). */
#ifndef PP_APPID_H
#define PP_APPID_H

#include <stdbool.h>
#include <stddef.h>

/* A runtime's rule set over a command line (each runtime's appid.c), as described above. */
typedef char *(*pp_appid_fn)(char *const *argv, int argc, const char *cwd, const char *root);

/* Reads /proc/<pid>/cmdline (first 256 KiB) and /proc/<pid>/cwd and calls rule; root is
 * "/proc/<pid>/root". NULL for processes that are gone, and when no rule matches. */
char *pp_appid_for_pid(int pid, pp_appid_fn rule);

/* The command line of pid (first 256 KiB, split by pp_appid_split_cmdline: one free()) and its
 * working directory as it sees it into cwd ("" when unknown). NULL when it is gone. */
char **pp_appid_proc_cmdline(int pid, int *argc, char *cwd, size_t cwdlen);

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

/* ---- helpers for the rule sets ---- */

char *pp_appid_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
const char *pp_appid_base_name(const char *p);
bool pp_appid_ends_with(const char *s, const char *suffix);
bool pp_appid_starts_with(const char *s, const char *prefix);
/* "<prefix>: <shown> (<path>)" with path = mod as a module (a.b -> a/b.py unless it ends with
 * .py) resolved by pp_appid_path; NULL when it cannot be resolved. */
char *pp_appid_with_module(const char *prefix, const char *shown, const char *mod, const char *root,
                           const char *cwd);
/* "<prefix>: <arg> (<path>)" with path = pp_appid_path(root, cwd, arg). */
char *pp_appid_with_file(const char *prefix, const char *arg, const char *root, const char *cwd);

/* gProfiler's `_get_cli_arg_by_name`: "name value" (first occurrence; PP_ARG_ERR when it is
 * the last argument), then with eq "name=value", then with prefix "namevalue". */
enum { PP_ARG_ERR = -1, PP_ARG_NA = 0, PP_ARG_FOUND = 1 };
int pp_appid_arg(char *const *argv, int argc, const char *name, bool eq, bool prefix,
                 const char **out);
/* Python's `a or b` over two lookups: a when found and non-empty, else b. */
int pp_appid_arg_or(char *const *argv, int argc, const char *n1, bool eq1, bool pre1,
                    const char *n2, bool eq2, bool pre2, const char **out);
/* argv[i], or "" past the end. */
const char *pp_appid_arg_at(char *const *argv, int argc, int i);

#endif
