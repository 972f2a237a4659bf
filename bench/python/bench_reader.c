/* CPython reader benchmark: µs per sampled stack of 10, 50 and 200 frames, warm code cache.
 *   bench_pyreader PYTHON [SAMPLES]
 * Runs tests/fixtures/python/stacks.py under PYTHON with one thread per depth (deep threads of
 * 5/45/195 recursions = 10/50/200 frames with threading's frames), then samples SAMPLES times.
 * The time of one stack is measured between consecutive callbacks (the walk of one thread,
 * its thread state read included). Prints one line per depth: "DEPTH frames: X us/stack". */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/child.h"
#include "runtimes/python/cpython.h"

static const int depths[] = {10, 50, 200};
#define NDEPTHS 3

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

typedef struct acc {
    pp_py_proc *p;
    double last;                  /* time of the previous callback (or sample start) */
    unsigned long long lastreads; /* reads counter then */
    double *us[NDEPTHS];          /* µs spent on each stack of each depth */
    double reads[NDEPTHS];        /* syscalls spent on stacks of each depth (sum) */
    long count[NDEPTHS], cap;
    int seen; /* depths seen (bitmask) */
} acc;

static unsigned long long reads_of(pp_py_proc *p)
{
    pp_py_stats s;
    pp_py_get_stats(p, &s);
    return s.reads;
}

static void mark(acc *a)
{
    a->lastreads = reads_of(a->p);
    a->last = now_us();
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int on_stack(void *arg, const pp_py_stack *st)
{
    acc *a = arg;
    double t = now_us();
    for (int i = 0; i < NDEPTHS; i++)
        if ((int)st->n == depths[i]) {
            if (a->count[i] < a->cap)
                a->us[i][a->count[i]] = t - a->last;
            a->count[i]++;
            a->reads[i] += (double)(reads_of(a->p) - a->lastreads);
            a->seen |= 1 << i;
        }
    mark(a);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PYTHON [SAMPLES]\n", argv[0]);
        return 2;
    }
    int samples = argc > 2 ? atoi(argv[2]) : 2000;
    char fixture[PATH_MAX], dir[] = "/tmp/pp_bench_py_XXXXXX", ready[PATH_MAX + 16];
    if (!realpath("tests/fixtures/python/stacks.py", fixture) || !mkdtemp(dir)) {
        fprintf(stderr, "run from the repository root\n");
        return 1;
    }
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    char *cargv[] = {argv[1], fixture, ready, "5", "45", "195", NULL};
    pp_child_opts o = {.argv = cargv, .quiet = true};
    char err[256];
    pp_child *c = pp_child_start(&o, err, sizeof(err));
    if (!c) {
        fprintf(stderr, "%s\n", err);
        rmdir(dir);
        return 1;
    }
    int rc = 1;
    double end = now_us() + 30e6;
    while (access(ready, F_OK) != 0 && now_us() < end)
        usleep(10000);
    pp_py_open_status st;
    pp_py_proc *p = pp_py_open(pp_child_pid(c), &st, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "open: %s\n", err);
        goto out;
    }
    /* Warm up until every depth is seen (threads park asynchronously). */
    acc a = {.p = p};
    double t0 = now_us(), cold = -1;
    while (a.seen != (1 << NDEPTHS) - 1 && now_us() < end) {
        mark(&a);
        if (pp_py_sample(p, on_stack, &a, err, sizeof(err)) < 0) {
            fprintf(stderr, "sample: %s\n", err);
            goto out;
        }
        if (cold < 0)
            cold = now_us() - t0;
    }
    memset(&a, 0, sizeof(a));
    a.p = p;
    a.cap = samples;
    for (int i = 0; i < NDEPTHS; i++)
        a.us[i] = calloc((size_t)samples, sizeof(double));
    double total = now_us();
    for (int i = 0; i < samples; i++) {
        mark(&a);
        if (pp_py_sample(p, on_stack, &a, err, sizeof(err)) < 0) {
            fprintf(stderr, "sample: %s\n", err);
            goto out;
        }
    }
    total = now_us() - total;
    pp_py_stats s;
    pp_py_get_stats(p, &s);
    printf("python %s: first sample (cold cache, all threads) %.0f us; warm sample of all "
           "threads %.1f us; %llu reads, %llu code hits, %llu misses\n",
           pp_py_version(p), cold, total / samples, s.reads, s.code_hits, s.code_misses);
    /* Median and minimum: the machine may be loaded, means would mostly measure preemption. */
    for (int i = 0; i < NDEPTHS; i++) {
        long k = a.count[i] < a.cap ? a.count[i] : a.cap;
        qsort(a.us[i], (size_t)k, sizeof(double), cmp_double);
        printf("%d frames: %.2f us/stack median, %.2f min, %.1f reads/stack\n", depths[i],
               k ? a.us[i][k / 2] : -1.0, k ? a.us[i][0] : -1.0,
               a.count[i] ? a.reads[i] / (double)a.count[i] : -1.0);
        free(a.us[i]);
        a.us[i] = NULL;
    }
    rc = 0;
out:
    pp_py_close(p);
    pp_child_free(c);
    unlink(ready);
    rmdir(dir);
    return rc;
}
