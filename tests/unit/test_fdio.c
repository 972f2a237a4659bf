/* Unit tests: deadline-bounded, cancellable descriptor I/O (base/fdio.c). */
#include "tests/unit/testutil.h"

#include <poll.h>
#include <sys/socket.h>

#include "base/child.h"
#include "base/fdio.h"

TestSuite(fdio, .init = pp_test_quiet_log);

Test(fdio, a_wait_ends_at_its_deadline_or_at_once_when_cancelled)
{
    int sv[2], c[2];
    cr_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    cr_assert(pipe(c) == 0);
    int cancel[3] = {-1, c[0], -1}; /* negative entries are skipped */
    double t0 = pp_mono_now();
    cr_assert_eq(pp_fdio_wait(sv[0], POLLIN, t0 + 0.2, cancel, 3), -1);
    cr_assert_eq(errno, ETIMEDOUT);
    cr_assert_geq(pp_mono_now() - t0, 0.19);
    cr_assert_eq(write(c[1], "x", 1), 1);
    t0 = pp_mono_now();
    cr_assert_eq(pp_fdio_wait(sv[0], POLLIN, t0 + 5, cancel, 3), -1);
    cr_assert_eq(errno, ECANCELED);
    cr_assert_eq(pp_fdio_wait(-1, 0, t0 + 5, cancel, 3), -1, "a sleep, cancelled");
    cr_assert_eq(errno, ECANCELED);
    cr_assert_lt(pp_mono_now() - t0, 1.0);
    cr_assert_eq(pp_fdio_wait(-1, 0, pp_mono_now() + 0.05, NULL, 0), -1, "a sleep");
    cr_assert_eq(errno, ETIMEDOUT);
    cr_assert_eq(write(sv[1], "y", 1), 1);
    cr_assert_eq(pp_fdio_wait(sv[0], POLLIN, pp_mono_now() + 5, NULL, 0), 0, "readable");
    close(sv[0]), close(sv[1]), close(c[0]), close(c[1]);
}

Test(fdio, all_bytes_are_sent_and_exactly_n_received_across_short_writes)
{
    int sv[2];
    cr_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    int small = 4096;
    cr_assert(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
    enum { N = 1 << 20 };
    unsigned char *out = malloc(N), *in = malloc(N);
    for (int i = 0; i < N; i++)
        out[i] = (unsigned char)(i * 7);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(sv[1]);
        int rc = pp_fdio_send_all(sv[0], out, N, pp_mono_now() + 20, NULL, 0) == 0 ? 0 : 1;
        free(out);
        free(in);
        _exit(rc);
    }
    close(sv[0]);
    cr_assert_eq(pp_fdio_recv_exact(sv[1], in, N, pp_mono_now() + 20, NULL, 0), 0, "%s",
                 strerror(errno));
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the sender did not send it all");
    cr_assert_arr_eq(in, out, N);
    /* the stream ends before n bytes: EPIPE */
    cr_assert_eq(pp_fdio_recv_exact(sv[1], in, 1, pp_mono_now() + 5, NULL, 0), -1);
    cr_assert_eq(errno, EPIPE);
    cr_assert_eq(pp_fdio_recv_some(sv[1], in, 1, pp_mono_now() + 5, NULL, 0), 0, "end of stream");
    close(sv[1]);
    free(out);
    free(in);
}
