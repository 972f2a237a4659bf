/* The per-executable answer cache: see execache.h. */
#include "base/execache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"

#define EXECACHE_MAX 65536 /* distinct executables; beyond this the cache starts over */

typedef struct entry {
    dev_t dev;
    ino_t ino;
    long long mtime_sec;
    long mtime_nsec;
    long long size;
    bool match;
} entry;

static uint64_t identity_hash(const struct stat *st)
{
    uint64_t k[5] = {st->st_dev, st->st_ino, (uint64_t)st->st_mtim.tv_sec,
                     (uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_size};
    return pp_hash_bytes(k, sizeof(k), 0);
}

static bool same(const entry *g, const struct stat *st)
{
    return g->dev == st->st_dev && g->ino == st->st_ino && g->mtime_sec == st->st_mtim.tv_sec &&
           g->mtime_nsec == st->st_mtim.tv_nsec && g->size == (long long)st->st_size;
}

int pp_execache_check_pid(pp_execache *c, int pid, int (*check)(int fd), bool *match)
{
    char path[48];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    if (stat(path, &st) != 0)
        return -1;
    uint64_t h = identity_hash(&st);
    pp_htab_probe p;
    for (entry *g = pp_htab_first(&c->tab, h, &p); g; g = pp_htab_next(&c->tab, &p)) {
        if (same(g, &st)) {
            *match = g->match;
            return 0;
        }
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    c->opens++;
    /* the answer is stored under the identity of the file read, not of the one stat saw: the
     * process may have exec'd another file between the two (a wrong answer would otherwise be
     * cached for the first file) */
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    h = identity_hash(&st);
    int r = check(fd);
    close(fd);
    if (!c->tab.esize)
        PP_HTAB_INIT(&c->tab, entry, 50);
    if (pp_htab_count(&c->tab) >= EXECACHE_MAX) /* start over rather than grow without bound */
        pp_htab_clear(&c->tab);
    entry *g = pp_htab_add(&c->tab, h);
    if (g)
        *g = (entry){.dev = st.st_dev,
                     .ino = st.st_ino,
                     .mtime_sec = st.st_mtim.tv_sec,
                     .mtime_nsec = st.st_mtim.tv_nsec,
                     .size = (long long)st.st_size,
                     .match = r == 1};
    *match = r == 1;
    return 0;
}

void pp_execache_free(pp_execache *c)
{
    pp_htab_free(&c->tab);
    c->opens = 0;
}

void *pp_execache_new(void)
{
    return calloc(1, sizeof(pp_execache));
}

void pp_execache_delete(void *c)
{
    if (!c)
        return;
    pp_execache_free(c);
    free(c);
}

unsigned long pp_execache_opens(const void *c)
{
    return ((const pp_execache *)c)->opens;
}
