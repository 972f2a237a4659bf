/* Small per-JVM facts read from /proc, and the safemode state: see java.h. */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/inroot.h"
#include "runtimes/java/java.h"
#include "runtimes/java/jvminfo.h"
#include "runtimes/java/jvmutil.h"
#include "base/procfiles.h"

static pthread_mutex_t safemode_lock = PTHREAD_MUTEX_INITIALIZER;
static char safemode_reason[64];

bool pp_java_safemode_reason(char *reason, size_t len)
{
    pthread_mutex_lock(&safemode_lock);
    bool set = safemode_reason[0] != '\0';
    if (set && reason)
        snprintf(reason, len, "%s", safemode_reason);
    pthread_mutex_unlock(&safemode_lock);
    return set;
}

void pp_java_safemode_trigger(const char *reason)
{
    pthread_mutex_lock(&safemode_lock);
    bool first = safemode_reason[0] == '\0';
    if (first)
        snprintf(safemode_reason, sizeof(safemode_reason), "%s", reason);
    pthread_mutex_unlock(&safemode_lock);
    if (first)
        pp_warn("Java profiling has been disabled for the rest of this run (safemode: %s); "
                "restart polyprof to profile Java again",
                reason);
}

void pp_java_safemode_reset(void)
{
    pthread_mutex_lock(&safemode_lock);
    safemode_reason[0] = '\0';
    pthread_mutex_unlock(&safemode_lock);
}

/* Value of KEY="..." in a JDK release file. */
static int release_value(const char *text, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=' && p[kl + 1] == '"') {
            const char *v = p + kl + 2, *e = strchr(v, '"');
            if (!e || (size_t)(e - v) >= len)
                return -1;
            memcpy(out, v, (size_t)(e - v));
            out[e - v] = '\0';
            return 0;
        }
    }
    return -1;
}

int pp_java_release_info(int pid, char *libjvm, size_t liblen, char *version, size_t vlen,
                         char *date, size_t dlen)
{
    char lib[PATH_MAX], release[PATH_MAX + 64], text[8192], fdpath[PP_FD_PATH_LEN];
    if (version && vlen)
        version[0] = '\0';
    if (date && dlen)
        date[0] = '\0';
    if (pp_find_mapping(pid, "/libjvm.so", lib, sizeof(lib)) < 0)
        return -1;
    snprintf(libjvm, liblen, "%s", lib);
    /* <java home>/lib/server/libjvm.so -> <java home>/release */
    snprintf(release, sizeof(release), "%s", lib);
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(release, '/');
        if (slash)
            *slash = '\0';
    }
    strncat(release, "/release", sizeof(release) - strlen(release) - 1);
    /* inside the JVM's root: a container's symlinks resolve in the container */
    int fd = pp_open_in_proc_root_path(pid, release, fdpath, sizeof(fdpath));
    if (fd >= 0 && pp_read_small_file(fdpath, text, sizeof(text)) > 0) {
        if (version)
            release_value(text, "JAVA_VERSION", version, vlen);
        if (date)
            release_value(text, "JAVA_VERSION_DATE", date, dlen);
    }
    if (fd >= 0)
        close(fd);
    return 0;
}

bool pp_java_supported(int pid, char *why, size_t len)
{
    char lib[PATH_MAX], j9[PATH_MAX], version[64];
    if (pp_find_mapping(pid, "libj9vm", j9, sizeof(j9)) == 0) {
        snprintf(why, len, "OpenJ9 is not supported");
        return false;
    }
    if (pp_java_release_info(pid, lib, sizeof(lib), version, sizeof(version), NULL, 0) == 0 &&
        version[0]) {
        int major = pp_java_major(version);
        if (major > 0 && major <= 6) {
            snprintf(why, len, "HotSpot %s is too old", version);
            return false;
        }
    }
    return true;
}

bool pp_java_jfr_initialized(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    for (int i = 0; !found && i < 100000 && (e = readdir(d)); i++) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char cpath[300], comm[32];
        snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/comm", pid, e->d_name);
        if (pp_read_small_file(cpath, comm, sizeof(comm)) > 0 &&
            strncmp(comm, "JFR Recorder", 12) == 0)
            found = true;
    }
    closedir(d);
    return found;
}

void pp_java_each_thread(int pid, int (*fn)(void *arg, int pid, long tid), void *arg)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    for (int i = 0; i < 100000 && (e = readdir(d)); i++) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (tid > 0 && !*end && fn(arg, pid, tid))
            break;
    }
    closedir(d);
}

/* pp_java_each_thread: adds the thread's innermost id -> ours. */
static int add_ns_id(void *arg, int pid, long tid)
{
    int inner = pp_read_nspid(pid, (int)tid, NULL);
    return inner > 0 &&
           pp_u64map_put(&((pp_java_tids *)arg)->ids, (uint64_t)inner, (uint64_t)tid) < 0;
}

void pp_java_tids_init(pp_java_tids *t, int pid)
{
    memset(t, 0, sizeof(*t));
    int levels;
    if (pp_read_nspid(pid, 0, &levels) <= 0 || levels < 2)
        return;
    t->other_ns = true;
    pp_java_each_thread(pid, add_ns_id, t);
}

uint32_t pp_java_tids_map(void *arg, long tid)
{
    const pp_java_tids *t = arg;
    if (tid <= 0 || tid > (long)UINT32_MAX)
        return 0;
    if (!t || !t->other_ns)
        return (uint32_t)tid;
    uint64_t *v = pp_u64map_get(&t->ids, (uint64_t)tid);
    return v ? (uint32_t)*v : 0;
}

void pp_java_tids_free(pp_java_tids *t)
{
    pp_u64map_free(&t->ids);
}
