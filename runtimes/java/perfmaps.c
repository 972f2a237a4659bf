/* JIT symbols for the system sampler: `Compiler.perfmap` in every JVM, and removal of the map
 * files polyprof created (see java.h). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/log.h"
#include "runtimes/inroot.h"
#include "runtimes/java/attach.h"
#include "runtimes/java/java.h"
#include "runtimes/java/jfr_session.h"
#include "runtimes/java/jvmutil.h"
#include "runtimes/procfiles.h"

/* One JVM polyprof asked for a perf map. */
typedef struct pm_entry {
    int pid;
    unsigned long long start;
    int nspid;
    bool ours;  /* the map did not exist before polyprof's first Compiler.perfmap */
    int tmp_fd; /* O_PATH fd of the JVM's /tmp (works after the JVM is gone), -1 if none */
    bool seen;  /* listed in the current refresh */
} pm_entry;

static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static pm_entry *pm;
static size_t npm, cappm;

static void remove_map(pm_entry *e)
{
    if (e->ours && e->tmp_fd >= 0) {
        char name[64];
        snprintf(name, sizeof(name), "perf-%d.map", e->nspid);
        if (unlinkat(e->tmp_fd, name, 0) == 0)
            pp_debug("java: removed perf map of pid %d", e->pid);
    }
    if (e->tmp_fd >= 0)
        close(e->tmp_fd);
    e->tmp_fd = -1;
}

static pm_entry *find(int pid, unsigned long long start)
{
    for (size_t i = 0; i < npm; i++)
        if (pm[i].pid == pid && pm[i].start == start)
            return &pm[i];
    return NULL;
}

static int nspid_of(int pid)
{
    char path[64], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    pp_jattach_status st;
    if (pp_read_small_file(path, text, sizeof(text)) <= 0 || pp_jattach_parse_status(text, &st) < 0)
        return -1;
    return st.nspid;
}

static pm_entry *track(const pp_proc *p)
{
    pm_entry *e = find(p->pid, p->start_ticks);
    if (e)
        return e;
    int nspid = nspid_of(p->pid);
    if (nspid <= 0)
        return NULL;
    if (npm == cappm) {
        size_t nc = cappm ? cappm * 2 : 16;
        pm_entry *n = realloc(pm, nc * sizeof(*n));
        if (!n)
            return NULL;
        pm = n;
        cappm = nc;
    }
    e = &pm[npm++];
    *e = (pm_entry){.pid = p->pid, .start = p->start_ticks, .nspid = nspid};
    /* the JVM's /tmp resolved inside its root: a symlinked /tmp stays in the container */
    e->tmp_fd = pp_open_in_proc_root(p->pid, "/tmp", O_PATH | O_DIRECTORY);
    char name[64];
    snprintf(name, sizeof(name), "perf-%d.map", nspid);
    struct stat sb;
    e->ours = e->tmp_fd >= 0 && fstatat(e->tmp_fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0;
    /* First sight of this JVM in this run: what a killed polyprof left in its /tmp goes. */
    if (e->tmp_fd >= 0 && pp_jfr_cleanup_stale(e->tmp_fd) > 0)
        pp_info("java: removed directories an earlier polyprof left in the /tmp of pid %d", p->pid);
    return e;
}

void pp_java_perfmaps_refresh(const pp_proc_list *procs)
{
    if (pp_java_safemode_reason(NULL, 0))
        return;
    pthread_mutex_lock(&pm_lock);
    for (size_t i = 0; i < npm; i++)
        pm[i].seen = false;
    for (size_t i = 0; procs && i < procs->n; i++) {
        const pp_proc *p = &procs->procs[i];
        char why[128];
        if (p->kind != PP_KIND_JAVA || !pp_java_supported(p->pid, why, sizeof(why)))
            continue;
        pm_entry *e = track(p);
        if (!e)
            continue;
        e->seen = true;
        char *out = NULL, err[256];
        int rc = pp_jattach_jcmd(p->pid, "Compiler.perfmap", PP_JAVA_QUICK_TIMEOUT, &out, err,
                                 sizeof(err));
        if (rc != 0)
            pp_debug("java: Compiler.perfmap in pid %d failed: %s", p->pid,
                     rc < 0 ? err : (out ? out : ""));
        free(out);
    }
    /* JVMs that are gone: their maps go with them. */
    size_t k = 0;
    for (size_t i = 0; i < npm; i++) {
        if (!pm[i].seen && pp_java_start_ticks(pm[i].pid) != pm[i].start) {
            remove_map(&pm[i]);
            continue;
        }
        pm[k++] = pm[i];
    }
    npm = k;
    pthread_mutex_unlock(&pm_lock);
}

void pp_java_perfmaps_cleanup(void)
{
    pthread_mutex_lock(&pm_lock);
    for (size_t i = 0; i < npm; i++)
        remove_map(&pm[i]);
    free(pm);
    pm = NULL;
    npm = cappm = 0;
    pthread_mutex_unlock(&pm_lock);
}
