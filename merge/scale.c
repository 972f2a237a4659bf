#include "merge/scale.h"

#include <stdlib.h>
#include <string.h>

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
            pp_pid_clear(dst);
            if (pp_pid_add_all(sys, dst, rt, src) < 0)
                return -1;
            if (perf_enabled && perf_samples > 0)
                pp_scale_to(dst, perf_samples);
        }
        if (copy_identity(sys, dst, rt, src) < 0)
            return -1;
        if (!src->container)
            dst->container = keep_container;
    }
    return 0;
}
