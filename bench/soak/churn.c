/* Soak workload: a short-lived busy process. The soak copies this binary under a new name for
 * every start and rewrites its build-id, so that each process is a distinct executable to the
 * symbolizer. Runs argv[1] seconds (default 0.5) in two functions, then exits. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void churn_a(void)
{
    for (unsigned long i = 0; i < 200000; i++)
        sink += i * 3;
}

__attribute__((noinline)) static void churn_b(void)
{
    for (unsigned long i = 0; i < 100000; i++)
        sink ^= i;
}

int main(int argc, char **argv)
{
    double limit = argc > 1 ? atof(argv[1]) : 0.5;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        churn_a();
        churn_b();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > limit)
            return 0;
    }
}
