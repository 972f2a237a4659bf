#include "orchestrator/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "merge/header.h"
#include "base/log.h"
#include "base/safefile.h"
#include "base/procfiles.h"

#define MAGIC "PPSPOOL1 "
#define SUFFIX ".spool"
#define TMP_PREFIX ".tmp-"

struct pp_spool {
    char *dir;
    int dfd; /* the directory, held open: every entry is reached relative to it */
    char *label;
    pp_spool_limits lim;
    long long last_ns;
    unsigned seq;
};

static long long env_ll(const char *name, long long def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long long x = strtoll(v, &end, 10);
    return *end || x <= 0 ? def : x;
}

void pp_spool_default_limits(pp_spool_limits *l)
{
    l->max_bytes = (unsigned long long)env_ll("POLYPROF_SPOOL_MAX_MB", 256) << 20;
    l->max_age_s = env_ll("POLYPROF_SPOOL_MAX_AGE_S", 24 * 3600);
    l->max_files = (size_t)env_ll("POLYPROF_SPOOL_MAX_FILES", 10000);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long pp_spool_entry_time(const char *name)
{
    char *end;
    long long ns = strtoll(name, &end, 10);
    if (end == name || *end != '-' || ns <= 0)
        return 0;
    return ns;
}

static bool is_entry(const char *name)
{
    size_t n = strlen(name), s = strlen(SUFFIX);
    return n > s && strcmp(name + n - s, SUFFIX) == 0 && pp_spool_entry_time(name) > 0;
}

/* A listing of the spool directory (through its descriptor). */
static DIR *open_dir(pp_spool *sp)
{
    int fd = openat(sp->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    return d;
}

pp_spool *pp_spool_open(const char *dir, const char *label, const pp_spool_limits *lim, char *err,
                        size_t errlen)
{
    /* the spool: a directory of ours, 0700, never reached through a symlink (parents 0755) */
    char why[512];
    int dfd = pp_open_private_dir(dir, 0700, why, sizeof(why));
    if (dfd < 0) {
        snprintf(err, errlen, "cannot create the upload spool: %s", why);
        return NULL;
    }
    if (faccessat(dfd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
        snprintf(err, errlen, "cannot write to the upload spool %s: %s", dir, strerror(errno));
        close(dfd);
        return NULL;
    }
    pp_spool *sp = calloc(1, sizeof(*sp));
    if (!sp || !(sp->dir = strdup(dir)) || !(sp->label = strdup(label))) {
        if (sp)
            free(sp->dir);
        free(sp);
        close(dfd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sp->dfd = dfd;
    if (lim)
        sp->lim = *lim;
    else
        pp_spool_default_limits(&sp->lim);
    DIR *d = open_dir(sp);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0)
                unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
    }
    pp_spool_enforce(sp, now_ns());
    return sp;
}

void pp_spool_close(pp_spool *sp)
{
    if (!sp)
        return;
    close(sp->dfd);
    free(sp->dir);
    free(sp->label);
    free(sp);
}

const char *pp_spool_path(const pp_spool *sp)
{
    return sp->dir;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t pp_spool_list(pp_spool *sp, char ***names)
{
    *names = NULL;
    DIR *d = open_dir(sp);
    if (!d)
        return 0;
    size_t n = 0, cap = 0;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_entry(de->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, cap * sizeof(*v));
            if (!nv)
                break;
            v = nv;
        }
        if (!(v[n] = strdup(de->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof(*v), cmp_names);
    *names = v;
    return n;
}

void pp_spool_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static long long entry_size(pp_spool *sp, const char *name)
{
    struct stat st;
    return fstatat(sp->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (long long)st.st_size : 0;
}

size_t pp_spool_count(pp_spool *sp, unsigned long long *bytes)
{
    char **names;
    size_t n = pp_spool_list(sp, &names);
    unsigned long long total = 0;
    for (size_t i = 0; i < n; i++)
        total += (unsigned long long)entry_size(sp, names[i]);
    pp_spool_names_free(names, n);
    if (bytes)
        *bytes = total;
    return n;
}

void pp_spool_remove(pp_spool *sp, const char *name)
{
    unlinkat(sp->dfd, name, 0);
}

void pp_spool_enforce(pp_spool *sp, long long now)
{
    char **names;
    size_t n = pp_spool_list(sp, &names);
    if (!n) {
        free(names);
        return;
    }
    long long *sizes = calloc(n, sizeof(*sizes));
    unsigned long long total = 0;
    for (size_t i = 0; i < n; i++)
        total += (unsigned long long)(sizes ? (sizes[i] = entry_size(sp, names[i])) : 0);
    size_t left = n, dropped = 0;
    char last_why[128] = "", last_when[32] = "";
    for (size_t i = 0; i < n; i++) {
        long long age_s = (now - pp_spool_entry_time(names[i])) / 1000000000LL;
        char reason[128];
        if (age_s > sp->lim.max_age_s)
            snprintf(reason, sizeof(reason), "older than %lld s", sp->lim.max_age_s);
        else if (left > sp->lim.max_files)
            snprintf(reason, sizeof(reason), "more than %zu pending profiles", sp->lim.max_files);
        else if (total > sp->lim.max_bytes)
            snprintf(reason, sizeof(reason), "spool over %llu MiB", sp->lim.max_bytes >> 20);
        else
            break;
        char when[32];
        pp_iso_time((time_t)(pp_spool_entry_time(names[i]) / 1000000000LL), when, sizeof(when));
        /* one line per dropped profile, but no flood: after 3, one summary line */
        if (++dropped <= 3)
            pp_warn("%s upload spool %s: dropped the pending profile from %s (%s); the backend "
                    "has been unreachable too long",
                    sp->label, sp->dir, when, reason);
        snprintf(last_why, sizeof(last_why), "%s", reason);
        snprintf(last_when, sizeof(last_when), "%s", when);
        pp_spool_remove(sp, names[i]);
        total -= sizes ? (unsigned long long)sizes[i] : 0;
        left--;
    }
    if (dropped > 3)
        pp_warn("%s upload spool %s: dropped %zu more pending profiles, up to the one from %s "
                "(%s)",
                sp->label, sp->dir, dropped - 3, last_when, last_why);
    free(sizes);
    pp_spool_names_free(names, n);
}

int pp_spool_put(pp_spool *sp, const json_t *meta, const char *data, size_t len, char *err,
                 size_t errlen)
{
    long long ns = now_ns();
    if (ns <= sp->last_ns)
        ns = sp->last_ns + 1;
    sp->last_ns = ns;
    char name[96], tmp[128];
    snprintf(name, sizeof(name), "%019lld-%06u%s", ns, sp->seq++ % 1000000, SUFFIX);
    char *js = json_dumps(meta, JSON_COMPACT);
    if (!js) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int fd = pp_create_unique_at(sp->dfd, TMP_PREFIX, NULL, O_WRONLY, 0600, tmp, sizeof(tmp));
    if (fd < 0) {
        snprintf(err, errlen, "cannot write to the upload spool %s: %s", sp->dir, strerror(errno));
        free(js);
        return -1;
    }
    int rc = pp_write_all(fd, MAGIC, strlen(MAGIC)) || pp_write_all(fd, js, strlen(js)) ||
             pp_write_all(fd, "\n", 1) || pp_write_all(fd, data, len) || fsync(fd);
    int saved = errno;
    free(js);
    if (close(fd) < 0 && !rc) {
        rc = -1;
        saved = errno;
    }
    if (rc || renameat(sp->dfd, tmp, sp->dfd, name) < 0) {
        if (!rc)
            saved = errno;
        unlinkat(sp->dfd, tmp, 0);
        snprintf(err, errlen, "cannot write to the upload spool %s: %s", sp->dir, strerror(saved));
        return -1;
    }
    fsync(sp->dfd);
    pp_spool_enforce(sp, now_ns());
    return 0;
}

int pp_spool_read(pp_spool *sp, const char *name, json_t **meta, char **data, size_t *len)
{
    *meta = NULL;
    *data = NULL;
    *len = 0;
    int fd = openat(sp->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* a regular file no larger than the whole spool may be */
    size_t size = 0;
    char *buf = pp_read_fd(fd, (size_t)sp->lim.max_bytes, 0, &size);
    close(fd);
    if (!buf || size < strlen(MAGIC)) {
        free(buf);
        return -1;
    }
    char *nl = memchr(buf, '\n', size);
    if (memcmp(buf, MAGIC, strlen(MAGIC)) != 0 || !nl) {
        free(buf);
        return -1;
    }
    const char *js = buf + strlen(MAGIC);
    json_t *m = json_loadb(js, (size_t)(nl - js), 0, NULL);
    if (!json_is_object(m)) {
        json_decref(m);
        free(buf);
        return -1;
    }
    size_t off = (size_t)(nl + 1 - buf);
    memmove(buf, buf + off, size - off);
    buf[size - off] = '\0';
    *meta = m;
    *data = buf;
    *len = size - off;
    return 0;
}
