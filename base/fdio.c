/* Deadline-bounded, cancellable descriptor I/O: see fdio.h. */
#include "base/fdio.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/child.h"

int pp_fdio_wait(int fd, short events, double deadline, const int *cancel, int ncancel)
{
    struct pollfd p[1 + PP_FDIO_MAX_CANCEL] = {{.fd = fd, .events = events}};
    nfds_t n = 1;
    for (int i = 0; i < ncancel && n < 1 + PP_FDIO_MAX_CANCEL; i++)
        if (cancel[i] >= 0)
            p[n++] = (struct pollfd){.fd = cancel[i], .events = POLLIN};
    for (;;) {
        double left = deadline - pp_mono_now();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        int r = poll(p, n, left > 86400 ? 86400 * 1000 : (int)(left * 1000) + 1); /* no overflow */
        for (nfds_t i = 1; r > 0 && i < n; i++) {
            if (p[i].revents) {
                errno = ECANCELED;
                return -1;
            }
        }
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

int pp_fdio_send_all(int fd, const void *buf, size_t n, double deadline, const int *cancel,
                     int ncancel)
{
    const uint8_t *b = buf;
    while (n) {
        if (pp_fdio_wait(fd, POLLOUT, deadline, cancel, ncancel) < 0)
            return -1;
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t pp_fdio_recv_some(int fd, void *buf, size_t n, double deadline, const int *cancel,
                          int ncancel)
{
    for (;;) {
        if (pp_fdio_wait(fd, POLLIN, deadline, cancel, ncancel) < 0)
            return -1;
        ssize_t r = recv(fd, buf, n, 0);
        if (r >= 0 || (errno != EAGAIN && errno != EINTR))
            return r;
    }
}

int pp_fdio_recv_exact(int fd, void *buf, size_t n, double deadline, const int *cancel, int ncancel)
{
    uint8_t *b = buf;
    while (n) {
        ssize_t r = pp_fdio_recv_some(fd, b, n, deadline, cancel, ncancel);
        if (r < 0)
            return -1;
        if (r == 0) {
            errno = EPIPE;
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}
