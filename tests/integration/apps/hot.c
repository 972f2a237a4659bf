/* Integration fixture: two hot functions whose CPU time is in a 3:1 ratio. Built with frame
 * pointers. Prints "ready" once running. Optional argv[1]: seconds to run (default: forever). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void hot_a(void)
{
    for (unsigned long i = 0; i < 3000000; i++)
        sink += i;
}

__attribute__((noinline)) void hot_b(void)
{
    for (unsigned long i = 0; i < 1000000; i++)
        sink += i;
}

int main(int argc, char **argv)
{
    double limit = argc > 1 ? atof(argv[1]) : 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;) {
        hot_a();
        hot_b();
        if (limit > 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > limit)
                return 0;
        }
    }
}
