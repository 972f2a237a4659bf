/* Process discovery: one pass over /proc classifies every process by runtime. Decisions and the
 * default patterns are described in docs/discovery.md. */
#include "orchestrator/discovery.h"
#include "orchestrator/discovery_int.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hashtab.h"
#include "runtimes/runtime.h"
#include "base/log.h"
#include "base/procfiles.h"

#define MAPS_INIT (64 * 1024)
#define MAPS_KEEP (1024 * 1024)     /* a bigger buffer is released after each pass */
#define MAPS_CAP (16 * 1024 * 1024) /* maps beyond this are classified from what was read */
#define CMDLINE_CAP (128 * 1024)
#define ANCESTOR_MAX 64

#define BIT(k) (1u << (k))

/* Kinds whose descriptor is an interpreter: when the executable itself matches one of them, it
 * wins; a process of such a kind keeps its class until it execs. */
static unsigned interpreter_kinds(void)
{
    unsigned m = 0;
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (pp_runtime_get((pp_proc_kind)k)->interpreter)
            m |= BIT(k);
    return m;
}

/* Classification of a process in the previous pass, keyed by pid. */
typedef struct pc_entry {
    int pid;
    pp_proc_kind kind;
    unsigned kinds;
    bool blacklisted;
    unsigned long long start_ticks, vsize;
    char comm[17];
} pc_entry;

typedef pp_htab pcache; /* of pc_entry */

typedef struct cand {
    int pid;
    bool excluded;
    pp_stat_info st;
} cand;

struct pp_discovery {
    const pp_runtime *rt[PP_KIND_COUNT];
    pcre2_code *re[PP_KIND_COUNT];
    void *detect[PP_KIND_COUNT]; /* detector state, NULL: none or disabled */
    unsigned interp;             /* interpreter_kinds() */
    pcre2_match_data *md;
    int *pids;
    size_t npids;
    int min_duration;
    int self_pid; /* -1: none */
    int procfd;   /* /proc (O_PATH), -1: paths from the root */
    long clk_tck;
    double uptime; /* seconds, read once per pass when min_duration > 0 */
    char *buf;
    size_t bufcap;
    cand *cands;
    size_t ncands, candcap;
    int *excl;
    size_t nexcl, exclcap;
    pcache cur, next; /* previous pass (and on-demand checks); the pass being built */
    pp_discovery_stats stats;
};

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

pp_discovery *pp_discovery_new(const pp_discovery_opts *o, char *err, size_t errlen)
{
    pp_discovery *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(err, errlen, "discovery: out of memory");
        return NULL;
    }
    PP_HTAB_INIT(&d->cur, pc_entry, 50);
    PP_HTAB_INIT(&d->next, pc_entry, 50);
    d->procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    d->min_duration = o->min_duration > 0 ? o->min_duration : 0;
    d->self_pid = o->self_pid == 0 ? (int)getpid() : o->self_pid < 0 ? -1 : o->self_pid;
    d->clk_tck = sysconf(_SC_CLK_TCK);
    if (d->clk_tck <= 0)
        d->clk_tck = 100;
    if (o->maps_regex[PP_KIND_NATIVE]) {
        snprintf(err, errlen, "discovery: no regex applies to kind native");
        goto fail;
    }
    d->interp = interpreter_kinds();
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = d->rt[k] = pp_runtime_get((pp_proc_kind)k);
        const char *pat = o->maps_regex[k] ? o->maps_regex[k] : rt->default_regex;
        bool off = o->maps_regex[k] && !o->maps_regex[k][0]; /* "" disables its detector too */
        if (rt->detector && !off && !(d->detect[k] = rt->detector->create())) {
            snprintf(err, errlen, "discovery: out of memory");
            goto fail;
        }
        if (!pat || !pat[0])
            continue;
        int ec;
        PCRE2_SIZE eoff;
        d->re[k] = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, 0, &ec, &eoff, NULL);
        if (!d->re[k]) {
            char msg[160];
            pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof(msg));
            snprintf(err, errlen, "discovery: bad %s regex '%s': %s at offset %zu", rt->name, pat,
                     msg, (size_t)eoff);
            goto fail;
        }
        (void)pcre2_jit_compile(d->re[k], PCRE2_JIT_COMPLETE); /* interpreter if JIT is absent */
    }
    d->md = pcre2_match_data_create(1, NULL);
    d->bufcap = MAPS_INIT;
    d->buf = calloc(1, d->bufcap); /* JIT matching may read a few bytes past the subject */
    if (!d->md || !d->buf) {
        snprintf(err, errlen, "discovery: out of memory");
        goto fail;
    }
    if (o->pids && o->npids) {
        d->pids = malloc(o->npids * sizeof(int));
        if (!d->pids) {
            snprintf(err, errlen, "discovery: out of memory");
            goto fail;
        }
        memcpy(d->pids, o->pids, o->npids * sizeof(int));
        qsort(d->pids, o->npids, sizeof(int), cmp_int);
        size_t n = 0;
        for (size_t i = 0; i < o->npids; i++)
            if (d->pids[i] > 0 && (n == 0 || d->pids[n - 1] != d->pids[i]))
                d->pids[n++] = d->pids[i];
        d->npids = n;
        if (n == 0) { /* only invalid pids: restrict to nothing rather than to everything */
            d->pids[0] = -1;
            d->npids = 0;
        }
    }
    return d;
fail:
    pp_discovery_free(d);
    return NULL;
}

void pp_discovery_free(pp_discovery *d)
{
    if (!d)
        return;
    for (int k = 0; k < PP_KIND_COUNT; k++) {
        pcre2_code_free(d->re[k]);
        if (d->detect[k])
            d->rt[k]->detector->destroy(d->detect[k]);
    }
    pcre2_match_data_free(d->md);
    if (d->procfd >= 0)
        close(d->procfd);
    pp_htab_free(&d->cur);
    pp_htab_free(&d->next);
    free(d->pids);
    free(d->buf);
    free(d->cands);
    free(d->excl);
    free(d);
}

void pp_proc_list_free(pp_proc_list *l)
{
    if (!l)
        return;
    free(l->procs);
    l->procs = NULL;
    l->n = l->cap = 0;
}

void pp_discovery_get_stats(const pp_discovery *d, pp_discovery_stats *s)
{
    *s = d->stats;
    s->elf_opens = 0;
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (d->detect[k] && d->rt[k]->detector->files_parsed)
            s->elf_opens += d->rt[k]->detector->files_parsed(d->detect[k]);
}

/* ---- per-process cache ---- */

static pc_entry *pc_find(const pcache *c, int pid)
{
    pp_htab_probe p;
    for (pc_entry *e = pp_htab_first(c, pp_hash_u64((uint64_t)(unsigned)pid), &p); e;
         e = pp_htab_next(c, &p))
        if (e->pid == pid)
            return e;
    return NULL;
}

static void pc_put(pcache *c, const pc_entry *e)
{
    pc_entry *s = pc_find(c, e->pid);
    if (!s && !(s = pp_htab_add(c, pp_hash_u64((uint64_t)(unsigned)e->pid))))
        return; /* the cache is an optimisation */
    *s = *e;
}

/* ---- reading /proc ---- */

static bool re_match(pp_discovery *d, int k, const char *s, size_t len)
{
    return pcre2_match(d->re[k], (PCRE2_SPTR)s, len, 0, 0, d->md, NULL) >= 0;
}

void pp_disc_match_maps(pp_discovery *d, const char *buf, size_t len, const char *exe,
                        size_t exelen, unsigned *kinds, unsigned *exe_kinds)
{
    const char *p = buf, *end = buf + len, *prev = NULL;
    size_t prevlen = 0;
    while (p < end) {
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le)
            le = end;
        const char *ls = p;
        p = le + 1;
        /* The pathname follows five fields: address, perms, offset, dev, inode. */
        const char *s = ls;
        for (int f = 0; f < 5 && s; f++) {
            s = memchr(s, ' ', (size_t)(le - s));
            while (s && s < le && *s == ' ')
                s++;
        }
        if (!s || s >= le || *s != '/')
            continue; /* anonymous, [heap], [stack], [vdso], ... */
        size_t plen = (size_t)(le - s);
        if (prev && plen == prevlen && memcmp(s, prev, plen) == 0)
            continue; /* the same file's next segment */
        prev = s;
        prevlen = plen;
        bool is_exe = exelen && plen == exelen && memcmp(s, exe, plen) == 0;
        for (int k = 1; k < PP_KIND_COUNT; k++) {
            if (!d->re[k] || d->rt[k]->match_on != PP_MATCH_MAPS || ((*kinds & BIT(k)) && !is_exe))
                continue;
            if (re_match(d, k, ls, (size_t)(le - ls))) {
                *kinds |= BIT(k);
                if (is_exe)
                    *exe_kinds |= BIT(k);
            }
        }
    }
}

static void fill(pp_proc *out, int pid, const pp_stat_info *st, pp_proc_kind kind, unsigned kinds,
                 bool blacklisted)
{
    memset(out, 0, sizeof(*out));
    out->pid = pid;
    out->ppid = st->ppid;
    out->kind = kind;
    out->kinds = kinds;
    memcpy(out->comm, st->comm, sizeof(out->comm));
    out->start_ticks = st->start_ticks;
    out->blacklisted = blacklisted;
}

/* Classifies a process whose stat line was read, reusing the previous pass's answer when the
 * process is the same (start time), has not exec'd (comm) and either has the same vsize (it has
 * mapped nothing new) or already is a runtime. Stores the answer in *store. Returns -1 if it is
 * gone (or a zombie). */
static int classify(pp_discovery *d, int pid, const pp_stat_info *st, pp_proc *out, pcache *store)
{
    const pc_entry *c = pc_find(&d->cur, pid);
    if (c && c->start_ticks == st->start_ticks && strcmp(c->comm, st->comm) == 0 &&
        (c->vsize == st->vsize || (BIT(c->kind) & d->interp))) {
        fill(out, pid, st, c->kind, c->kinds, c->blacklisted);
        d->stats.reused++;
        if (store != &d->cur)
            pc_put(store, c);
        return 0;
    }
    char path[48], exe[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    ssize_t el = readlink(path, exe, sizeof(exe) - 1);
    if (el < 0) {
        if (errno != EACCES)
            return -1; /* gone, a zombie or a kernel thread */
        el = 0;
    }
    /* The rest is zeroed: PCRE2's JIT may read a few bytes past the subject (SIMD). */
    memset(exe + el, 0, (size_t)(sizeof(exe) - (size_t)el) < 64 ? sizeof(exe) - (size_t)el : 64);
    unsigned kinds = 0, exe_kinds = 0;
    ssize_t ml = pp_disc_read_maps(pid, &d->buf, &d->bufcap, MAPS_CAP);
    d->stats.maps_reads++;
    if (ml < 0 && errno != EACCES)
        return -1;
    if (ml == 0 && el > 0)
        return -1; /* exiting: its address space is gone */
    if (ml > 0)
        pp_disc_match_maps(d, d->buf, (size_t)ml, exe, (size_t)el, &kinds, &exe_kinds);
    for (int k = 1; el > 0 && k < PP_KIND_COUNT; k++) {
        bool match = false;
        if (d->re[k] && d->rt[k]->match_on == PP_MATCH_EXE && re_match(d, k, exe, (size_t)el)) {
            kinds |= BIT(k);
            exe_kinds |= BIT(k);
        }
        if (d->detect[k] && d->rt[k]->detector->check(d->detect[k], pid, &match) == 0 && match)
            kinds |= BIT(k);
    }

    /* The executable's own runtime wins; otherwise the first in registry order. */
    unsigned pick = (exe_kinds & d->interp) ? (exe_kinds & d->interp) : kinds;
    pp_proc_kind kind = pick ? (pp_proc_kind)__builtin_ctz(pick) : PP_KIND_NATIVE;
    const pp_runtime *rt = pp_runtime_get(kind);
    size_t cap = d->bufcap < CMDLINE_CAP ? d->bufcap : CMDLINE_CAP;
    bool bl = rt && rt->excluded && rt->excluded(pid, exe, (size_t)el, d->buf, cap);
    fill(out, pid, st, kind, kinds, bl);
    pc_entry e = {.pid = pid,
                  .kind = kind,
                  .kinds = kinds,
                  .blacklisted = bl,
                  .start_ticks = st->start_ticks,
                  .vsize = st->vsize};
    memcpy(e.comm, st->comm, sizeof(e.comm));
    pc_put(store, &e);
    return 0;
}

/* The stat line of pid: opened relative to /proc (one path component less to look up) and read
 * with one read (the kernel formats the whole line at once; the fields used end well within
 * the first 1 KiB): at every pass, for every process, this is most of a warm pass's cost. */
static int read_stat(const pp_discovery *d, int pid, pp_stat_info *st)
{
    char path[48], line[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = openat(d->procfd, d->procfd >= 0 ? path + 6 : path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n;
    while ((n = read(fd, line, sizeof(line) - 1)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (n <= 0)
        return -1;
    line[n] = '\0';
    return pp_disc_parse_stat(line, (size_t)n, st);
}

static bool is_kernel_thread(int pid, const pp_stat_info *st)
{
    return pid == 2 || st->ppid == 2 || (st->flags & PP_PF_KTHREAD);
}

static bool too_young(const pp_discovery *d, const pp_stat_info *st)
{
    if (d->min_duration <= 0)
        return false;
    double age = d->uptime - (double)st->start_ticks / (double)d->clk_tck;
    return age < (double)d->min_duration;
}

static void read_uptime(pp_discovery *d)
{
    char line[128];
    d->uptime = 0;
    if (d->min_duration > 0 && pp_read_small_file("/proc/uptime", line, sizeof(line)) > 0)
        d->uptime = strtod(line, NULL);
}

/* Walks up the parent chain (bounded) looking for polyprof itself. */
static bool descends_from_self(const pp_discovery *d, int pid, int ppid)
{
    if (d->self_pid < 0)
        return false;
    for (int hop = 0; hop < ANCESTOR_MAX; hop++) {
        if (pid == d->self_pid || ppid == d->self_pid)
            return true;
        if (ppid <= 1)
            return false;
        pp_stat_info st;
        if (read_stat(d, ppid, &st) < 0)
            return false;
        pid = ppid;
        ppid = st.ppid;
    }
    return false;
}

static bool in_pids(const pp_discovery *d, int pid)
{
    return bsearch(&pid, d->pids, d->npids, sizeof(int), cmp_int) != NULL;
}

static int push_excl(pp_discovery *d, int pid)
{
    if (d->nexcl == d->exclcap) {
        size_t ncap = d->exclcap ? d->exclcap * 2 : 16;
        int *n = realloc(d->excl, ncap * sizeof(int));
        if (!n)
            return -1;
        d->excl = n;
        d->exclcap = ncap;
    }
    d->excl[d->nexcl++] = pid;
    return 0;
}

/* Marks polyprof and every descendant in the candidate table (a fixpoint over ppid links). */
static void exclude_self_tree(pp_discovery *d)
{
    d->nexcl = 0;
    if (d->self_pid < 0 || push_excl(d, d->self_pid) < 0)
        return;
    bool changed = true;
    while (changed) {
        changed = false;
        for (size_t i = 0; i < d->ncands; i++) {
            cand *c = &d->cands[i];
            if (c->excluded)
                continue;
            bool hit = c->pid == d->self_pid;
            for (size_t j = 0; !hit && j < d->nexcl; j++)
                hit = c->st.ppid == d->excl[j];
            if (hit) {
                c->excluded = true;
                if (c->pid != d->self_pid && push_excl(d, c->pid) < 0)
                    return;
                changed = true;
            }
        }
    }
}

/* Reads the stat of pid and adds it unless it is gone, a kernel thread or too young. */
static int add_cand(pp_discovery *d, int pid)
{
    cand c = {.pid = pid};
    if (read_stat(d, pid, &c.st) < 0 || is_kernel_thread(pid, &c.st) || too_young(d, &c.st))
        return 0;
    if (d->ncands == d->candcap) {
        size_t ncap = d->candcap ? d->candcap * 2 : 1024;
        cand *n = realloc(d->cands, ncap * sizeof(*n));
        if (!n)
            return -1;
        d->cands = n;
        d->candcap = ncap;
    }
    d->cands[d->ncands++] = c;
    return 0;
}

static int push_proc(pp_proc_list *out, const pp_proc *p)
{
    if (out->n == out->cap) {
        size_t ncap = out->cap ? out->cap * 2 : 256;
        pp_proc *n = realloc(out->procs, ncap * sizeof(*n));
        if (!n)
            return -1;
        out->procs = n;
        out->cap = ncap;
    }
    out->procs[out->n++] = *p;
    return 0;
}

int pp_discover(pp_discovery *d, pp_proc_list *out)
{
    out->n = 0;
    d->ncands = 0;
    d->stats.passes++;
    pp_htab_clear(&d->next);
    read_uptime(d);
    if (d->pids) {
        for (size_t i = 0; i < d->npids; i++)
            if (add_cand(d, d->pids[i]) < 0)
                return -1;
        for (size_t i = 0; i < d->ncands; i++)
            d->cands[i].excluded = descends_from_self(d, d->cands[i].pid, d->cands[i].st.ppid);
    } else {
        DIR *dir = opendir("/proc");
        if (!dir)
            return -1;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] < '1' || e->d_name[0] > '9')
                continue;
            char *endp;
            long pid = strtol(e->d_name, &endp, 10);
            if (*endp || pid <= 0 || pid > INT_MAX)
                continue;
            if (add_cand(d, (int)pid) < 0) {
                closedir(dir);
                return -1;
            }
        }
        closedir(dir);
        exclude_self_tree(d);
    }
    for (size_t i = 0; i < d->ncands; i++) {
        pp_proc p;
        if (d->cands[i].excluded || classify(d, d->cands[i].pid, &d->cands[i].st, &p, &d->next) < 0)
            continue;
        if (push_proc(out, &p) < 0)
            return -1;
    }
    pcache t = d->cur; /* the processes seen now become the previous pass */
    d->cur = d->next;
    d->next = t;
    if (d->bufcap > MAPS_KEEP) {
        char *nb = realloc(d->buf, MAPS_INIT); /* shrinking keeps the zeroed contents */
        if (nb) {
            d->buf = nb;
            d->bufcap = MAPS_INIT;
        }
    }
    return 0;
}

int pp_discover_one(pp_discovery *d, int pid, pp_proc *out)
{
    if (pid <= 0 || (d->pids && !in_pids(d, pid)))
        return -1;
    pp_stat_info st;
    read_uptime(d);
    if (read_stat(d, pid, &st) < 0 || is_kernel_thread(pid, &st) || too_young(d, &st) ||
        descends_from_self(d, pid, st.ppid))
        return -1;
    return classify(d, pid, &st, out, &d->cur);
}
