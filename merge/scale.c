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

static int by_tid_only(const void *key, const void *e)
{
    uint32_t t = *(const uint32_t *)key, u = ((const tid_stack *)e)->tid;
    return t < u ? -1 : t > u;
}

/* The runtime stacks of src whose thread the sampler also counted, ordered by thread; *n out. */
static tid_stack *matched_stacks(const pp_pid_profile *src, const pp_u64map *sampled, size_t *n)
{
    tid_stack *v = malloc((pp_pid_nstacks(src) + 1) * sizeof(*v));
    *n = 0;
    for (size_t i = 0; v && i < pp_pid_nstacks(src); i++) {
        uint32_t tid = pp_pid_stack_tid(src, i);
        if (tid && pp_u64map_get(sampled, tid))
            v[(*n)++] = (tid_stack){tid, (uint32_t)i};
    }
    if (v)
        qsort(v, *n, sizeof(*v), by_tid);
    return v;
}

/* The per-thread merge (both sides know their threads): the runtime's stacks of each thread the
 * sampler also counted are scaled to the sampler's count for that thread and replace the
 * sampler's stacks of it; the sampler's other threads keep their native stacks (threads the
 * runtime profiler does not see: GC, compiler, other native threads); runtime samples of
 * threads the sampler never saw on a CPU are dropped. The pid's total stays the sampler's.
 * Returns 1 when done, 0 when no thread matched (the caller scales the whole process), -1 OOM. */
static int merge_threads(pp_profile *sys, pp_pid_profile *dst, const pp_profile *rt,
                         const pp_pid_profile *src)
{
    pp_u64map sampled = {0};
    pp_profile *tmp = pp_profile_new();
    size_t nm = 0;
    tid_stack *m = NULL;
    int rc = -1;
    if (!tmp || thread_totals(dst, &sampled) < 0 || !(m = matched_stacks(src, &sampled, &nm)))
        goto out;
    rc = 0;
    if (nm == 0)
        goto out;
    /* the sampler's stacks of threads the runtime does not cover (not in m), kept as they are */
    pp_pid_profile *keep = pp_profile_get(tmp, dst->pid, true);
    rc = keep ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < pp_pid_nstacks(dst); i++) {
        size_t n;
        uint64_t c;
        const uint32_t *f = pp_pid_stack(dst, i, &n, &c);
        uint32_t tid = pp_pid_stack_tid(dst, i);
        if (c && (!tid || !bsearch(&tid, m, nm, sizeof(*m), by_tid_only)))
            rc = pp_pid_add_tid(keep, tid, f, n, c); /* same string ids: sys's */
    }
    if (rc < 0)
        goto out;
    pp_pid_profile *copy = pp_profile_get(tmp, -1, true); /* scratch entry for one thread */
    if (!copy) {
        rc = -1;
        goto out;
    }
    pp_pid_clear(dst);
    for (size_t i = 0; rc == 0 && i < pp_pid_nstacks(keep); i++) {
        size_t n;
        uint64_t c;
        const uint32_t *f = pp_pid_stack(keep, i, &n, &c);
        rc = pp_pid_add_tid(dst, pp_pid_stack_tid(keep, i), f, n, c);
    }
    for (size_t k = 0; rc == 0 && k < nm;) {
        uint32_t tid = m[k].tid;
        pp_pid_clear(copy);
        for (; rc == 0 && k < nm && m[k].tid == tid; k++) {
            size_t n;
            uint64_t c;
            const uint32_t *f = pp_pid_stack(src, m[k].i, &n, &c);
            rc = pp_pid_add_tid(copy, tid, f, n, c); /* rt's string ids */
        }
        if (rc == 0) {
            pp_scale_to(copy, *pp_u64map_get(&sampled, tid));
            rc = pp_pid_add_all(sys, dst, rt, copy);
        }
    }
    rc = rc < 0 ? -1 : 1;
out:
    free(m);
    pp_u64map_free(&sampled);
    pp_profile_free(tmp);
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
            int done =
                perf_enabled && perf_samples > 0 && pp_pid_has_tids(src) && pp_pid_has_tids(dst)
                    ? merge_threads(sys, dst, rt, src)
                    : 0;
            if (done < 0)
                return -1;
            if (!done) {
                pp_pid_clear(dst);
                if (pp_pid_add_all(sys, dst, rt, src) < 0)
                    return -1;
                if (perf_enabled && perf_samples > 0)
                    pp_scale_to(dst, perf_samples);
            }
        }
        if (copy_identity(sys, dst, rt, src) < 0)
            return -1;
        if (!src->container)
            dst->container = keep_container;
    }
    return 0;
}
