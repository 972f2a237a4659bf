/* Process root directories held open, shared per (device, inode): the host's and polyprof's own
 * only (see pp_roots_get). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/symbols/symbols_internal.h"

/* The root and mount namespace of proc ("/proc/<pid>", "/proc/1", "/proc/self"). */
static int root_id(const char *proc, pp_root_id *id)
{
    char path[64];
    struct stat root, ns;
    snprintf(path, sizeof(path), "%s/root", proc);
    if (stat(path, &root) != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/ns/mnt", proc);
    if (stat(path, &ns) != 0)
        return -1;
    *id = (pp_root_id){.dev = root.st_dev, .ino = root.st_ino, .mntns = ns.st_ino};
    return 0;
}

static bool same_id(const pp_root_id *a, const pp_root_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->mntns == b->mntns;
}

int pp_roots_get(pp_roots *t, int pid)
{
    /* Only roots that are never unmounted are held: the host's (pid 1's) and polyprof's own,
     * and only for processes in that same mount namespace (a process in its own namespace with
     * the same root directory, e.g. a systemd unit with PrivateTmp, sees other files). Holding
     * a container's root would pin its mounts and could make its teardown fail with EBUSY; its
     * files are opened through /proc/<pid>/root while it runs instead. Both identities are
     * fixed for the run: read once. */
    if (!t->trusted_read) {
        t->trusted_read = 1;
        t->ntrusted = 0;
        if (root_id("/proc/1", &t->trusted[t->ntrusted]) == 0)
            t->ntrusted++;
        if (root_id("/proc/self", &t->trusted[t->ntrusted]) == 0)
            t->ntrusted++;
    }
    char proc[32];
    snprintf(proc, sizeof(proc), "/proc/%d", pid);
    pp_root_id id;
    if (root_id(proc, &id) != 0)
        return -1;
    bool keep = false;
    for (int i = 0; i < t->ntrusted; i++)
        keep = keep || same_id(&id, &t->trusted[i]);
    if (!keep)
        return -1;
    int free_slot = -1;
    for (int i = 0; i < PP_ROOTS_MAX; i++) {
        struct pp_root_ref *r = &t->r[i];
        if (r->refs && same_id(&r->id, &id)) {
            r->refs++;
            return i;
        }
        if (!r->refs && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof(path), "%s/root", proc);
    int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 &&
        (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != id.dev || (uint64_t)st.st_ino != id.ino)) {
        close(fd); /* the pid changed hands in between */
        fd = -1;
    }
    if (fd < 0)
        return -1;
    t->r[free_slot] = (struct pp_root_ref){.id = id, .fd = fd, .refs = 1};
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
