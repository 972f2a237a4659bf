/* An interpreter's module in a process (modules.h). */
#include "runtimes/modules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/inroot.h"
#include "runtimes/symbols/symbols_internal.h"

int pp_rt_find_modules(int pid, const char *lib_prefix, pp_rt_module *lib, pp_rt_module *exe)
{
    char path[64], target[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    ssize_t tl = readlink(path, target, sizeof(target) - 1);
    target[tl > 0 ? tl : 0] = '\0';
    const char *del = strstr(target, " (deleted)");
    size_t tlen = del ? (size_t)(del - target) : strlen(target);
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    lib->path[0] = exe->path[0] = '\0';
    size_t plen_prefix = strlen(lib_prefix);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        pp_maps_line ml;
        if (pp_maps_parse_line(line, (size_t)n, &ml) != 0 || ml.offset != 0 || !ml.pathlen ||
            ml.pathlen >= PATH_MAX)
            continue;
        const char *base = memrchr(ml.path, '/', ml.pathlen);
        base = base ? base + 1 : ml.path;
        size_t plen = ml.pathlen - (ml.deleted ? strlen(" (deleted)") : 0);
        pp_rt_module *m = NULL;
        if (!lib->path[0] && strncmp(base, lib_prefix, plen_prefix) == 0)
            m = lib;
        else if (!exe->path[0] && tlen && plen == tlen && memcmp(ml.path, target, tlen) == 0)
            m = exe;
        if (m) {
            memcpy(m->path, ml.path, plen);
            m->path[plen] = '\0';
            m->start = ml.start;
            m->end = ml.end;
            m->deleted = ml.deleted;
        }
    }
    free(line);
    fclose(f);
    return 0;
}

int pp_rt_module_file(int pid, const pp_rt_module *m, bool is_exe, char *file, size_t len)
{
    int fd = -1;
    if (is_exe)
        snprintf(file, len, "/proc/%d/exe", pid);
    else if (m->deleted) /* e.g. upgraded in place: the mapped file itself */
        snprintf(file, len, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)m->start,
                 (unsigned long long)m->end);
    else if ((fd = pp_open_in_proc_root_path(pid, m->path, file, len)) < 0)
        file[0] = '\0'; /* inside the process's root only: not found */
    return fd;
}
