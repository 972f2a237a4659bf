/* In-memory JIT code names per process (jitnames.h): per process an array of ranges and an arena
 * of names; one mutex. The array is a sorted main part, then a sorted tail, then the entries
 * added since the last lookup: a lookup sorts only those and merges them into the tail, and the
 * tail into the main part once it is more than an eighth of it, so that a process streaming
 * new code costs each lookup about its additions, not a sort of the whole table. Memory is
 * counted as allocated, per process and in all. */
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
    size_t nmain;   /* e[0, nmain): sorted */
    size_t nsorted; /* e[nmain, nsorted): sorted tail; e[nsorted, n): unsorted */
    char *arena;
    size_t alen, acap;
    uint32_t seq;
} table;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static table tabs[PP_JITNAMES_MAX_PIDS];
static uint64_t tick, dropped, sort_work;
static size_t total; /* bytes allocated for all tables */

static size_t table_bytes(const table *t)
{
    return t->cap * sizeof(ent) + t->acap;
}

static void clear(table *t)
{
    total -= table_bytes(t);
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

/* Bytes t may still allocate under both bounds. */
static size_t room(const table *t)
{
    size_t mine = table_bytes(t), a = 0, b = 0;
    if (mine < PP_JITNAMES_MAX_BYTES)
        a = PP_JITNAMES_MAX_BYTES - mine;
    if (total < PP_JITNAMES_MAX_TOTAL)
        b = PP_JITNAMES_MAX_TOTAL - total;
    return a < b ? a : b;
}

/* p (*cap elements of size sz) grown to hold need elements: doubling, cut to the room left.
 * The array, or NULL (p unchanged) when it cannot. */
static void *grow(const table *t, void *p, size_t *cap, size_t need, size_t first, size_t sz)
{
    if (need <= *cap)
        return p;
    size_t nc = *cap ? *cap : first;
    while (nc < need)
        nc *= 2;
    size_t most = *cap + room(t) / sz;
    if (nc > most)
        nc = most;
    if (nc < need)
        return NULL;
    void *np = realloc(p, nc * sz);
    if (!np)
        return NULL;
    total += (nc - *cap) * sz;
    *cap = nc;
    return np;
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
    ent *ne = grow(t, t->e, &t->cap, t->n + 1, 256, sizeof(ent));
    if (ne)
        t->e = ne;
    char *na = ne ? grow(t, t->arena, &t->acap, t->alen + nl, 16384, 1) : NULL;
    if (!na) {
        dropped++;
        goto out;
    }
    t->arena = na;
    memcpy(t->arena + t->alen, name, nl);
    t->e[t->n++] = (ent){start, start + size, t->seq++, (uint32_t)t->alen};
    t->alen += nl;
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

/* a[0, na) and a[na, na + nb), each sorted, become one sorted run. */
static void merge(ent *a, size_t na, size_t nb)
{
    if (!na || !nb || by_start(&a[na - 1], &a[na]) < 0)
        return; /* already in order (code is often added at rising addresses) */
    sort_work += na + nb;
    ent *tmp = malloc(nb * sizeof(*tmp));
    if (!tmp) {
        qsort(a, na + nb, sizeof(*a), by_start);
        return;
    }
    memcpy(tmp, a + na, nb * sizeof(*tmp));
    size_t i = na, j = nb, k = na + nb;
    while (j > 0) {
        if (i > 0 && by_start(&a[i - 1], &tmp[j - 1]) > 0)
            a[--k] = a[--i];
        else
            a[--k] = tmp[--j];
    }
    free(tmp);
}

static void settle(table *t)
{
    if (t->nsorted < t->n) {
        size_t k = t->n - t->nsorted;
        qsort(t->e + t->nsorted, k, sizeof(*t->e), by_start);
        sort_work += k;
        merge(t->e + t->nmain, t->nsorted - t->nmain, k);
        t->nsorted = t->n;
    }
    if (t->n - t->nmain > t->nmain / 8) {
        merge(t->e, t->nmain, t->n - t->nmain);
        t->nmain = t->n;
    }
}

/* How far back from the last range starting at or below ip a lookup looks for one holding it
 * (ranges of code rarely nest; re-compiled code at a reused address overlaps a few). */
#define LOOK_BACK 16

static void search(const ent *e, size_t n, uint64_t ip, const ent **best)
{
    size_t lo = 0, hi = n; /* first entry with start > ip */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo, back = 0; k > 0 && back < LOOK_BACK; k--, back++) {
        const ent *x = &e[k - 1];
        if (ip < x->end && (!*best || x->seq > (*best)->seq))
            *best = x;
    }
}

bool pp_jitnames_find(int pid, uint64_t ip, char *out, size_t len)
{
    bool found = false;
    pthread_mutex_lock(&mu);
    table *t = find_table(pid);
    if (t && t->n) {
        settle(t);
        const ent *best = NULL;
        search(t->e, t->nmain, ip, &best);
        search(t->e + t->nmain, t->n - t->nmain, ip, &best);
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

size_t pp_jitnames_bytes(void)
{
    pthread_mutex_lock(&mu);
    size_t b = total;
    pthread_mutex_unlock(&mu);
    return b;
}

uint64_t pp_jitnames_sort_work(void)
{
    pthread_mutex_lock(&mu);
    uint64_t w = sort_work;
    pthread_mutex_unlock(&mu);
    return w;
}
