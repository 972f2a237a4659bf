/* The history store (orchestrator/history_store.h) under a synthetic busy host, deterministic:
 * sessions of PIDS processes and DISTINCT distinct stacks each, drawn from a pool of POOL stacks
 * over FRAMES frame names (so that sessions share most frames and stacks, as a host's do). Prints
 * (stack k always in process k % PIDS, as a process runs its own code) the bytes and write time
 * per session for the first hour (fine sessions), then simulates a day
 * of 60 s sessions with the default retention (the first 23 hours become per-minute summaries)
 * and prints the database's size and the time of a query over the whole day.
 * Usage: bench_history [MINUTES]   (default 1440: a day) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "merge/profile.h"
#include "orchestrator/history_store.h"

#define PIDS 300
#define DISTINCT 5000 /* distinct stacks per session */
#define POOL 30000    /* stacks a day draws from */
#define FRAMES 20000  /* frame names */
#define T0 1800000000LL

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *frame_names[FRAMES];
static uint16_t pool_len[POOL];
static uint16_t *pool_frames[POOL];

static void make_pools(void)
{
    for (int i = 0; i < FRAMES; i++) {
        char buf[96];
        snprintf(buf, sizeof(buf), "namespace::Class%d::method_%d(int, std::string const&)",
                 i % 700, i);
        frame_names[i] = strdup(buf);
    }
    for (int i = 0; i < POOL; i++) {
        pool_len[i] = (uint16_t)(10 + next_rand() % 31);
        pool_frames[i] = malloc(pool_len[i] * sizeof(uint16_t));
        uint64_t base = next_rand() % FRAMES;
        for (int j = 0; j < pool_len[i]; j++) /* shared roots: frames near a per-stack base */
            pool_frames[i][j] =
                (uint16_t)((j < 4 ? (uint64_t)j : base + next_rand() % 64) % FRAMES);
    }
}

static pp_profile *session(void)
{
    pp_profile *p = pp_profile_new();
    uint32_t ids[64];
    for (int s = 0; s < DISTINCT; s++) {
        int k = (int)(next_rand() % POOL);
        int pid = 1000 + k % PIDS; /* a process runs its own stacks */
        pp_pid_profile *pp = pp_profile_get(p, pid, true);
        char comm[16];
        snprintf(comm, sizeof(comm), "proc%d", pid % 97);
        pp->comm = pp_profile_intern(p, comm);
        pp->container = pp_profile_intern(p, pid % 3 ? "" : "web-container");
        for (int j = 0; j < pool_len[k]; j++)
            ids[j] = pp_profile_intern(p, frame_names[pool_frames[k][j]]);
        pp_pid_add(pp, ids, pool_len[k], 1 + next_rand() % 20);
    }
    return p;
}

static long long file_bytes(const char *dir)
{
    char path[1024];
    struct stat st;
    long long n = 0;
    const char *suffix[] = {"", "-wal"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s%s", dir, PP_HISTORY_DB, suffix[i]);
        if (stat(path, &st) == 0)
            n += st.st_size;
    }
    return n;
}

int main(int argc, char **argv)
{
    int minutes = argc > 1 ? atoi(argv[1]) : 1440;
    pp_log_set_stderr_level(PP_LOG_WARNING);
    char dir[] = "/tmp/pp_bench_history_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char hdir[600];
    snprintf(hdir, sizeof(hdir), "%s/h", dir);
    char err[1024];
    pp_history *h = pp_history_open(hdir, true, NULL, err, sizeof(err));
    if (!h) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    make_pools();
    double write_total = 0, write_max = 0, fine_write = 0, cpu_total = 0, fine_cpu = 0;
    pp_history_stats st;
    for (int m = 0; m < minutes; m++) {
        pp_profile *p = session();
        double t = now_s(), c = cpu_s();
        if (pp_history_add(h, p, T0 + m * 60LL, T0 + m * 60LL + 60, "busy-host", 11, err,
                           sizeof(err)) != 0) {
            fprintf(stderr, "session %d: %s\n", m, err);
            return 1;
        }
        t = now_s() - t;
        cpu_total += cpu_s() - c;
        pp_profile_free(p);
        write_total += t;
        write_max = t > write_max ? t : write_max;
        if (m == 59 || (minutes < 60 && m == minutes - 1)) {
            fine_write = write_total / (m + 1);
            fine_cpu = cpu_total / (m + 1);
            pp_history_get_stats(h, &st, err, sizeof(err));
            printf("first hour: %d sessions, %llu live bytes (%.0f per session), %.1f ms per "
                   "write (mean; %.1f ms CPU), %lld frames, %lld stacks\n",
                   m + 1, (unsigned long long)st.bytes, (double)st.bytes / (m + 1),
                   fine_write * 1000, fine_cpu * 1000, (long long)st.frames, (long long)st.stacks);
        }
    }
    pp_history_get_stats(h, &st, err, sizeof(err));
    printf("%d minutes: %lld sessions + %lld minute summaries, %llu live bytes (%.0f per "
           "minute), files %lld bytes; write %.1f ms mean (%.1f ms CPU), %.1f ms max (retention "
           "included)\n",
           minutes, (long long)st.sessions, (long long)st.summaries, (unsigned long long)st.bytes,
           (double)st.bytes / minutes, file_bytes(hdir), write_total / minutes * 1000,
           cpu_total / minutes * 1000, write_max * 1000);
    pp_history_close(h);
    h = pp_history_open(hdir, false, NULL, err, sizeof(err));
    pp_history_filter f = {.since = T0, .until = T0 + minutes * 60LL};
    pp_history_window w;
    double t = now_s(), c = cpu_s();
    pp_profile *q = pp_history_query(h, &f, &w, err, sizeof(err));
    t = now_s() - t;
    c = cpu_s() - c;
    size_t stacks = 0;
    for (size_t i = 0; q && i < pp_profile_npids(q); i++)
        stacks += pp_pid_nstacks(pp_profile_at(q, i));
    printf("query of the whole window: %.0f ms (%.0f ms CPU; %zu sessions/summaries, %zu "
           "processes, %zu stacks)\n",
           t * 1000, c * 1000, w.sessions, q ? pp_profile_npids(q) : 0, stacks);
    pp_profile_free(q);
    f.comm = "proc5";
    t = now_s();
    q = pp_history_query(h, &f, &w, err, sizeof(err));
    printf("query of one comm over the window: %.0f ms\n", (now_s() - t) * 1000);
    pp_profile_free(q);
    pp_history_close(h);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
