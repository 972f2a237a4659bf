/* The Python runtime's descriptor: detection (with gProfiler's blacklist), modes and options,
 * frames, identity and backends (runtimes/runtime.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/procfiles.h"
#include "runtimes/python/python.h"
#include "runtimes/python/python_int.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {
    {"auto"},
    {"builtin"},
    {"pyspy"},
    {"py-spy", "pyspy"},
    {"pyperf", "builtin",
     "--python-mode pyperf maps to 'builtin': polyprof's built-in Python unwinder replaces "
     "PyPerf"},
    {"disabled"},
    {"none", "disabled"},
    {NULL}};

static const pp_opt options[] = {
    {.name = "no-python-versions",
     .kind = PP_OPT_NOOP_FLAG,
     .dest = "python_versions",
     .off = PP_OFF_NONE,
     .json_inv = true,
     .driver_opt = true,
     .help = "do not annotate Python frames with package versions ([dist==version])"},
    PP_OPT_NOOPI("pyperf-user-stacks-pages", 0, INT_MAX, PP_NOTIMPL),
    PP_OPT_NOOPF("python-pyperf-verbose", PP_NOTIMPL),
    {.name = "python-pyspy-process",
     .kind = PP_OPT_NOOP_ARG,
     .off = PP_OFF_NONE,
     .multi = true,
     .metavar = "PIDS",
     .help = PP_NOTIMPL},
    PP_OPT_NOOPI("python-skip-pyperf-profiler-above", 0, INT_MAX, PP_NOTIMPL),
};

/* _[p] Python frames, _[pn] PyPerf's native frames; Performance Studio also takes _[pe] as
 * Python. */
static const char *const suffixes[] = {"_[p]", "_[pe]", "_[pn]", NULL};

extern const pp_backend pp_python_pyspy_backend, pp_python_builtin_backend;
static const pp_backend *const backends[] = {&pp_python_pyspy_backend, &pp_python_builtin_backend,
                                             NULL};

/* gProfiler's Python blacklist: substrings of the space-joined command line; pypy is not
 * CPython. */
static const char *const blacklist[] = {"unattended-upgrades", "networkd-dispatcher", "supervisord",
                                        "tuned"};

static bool excluded(int pid, const char *exe, size_t exelen, char *buf, size_t cap)
{
    const char *base = memrchr(exe, '/', exelen);
    base = base ? base + 1 : exe;
    if (strncmp(base, "pypy", 4) == 0)
        return true;
    char path[48];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    ssize_t n = pp_read_small_file(path, buf, cap);
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    for (size_t i = 0; i < sizeof(blacklist) / sizeof(blacklist[0]); i++)
        if (memmem(buf, (size_t)n, blacklist[i], strlen(blacklist[i])))
            return true;
    return false;
}

const pp_runtime pp_rt_python = {
    .name = "python",
    .label = "python",
    .match_on = PP_MATCH_MAPS,
    .default_regex = "(^.+/(lib)?python[^/]*$)|(^.+/site-packages/.+?$)|(^.+/dist-packages/.+?$)",
    .regex_option = "maps-regex",
    .regex_help = "same, to detect Python (default: python binaries, libpython, site-packages, "
                  "dist-packages)",
    .interpreter = true,
    .excluded = excluded,
    .modes = modes,
    .default_mode = "auto",
    .mode_metavar = "{auto,builtin,pyspy,py-spy,pyperf,disabled}",
    .mode_help = "Python profiler (--no-python: disabled; pyperf maps to builtin)",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .suffixes = suffixes,
    .metadata = pp_python_metadata,
    .appid = pp_appid_python,
    .backends = backends,
};
