/* Process root directories held open, shared per (device, inode): the host's and polyprof's own
 * only (see pp_roots_get). */
#include <fcntl.h>
#include <stdbool.h>
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
    /* Only roots that are never unmounted are held: the host's (pid 1's) and polyprof's own,
     * and only for processes in that same mount namespace (a process in its own namespace with
     * the same root directory, e.g. a systemd unit with PrivateTmp, sees other files). Holding
     * a container's root would pin its mounts and could make its teardown fail with EBUSY; its
     * files are opened through /proc/<pid>/root while it runs instead. */
    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
    struct stat ns, host, hostns, self, selfns;
    bool keep =
        stat(path, &ns) == 0 &&
        ((stat("/proc/1/root", &host) == 0 && stat("/proc/1/ns/mnt", &hostns) == 0 &&
          host.st_dev == st.st_dev && host.st_ino == st.st_ino && hostns.st_ino == ns.st_ino) ||
         (stat("/", &self) == 0 && stat("/proc/self/ns/mnt", &selfns) == 0 &&
          self.st_dev == st.st_dev && self.st_ino == st.st_ino && selfns.st_ino == ns.st_ino));
    if (!keep) {
        close(fd);
        return -1;
    }
    int free_slot = -1;
    for (int i = 0; i < PP_ROOTS_MAX; i++) {
        struct pp_root_ref *r = &t->r[i];
        if (r->refs && r->dev == (uint64_t)st.st_dev && r->ino == (uint64_t)st.st_ino &&
            r->mntns == (uint64_t)ns.st_ino) {
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
    t->r[free_slot] = (struct pp_root_ref){
        .dev = st.st_dev, .ino = st.st_ino, .mntns = ns.st_ino, .fd = fd, .refs = 1};
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
