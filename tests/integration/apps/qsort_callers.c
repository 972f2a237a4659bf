/* Two callers of libc's qsort, 3:1 in time, built -O2 -fomit-frame-pointer by
 * test_native_unwind.py: their frames are reachable only through CFI (the comparator and qsort
 * keep no frame pointer chain). Prints "ready" once running. */
#include <stdio.h>
#include <stdlib.h>

#define N 4096

static int cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int buf[N];

static void __attribute__((noinline)) fill(unsigned seed)
{
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (int)(seed >> 8);
    }
}

/* The sum keeps the calls out of tail position. */
__attribute__((noinline)) int sort_three(unsigned seed)
{
    int s = 0;
    for (int r = 0; r < 3; r++) {
        fill(seed + (unsigned)r);
        qsort(buf, N, sizeof(buf[0]), cmp);
        s += buf[N / 2];
    }
    return s;
}

__attribute__((noinline)) int sort_one(unsigned seed)
{
    fill(seed);
    qsort(buf, N, sizeof(buf[0]), cmp);
    return buf[N / 2];
}

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    volatile int sink = 0;
    for (unsigned i = 0;; i++) {
        sink += sort_three(i);
        sink += sort_one(i);
    }
    return sink;
}
