/* The system sampler's user-space tables under a synthetic load, deterministic (no sampling,
 * no /proc): prints the CPU seconds of each phase and their total.
 *   emit   sessions of samples turned into profiles: the emitter's (pid, address) -> frame cache,
 *          kernel names through a namer and its cache, string interning, per-pid stack tables
 *   merge  every session's profile merged into one (re-interning, stack tables, pid index) and
 *          some pids removed
 *   stacks the BPF sampler's stack-trace cache: adds, lookups, generations
 * Usage: bench_merge [SCALE]   (SCALE multiplies the work; default 1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "merge/profile.h"
#include "runtimes/symbols/symbolizer.h"
#include "runtimes/system/emit.h"
#include "runtimes/system/stackcache.h"

#define SESSIONS 8
#define PIDS 300
#define DISTINCT 30000 /* distinct stacks */
#define SAMPLES 100000 /* per session */
#define IPS 40000      /* distinct kernel addresses */
#define MAX_DEPTH 48
#define TRACES 1000000  /* stack-cache adds */
#define TRACE_MAX 60000 /* stack-cache generation size */

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Skewed towards small values, as frame popularity is. */
static size_t skewed(size_t n)
{
    double u = (double)(next_rand() >> 11) / (double)(1ull << 53);
    return (size_t)(u * u * (double)n);
}

static int namer(void *arg, uint64_t ip, char *name, size_t len)
{
    (void)arg;
    snprintf(name, len, "kfunc_%llx", (unsigned long long)(ip >> 6));
    return 0;
}

typedef struct {
    uint64_t ips[MAX_DEPTH];
    size_t n;
    int pid;
} stack;

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;
    static stack stacks[DISTINCT];
    static uint64_t pool[IPS];
    for (size_t i = 0; i < IPS; i++)
        pool[i] = 0xffffffff81000000ull + (next_rand() % (64u << 20));
    for (size_t i = 0; i < DISTINCT; i++) {
        stacks[i].n = 8 + next_rand() % (MAX_DEPTH - 8);
        stacks[i].pid = 1000 + (int)(next_rand() % PIDS);
        for (size_t k = 0; k < stacks[i].n; k++)
            stacks[i].ips[k] = pool[skewed(IPS)];
    }
    pp_symbolizer *sym = pp_symbolizer_new(0);
    pp_symbolizer_set_kernel_namer(sym, namer, NULL);
    pp_emitter *em = pp_emitter_new(sym);
    pp_profile *sessions[SESSIONS];
    double t_emit = 0, t_merge = 0, t_stacks = 0, t0;
    uint64_t check = 0;
    for (int rep = 0; rep < scale; rep++) {
        t0 = cpu_seconds();
        for (int s = 0; s < SESSIONS; s++) {
            sessions[s] = pp_profile_new();
            for (size_t i = 0; i < SAMPLES; i++) {
                const stack *st = &stacks[skewed(DISTINCT)];
                if (pp_emit_sample(em, sessions[s], st->pid, "comm", NULL, 0, st->ips, st->n, 1) <
                    0) {
                    fprintf(stderr, "bench_merge: emit failed\n");
                    return 1;
                }
            }
        }
        t_emit += cpu_seconds() - t0;

        t0 = cpu_seconds();
        pp_profile *all = pp_profile_new();
        for (int s = 0; s < SESSIONS; s++) {
            for (size_t i = 0; i < pp_profile_npids(sessions[s]); i++) {
                pp_pid_profile *src = pp_profile_at(sessions[s], i);
                pp_pid_profile *dst = pp_profile_get(all, src->pid, true);
                if (!dst || pp_pid_add_all(all, dst, sessions[s], src) < 0) {
                    fprintf(stderr, "bench_merge: merge failed\n");
                    return 1;
                }
            }
            pp_profile_free(sessions[s]);
        }
        for (int pid = 1000; pid < 1000 + PIDS; pid += 3)
            pp_profile_remove(all, pid);
        for (size_t i = 0; i < pp_profile_npids(all); i++)
            check += pp_pid_total(pp_profile_at(all, i)) + pp_pid_nstacks(pp_profile_at(all, i));
        pp_profile_free(all);
        t_merge += cpu_seconds() - t0;

        t0 = cpu_seconds();
        pp_stackcache *sc = pp_stackcache_new(TRACE_MAX);
        uint64_t ips[32];
        for (size_t i = 0; i < TRACES; i++) {
            uint64_t h = (skewed(TRACES) + 1) * 0x2545f4914f6cdd1dull;
            for (size_t k = 0; k < 20; k++)
                ips[k] = h + k;
            if (pp_stackcache_full(sc))
                pp_stackcache_rotate(sc);
            if (pp_stackcache_add(sc, h, ips, 20) < 0) {
                fprintf(stderr, "bench_merge: stack cache add failed\n");
                return 1;
            }
            size_t n;
            for (int k = 0; k < 3; k++) {
                uint64_t q = (skewed(TRACES) + 1) * 0x2545f4914f6cdd1dull;
                const uint64_t *t = pp_stackcache_get(sc, q, &n);
                check += t ? t[0] + n : 0;
            }
        }
        pp_stackcache_free(sc);
        t_stacks += cpu_seconds() - t0;
    }
    pp_emitter_free(em);
    pp_symbolizer_free(sym);
    printf("emit %.4f merge %.4f stacks %.4f total %.4f check %llu\n", t_emit / scale,
           t_merge / scale, t_stacks / scale, (t_emit + t_merge + t_stacks) / scale,
           (unsigned long long)check);
    return 0;
}
