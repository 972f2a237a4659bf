/* A process whose name (comm) is not UTF-8, as any user can set: the integration suite keeps one
 * running for its whole run (conftest.py), so that every test sees such a name on the host.
 * It works ~3 ms of every 100 ms (so that it is sampled too), and dies with its parent. */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 2 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1)
        return 1;
    if (prctl(PR_SET_NAME, argv[1]) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    volatile unsigned long x = 0;
    for (;;) {
        for (double end = now() + 0.003; now() < end;)
            x++;
        struct timespec nap = {0, 97 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}
