/* Unit tests: the worker pool (base/workpool.h): a stuck job does not hold up the others,
 * submitting and freeing never wait, queued jobs are cancelled at free. */
#include "tests/unit/testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "base/workpool.h"

TestSuite(workpool, .init = pp_test_quiet_log);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static atomic_int done, cancelled, release;

static void quick(void *arg, bool run)
{
    (void)arg;
    atomic_fetch_add(run ? &done : &cancelled, 1);
}

/* Blocks until release is set (a target that does not answer). */
static void stuck(void *arg, bool run)
{
    (void)arg;
    while (run && !atomic_load(&release)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(run ? &done : &cancelled, 1);
}

static void wait_done(int n, double timeout)
{
    double until = now_s() + timeout;
    while (atomic_load(&done) < n && now_s() < until) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

Test(workpool, stuck_jobs_do_not_hold_up_the_others)
{
    atomic_store(&done, 0);
    atomic_store(&release, 0);
    pp_workpool *p = pp_workpool_new(3);
    cr_assert_not_null(p);
    double t0 = now_s();
    cr_assert_eq(pp_workpool_submit(p, stuck, NULL), 0);
    cr_assert_eq(pp_workpool_submit(p, stuck, NULL), 0);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(pp_workpool_submit(p, quick, NULL), 0);
    cr_assert_lt(now_s() - t0, 0.5, "submitting does not wait");
    wait_done(20, 10);
    cr_assert_eq(atomic_load(&done), 20, "the quick jobs ran beside the stuck ones");
    /* the last quick job's worker counts itself out after its function returns */
    for (double until = now_s() + 10; pp_workpool_pending(p) != 2 && now_s() < until;) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(pp_workpool_pending(p), 2);
    atomic_store(&release, 1);
    wait_done(22, 10);
    cr_assert_eq(atomic_load(&done), 22);
    pp_workpool_free(p);
}

Test(workpool, free_cancels_queued_jobs_and_never_waits)
{
    atomic_store(&done, 0);
    atomic_store(&cancelled, 0);
    atomic_store(&release, 0);
    pp_workpool *p = pp_workpool_new(1);
    cr_assert_eq(pp_workpool_submit(p, stuck, NULL), 0);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(pp_workpool_submit(p, quick, NULL), 0);
    /* the single thread is inside the stuck job (or about to be): the rest stays queued */
    double t0 = now_s();
    while (pp_workpool_pending(p) != 6 && now_s() - t0 < 5)
        ;
    pp_workpool_free(p);
    cr_assert_lt(now_s() - t0, 5.0, "free did not wait for the stuck job");
    int c = atomic_load(&cancelled);
    cr_assert(c == 5 || c == 6, "queued jobs were cancelled (%d)", c);
    atomic_store(&release, 1); /* the running job ends; its thread frees the pool */
    wait_done(6 - c, 10);
    cr_assert_eq(atomic_load(&done) + c, 6);
}
