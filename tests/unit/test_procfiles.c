/* Unit tests for base/procfiles.c: the NSpid parser (pp_status_nspid) on texts, and its reader
 * (pp_read_nspid) on this process, one of its threads, and a process in its own pid namespace;
 * pp_proc_has_memory on a live process and a zombie. */
#include "tests/unit/testutil.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base/procfiles.h"

TestSuite(procfiles, .init = pp_test_quiet_log);

Test(procfiles, nspid_of_status_texts)
{
    int levels = -7;
    /* one level, as the kernel writes it, among the other fields */
    cr_assert_eq(pp_status_nspid("Name:\tjava\nTgid:\t4242\nPid:\t4242\nNStgid:\t4242\n"
                                 "NSpid:\t4242\nUid:\t0\t0\t0\t0\n",
                                 &levels),
                 4242);
    cr_assert_eq(levels, 1);
    /* several levels: the innermost is the last */
    cr_assert_eq(pp_status_nspid("Pid:\t4242\nNSpid:\t4242\t17\t1\nNSpgid:\t9\n", &levels), 1);
    cr_assert_eq(levels, 3);
    cr_assert_eq(pp_status_nspid("NSpid:\t4242\t17\n", &levels), 17,
                 "first line, no newline after");
    cr_assert_eq(levels, 2);
    cr_assert_eq(pp_status_nspid("Pid:\t5\nNSpid:\t5\t8", NULL), 8, "no final newline");
    /* trailing and doubled blanks */
    cr_assert_eq(pp_status_nspid("NSpid:  12 \t 34 \t \nUid:\t0\n", &levels), 34);
    cr_assert_eq(levels, 2);
    /* the ids end at the line's end: the next line's digits are not taken */
    cr_assert_eq(pp_status_nspid("NSpid:\t12\t\n77\n", &levels), 12);
    cr_assert_eq(levels, 1);
    /* ... or at the first thing that is not an id */
    cr_assert_eq(pp_status_nspid("NSpid:\t12\t34x\t56\n", &levels), 34);
    cr_assert_eq(levels, 2);
    cr_assert_eq(pp_status_nspid("NSpid:\t12\tabc\n", &levels), 12);
    cr_assert_eq(levels, 1);
    /* the largest pid the type holds, and past it */
    cr_assert_eq(pp_status_nspid("NSpid:\t1\t2147483647\n", &levels), 2147483647);
    cr_assert_eq(pp_status_nspid("NSpid:\t1\t2147483648\n", &levels), -1);
    cr_assert_eq(levels, 0);
    cr_assert_eq(pp_status_nspid("NSpid:\t99999999999999999999999999999999\t3\n", &levels), -1,
                 "huge");
    cr_assert_eq(levels, 0);
    cr_assert_eq(pp_status_nspid("NSpid:\t0\n", NULL), -1, "no process has id 0");
    cr_assert_eq(pp_status_nspid("NSpid:\t5\t0\n", NULL), -1);
    /* missing or empty */
    cr_assert_eq(pp_status_nspid("Name:\tx\nPid:\t5\nNStgid:\t5\n", &levels), -1);
    cr_assert_eq(levels, 0);
    cr_assert_eq(pp_status_nspid("", &levels), -1);
    cr_assert_eq(pp_status_nspid("NSpid:\n", &levels), -1);
    cr_assert_eq(pp_status_nspid("NSpid:", &levels), -1);
    cr_assert_eq(levels, 0);
    cr_assert_eq(pp_status_nspid("XNSpid:\t5\nNSpidx:\t6\n", NULL), -1,
                 "only the key at a line start");
    /* garbage */
    cr_assert_eq(pp_status_nspid("NSpid:\t-5\n", NULL), -1);
    cr_assert_eq(pp_status_nspid("NSpid:\t+5\n", NULL), -1);
    cr_assert_eq(pp_status_nspid("NSpid:\tx5\n", NULL), -1);
    cr_assert_eq(pp_status_nspid("\n\n\x01\xff:NSpid\t5\n", NULL), -1);
    char big[8192];
    memset(big, '7', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "NSpid:\t", 7);
    cr_assert_eq(pp_status_nspid(big, &levels), -1, "8 KiB of digits");
    for (size_t i = 7; i + 1 < sizeof(big); i += 2)
        big[i] = '\t';
    cr_assert_eq(pp_status_nspid(big, &levels), 7, "4 K levels: no bound but the line");
    cr_assert_eq(levels, (int)(sizeof(big) - 8) / 2);
}

/* A thread that sends its tid up fds[1], then waits until fds[2] is readable. */
static void *park(void *arg)
{
    int *fds = arg;
    int tid = (int)syscall(SYS_gettid);
    char c;
    if (write(fds[1], &tid, sizeof(tid)) != sizeof(tid) || read(fds[2], &c, 1) < 0) {
        /* the test fails on its side */
    }
    return NULL;
}

Test(procfiles, nspid_of_this_process_and_thread)
{
    int levels;
    cr_assert_eq(pp_read_nspid(getpid(), 0, &levels), getpid());
    cr_assert_geq(levels, 1);
    int up[2], down[2];
    cr_assert_eq(pipe(up), 0);
    cr_assert_eq(pipe(down), 0);
    int fds[3] = {-1, up[1], down[0]}, tid = -1;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, park, fds), 0);
    cr_assert_eq(read(up[0], &tid, sizeof(tid)), (ssize_t)sizeof(tid));
    cr_assert(tid > 0 && tid != getpid());
    cr_assert_eq(pp_read_nspid(getpid(), tid, &levels), tid);
    cr_assert_geq(levels, 1);
    cr_assert_eq(write(down[1], "x", 1), 1);
    pthread_join(t, NULL);
    close(up[0]);
    close(up[1]);
    close(down[0]);
    close(down[1]);
    /* pthread_join may return before the kernel has released the task: awaited, bounded */
    int got = 0;
    for (int i = 0; i < 200 && (got = pp_read_nspid(getpid(), tid, &levels)) != -1; i++)
        usleep(5000);
    cr_assert_eq(got, -1, "the thread is gone");
    cr_assert_eq(levels, 0);
}

/* A process in a new pid namespace is 1 there: two levels, the innermost 1. */
Test(procfiles, nspid_of_a_process_in_its_own_pid_namespace)
{
    int up[2], down[2];
    cr_assert_eq(pipe(up), 0);
    cr_assert_eq(pipe(down), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) { /* writes its child's pid (ours: in our namespace), or -1 */
        close(up[0]);
        close(down[1]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pid_t inner = unshare(CLONE_NEWPID) == 0 ? fork() : -1;
        if (inner == 0) { /* 1 in the new namespace: waits until the test closes down */
            char c;
            while (read(down[0], &c, 1) < 0 && errno == EINTR)
                ;
            _exit(0);
        }
        if (write(up[1], &inner, sizeof(inner)) != sizeof(inner))
            _exit(1);
        close(down[0]);
        if (inner > 0)
            waitpid(inner, NULL, 0);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    pid_t inner = -1;
    cr_assert_eq(read(up[0], &inner, sizeof(inner)), (ssize_t)sizeof(inner));
    close(up[0]);
    int levels = 0, got = inner > 0 ? pp_read_nspid(inner, 0, &levels) : -1;
    int tlevels = 0, tgot = inner > 0 ? pp_read_nspid(inner, inner, &tlevels) : -1;
    close(down[1]);
    waitpid(child, NULL, 0);
    if (inner < 0)
        cr_skip_test("unshare(CLONE_NEWPID) is not permitted here");
    cr_assert_eq(got, 1);
    cr_assert_geq(levels, 2);
    cr_assert_eq(tgot, 1, "its main thread's status says the same");
    cr_assert_eq(tlevels, levels);
}

/* A process has memory while it lives; a zombie (exited, not reaped) has none though it exists,
 * and a pid that does not exist has none. */
Test(procfiles, memory_of_a_live_process_and_a_zombie)
{
    cr_assert(pp_proc_has_memory(getpid()));
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0)
        _exit(0);
    siginfo_t si;
    cr_assert_eq(waitid(P_PID, child, &si, WEXITED | WNOWAIT), 0); /* a zombie, not reaped */
    cr_assert(!pp_pid_gone(child));
    cr_assert(!pp_proc_has_memory(child));
    cr_assert(!pp_proc_alive(child));
    cr_assert_eq(waitpid(child, NULL, 0), child);
    cr_assert(!pp_proc_has_memory(child));
    cr_assert(!pp_proc_has_memory(1 << 23)); /* above pid_max */
}
