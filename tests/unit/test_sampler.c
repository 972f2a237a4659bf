/* Unit tests: the BPF sampler's stack-trace cache, and the sampler itself on a real process
 * with the cache rotating at every drain. */
#include "tests/unit/testutil.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "runtimes/python/walker_info.h"
#include "bpf/sampler.h"
#include "merge/profile.h"
#include "runtimes/system/sampler.h"
#include "runtimes/system/stackcache.h"

TestSuite(sampler, .init = pp_test_quiet_log);

Test(sampler, stackcache_generations)
{
    pp_stackcache *c = pp_stackcache_new(3);
    cr_assert(c);
    enum { DEEP = PP_STACKCACHE_MAX_DEPTH + 80 }; /* past the longest record */
    uint64_t a[] = {1, 2, 3}, b[] = {4, 5}, deep[DEEP];
    for (size_t i = 0; i < DEEP; i++)
        deep[i] = 1000 + i;
    size_t n;
    cr_assert_null(pp_stackcache_get(c, 11, &n));
    cr_assert_eq(n, 0);
    cr_assert_eq(pp_stackcache_add(c, 11, a, 3), 0);
    cr_assert_eq(pp_stackcache_add(c, 11, b, 2), 0); /* a known hash keeps its first trace */
    cr_assert_eq(pp_stackcache_add(c, 0, b, 2), 0);  /* 0 means "no stack": never stored */
    cr_assert_null(pp_stackcache_get(c, 0, &n));
    const uint64_t *t = pp_stackcache_get(c, 11, &n);
    cr_assert(t && n == 3 && t[0] == 1 && t[2] == 3);
    cr_assert_not(pp_stackcache_full(c));
    cr_assert_eq(pp_stackcache_add(c, 12, b, 2), 0);
    cr_assert_eq(pp_stackcache_add(c, 13, deep, DEEP), 0);
    cr_assert(pp_stackcache_full(c));
    t = pp_stackcache_get(c, 13, &n);
    cr_assert(t && n == PP_STACKCACHE_MAX_DEPTH &&
                  t[PP_STACKCACHE_MAX_DEPTH - 1] == 1000 + PP_STACKCACHE_MAX_DEPTH - 1,
              "capped at the longest record");

    pp_stackcache_rotate(c); /* the old generation still answers */
    cr_assert_not(pp_stackcache_full(c));
    cr_assert_eq(pp_stackcache_count(c), 3);
    t = pp_stackcache_get(c, 12, &n);
    cr_assert(t && n == 2 && t[1] == 5);
    cr_assert_eq(pp_stackcache_add(c, 14, a, 1), 0);
    pp_stackcache_drop_old(c);
    cr_assert_null(pp_stackcache_get(c, 12, &n));
    t = pp_stackcache_get(c, 14, &n);
    cr_assert(t && n == 1 && t[0] == 1);
    cr_assert_eq(pp_stackcache_count(c), 1);
    pp_stackcache_free(c);
}

Test(sampler, stackcache_many_traces)
{
    pp_stackcache *c = pp_stackcache_new(100000);
    uint64_t ips[40];
    for (uint64_t h = 1; h <= 20000; h++) {
        size_t n = (size_t)(h % 40) + 1;
        for (size_t i = 0; i < n; i++)
            ips[i] = h * 100 + i;
        cr_assert_eq(pp_stackcache_add(c, h * 0x100000001ULL, ips, n), 0);
    }
    for (uint64_t h = 1; h <= 20000; h++) {
        size_t n;
        const uint64_t *t = pp_stackcache_get(c, h * 0x100000001ULL, &n);
        cr_assert(t && n == (size_t)(h % 40) + 1 && t[n - 1] == h * 100 + n - 1, "%lu", h);
    }
    pp_stackcache_free(c);
}

/* Recursion whose depth varies: many distinct stacks. noipa and the barrier keep every frame. */
__attribute__((noinline, noipa)) unsigned long pp_sampler_burn(int depth, unsigned long x)
{
    if (depth > 0) {
        unsigned long r = pp_sampler_burn(depth - 1, x * 31 + 7);
        __asm__ volatile("" ::: "memory");
        return r ^ (x >> 3);
    }
    for (int i = 0; i < 20000; i++)
        x = x * 6364136223846793005ULL + 1;
    return x;
}

static pid_t spawn_burner(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        volatile unsigned long sink = 1;
        for (;;)
            for (int d = 0; d < 48; d++)
                sink += pp_sampler_burn(d, sink);
    }
    return pid;
}

/* Samples of pid in p, and how many of them have pp_sampler_burn in their stack. */
static void tally(pp_profile *p, int pid, uint64_t *all, uint64_t *named, size_t *distinct)
{
    *all = *named = 0;
    *distinct = 0;
    pp_pid_profile *pp = pp_profile_get(p, pid, false);
    if (!pp)
        return;
    *distinct = pp_pid_nstacks(pp);
    for (size_t i = 0; i < pp_pid_nstacks(pp); i++) {
        size_t n;
        uint64_t count;
        const uint32_t *f = pp_pid_stack(pp, i, &n, &count);
        *all += count;
        for (size_t j = 0; j < n; j++)
            if (strcmp(pp_profile_str(p, f[j]), "pp_sampler_burn") == 0) {
                *named += count;
                break;
            }
    }
}

Test(sampler, bpf_traces_survive_cache_rotation)
{
    pid_t child = spawn_burner();
    int pids[1] = {child};
    pp_symbolizer *sym = pp_symbolizer_new(16);
    /* a cache of 4 traces: it rotates (and the kernel's known hashes are cleared) every drain */
    pp_sampler_opts o = {
        .kind = PP_SAMPLER_BPF, .frequency = 997, .pids = pids, .npids = 1, .stack_cache = 4};
    char err[256] = "";
    pp_sampler *s = pp_sampler_start(&o, sym, err, sizeof(err));
    cr_assert(s, "%s", err);
    pp_profile *p = pp_profile_new();
    uint64_t all = 0, named = 0;
    size_t distinct = 0;
    struct timespec t0, now, nap = {0, 100 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int drains = 0;
    do { /* until enough samples, several drains, or 20 s */
        nanosleep(&nap, NULL);
        cr_assert_eq(pp_sampler_drain(s, p), 0);
        drains++;
        tally(p, child, &all, &named, &distinct);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((all < 300 || drains < 5) && now.tv_sec - t0.tv_sec < 20);
    pp_sampler_stats st;
    pp_sampler_get_stats(s, &st);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    cr_assert_geq(all, 100, "only %lu samples of the burner", (unsigned long)all);
    /* Under valgrind the burner runs as valgrind's translated code: no named frames there. */
    const char *preload = getenv("LD_PRELOAD");
    if (!preload || !strstr(preload, "vgpreload")) {
        cr_assert_geq(distinct, 8, "only %zu distinct stacks", distinct);
        cr_assert_geq(named * 100, all * 95, "%lu of %lu samples name pp_sampler_burn",
                      (unsigned long)named, (unsigned long)all);
    }
    cr_assert_eq(st.ustacks_lost, 0, "%lu user traces lost", (unsigned long)st.ustacks_lost);
    cr_assert_eq(st.kstacks_lost, 0);
    pp_profile_free(p);
    pp_sampler_stop(s);
    pp_symbolizer_free(sym);
}

/* ---- the in-sampler walker on garbage memory ---- */

/* A fake CPython state in this process's memory, copied into the burner by fork: a thread
 * state whose thread_id is the burner's thread pointer, and a frame chain of garbage code
 * objects that loops back on itself (never ends). */
#define FAKE_FRAMES 300
static uint64_t fake_rt[2], fake_interp[2], fake_ts[3], fake_frames[FAKE_FRAMES][3];
static unsigned garbage_names;

static size_t garbage_name(void *state, pp_profile *out, const uint64_t *words, size_t nframes,
                           unsigned flags, uint32_t *ids, size_t cap, uint64_t *lost)
{
    (void)state, (void)words, (void)flags, (void)lost;
    garbage_names++;
    size_t n = nframes < cap ? nframes : cap;
    for (size_t i = 0; i < n; i++)
        ids[i] = pp_profile_intern(out, "garbage_[p]");
    return n;
}

static void garbage_free(void *state)
{
    (void)state;
}

static const pp_walker_ops garbage_ops = {.name = garbage_name, .free = garbage_free};

Test(sampler, walker_survives_garbage_memory)
{
    uint64_t x = 0x2545F4914F6CDD1DULL;
    fake_rt[0] = (uint64_t)(uintptr_t)fake_interp;
    fake_interp[0] = (uint64_t)(uintptr_t)fake_ts;
    fake_ts[0] = (uint64_t)pthread_self(); /* the burner's thread pointer after fork */
    fake_ts[2] = (uint64_t)(uintptr_t)fake_frames[0];
    for (int i = 0; i < FAKE_FRAMES; i++) {
        fake_frames[i][0] = (uint64_t)(uintptr_t)fake_frames[i + 1 < FAKE_FRAMES ? i + 1 : 100];
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        fake_frames[i][1] = x; /* a garbage code object pointer */
        fake_frames[i][2] = x >> 17;
    }
    pid_t child = spawn_burner();
    int pids[1] = {child};
    pp_symbolizer *sym = pp_symbolizer_new(16);
    pp_sampler_opts o = {.kind = PP_SAMPLER_BPF, .frequency = 997, .pids = pids, .npids = 1};
    char err[256] = "";
    pp_sampler *s = pp_sampler_start(&o, sym, err, sizeof(err));
    cr_assert(s, "%s", err);
    pp_profile *p = pp_profile_new();
    /* Three registrations: the fake state, then random data (garbage addresses and offsets). */
    for (int round = 0; round < 3; round++) {
        struct pp_cpython_info in = {.runtime = (uint64_t)(uintptr_t)fake_rt,
                                     .is_next = 8,
                                     .ts_next = 8,
                                     .ts_frame = 16,
                                     .cframe_current = -1,
                                     .frame_object = 1,
                                     .fr_code = 8,
                                     .fr_ip = 16,
                                     .fr_size = 24,
                                     .co_check_len = 16,
                                     .co_firstlineno_rel = 8,
                                     .max_threads = 4096};
        if (round > 0) {
            unsigned char *b = (unsigned char *)&in;
            for (size_t i = 0; i < sizeof(in); i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                b[i] = (unsigned char)x;
            }
        }
        cr_assert_eq(pp_sampler_walk_attach(s, child, 1000 + round, PP_WALK_PYTHON, &in, sizeof(in),
                                            &garbage_ops, NULL, err, sizeof(err)),
                     0, "%s", err);
        struct timespec nap = {0, 400 * 1000 * 1000};
        for (int i = 0; i < 3; i++) {
            nanosleep(&nap, NULL);
            cr_assert_eq(pp_sampler_drain(s, p), 0);
        }
    }
    pp_sampler_stats st;
    pp_sampler_get_stats(s, &st);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* the fake chain was walked (to the frame bound: truncated) and named; the random data
     * gave failed reads or no thread state; the burner kept being sampled */
    const char *preload = getenv("LD_PRELOAD");
    if (!preload || !strstr(preload, "vgpreload")) { /* valgrind's guest has its own fs base */
        cr_assert_gt(st.walk_truncated, 0, "truncated walks: %lu",
                     (unsigned long)st.walk_truncated);
        cr_assert_gt(garbage_names, 0);
    }
    cr_assert_gt(st.walk_read + st.walk_no_thread, 0);
    pp_pid_profile *pp = pp_profile_get(p, child, false);
    cr_assert(pp && pp_pid_total(pp) > 100);
    pp_profile_free(p);
    pp_sampler_stop(s);
    pp_symbolizer_free(sym);
}

/* ---- sampled threads (perf-event mode) ---- */

/* Stops pid and waits until it is stopped (no more samples of it). */
static void stop_burner(pid_t pid)
{
    int status;
    kill(pid, SIGSTOP);
    cr_assert_eq(waitpid(pid, &status, WUNTRACED), pid);
    cr_assert(WIFSTOPPED(status));
}

/* The perf-event sampler counts the samples of tracked processes per thread and hands each
 * caller the threads of its pids: an untracked process never appears, the counts are exactly
 * the samples the drain gets for the pid, a take leaves other callers' pids alone. */
Test(sampler, perf_event_sampled_threads)
{
    pid_t a = spawn_burner(), b = spawn_burner();
    static int pids[2]; /* the sampler keeps the pointer */
    pids[0] = a < b ? a : b;
    pids[1] = a < b ? b : a;
    stop_burner(a); /* its samples start once it is tracked */
    pp_symbolizer *sym = pp_symbolizer_new(16);
    pp_sampler_opts o = {.kind = PP_SAMPLER_PERF_EVENT, .frequency = 997, .pids = pids, .npids = 2};
    char err[256] = "";
    pp_sampler *s = pp_sampler_start(&o, sym, err, sizeof(err));
    cr_assert(s, "%s", err);
    cr_assert(pp_sampler_can_track_threads(s));
    cr_assert_eq(pp_sampler_track_threads(s, a, true), 0);
    cr_assert_eq(pp_sampler_track_threads(s, a, true), 0); /* nested: one off keeps it */
    cr_assert_eq(pp_sampler_track_threads(s, a, false), 0);
    pp_thread_hits hits[16];
    cr_assert_eq(pp_sampler_sampled_threads(s, pids, 2, hits, 16), 0);
    kill(a, SIGCONT);
    uint64_t taken = 0;
    int takes = 0;
    struct timespec t0, now, nap = {0, 50 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (bool last = false; !last;) {
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((taken >= 200 && takes >= 5) || now.tv_sec - t0.tv_sec >= 20) {
            stop_burner(a); /* the last take gets every sample of a */
            last = true;
        }
        /* a caller of b only: a's counts stay for a's caller */
        cr_assert_eq(pp_sampler_sampled_threads(s, &b, 1, hits, 16), 0);
        size_t n = pp_sampler_sampled_threads(s, pids, 2, hits, 16);
        cr_assert_leq(n, 1);
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(hits[i].pid, a);
            cr_assert_eq(hits[i].tid, a); /* the burner's only thread */
            cr_assert_gt(hits[i].samples, 0);
            taken += hits[i].samples;
        }
        takes++;
    }
    pp_profile *p = pp_profile_new();
    cr_assert_eq(pp_sampler_drain(s, p), 0);
    uint64_t drained, named;
    size_t distinct;
    tally(p, a, &drained, &named, &distinct);
    cr_assert_geq(taken, 50, "only %lu samples taken", (unsigned long)taken);
    cr_assert_eq(taken, drained, "taken %lu, drained %lu", (unsigned long)taken,
                 (unsigned long)drained);
    kill(a, SIGCONT);
    cr_assert_eq(pp_sampler_track_threads(s, a, false), 0);
    nanosleep(&nap, NULL); /* a burns again: untracked, it is not counted */
    cr_assert_eq(pp_sampler_sampled_threads(s, pids, 2, hits, 16), 0);
    kill(a, SIGKILL);
    kill(b, SIGKILL);
    waitpid(a, NULL, 0);
    waitpid(b, NULL, 0);
    pp_sampler_stats st;
    pp_sampler_get_stats(s, &st);
    cr_assert_eq(st.threads_full, 0);
    pp_profile_free(p);
    pp_sampler_stop(s);
    pp_symbolizer_free(sym);
}

/* True when pid's stacks in p carry its thread id (the burners' only thread), false when none
 * does; fails on a mix or another id. */
static bool stacks_by_tid(pp_profile *p, int pid)
{
    pp_pid_profile *pp = pp_profile_get(p, pid, false);
    cr_assert(pp && pp_pid_nstacks(pp) > 0, "no samples of %d", pid);
    size_t with = 0;
    for (size_t i = 0; i < pp_pid_nstacks(pp); i++) {
        uint32_t tid = pp_pid_stack_tid(pp, i);
        cr_assert(tid == 0 || tid == (uint32_t)pid, "pid %d: tid %u", pid, tid);
        with += tid != 0;
    }
    cr_assert(with == 0 || with == pp_pid_nstacks(pp), "pid %d: %zu of %zu stacks by tid", pid,
              with, pp_pid_nstacks(pp));
    return with > 0;
}

static int cmp_pid(const void *x, const void *y)
{
    return *(const int *)x - *(const int *)y;
}

/* Drains s into a fresh profile until each of the n pids has samples (at most 20 s). */
static pp_profile *drain_until_sampled(pp_sampler *s, const int *pids, size_t n)
{
    pp_profile *p = pp_profile_new();
    struct timespec t0, now, nap = {0, 50 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        nanosleep(&nap, NULL);
        cr_assert_eq(pp_sampler_drain(s, p), 0);
        size_t have = 0;
        for (size_t i = 0; i < n; i++)
            have += pp_profile_get(p, pids[i], false) != NULL;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (have == n || now.tv_sec - t0.tv_sec >= 20)
            return p;
    }
}

/* The perf-event sampler's two per-thread uses of one process set, together: processes counted
 * per thread for the per-thread merge (pp_sampler_count_threads: sticky, their stacks carry the
 * tid; at most 4096, the gone ones pruned when full) and processes tracked for the sampled
 * threads (pp_sampler_track_threads: nested, their threads handed to the caller). A process
 * may have either use, both, or none; taking one leaves the other. */
Test(sampler, perf_event_tids_and_tracking)
{
    pid_t a = spawn_burner(), b = spawn_burner(), c = spawn_burner();
    static int pids[3]; /* the sampler keeps the pointer */
    pids[0] = a, pids[1] = b, pids[2] = c;
    qsort(pids, 3, sizeof(int), cmp_pid);
    for (int i = 0; i < 3; i++)
        stop_burner(pids[i]); /* no samples before the uses are set */
    pp_symbolizer *sym = pp_symbolizer_new(16);
    pp_sampler_opts o = {.kind = PP_SAMPLER_PERF_EVENT, .frequency = 997, .pids = pids, .npids = 3};
    char err[256] = "";
    pp_sampler *s = pp_sampler_start(&o, sym, err, sizeof(err));
    cr_assert(s, "%s", err);
    /* a: both uses; 4095 pids past pid_max (never running) fill the per-thread set */
    long pid_max = 0;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
    cr_assert(f && fscanf(f, "%ld", &pid_max) == 1);
    fclose(f);
    cr_assert_lt(pid_max + 4096, INT_MAX);
    cr_assert_eq(pp_sampler_track_threads(s, a, true), 0);
    pp_sampler_count_threads(s, a);
    for (int i = 1; i < 4096; i++)
        pp_sampler_count_threads(s, (int)pid_max + i);
    /* b: tracked, then counted per thread, which prunes the gone pids to make room */
    cr_assert_eq(pp_sampler_track_threads(s, b, true), 0);
    pp_sampler_count_threads(s, b);
    pp_sampler_count_threads(s, b); /* sticky: once is enough, twice changes nothing */
    for (int i = 0; i < 3; i++)
        kill(pids[i], SIGCONT);
    pp_thread_hits hits[16];
    bool seen_a = false, seen_b = false;
    struct timespec t0, now, nap = {0, 50 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!(seen_a && seen_b)) {
        nanosleep(&nap, NULL);
        size_t n = pp_sampler_sampled_threads(s, pids, 3, hits, 16);
        for (size_t i = 0; i < n; i++) {
            cr_assert(hits[i].pid == a || hits[i].pid == b, "untracked %d sampled", hits[i].pid);
            cr_assert_eq(hits[i].tid, hits[i].pid);
            seen_a |= hits[i].pid == a;
            seen_b |= hits[i].pid == b;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        cr_assert_lt(now.tv_sec - t0.tv_sec, 20, "tracked threads not sampled: a %d, b %d", seen_a,
                     seen_b);
    }
    pp_profile *p = drain_until_sampled(s, pids, 3);
    cr_assert(stacks_by_tid(p, a));
    cr_assert(stacks_by_tid(p, b));
    cr_assert_not(stacks_by_tid(p, c), "c is counted per process");
    pp_profile_free(p);

    /* untracked, a and b stay counted per thread; c, tracked only, is not */
    cr_assert_eq(pp_sampler_track_threads(s, a, false), 0);
    cr_assert_eq(pp_sampler_track_threads(s, b, false), 0);
    cr_assert_eq(pp_sampler_track_threads(s, c, true), 0);
    pp_sampler_sampled_threads(s, pids, 3, hits, 16); /* c's samples so far */
    p = drain_until_sampled(s, pids, 3);
    cr_assert(stacks_by_tid(p, a));
    cr_assert(stacks_by_tid(p, b));
    cr_assert_not(stacks_by_tid(p, c));
    pp_profile_free(p);
    size_t n = pp_sampler_sampled_threads(s, pids, 3, hits, 16);
    cr_assert_gt(n, 0);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(hits[i].pid, c, "only c is tracked now, not %d", hits[i].pid);
    cr_assert_eq(pp_sampler_track_threads(s, c, false), 0);
    kill(a, SIGKILL);
    kill(b, SIGKILL);
    kill(c, SIGKILL);
    waitpid(a, NULL, 0);
    waitpid(b, NULL, 0);
    waitpid(c, NULL, 0);
    pp_sampler_stop(s);
    pp_symbolizer_free(sym);
}
