/* Python: application metadata (python_version, exe_elfid, libpython_elfid) and appid. The
 * runtime profiler (built-in CPython sampler, py-spy launcher) is another issue's work. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtimes/appid.h"
#include "runtimes/elfinfo.h"
#include "runtimes/procfiles.h"
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

static json_t *python_metadata(int pid)
{
    char exe[64], lib[PATH_MAX], libpath[PATH_MAX + 64], exe_target[PATH_MAX], ver[32] = "";
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    pp_elfinfo ei, li;
    bool have_exe = pp_elfinfo_read(exe, &ei) == 0;
    bool have_lib = pp_find_mapping(pid, "/libpython", lib, sizeof(lib)) == 0;
    bool have_li = false;
    if (have_lib) {
        snprintf(libpath, sizeof(libpath), "/proc/%d/root%s", pid, lib);
        have_li = pp_elfinfo_read(libpath, &li) == 0;
    }
    ssize_t n = readlink(exe, exe_target, sizeof(exe_target) - 1);
    exe_target[n > 0 ? n : 0] = '\0';
    const char *ebase = strrchr(exe_target, '/') ? strrchr(exe_target, '/') + 1 : exe_target;
    if (have_li && python_version(libpath, strrchr(lib, '/') + 1, ver, sizeof(ver)) == 0) {
    } else if (have_exe && python_version(exe, ebase, ver, sizeof(ver)) == 0) {
    } else {
        ver[0] = '\0';
    }
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

static char *python_appid(int pid)
{
    return pp_appid_for_pid(pid, "python");
}

const pp_runtime_driver pp_python_driver = {
    .name = "python",
    .kind = PP_KIND_PYTHON,
    .cli_runtime = PP_RT_PYTHON,
    .metadata = python_metadata,
    .appid = python_appid,
};
