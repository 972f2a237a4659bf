#include "merge/scale.h"

#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"

typedef struct {
    size_t i;
    uint64_t rem;
} rem_t;

/* Largest remainder first; ties: first-seen stack first. */
static int by_remainder(const void *a, const void *b)
{
    const rem_t *x = a, *y = b;
    if (x->rem != y->rem)
        return x->rem > y->rem ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

void pp_scale_to(pp_pid_profile *pp, uint64_t target)
{
    uint64_t total = pp_pid_total(pp);
    size_t n = pp_pid_nstacks(pp);
    if (total == 0 || total == target || n == 0)
        return;
    rem_t *r = malloc(n * sizeof(*r));
    uint64_t assigned = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        uint64_t c;
        pp_pid_stack(pp, i, &len, &c);
        unsigned __int128 x = (unsigned __int128)c * target;
        uint64_t q = (uint64_t)(x / total);
        if (r)
            r[i] = (rem_t){i, (uint64_t)(x % total)};
        pp_pid_set_count(pp, i, q);
        assigned += q;
    }
    if (!r)
        return; /* OOM: floor only; still deterministic */
    /* Fewer than n units are left (each floor lost less than one). */
    uint64_t left = target - assigned;
    qsort(r, n, sizeof(*r), by_remainder);
    for (uint64_t k = 0; k < left && k < n; k++) {
        size_t len;
        uint64_t c;
        pp_pid_stack(pp, r[k].i, &len, &c);
        pp_pid_set_count(pp, r[k].i, c + 1);
    }
    free(r);
}

bool pp_is_error_stack(const pp_profile *p, const pp_pid_profile *pp, uint32_t *frame)
{
    if (pp_pid_nstacks(pp) != 1)
        return false;
    size_t n;
    const uint32_t *f = pp_pid_stack(pp, 0, &n, NULL);
    for (size_t i = 0; i < n; i++) {
        const char *s = pp_profile_str(p, f[i]);
        size_t len = strlen(s);
        if (strncmp(s, "[Profiling ", 11) == 0 && len > 14 && s[len - 1] == ']' &&
            strstr(s + 11, ": ")) {
            if (frame)
                *frame = f[i];
            return true;
        }
    }
    return false;
}

static int copy_identity(pp_profile *sys, pp_pid_profile *dst, const pp_profile *rt,
                         const pp_pid_profile *src)
{
    if (src->comm)
        dst->comm = pp_profile_intern(sys, pp_profile_str(rt, src->comm));
    if (src->appid)
        dst->appid = pp_profile_intern(sys, pp_profile_str(rt, src->appid));
    if (src->container)
        dst->container = pp_profile_intern(sys, pp_profile_str(rt, src->container));
    if (src->app_metadata) {
        json_decref(dst->app_metadata);
        dst->app_metadata = json_incref(src->app_metadata);
    }
    if (src->runtime)
        dst->runtime = src->runtime;
    if (src->profiler)
        dst->profiler = src->profiler;
    return dst->comm == UINT32_MAX || dst->appid == UINT32_MAX || dst->container == UINT32_MAX ? -1
                                                                                               : 0;
}

/* Rebuilds dst's stacks as [err_frame] + each old stack, counts kept. */
static int annotate(pp_profile *sys, pp_pid_profile *dst, const char *err_frame)
{
    pp_profile *tmp = pp_profile_new();
    if (!tmp)
        return -1;
    pp_pid_profile *copy = pp_profile_get(tmp, dst->pid, true);
    int rc = copy ? pp_pid_add_all(tmp, copy, sys, dst) : -1;
    if (rc == 0) {
        pp_pid_clear(dst);
        uint32_t ef = pp_profile_intern(sys, err_frame);
        uint32_t buf[520];
        for (size_t i = 0; i < pp_pid_nstacks(copy) && rc == 0; i++) {
            size_t n;
            uint64_t c;
            const uint32_t *f = pp_pid_stack(copy, i, &n, &c);
            if (n > 512)
                n = 512;
            buf[0] = ef;
            for (size_t k = 0; k < n; k++)
                buf[k + 1] = pp_profile_intern(sys, pp_profile_str(tmp, f[k]));
            rc = pp_pid_add(dst, buf, n + 1, c);
        }
    }
    pp_profile_free(tmp);
    return rc;
}

/* Sample counts per thread of pp (tid -> count, threads 0 left out). -1 on OOM. */
static int thread_totals(const pp_pid_profile *pp, pp_u64map *m)
{
    for (size_t i = 0; i < pp_pid_nstacks(pp); i++) {
        size_t n;
        uint64_t c;
        pp_pid_stack(pp, i, &n, &c);
        uint32_t tid = pp_pid_stack_tid(pp, i);
        if (!tid || !c)
            continue;
        uint64_t *v = pp_u64map_get(m, tid);
        if (v)
            *v += c;
        else if (pp_u64map_put(m, tid, c) < 0)
            return -1;
    }
    return 0;
}

bool pp_coverage_enough(uint64_t rt, uint64_t sampler)
{
    return rt >= PP_COVER_MIN_RT_SAMPLES || sampler < PP_COVER_MIN_SAMPLER_SAMPLES;
}

/* What the merge does with the samples of a thread: T_KEEP (sampler side only: a thread the
 * runtime did not sample, or tid 0: native stacks kept), T_SCALE (both sides, covered: scaled
 * per thread), T_MARK (not covered: native stacks kept and marked), T_POOL (both sides but too
 * small to scale alone, or a short thread only the runtime saw), T_DROP (runtime side only:
 * tid 0, or a long thread the sampler never saw on a CPU). */
enum { T_KEEP = 1, T_SCALE, T_MARK, T_POOL, T_DROP };

typedef struct {
    uint32_t tid;
    uint32_t i; /* stack index in src */
} tid_stack;

static int by_tid(const void *a, const void *b)
{
    const tid_stack *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The class of thread tid in cls; absent (or tid 0): `absent`. */
static int class_of(const pp_u64map *cls, uint32_t tid, int absent)
{
    const uint64_t *v = tid ? pp_u64map_get(cls, tid) : NULL;
    return v ? (int)*v : absent;
}

/* The merge's working state for one pid: entries of a scratch profile; nat_* hold sys's string
 * ids, rt_* hold rt's. */
typedef struct {
    pp_profile *tmp;
    pp_pid_profile *nat_keep, *nat_pool, *nat_mark, *rt_mark, *rt_pool, *one;
} parts;

/* Copies a scratch entry holding sys's string ids into dst (count-0 stacks left out); with
 * marker (a sys string id), each stack gets it as its root. */
static int put_native(pp_pid_profile *dst, const pp_pid_profile *e, uint32_t marker)
{
    uint32_t buf[520];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < pp_pid_nstacks(e); i++) {
        size_t n;
        uint64_t c;
        const uint32_t *f = pp_pid_stack(e, i, &n, &c);
        if (!c)
            continue;
        if (marker == UINT32_MAX) {
            rc = pp_pid_add_tid(dst, pp_pid_stack_tid(e, i), f, n, c);
            continue;
        }
        if (n > 512)
            n = 512;
        buf[0] = marker;
        memcpy(buf + 1, f, n * sizeof(*f));
        rc = pp_pid_add_tid(dst, pp_pid_stack_tid(e, i), buf, n + 1, c);
    }
    return rc;
}

/* The runtime stacks of the threads classed T_SCALE, each thread's scaled to the sampler's
 * count of it, into dst (rt's string ids in src). */
static int put_scaled_threads(pp_profile *sys, pp_pid_profile *dst, const pp_profile *rt,
                              const pp_pid_profile *src, const pp_u64map *cls,
                              const pp_u64map *sampled, pp_pid_profile *one)
{
    tid_stack *v = malloc((pp_pid_nstacks(src) + 1) * sizeof(*v));
    if (!v)
        return -1;
    size_t nm = 0;
    for (size_t i = 0; i < pp_pid_nstacks(src); i++) {
        uint32_t tid = pp_pid_stack_tid(src, i);
        if (class_of(cls, tid, T_DROP) == T_SCALE)
            v[nm++] = (tid_stack){tid, (uint32_t)i};
    }
    qsort(v, nm, sizeof(*v), by_tid);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nm;) {
        uint32_t tid = v[k].tid;
        pp_pid_clear(one);
        for (; rc == 0 && k < nm && v[k].tid == tid; k++) {
            size_t n;
            uint64_t c;
            const uint32_t *f = pp_pid_stack(src, v[k].i, &n, &c);
            rc = pp_pid_add_tid(one, tid, f, n, c);
        }
        if (rc == 0) {
            pp_scale_to(one, *pp_u64map_get(sampled, tid));
            rc = pp_pid_add_all(sys, dst, rt, one);
        }
    }
    free(v);
    return rc;
}

/* The counts classify sums. */
typedef struct {
    size_t matched;          /* threads both sides counted */
    uint64_t s_mark, r_mark; /* the marked threads' sampler and runtime samples */
    uint64_t s_rate, r_rate; /* the other common threads' (the process's rate) */
    uint64_t s_common;       /* the common threads' sampler samples */
    uint64_t r_cls;          /* the runtime samples of the threads in cls */
} tallies;

/* Classes the threads of the runtime side (see T_*): a thread both sides counted is T_MARK
 * when the runtime does not cover it (pp_coverage_enough), T_POOL when it has fewer than
 * PP_POOL_BELOW_SAMPLES sampler samples, T_SCALE otherwise; a thread only the runtime saw is
 * T_POOL when it has fewer than PP_POOL_BELOW_SAMPLES runtime samples (thread churn: a short
 * thread the sampler happened to miss), else left out (T_DROP: a thread off the CPU). */
static int classify(const pp_u64map *sampled, const pp_u64map *rtt, pp_u64map *cls, tallies *t)
{
    size_t pos = 0;
    for (const pp_u64map_ent *e; (e = pp_htab_each(&rtt->t, &pos));) {
        uint64_t tid = e->key, r = e->val;
        const uint64_t *s = pp_u64map_get(sampled, tid);
        int c;
        if (!s) {
            c = r < PP_POOL_BELOW_SAMPLES ? T_POOL : T_DROP;
        } else {
            t->matched++;
            c = !pp_coverage_enough(r, *s) ? T_MARK : *s < PP_POOL_BELOW_SAMPLES ? T_POOL : T_SCALE;
            if (c == T_MARK) {
                t->s_mark += *s;
                t->r_mark += r;
            } else {
                t->s_rate += *s;
                t->r_rate += r;
            }
        }
        if (s)
            t->s_common += *s;
        if (c != T_DROP) {
            t->r_cls += r;
            if (pp_u64map_put(cls, tid, (uint64_t)c) < 0)
                return -1;
        }
    }
    return 0;
}

/* When the runtime does not cover the common threads taken together (a gap spread over threads
 * too small to judge alone), every thread in cls is marked; the threads the runtime never
 * sampled (GC, JIT) keep their native stacks unmarked. */
static void mark_if_uncovered(pp_u64map *cls, tallies *t)
{
    if (pp_coverage_enough(t->r_cls, t->s_common))
        return;
    size_t pos = 0;
    for (const pp_u64map_ent *e; (e = pp_htab_each(&cls->t, &pos));)
        *pp_u64map_get(cls, e->key) = T_MARK;
    t->s_mark = t->s_common;
    t->r_mark = t->r_cls;
    t->s_rate = t->r_rate = 0;
}

/* Without a thread both sides counted: the runtime's stacks, scaled to the sampler's count,
 * replace the sampler's. */
static int merge_whole(pp_profile *sys, pp_pid_profile *dst, const pp_profile *rt,
                       const pp_pid_profile *src)
{
    uint64_t s_total = pp_pid_total(dst);
    pp_pid_clear(dst);
    if (pp_pid_add_all(sys, dst, rt, src) < 0)
        return -1;
    pp_scale_to(dst, s_total);
    return 0;
}

/* Sorts the samples of each side into the parts (classes from cls; every stack marked when
 * all). */
static int split(const pp_pid_profile *dst, const pp_pid_profile *src, const pp_u64map *cls,
                 bool all, parts *p)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < pp_pid_nstacks(dst); i++) {
        size_t n;
        uint64_t c;
        const uint32_t *f = pp_pid_stack(dst, i, &n, &c);
        uint32_t tid = pp_pid_stack_tid(dst, i);
        int k = all ? T_MARK : class_of(cls, tid, T_KEEP);
        pp_pid_profile *to = k == T_MARK ? p->nat_mark : k == T_POOL ? p->nat_pool : p->nat_keep;
        if (c && k != T_SCALE)
            rc = pp_pid_add_tid(to, tid, f, n, c);
    }
    for (size_t i = 0; rc == 0 && i < pp_pid_nstacks(src); i++) {
        size_t n;
        uint64_t c;
        const uint32_t *f = pp_pid_stack(src, i, &n, &c);
        uint32_t tid = pp_pid_stack_tid(src, i);
        int k = all ? T_MARK : class_of(cls, tid, T_DROP);
        if (c && (k == T_MARK || k == T_POOL))
            rc = pp_pid_add_tid(k == T_MARK ? p->rt_mark : p->rt_pool, tid, f, n, c);
    }
    return rc;
}

/* The merge of real runtime stacks into a pid the sampler counted (see pp_merge_runtime). */
static int merge_counted(pp_profile *sys, pp_pid_profile *dst, const pp_profile *rt,
                         const pp_pid_profile *src)
{
    pp_u64map sampled = {0}, rtt = {0}, cls = {0};
    parts p = {.tmp = pp_profile_new()};
    tallies t = {0};
    int rc = -1;
    uint64_t s_total = pp_pid_total(dst), r_total = pp_pid_total(src);
    bool all = false;
    if (!p.tmp || !(p.nat_pool = pp_profile_get(p.tmp, 1, true)) ||
        !(p.nat_mark = pp_profile_get(p.tmp, 2, true)) ||
        !(p.rt_mark = pp_profile_get(p.tmp, 3, true)) ||
        !(p.rt_pool = pp_profile_get(p.tmp, 4, true)) ||
        !(p.one = pp_profile_get(p.tmp, 5, true)) || !(p.nat_keep = pp_profile_get(p.tmp, 6, true)))
        goto out;
    if (thread_totals(dst, &sampled) < 0 || thread_totals(src, &rtt) < 0 ||
        classify(&sampled, &rtt, &cls, &t) < 0)
        goto out;
    if (t.matched == 0) { /* no thread to go by: the process as a whole */
        if (pp_coverage_enough(r_total, s_total)) {
            rc = merge_whole(sys, dst, rt, src);
            goto out;
        }
        all = true;
        t.s_mark = s_total;
        t.r_mark = r_total;
    } else {
        mark_if_uncovered(&cls, &t);
    }
    if (split(dst, src, &cls, all, &p) < 0)
        goto out;
    rc = 0;
    /* the pool and the marked natives are scaled as a whole: their threads no longer matter */
    if (pp_pid_drop_tids(p.nat_pool) < 0 || pp_pid_drop_tids(p.rt_pool) < 0 ||
        pp_pid_drop_tids(p.nat_mark) < 0)
        goto fail;
    /* The pool (small common threads, short runtime-only threads) at the process's rate (the
     * common threads' sampler over runtime samples, the marked left out): its runtime samples
     * stand for est sampler samples, taken from the pool's own, which keep their native stacks
     * for the rest. */
    uint64_t s_pool = pp_pid_total(p.nat_pool), r_pool = pp_pid_total(p.rt_pool), est = 0;
    if (r_pool && t.r_rate) {
        unsigned __int128 x = (unsigned __int128)r_pool * t.s_rate + t.r_rate / 2;
        est = (uint64_t)(x / t.r_rate);
        if (est > s_pool)
            est = s_pool;
    }
    pp_scale_to(p.rt_pool, est);
    pp_scale_to(p.nat_pool, s_pool - est);
    /* Marked threads: the runtime's samples as they are, the rest of the sampler's under the
     * marker frame. */
    pp_scale_to(p.nat_mark, pp_pid_total(p.nat_mark) - pp_pid_total(p.rt_mark));
    uint32_t marker = UINT32_MAX;
    if (t.s_mark) {
        char frame[256];
        const char *who = src->profiler ? src->profiler : src->runtime ? src->runtime : "runtime";
        snprintf(frame, sizeof(frame), "[Profiling error: %s covered %llu of %llu samples]", who,
                 (unsigned long long)t.r_mark, (unsigned long long)t.s_mark);
        if ((marker = pp_profile_intern(sys, frame)) == UINT32_MAX)
            goto fail;
    }
    pp_pid_clear(dst);
    dst->uncovered_rt += t.r_mark;
    dst->uncovered_of += t.s_mark;
    if (put_native(dst, p.nat_keep, UINT32_MAX) < 0 ||
        put_native(dst, p.nat_pool, UINT32_MAX) < 0 || put_native(dst, p.nat_mark, marker) < 0 ||
        (!all && put_scaled_threads(sys, dst, rt, src, &cls, &sampled, p.one) < 0) ||
        pp_pid_add_all(sys, dst, rt, p.rt_mark) < 0 || pp_pid_add_all(sys, dst, rt, p.rt_pool) < 0)
        goto fail;
    goto out;
fail:
    rc = -1;
out:
    pp_u64map_free(&sampled);
    pp_u64map_free(&rtt);
    pp_u64map_free(&cls);
    pp_profile_free(p.tmp);
    return rc;
}

int pp_merge_runtime(pp_profile *sys, const pp_profile *rt, bool perf_enabled)
{
    for (size_t i = 0; i < pp_profile_npids(rt); i++) {
        const pp_pid_profile *src = pp_profile_at(rt, i);
        if (pp_pid_nstacks(src) == 0 || pp_pid_total(src) == 0)
            continue;
        pp_pid_profile *dst = pp_profile_get(sys, src->pid, true);
        if (!dst)
            return -1;
        uint64_t perf_samples = perf_enabled ? pp_pid_total(dst) : 0;
        uint32_t errf;
        bool is_err = pp_is_error_stack(rt, src, &errf);
        uint32_t keep_container = dst->container;
        if (perf_enabled && is_err) {
            if (perf_samples > 0) {
                if (annotate(sys, dst, pp_profile_str(rt, errf)) < 0)
                    return -1;
            } else {
                pp_pid_clear(dst);
            }
        } else {
            if (perf_enabled && perf_samples > 0) {
                if (merge_counted(sys, dst, rt, src) < 0)
                    return -1;
            } else {
                pp_pid_clear(dst);
                if (pp_pid_add_all(sys, dst, rt, src) < 0)
                    return -1;
            }
        }
        if (copy_identity(sys, dst, rt, src) < 0)
            return -1;
        if (!src->container)
            dst->container = keep_container;
    }
    return 0;
}
