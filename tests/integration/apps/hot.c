/* Integration fixture: two hot functions whose CPU time is in a 3:1 ratio (random-length rounds).
 * Built with frame pointers. Prints "ready" once running. Optional argv[1]: seconds to run
 * (default: forever; 0 too); optional argv[2]: hot_a's work per unit of hot_b's (default 3: the
 * 3:1 ratio). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

/* Work units per round, 2 to 6 at random (hot_a does three times hot_b's): rounds of a fixed
 * length can beat against a fixed sampling interval and skew the split (a 4 ms round against
 * -f 499's 2.004 ms once gave hot_a 69 % in CI). */
static unsigned long units(void)
{
    static unsigned int seed = 12345;
    seed = seed * 1103515245u + 12345u;
    return 2 + (seed >> 16) % 5;
}

static unsigned long ratio = 3;

__attribute__((noinline)) void hot_a(unsigned long n)
{
    for (unsigned long i = 0; i < ratio * 250000 * n; i++)
        sink += i;
}

__attribute__((noinline)) void hot_b(unsigned long n)
{
    for (unsigned long i = 0; i < 250000 * n; i++)
        sink += i;
}

int main(int argc, char **argv)
{
    double limit = argc > 1 ? atof(argv[1]) : 0;
    if (argc > 2 && atoi(argv[2]) > 0)
        ratio = (unsigned long)atoi(argv[2]);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;) {
        unsigned long n = units();
        hot_a(n);
        hot_b(n);
        if (limit > 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > limit)
                return 0;
        }
    }
}
