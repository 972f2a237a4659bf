/* The per-file cache on a host with many distinct binaries: maps up to N ELF files (given on the
 * command line) in this process, lets a child hold them, reports each through the cache as that
 * child's mappings, and waits until every entry is built; prints the time, the entries' states
 * and the bytes held against the cap. Then the child's references are released and a second
 * child maps the files again in reverse order (least recently used entries dropped).
 * Usage: bench_filecache [-c MiB] [-t threads] FILE...   (docs/benchmarks.md) */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/unwind/filecache.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pid_t holder(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    return pid;
}

static void over_cap_cb(void *arg, const pp_fc_info *in)
{
    size_t *n = arg;
    n[0] += in->state == PP_FC_FAILED && strstr(in->err, "cap") != NULL;
}

static void run(pp_filecache *c, pid_t pid, pp_fc_mapping *m, size_t n, int reverse,
                const char *what)
{
    double t0 = now();
    size_t building;
    do {
        building = 0;
        for (size_t k = 0; k < n; k++) {
            uint32_t id;
            size_t i = reverse ? n - 1 - k : k;
            building += pp_filecache_map(c, pid, &m[i], &id) == PP_FC_BUILDING;
        }
        if (building) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    } while (building && now() - t0 < 600);
    pp_fc_stats s;
    pp_filecache_stats(c, &s);
    size_t over[1] = {0};
    pp_filecache_foreach(c, over_cap_cb, over);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%s: %zu files in %.1f s: %zu entries (%zu ready, %zu failed of which %zu over the "
           "cap, %zu building), %.1f MiB held of a %.0f MiB cap, %llu evicted, %llu built; "
           "max RSS %.0f MiB\n",
           what, n, now() - t0, s.files, s.ready, s.failed, over[0], s.building,
           (double)s.bytes / 1048576.0, (double)s.cap_bytes / 1048576.0,
           (unsigned long long)s.evicted, (unsigned long long)s.built,
           (double)ru.ru_maxrss / 1024.0);
}

int main(int argc, char **argv)
{
    size_t cap = 0, threads = 1;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "-c"))
            cap = strtoul(argv[i + 1], NULL, 10) << 20;
        else if (!strcmp(argv[i], "-t"))
            threads = strtoul(argv[i + 1], NULL, 10);
    }
    size_t n = 0;
    pp_fc_mapping *m = calloc((size_t)argc, sizeof(*m));
    for (; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        void *a = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (a == MAP_FAILED)
            continue;
        m[n].start = (uint64_t)(uintptr_t)a;
        m[n].end = m[n].start + (((uint64_t)st.st_size + 4095) & ~4095ULL);
        m[n].dev = (uint64_t)st.st_dev;
        m[n].ino = (uint64_t)st.st_ino;
        m[n].path = argv[i];
        n++;
    }
    pp_filecache *c = pp_filecache_new(cap, threads);
    pid_t p1 = holder();
    run(c, p1, m, n, 0, "first process");
    pp_filecache_release_pid(c, p1);
    pid_t p2 = holder();
    run(c, p2, m, n, 1, "after its release, a second process (reverse order)");
    pp_filecache_release_pid(c, p2);
    pp_filecache_free(c);
    kill(p1, SIGKILL);
    kill(p2, SIGKILL);
    waitpid(p1, NULL, 0);
    waitpid(p2, NULL, 0);
    free(m);
    return 0;
}
