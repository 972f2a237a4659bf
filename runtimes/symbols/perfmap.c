/* /tmp/perf-<pid>.map parsing: one "START SIZE name" per line, hex numbers, name to end of line;
 * and a process's map in memory, bounded (see symbols_internal.h). */
#include "runtimes/symbols/symbols_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t parse_hex(const char *s, size_t len, size_t i, uint64_t *out)
{
    if (i + 1 < len && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
        i += 2;
    uint64_t v = 0;
    int digits = 0;
    for (; i < len; i++) {
        char c = s[i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            break;
        if (++digits > 16)
            return 0;
        v = (v << 4) | (uint64_t)d;
    }
    if (digits == 0)
        return 0;
    *out = v;
    return i;
}

int pp_perfmap_parse_line(const char *line, size_t len, uint64_t *start, uint64_t *size,
                          const char **name, size_t *namelen)
{
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    size_t j = parse_hex(line, len, i, start);
    if (j == 0 || j >= len || (line[j] != ' ' && line[j] != '\t'))
        return -1;
    while (j < len && (line[j] == ' ' || line[j] == '\t'))
        j++;
    size_t k = parse_hex(line, len, j, size);
    if (k == 0 || k >= len || (line[k] != ' ' && line[k] != '\t'))
        return -1;
    k++; /* exactly one separator: the name runs to the end of the line */
    if (k >= len)
        return -1;
    *name = line + k;
    *namelen = len - k;
    return 0;
}

/* ---- the bounded in-memory map ---- */

#define CHUNK (1u << 20)    /* bytes read from the file at a time */
#define BATCH 65536         /* new entries merged into the map at a time */
#define KEEP_FRACTION 1 / 2 /* an eviction leaves the map at this part of its bound */
/* pp_pm_sym.used: the clock of its last lookup with this bit, else the clock of the read that
 * added it; sorted from the largest, entries that named a sample come first (last used first),
 * then the others (newest first) */
#define USED 0x80000000u

static size_t bound(const pp_perfmap *m)
{
    if (m->max_bytes)
        return m->max_bytes;
    static size_t from_env; /* read once */
    if (!from_env) {
        const char *v = getenv("POLYPROF_PERFMAP_MAX_MB");
        char *end;
        long long mb = v && *v ? strtoll(v, &end, 10) : 0;
        from_env = mb > 0 && mb < (1ll << 20) && !*end ? (size_t)mb << 20 : PP_PERFMAP_MAX_BYTES;
    }
    return from_env;
}

size_t pp_perfmap_memory(const pp_perfmap *m)
{
    return m->cap * sizeof(pp_pm_sym) + m->acap;
}

static void clear(pp_perfmap *m)
{
    free(m->syms);
    free(m->arena);
    m->syms = NULL;
    m->arena = NULL;
    m->n = m->cap = m->alen = m->acap = m->garbage = 0;
    m->size = m->parsed = 0;
    m->complete = 0;
    m->headlen = m->taillen = 0;
}

void pp_perfmap_free(pp_perfmap *m)
{
    if (m)
        clear(m);
}

static const char *name_of(const pp_perfmap *m, const pp_pm_sym *e)
{
    return m->arena + e->name;
}

static int by_addr_then_age(const void *pa, const void *pb)
{
    const pp_pm_sym *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->name < b->name ? -1 : a->name > b->name; /* names are appended in file order */
}

/* Merges the new entries pend (file order) into the sorted map; at one address the newest wins. */
static int merge(pp_perfmap *m, pp_pm_sym *pend, size_t np)
{
    size_t k = 1; /* a JIT mostly writes at rising addresses: then there is nothing to sort */
    while (k < np && pend[k - 1].addr <= pend[k].addr)
        k++;
    if (k < np)
        qsort(pend, np, sizeof(*pend), by_addr_then_age);
    size_t w = 0;
    for (size_t i = 0; i < np; i++) {
        if (w && pend[w - 1].addr == pend[i].addr) {
            m->garbage += strlen(name_of(m, &pend[w - 1])) + 1;
            pend[w - 1] = pend[i];
        } else {
            pend[w++] = pend[i];
        }
    }
    np = w;
    /* Merged in place from the end into the table grown by realloc, not into a new table per
     * chunk (a large table is a mapping of its own: a new one is faulted in page by page). */
    size_t total = m->n + np;
    pp_pm_sym *syms = realloc(m->syms, (total ? total : 1) * sizeof(*syms));
    if (!syms)
        return -1;
    m->syms = syms;
    size_t i = m->n, j = np, o = total; /* o - i >= j: writes never overtake the reads */
    while (j > 0) {
        if (i > 0 && syms[i - 1].addr > pend[j - 1].addr) {
            syms[--o] = syms[--i];
        } else {
            if (i > 0 && syms[i - 1].addr == pend[j - 1].addr) {
                m->garbage += strlen(name_of(m, &syms[i - 1])) + 1;
                i--; /* replaced: the newest wins */
            }
            syms[--o] = pend[--j];
        }
    }
    if (o > i) /* entries replaced left a gap below the merged part */
        memmove(syms + i, syms + o, (total - o) * sizeof(*syms));
    m->n = i + (total - o);
    m->cap = total;
    return 0;
}

/* The bytes of the entries whose `used` is at least t. */
static uint64_t cost_from(const pp_perfmap *m, const uint32_t *cost, uint64_t t)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->syms[i].used >= t)
            sum += cost[i];
    return sum;
}

/* Marks in keep the entries an eviction keeps, in the order of their `used` (from the
 * largest) within target bytes: the smallest threshold whose entries fit is found by bisection
 * between the smallest and the largest value (a few passes over the map, no sort: a large map
 * is evicted from many times while it is read), then entries just below it fill what is left. */
static void choose(const pp_perfmap *m, const uint32_t *cost, unsigned char *keep, size_t target)
{
    uint64_t lo = UINT32_MAX, hi = 0; /* between the smallest value and past the largest */
    for (size_t i = 0; i < m->n; i++) {
        lo = m->syms[i].used < lo ? m->syms[i].used : lo;
        hi = m->syms[i].used > hi ? m->syms[i].used : hi;
    }
    hi++; /* cost_from(hi) = 0 fits */
    if (lo > hi)
        lo = hi;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cost_from(m, cost, mid) <= target)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint64_t total = 0;
    int64_t below = -1; /* the largest value under the threshold */
    for (size_t i = 0; i < m->n; i++) {
        if (m->syms[i].used >= lo) {
            keep[i] = 1;
            total += cost[i];
        } else if ((int64_t)m->syms[i].used > below) {
            below = m->syms[i].used;
        }
    }
    for (size_t i = m->n; i-- > 0 && below >= 0;) /* same age: from the highest address */
        if (m->syms[i].used == (uint64_t)below && total + cost[i] <= target) {
            keep[i] = 1;
            total += cost[i];
        }
}

/* Keeps the entries whose keep[i] is set, with a fresh arena holding only their names. */
static int compact(pp_perfmap *m, const unsigned char *keep)
{
    size_t n = 0, bytes = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!keep || keep[i]) {
            n++;
            bytes += strlen(name_of(m, &m->syms[i])) + 1;
        }
    pp_pm_sym *syms = malloc((n ? n : 1) * sizeof(*syms));
    char *arena = malloc(bytes ? bytes : 1);
    if (!syms || !arena) {
        free(syms);
        free(arena);
        return -1;
    }
    size_t o = 0, a = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (keep && !keep[i])
            continue;
        size_t l = strlen(name_of(m, &m->syms[i])) + 1;
        memcpy(arena + a, name_of(m, &m->syms[i]), l);
        syms[o] = m->syms[i];
        syms[o++].name = (uint32_t)a;
        a += l;
    }
    m->dropped += m->n - n;
    free(m->syms);
    free(m->arena);
    m->syms = syms;
    m->arena = arena;
    m->n = m->cap = n;
    m->alen = m->acap = bytes;
    m->garbage = 0;
    return 0;
}

/* Applies the bound: over it, keeps up to KEEP_FRACTION of it, entries that named a sample first
 * (the most recently used first), then the newest others; names nobody uses any more are dropped
 * when they are most of the arena. */
static void enforce(pp_perfmap *m)
{
    size_t limit = bound(m);
    if (pp_perfmap_memory(m) <= limit) {
        if (m->garbage > (1u << 20) && m->garbage > m->alen / 2)
            compact(m, NULL);
        return;
    }
    uint32_t *cost = malloc((m->n ? m->n : 1) * sizeof(*cost));
    unsigned char *keep = calloc(m->n ? m->n : 1, 1);
    if (cost && keep) {
        for (size_t i = 0; i < m->n; i++)
            cost[i] = (uint32_t)(sizeof(pp_pm_sym) + strlen(name_of(m, &m->syms[i])) + 1);
        choose(m, cost, keep, limit * KEEP_FRACTION);
        free(cost);
        cost = NULL;
        if (compact(m, keep) == 0) {
            free(keep);
            return;
        }
    }
    free(cost);
    free(keep);
    m->dropped += m->n; /* out of memory: start over rather than exceed the bound */
    size_t keep_parsed = m->parsed;
    clear(m);
    m->parsed = keep_parsed;
}

static long add_lines(pp_perfmap *m, const char *data, size_t len, pp_pm_sym **pend, size_t *np,
                      size_t *pcap)
{
    long added = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (data + pos)) : len - pos;
        uint64_t start, size;
        const char *name;
        size_t namelen;
        if (pp_perfmap_parse_line(data + pos, ll, &start, &size, &name, &namelen) == 0) {
            if (namelen > PP_SYM_MAX_NAME)
                namelen = PP_SYM_MAX_NAME;
            const char *nul = memchr(name, '\0', namelen);
            if (nul)
                namelen = (size_t)(nul - name);
            if (m->alen + namelen + 1 > m->acap) {
                size_t nc = m->acap ? m->acap * 2 : 65536;
                while (nc < m->alen + namelen + 1)
                    nc *= 2;
                char *na = nc <= UINT32_MAX ? realloc(m->arena, nc) : NULL;
                if (!na)
                    break;
                m->arena = na;
                m->acap = nc;
            }
            if (*np == *pcap) {
                size_t nc = *pcap ? *pcap * 2 : 1024;
                pp_pm_sym *n2 = realloc(*pend, nc * sizeof(**pend));
                if (!n2)
                    break;
                *pend = n2;
                *pcap = nc;
            }
            memcpy(m->arena + m->alen, name, namelen);
            m->arena[m->alen + namelen] = '\0';
            (*pend)[(*np)++] = (pp_pm_sym){
                .addr = start, .size = size, .name = (uint32_t)m->alen, .used = m->clock};
            m->alen += namelen + 1;
            added++;
            if (*np >= BATCH) {
                merge(m, *pend, *np);
                *np = 0;
                enforce(m);
                m->clock = (m->clock + 1) & ~USED; /* later lines are newer */
            }
        }
        pos += ll + 1;
    }
    return added;
}

long pp_perfmap_parse(pp_perfmap *m, const char *data, size_t len)
{
    pp_pm_sym *pend = NULL;
    size_t np = 0, pcap = 0;
    long added = add_lines(m, data, len, &pend, &np, &pcap);
    if (np)
        merge(m, pend, np);
    free(pend);
    enforce(m);
    return added;
}

const char *pp_perfmap_find(pp_perfmap *m, uint64_t addr)
{
    if (m->n == 0 || addr < m->syms[0].addr)
        return NULL;
    size_t lo = 0, hi = m->n; /* last index with addr <= addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    /* a short entry may not reach addr while an enclosing earlier one does: look back a bit */
    for (size_t k = 0; k < 4 && k <= lo; k++) {
        pp_pm_sym *e = &m->syms[lo - k];
        uint64_t end = e->size             ? e->addr + e->size
                       : lo - k + 1 < m->n ? m->syms[lo - k + 1].addr
                                           : e->addr + 1;
        if (end < e->addr)
            end = UINT64_MAX;
        if (addr < end) {
            e->used = m->clock | USED;
            return name_of(m, e);
        }
    }
    return NULL;
}

static bool same_bytes(int fd, uint64_t off, const char *want, size_t len)
{
    char buf[64];
    return len <= sizeof(buf) && pread(fd, buf, len, (off_t)off) == (ssize_t)len &&
           memcmp(buf, want, len) == 0;
}

long pp_perfmap_update_some(pp_perfmap *m, int fd, uint64_t max_bytes)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        clear(m);
        return -1;
    }
    m->clock = (m->clock + 1) & ~USED;
    bool same = m->dev == (uint64_t)st.st_dev && m->ino == (uint64_t)st.st_ino;
    if (same && m->complete && m->size == (uint64_t)st.st_size && m->mtime_s == st.st_mtim.tv_sec &&
        m->mtime_ns == st.st_mtim.tv_nsec)
        return 0;
    /* appended to (a JIT adds lines), or read in part so far: what was read is still there,
     * byte for byte at its ends */
    bool grew = same && (uint64_t)st.st_size >= m->parsed &&
                same_bytes(fd, 0, m->head, m->headlen) &&
                same_bytes(fd, m->parsed - m->taillen, m->tail, m->taillen);
    if (!grew)
        clear(m);
    m->dev = (uint64_t)st.st_dev;
    m->ino = (uint64_t)st.st_ino;
    m->size = (uint64_t)st.st_size;
    m->mtime_s = st.st_mtim.tv_sec;
    m->mtime_ns = st.st_mtim.tv_nsec;
    m->complete = 0;
    char *buf = malloc(CHUNK);
    if (!buf)
        return -1;
    pp_pm_sym *pend = NULL;
    size_t np = 0, pcap = 0, have = 0;
    uint64_t off = m->parsed, start = m->parsed;
    long added = 0;
    for (;;) {
        /* no room for another chunk: stop at a line boundary, the next call goes on */
        if (off > start && off - start + CHUNK > max_bytes)
            break;
        ssize_t r = pread(fd, buf + have, CHUNK - have, (off_t)(off + have));
        if (r < 0 && errno == EINTR)
            continue;
        bool eof = r <= 0;
        if (!eof)
            have += (size_t)r;
        /* complete lines are consumed; at the end of the file a last line without '\n' is
         * read too, and read again next time (a JIT may be writing it) */
        char *last = have ? memrchr(buf, '\n', have) : NULL;
        size_t complete = last ? (size_t)(last - buf) + 1 : 0;
        if (!complete && have == CHUNK)
            complete = have; /* a line longer than a chunk: skipped as garbage */
        size_t parse = eof ? have : complete;
        if (parse)
            added += add_lines(m, buf, parse, &pend, &np, &pcap);
        if (complete) {
            if (off == 0 && !m->headlen) {
                m->headlen = complete < sizeof(m->head) ? complete : sizeof(m->head);
                memcpy(m->head, buf, m->headlen);
            }
            m->parsed = off + complete;
            m->taillen = complete < sizeof(m->tail) ? complete : sizeof(m->tail);
            memcpy(m->tail, buf + complete - m->taillen, m->taillen);
        }
        if (eof) {
            m->complete = 1;
            break;
        }
        memmove(buf, buf + complete, have - complete);
        off += complete;
        have -= complete;
    }
    if (np)
        merge(m, pend, np);
    free(pend);
    free(buf);
    enforce(m);
    return added;
}

long pp_perfmap_update(pp_perfmap *m, int fd)
{
    return pp_perfmap_update_some(m, fd, UINT64_MAX);
}

uint64_t pp_perfmap_unread(const pp_perfmap *m, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    bool same = m->dev == (uint64_t)st.st_dev && m->ino == (uint64_t)st.st_ino &&
                (uint64_t)st.st_size >= m->parsed;
    return same ? (uint64_t)st.st_size - m->parsed : (uint64_t)st.st_size;
}
