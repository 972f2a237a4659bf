/* Python: application metadata (python_version, exe_elfid, libpython_elfid) and the two
 * backends behind --python-mode: "builtin" (backend.c: the system sampler's in-sampler walker,
 * else the user-space sampler, sampler.c) and "pyspy" (pyspy.c, an external py-spy); "auto"
 * takes builtin, which itself picks py-spy where the walker cannot serve (backend.c). */
#include <limits.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "base/inroot.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "base/resource.h"
#include "runtimes/python/python_int.h"
#include "runtimes/runtime.h"

static int digits_only(const char *s)
{
    for (; *s; s++)
        if ((*s < '0' || *s > '9') && *s != '.')
            return 0;
    return 1;
}

/* "X.Y.Z" from Py_Version (3.11+), else the PY_VERSION literal "X.Y.<digits>" in .rodata, with
 * X.Y taken from the file name (python3.10, libpython3.10.so). */
static int python_version(const char *path, const char *basename, char *out, size_t len)
{
    uint32_t hex;
    if (pp_elf_read_symbol(path, "Py_Version", &hex, sizeof(hex)) == 0 && (hex >> 24) >= 2) {
        snprintf(out, len, "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
        return 0;
    }
    const char *p = strstr(basename, "python");
    unsigned maj, min;
    if (!p || sscanf(p + 6, "%u.%u", &maj, &min) != 2)
        return -1;
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "%u.%u.", maj, min);
    return pp_elf_find_string(path, prefix, "0123456789", 12, digits_only, out, len);
}

/* The version of pid, with the ELF ids of its executable and libpython when wanted. */
static void python_elfs(int pid, char *ver, size_t vlen, pp_elfinfo *ei, bool *have_exe,
                        pp_elfinfo *li, bool *have_li)
{
    char exe[64], lib[PATH_MAX], libpath[PP_FD_PATH_LEN], exe_target[PATH_MAX];
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    *have_exe = pp_elfinfo_read(exe, ei) == 0;
    bool have_lib = pp_find_mapping(pid, "/libpython", lib, sizeof(lib)) == 0;
    *have_li = false;
    /* libpython as mapped, opened inside the process's root (a container's symlinks resolve
     * in the container); held open until its version is read */
    int libfd = have_lib ? pp_open_in_proc_root_path(pid, lib, libpath, sizeof(libpath)) : -1;
    if (libfd >= 0)
        *have_li = pp_elfinfo_read(libpath, li) == 0;
    ssize_t n = readlink(exe, exe_target, sizeof(exe_target) - 1);
    exe_target[n > 0 ? n : 0] = '\0';
    const char *ebase = strrchr(exe_target, '/') ? strrchr(exe_target, '/') + 1 : exe_target;
    if (*have_li && python_version(libpath, strrchr(lib, '/') + 1, ver, vlen) == 0) {
    } else if (*have_exe && python_version(exe, ebase, ver, vlen) == 0) {
    } else {
        ver[0] = '\0';
    }
    if (libfd >= 0)
        close(libfd);
}

int pp_python_process_version(int pid, char *out, size_t len)
{
    pp_elfinfo ei, li;
    bool he, hl;
    python_elfs(pid, out, len, &ei, &he, &li, &hl);
    return out[0] ? 0 : -1;
}

json_t *pp_python_metadata(int pid)
{
    char ver[32];
    pp_elfinfo ei, li;
    bool have_exe, have_li;
    python_elfs(pid, ver, sizeof(ver), &ei, &have_exe, &li, &have_li);
    json_t *o = json_object();
    char full[48];
    snprintf(full, sizeof(full), "Python %s", ver);
    json_object_set_new(o, "python_version", ver[0] ? json_string(full) : json_null());
    json_object_set_new(o, "exe_elfid",
                        have_exe && ei.buildid[0] ? json_string(ei.buildid) : json_null());
    json_object_set_new(o, "libpython_elfid",
                        have_li && li.buildid[0] ? json_string(li.buildid) : json_null());
    return o;
}

void pp_python_comm(int pid, const char *fallback, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", pid);
    ssize_t n = pp_read_small_file(path, out, len);
    if (n <= 0) {
        snprintf(out, len, "%s", fallback ? fallback : "");
        return;
    }
    out[strcspn(out, "\n")] = '\0';
}

static bool pyspy_available(char *why, size_t len)
{
    char path[PATH_MAX];
    if (pp_pyspy_find(path, sizeof(path)) == 0)
        return true;
    char where[2048];
    pp_resource_describe(NULL, "python/py-spy", true, where, sizeof(where));
    snprintf(why, len,
             "py-spy not found (looked for %s); install py-spy there (or set POLYPROF_RESOURCES) "
             "or use --python-mode builtin",
             where);
    return false;
}

static const char *const pyspy_modes[] = {"pyspy", NULL};
static const char *const builtin_modes[] = {"builtin", NULL};

const pp_backend pp_python_pyspy_backend = {
    .name = "py-spy",
    .modes = pyspy_modes,
    .available = pyspy_available,
    .start = pp_pyspy_start,
    .collect = pp_pyspy_collect,
    .stop = pp_pyspy_stop,
    .free = pp_pyspy_free,
};

const pp_backend pp_python_builtin_backend = {
    .name = "builtin",
    .modes = builtin_modes,
    .start = pp_pybuiltin_start,
    .collect = pp_pybuiltin_collect,
    .stop = pp_pybuiltin_stop,
    .free = pp_pybuiltin_free,
    .walks_new_processes = true,
};
