/* Unit tests: the runtime-profiler runner with stand-in drivers (normal, failing to start,
 * hanging until stopped, never returning). */
#include "tests/unit/testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "merge/scale.h"
#include "base/child.h"
#include "orchestrator/discovery.h"
#include "runtimes/runner.h"

TestSuite(runner, .init = pp_test_quiet_log);

typedef struct {
    const pp_proc *procs;
    size_t n;
    atomic_bool stop;
    int mode;
} fake;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *fake_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double dl,
                        int mode)
{
    (void)ctx;
    (void)dl;
    if (mode == 1)
        return NULL;
    fake *f = calloc(1, sizeof(*f));
    f->procs = procs;
    f->n = n;
    f->mode = mode;
    return f;
}

static void *start_ok(const pp_runtime_ctx *c, const pp_proc *p, size_t n, double d)
{
    return fake_start(c, p, n, d, 0);
}
static void *start_fail(const pp_runtime_ctx *c, const pp_proc *p, size_t n, double d)
{
    return fake_start(c, p, n, d, 1);
}
static void *start_hang(const pp_runtime_ctx *c, const pp_proc *p, size_t n, double d)
{
    return fake_start(c, p, n, d, 2);
}

static int collect(void *s, pp_profile *out)
{
    fake *f = s;
    if (f->mode == 2) /* hangs until told to stop */
        while (!atomic_load(&f->stop)) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    for (size_t i = 0; i < f->n; i++) {
        pp_pid_profile *pp = pp_profile_get(out, f->procs[i].pid, true);
        pp->comm = pp_profile_intern(out, f->procs[i].comm);
        uint32_t fr = pp_profile_intern(out, "work_[p]");
        pp_pid_add(pp, &fr, 1, 5);
    }
    return 0;
}

static void stop(void *s)
{
    atomic_store(&((fake *)s)->stop, true);
}

static void fake_free(void *s)
{
    free(s);
}

static const pp_backend ok_drv = {
    .name = "okrt", .start = start_ok, .collect = collect, .stop = stop, .free = fake_free};
static const pp_backend fail_drv = {
    .name = "failrt", .start = start_fail, .collect = collect, .free = fake_free};
static const pp_backend hang_drv = {
    .name = "hangrt", .start = start_hang, .collect = collect, .stop = stop, .free = fake_free};

static pp_proc_list procs(void)
{
    pp_proc_list l = {0};
    l.cap = 4;
    l.procs = calloc(l.cap, sizeof(*l.procs));
    l.procs[l.n++] = (pp_proc){.pid = 100, .kind = PP_KIND_PYTHON, .comm = "python"};
    l.procs[l.n++] =
        (pp_proc){.pid = 101, .kind = PP_KIND_PYTHON, .comm = "python", .blacklisted = true};
    l.procs[l.n++] = (pp_proc){.pid = 200, .kind = PP_KIND_RUBY, .comm = "ruby"};
    l.procs[l.n++] = (pp_proc){.pid = 300, .kind = PP_KIND_JAVA, .comm = "java"};
    return l;
}

Test(runner, drivers_run_concurrently_and_failures_stay_local)
{
    pp_proc_list l = procs();
    pp_runtime_ctx ctx = {.rt = pp_runtime_get(PP_KIND_PYTHON)};
    const pp_runner_task d[] = {{PP_KIND_PYTHON, &ok_drv, &ctx},
                                {PP_KIND_RUBY, &fail_drv, &ctx},
                                {PP_KIND_JAVA, &hang_drv, &ctx}};
    double t0 = now_s();
    pp_runner *r = pp_runner_start(d, 3, l.procs, l.n, t0 + 0.2);
    pp_profile **res;
    size_t n = pp_runner_finish(r, 0.1, &res);
    double took = now_s() - t0;
    cr_assert_eq(n, 3);
    cr_assert_lt(took, 3.0, "the hanging driver was stopped (took %.2f s)", took);
    pp_profile *sys = pp_profile_new();
    for (size_t i = 0; i < n; i++) /* concatenated as with --perf-mode disabled */
        cr_assert_eq(pp_merge_runtime(sys, res[i], false), 0);
    /* ok: its pid profiled, the blacklisted one not */
    cr_assert_eq(pp_pid_total(pp_profile_get(sys, 100, false)), 5);
    cr_assert_null(pp_profile_get(sys, 101, false));
    /* failing start: an error stack for its pid */
    pp_pid_profile *rb = pp_profile_get(sys, 200, false);
    cr_assert_not_null(rb);
    size_t nf;
    const uint32_t *f = pp_pid_stack(rb, 0, &nf, NULL);
    cr_assert_str_eq(pp_profile_str(sys, f[0]), "[Profiling error: profiler failed to start]");
    /* hang, then stopped: returned its data after stop() */
    cr_assert_eq(pp_pid_total(pp_profile_get(sys, 300, false)), 5);
    pp_profile_free(sys);
    pp_runner_free(r);
    free(l.procs);
}

/* pid's profile is the abandoned driver's error stack. */
static void assert_abandoned(pp_profile *prof, int pid)
{
    pp_pid_profile *pp = pp_profile_get(prof, pid, false);
    cr_assert_not_null(pp);
    size_t nf;
    const uint32_t *f = pp_pid_stack(pp, 0, &nf, NULL);
    cr_assert_str_eq(pp_profile_str(prof, f[0]),
                     "[Profiling error: profiler did not finish in time]");
}

/* A driver that ignores stop(): abandoned, error stacks for its pids. Its thread stays blocked
 * until the test process exits. */
static int collect_forever(void *s, pp_profile *out)
{
    (void)s;
    (void)out;
    for (;;)
        pause();
    return 0;
}

static const pp_backend stuck_drv = {.name = "stuckrt",
                                     .start = start_hang,
                                     .collect = collect_forever,
                                     .stop = stop,
                                     .free = fake_free};

Test(runner, stuck_driver_is_abandoned_with_error_stacks)
{
    pp_proc_list l = procs();
    pp_runtime_ctx ctx = {.rt = pp_runtime_get(PP_KIND_JAVA)};
    const pp_runner_task d[] = {{PP_KIND_JAVA, &stuck_drv, &ctx}};
    pp_runner *r = pp_runner_start(d, 1, l.procs, l.n, now_s() + 0.1);
    pp_profile **res;
    size_t n = pp_runner_finish(r, 0.1, &res);
    cr_assert_eq(n, 1);
    assert_abandoned(res[0], 300);
    cr_assert_eq(pp_runner_abandoned(), 1, "counted while its thread runs");
    pp_runner_free(r);
    cr_assert_eq(pp_runner_abandoned(), 1, "still running after its runner is freed");
    free(l.procs);
}

/* A driver that ignores stop() and returns only at its session's deadline. */
static double late_deadline;

static void *start_late(const pp_runtime_ctx *c, const pp_proc *p, size_t n, double d)
{
    late_deadline = d;
    return fake_start(c, p, n, d, 0);
}

static int collect_at_deadline(void *s, pp_profile *out)
{
    while (now_s() < late_deadline) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return collect(s, out);
}

static const pp_backend late_drv = {.name = "latert",
                                    .start = start_late,
                                    .collect = collect_at_deadline,
                                    .stop = stop,
                                    .free = fake_free};

/* A session ended early (a stop signal): the runner waits the grace from now, not from the
 * session's deadline, then stops and abandons the driver. */
Test(runner, early_end_waits_from_now_not_until_the_deadline)
{
    pp_proc_list l = procs();
    pp_runtime_ctx ctx = {.rt = pp_runtime_get(PP_KIND_JAVA)};
    const pp_runner_task d[] = {{PP_KIND_JAVA, &late_drv, &ctx}};
    double t0 = now_s();
    pp_runner *r = pp_runner_start(d, 1, l.procs, l.n, t0 + 30);
    pp_profile **res;
    size_t n = pp_runner_finish(r, 0.2, &res);
    double took = now_s() - t0;
    cr_assert_eq(n, 1);
    cr_assert_lt(took, 4.0, "the runner waited %.1f s", took);
    assert_abandoned(res[0], 300);
    pp_runner_free(r);
    free(l.procs);
}

/* An abandoned driver that returns later is no longer counted once it has (the agent then
 * frees what it could have used). */
static atomic_bool released;

static int collect_at_release(void *s, pp_profile *out)
{
    while (!atomic_load(&released)) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return collect(s, out);
}

static const pp_backend slow_drv = {.name = "slowrt",
                                    .start = start_late,
                                    .collect = collect_at_release,
                                    .stop = stop,
                                    .free = fake_free};

Test(runner, abandoned_driver_that_returns_is_not_counted_any_more)
{
    pp_proc_list l = procs();
    pp_runtime_ctx ctx = {.rt = pp_runtime_get(PP_KIND_JAVA)};
    const pp_runner_task d[] = {{PP_KIND_JAVA, &slow_drv, &ctx}};
    double t0 = now_s();
    /* it returns only once released: past the runner's wait (deadline + grace, then 2 s after
     * stop()) */
    pp_runner *r = pp_runner_start(d, 1, l.procs, l.n, t0 + 0.1);
    pp_profile **res;
    cr_assert_eq(pp_runner_finish(r, 0.1, &res), 1);
    assert_abandoned(res[0], 300);
    cr_assert_eq(pp_runner_abandoned(), 1);
    pp_runner_free(r);
    free(l.procs);
    atomic_store(&released, true); /* now it returns */
    double until = now_s() + 20;
    while (pp_runner_abandoned() && now_s() < until) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(pp_runner_abandoned(), 0, "not counted once returned");
}
