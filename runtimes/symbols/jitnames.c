/* In-memory JIT code names per process (jitnames.h): one array of ranges per process, sorted on
 * the first lookup after an addition, and an arena of names; one mutex. */
#include "runtimes/symbols/jitnames.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ent {
    uint64_t start, end;
    uint32_t seq;  /* order of addition: later wins */
    uint32_t name; /* offset in the arena */
} ent;

typedef struct table {
    int pid;       /* 0: free slot */
    uint64_t used; /* tick of the last addition (least recently used slot is reused) */
    ent *e;
    size_t n, cap;
    bool sorted;
    char *arena;
    size_t alen, acap;
    uint32_t seq;
} table;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static table tabs[PP_JITNAMES_MAX_PIDS];
static uint64_t tick, dropped;

static void clear(table *t)
{
    free(t->e);
    free(t->arena);
    memset(t, 0, sizeof(*t));
}

static table *find_table(int pid)
{
    for (size_t i = 0; i < PP_JITNAMES_MAX_PIDS; i++)
        if (tabs[i].pid == pid)
            return &tabs[i];
    return NULL;
}

static table *get_table(int pid)
{
    table *t = find_table(pid);
    if (t)
        return t;
    table *lru = &tabs[0];
    for (size_t i = 0; i < PP_JITNAMES_MAX_PIDS; i++) {
        if (tabs[i].pid == 0) {
            lru = &tabs[i];
            break;
        }
        if (tabs[i].used < lru->used)
            lru = &tabs[i];
    }
    if (lru->pid)
        dropped += lru->n;
    clear(lru);
    lru->pid = pid;
    return lru;
}

int pp_jitnames_add(int pid, uint64_t start, uint64_t size, const char *name)
{
    size_t nl = strlen(name) + 1;
    if (size == 0 || start + size < start || pid <= 0)
        return -1;
    pthread_mutex_lock(&mu);
    table *t = get_table(pid);
    t->used = ++tick;
    int rc = -1;
    if (t->n >= PP_JITNAMES_MAX_ENTRIES || t->alen + nl > PP_JITNAMES_MAX_BYTES) {
        dropped++;
        goto out;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        ent *ne = realloc(t->e, nc * sizeof(*ne));
        if (!ne)
            goto out;
        t->e = ne;
        t->cap = nc;
    }
    if (t->alen + nl > t->acap) {
        size_t nc = t->acap ? t->acap : 16384;
        while (nc < t->alen + nl)
            nc *= 2;
        char *na = realloc(t->arena, nc);
        if (!na)
            goto out;
        t->arena = na;
        t->acap = nc;
    }
    memcpy(t->arena + t->alen, name, nl);
    t->e[t->n++] = (ent){start, start + size, t->seq++, (uint32_t)t->alen};
    t->alen += nl;
    t->sorted = false;
    rc = 0;
out:
    pthread_mutex_unlock(&mu);
    return rc;
}

static int by_start(const void *a, const void *b)
{
    const ent *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* How far back from the last range starting at or below ip a lookup looks for one holding it
 * (ranges of code rarely nest; re-compiled code at a reused address overlaps a few). */
#define LOOK_BACK 16

bool pp_jitnames_find(int pid, uint64_t ip, char *out, size_t len)
{
    bool found = false;
    pthread_mutex_lock(&mu);
    table *t = find_table(pid);
    if (t && t->n) {
        if (!t->sorted) {
            qsort(t->e, t->n, sizeof(*t->e), by_start);
            t->sorted = true;
        }
        size_t lo = 0, hi = t->n; /* first entry with start > ip */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (t->e[mid].start <= ip)
                lo = mid + 1;
            else
                hi = mid;
        }
        const ent *best = NULL;
        for (size_t k = lo, back = 0; k > 0 && back < LOOK_BACK; k--, back++) {
            const ent *e = &t->e[k - 1];
            if (ip < e->end && (!best || e->seq > best->seq))
                best = e;
        }
        if (best) {
            snprintf(out, len, "%s", t->arena + best->name);
            found = true;
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}

void pp_jitnames_forget(int pid)
{
    pthread_mutex_lock(&mu);
    table *t = find_table(pid);
    if (t)
        clear(t);
    pthread_mutex_unlock(&mu);
}

size_t pp_jitnames_count(int pid)
{
    pthread_mutex_lock(&mu);
    table *t = find_table(pid);
    size_t n = t ? t->n : 0;
    pthread_mutex_unlock(&mu);
    return n;
}

uint64_t pp_jitnames_dropped(void)
{
    pthread_mutex_lock(&mu);
    uint64_t d = dropped;
    pthread_mutex_unlock(&mu);
    return d;
}
