/* Times pp_discover over /proc: "cold" passes (a new pp_discovery each time: every maps file is
 * read and every executable parsed; with PROCMAP_QUERY where the kernel has it, and with the
 * whole maps text, and checks both classify alike) and "warm" passes (one pp_discovery reused, as
 * the session loop does). Prints medians and the classification as one JSON line. Used by
 * bench/discovery/run.py; `-l` also lists every process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/discovery.h"
#include "orchestrator/discovery_int.h"
#include "base/log.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int reps = 20;
    bool list = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-l") == 0)
            list = true;
        else
            reps = atoi(argv[i]);
    }
    if (reps < 1)
        reps = 1;
    pp_log_set_stderr_level(PP_LOG_WARNING);
    pp_discovery_opts o = {.self_pid = 0};
    char err[256];
    pp_discovery *d = pp_discovery_new(&o, err, sizeof(err));
    if (!d) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pp_proc_list l = {0};
    double *cold = calloc((size_t)reps, sizeof(double)),
           *cold_text = calloc((size_t)reps, sizeof(double)),
           *warm = calloc((size_t)reps, sizeof(double));
    pp_proc_list lt = {0};
    for (int i = 0; i < 2 * reps; i++) {
        bool text = i % 2;
        pp_disc_force_text_maps(text);
        pp_discovery *c = pp_discovery_new(&o, err, sizeof(err));
        double t0 = now_ms();
        int r = pp_discover(c, text ? &lt : &l);
        (text ? cold_text : cold)[i / 2] = now_ms() - t0;
        pp_discovery_free(c);
        if (r < 0) {
            fprintf(stderr, "pp_discover failed\n");
            return 1;
        }
    }
    pp_disc_force_text_maps(false);
    /* Both ways must classify alike (processes present in both of the last two passes). */
    size_t same = 0, differ = 0;
    for (size_t i = 0; i < l.n; i++)
        for (size_t j = 0; j < lt.n; j++)
            if (lt.procs[j].pid == l.procs[i].pid &&
                lt.procs[j].start_ticks == l.procs[i].start_ticks) {
                if (lt.procs[j].kind == l.procs[i].kind)
                    same++;
                else
                    differ++, fprintf(stderr, "pid %d: %s with PROCMAP_QUERY, %s from maps text\n",
                                      l.procs[i].pid, pp_proc_kind_name(l.procs[i].kind),
                                      pp_proc_kind_name(lt.procs[j].kind));
                break;
            }
    if (pp_discover(d, &l) < 0) /* prime the warm object */
        return 1;
    pp_discovery_stats st0, st;
    pp_discovery_get_stats(d, &st0);
    for (int i = 0; i < reps; i++) {
        double t0 = now_ms();
        if (pp_discover(d, &l) < 0)
            return 1;
        warm[i] = now_ms() - t0;
    }
    if (list) {
        for (size_t i = 0; i < l.n; i++)
            printf("%d\t%d\t%s%s\t0x%x\t%s\n", l.procs[i].pid, l.procs[i].ppid,
                   pp_proc_kind_name(l.procs[i].kind), l.procs[i].blacklisted ? "(bl)" : "",
                   l.procs[i].kinds, l.procs[i].comm);
    }
    size_t count[PP_KIND_COUNT] = {0};
    for (size_t i = 0; i < l.n; i++)
        count[l.procs[i].kind]++;
    qsort(cold, (size_t)reps, sizeof(double), cmp_double);
    qsort(warm, (size_t)reps, sizeof(double), cmp_double);
    qsort(cold_text, (size_t)reps, sizeof(double), cmp_double);
    pp_discovery_get_stats(d, &st);
    printf("{\"procs\": %zu, \"reps\": %d, \"cold_median_ms\": %.3f, \"cold_min_ms\": %.3f, "
           "\"cold_text_median_ms\": %.3f, \"same_kind\": %zu, \"different_kind\": %zu, "
           "\"warm_median_ms\": %.3f, \"warm_min_ms\": %.3f, \"warm_maps_reads_per_pass\": %.1f, "
           "\"kinds\": {",
           l.n, reps, cold[reps / 2], cold[0], cold_text[reps / 2], same, differ, warm[reps / 2],
           warm[0], (double)(st.maps_reads - st0.maps_reads) / (double)(st.passes - st0.passes));
    for (int k = 0; k < PP_KIND_COUNT; k++)
        printf("%s\"%s\": %zu", k ? ", " : "", pp_proc_kind_name((pp_proc_kind)k), count[k]);
    printf("}}\n");
    free(cold);
    free(cold_text);
    free(warm);
    pp_proc_list_free(&l);
    pp_proc_list_free(&lt);
    pp_discovery_free(d);
    return 0;
}
