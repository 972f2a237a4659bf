/* Process root directories held open, shared per (device, inode). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/symbols/symbols_internal.h"

int pp_roots_get(pp_roots *t, int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/root", pid);
    int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    int free_slot = -1;
    for (int i = 0; i < PP_ROOTS_MAX; i++) {
        struct pp_root_ref *r = &t->r[i];
        if (r->refs && r->dev == (uint64_t)st.st_dev && r->ino == (uint64_t)st.st_ino) {
            r->refs++;
            close(fd);
            return i;
        }
        if (!r->refs && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0) {
        close(fd);
        return -1;
    }
    t->r[free_slot] = (struct pp_root_ref){.dev = st.st_dev, .ino = st.st_ino, .fd = fd, .refs = 1};
    return free_slot;
}

void pp_roots_put(pp_roots *t, int idx)
{
    if (idx < 0 || idx >= PP_ROOTS_MAX || !t->r[idx].refs)
        return;
    if (--t->r[idx].refs == 0) {
        close(t->r[idx].fd);
        t->r[idx].fd = -1;
    }
}

int pp_roots_fd(const pp_roots *t, int idx)
{
    return idx >= 0 && idx < PP_ROOTS_MAX && t->r[idx].refs ? t->r[idx].fd : -1;
}
