/* An interpreter's module in a process: the first mapping (at file offset 0) of a library whose
 * base name starts with a prefix (libpython, libruby), and the executable's mapping, for runtime
 * readers that look the interpreter's symbols up in whichever holds them. */
#ifndef PP_RT_MODULES_H
#define PP_RT_MODULES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pp_rt_module {
    char path[PATH_MAX]; /* as mapped in the target's mount namespace; "" when not found */
    uint64_t start, end; /* its file-offset-0 mapping */
    bool deleted;        /* the file was replaced or removed since it was mapped */
} pp_rt_module;

/* Fills lib (prefix match) and exe from /proc/<pid>/maps. 0, or -1 with errno when the maps
 * cannot be read. */
int pp_rt_find_modules(int pid, const char *lib_prefix, pp_rt_module *lib, pp_rt_module *exe);

/* A path to read module m of pid from (/proc/<pid>/exe for the executable, the mapped file itself
 * when deleted, else the path inside the process's root). Returns an fd the caller closes after
 * reading file (-1: nothing to close); file is "" when the module cannot be opened. */
int pp_rt_module_file(int pid, const pp_rt_module *m, bool is_exe, char *file, size_t len);

#endif
