/* The .NET process's application metadata: gProfiler's `dotnet_version` key. gProfiler runs the
 * process's executable with --version (the host's SDK version, absent without an SDK); polyprof
 * runs nothing of a target and takes the runtime's version from where its libcoreclr.so is
 * mapped: .../shared/Microsoft.NETCore.App/<version>/libcoreclr.so. Absent when it is not there
 * (a single-file app, a layout of another shape). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/procfiles.h"
#include "runtimes/dotnet/dotnet.h"
#include "runtimes/runtime.h"

bool pp_net_version_from_path(const char *path, char *out, size_t len)
{
    const char *leaf = strrchr(path, '/');
    if (!leaf || strncmp(leaf, "/libcoreclr.so", 14) != 0 || leaf == path)
        return false;
    const char *dir = leaf - 1;
    while (dir > path && *dir != '/')
        dir--;
    if (*dir != '/')
        return false;
    dir++;
    size_t n = (size_t)(leaf - dir);
    /* a version: digits and dots, then an optional pre-release tag ("5.0.0-preview.1") */
    if (n == 0 || n >= len || n > 64 || !isdigit((unsigned char)dir[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)dir[i]) && dir[i] != '.' && dir[i] != '-')
            return false;
    memcpy(out, dir, n);
    out[n] = '\0';
    return true;
}

json_t *pp_dotnet_metadata(int pid)
{
    json_t *o = json_object();
    char path[4096], ver[65];
    if (o && pp_find_mapping(pid, "/libcoreclr.so", path, sizeof(path)) == 0 &&
        pp_net_version_from_path(path, ver, sizeof(ver)))
        json_object_set_new(o, "dotnet_version", json_string(ver));
    return o;
}
