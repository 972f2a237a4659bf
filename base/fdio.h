/* Waiting on a descriptor and moving bytes through it, each bounded by a deadline
 * (CLOCK_MONOTONIC seconds, pp_mono_now) and ended early by cancel descriptors: descriptors that,
 * once readable, stop the wait (a stop signal's eventfd or pipe). Negative entries of cancel are
 * skipped; at most PP_FDIO_MAX_CANCEL are polled. For the IPC clients of runtimes (a JVM's attach
 * listener, a .NET runtime's diagnostics socket). */
#ifndef PP_FDIO_H
#define PP_FDIO_H

#include <stddef.h>
#include <sys/types.h>

#define PP_FDIO_MAX_CANCEL 4

/* Waits until fd is ready for events (POLLIN, POLLOUT): 0 (also when fd reports an error or a
 * hang-up: the next read or write tells), or -1 with errno ETIMEDOUT at the deadline, ECANCELED
 * when a cancel descriptor is readable, or poll's. With fd -1: a sleep until the deadline
 * (ETIMEDOUT) that a cancel descriptor ends early (ECANCELED). */
int pp_fdio_wait(int fd, short events, double deadline, const int *cancel, int ncancel);

/* Sends all n bytes of buf (MSG_NOSIGNAL: a closed peer gives EPIPE, not SIGPIPE). 0, or -1 with
 * errno (pp_fdio_wait's, or send's). */
int pp_fdio_send_all(int fd, const void *buf, size_t n, double deadline, const int *cancel,
                     int ncancel);

/* Receives exactly n bytes into buf. 0, or -1 with errno: EPIPE when the stream ends before,
 * pp_fdio_wait's, or recv's. */
int pp_fdio_recv_exact(int fd, void *buf, size_t n, double deadline, const int *cancel,
                       int ncancel);

/* One recv of at most n bytes once fd is readable: its result (0 at the end of the stream), or
 * -1 with errno (pp_fdio_wait's, or recv's). */
ssize_t pp_fdio_recv_some(int fd, void *buf, size_t n, double deadline, const int *cancel,
                          int ncancel);

#endif
