/* Parses a JFR file with polyprof's native parser N times and prints the CPU seconds used
 * (user + system). With -p, prints the collapsed stacks of one parse instead ("frames count"
 * lines, sorted by the caller). With -c, counts jdk.CPUTimeSample events instead of
 * jdk.ExecutionSample. Used by bench/java/run.sh and the tests.
 * Usage: bench_jfr [-p] [-c] FILE [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "merge/profile.h"
#include "runtimes/java/jfr.h"

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void print_stacks(pp_profile *prof, pp_pid_profile *pp)
{
    for (size_t i = 0; i < pp_pid_nstacks(pp); i++) {
        size_t n;
        uint64_t count;
        const uint32_t *f = pp_pid_stack(pp, i, &n, &count);
        for (size_t k = 0; k < n; k++)
            printf("%s%s", k ? ";" : "", pp_profile_str(prof, f[k]));
        printf(" %llu\n", (unsigned long long)count);
    }
}

int main(int argc, char **argv)
{
    int print = 0, a = 1;
    pp_jfr_opts opts = {.events = PP_JFR_EXECUTION};
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "-p"))
            print = 1;
        else if (!strcmp(argv[a], "-c"))
            opts.events = PP_JFR_CPUTIME;
    }
    if (a >= argc) {
        fprintf(stderr, "usage: bench_jfr [-p] [-c] FILE [N]\n");
        return 2;
    }
    const char *path = argv[a];
    int n = print ? 1 : (a + 1 < argc ? atoi(argv[a + 1]) : 1);
    double t0 = cpu_seconds();
    pp_jfr_stats st = {0};
    for (int i = 0; i < n; i++) {
        pp_profile *prof = pp_profile_new();
        pp_pid_profile *pp = pp_profile_get(prof, 1, true);
        char err[256];
        if (pp_jfr_parse_file(path, &opts, prof, pp, &st, err, sizeof(err)) < 0) {
            fprintf(stderr, "bench_jfr: %s\n", err);
            pp_profile_free(prof);
            return 1;
        }
        if (print)
            print_stacks(prof, pp);
        pp_profile_free(prof);
    }
    if (!print)
        printf("%.4f %llu %llu\n", (cpu_seconds() - t0) / n, (unsigned long long)st.samples,
               (unsigned long long)st.chunks);
    return 0;
}
