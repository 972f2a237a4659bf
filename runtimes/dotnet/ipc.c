/* A client of the .NET runtime's diagnostics IPC protocol (dotnet/diagnostics' ipc-protocol.md):
 * the socket's name and place, the DOTNET_IPC_V1 messages polyprof sends (EventPipe
 * CollectTracing 0x0202, the one collect command of .NET Core 3.1, and StopTracing 0x0201), their
 * replies, and the EventPipe session whose nettrace stream follows the reply on the same
 * connection. Only a socket owned by the target's user and served by the target is connected to
 * (base/peersock.h); every wait has a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/child.h"
#include "base/fdio.h"
#include "base/inroot.h"
#include "base/peersock.h"
#include "base/procfiles.h"
#include "base/safefile.h"
#include "runtimes/dotnet/dotnet.h"

static const uint8_t MAGIC[14] = "DOTNET_IPC_V1";

static void put16(uint8_t *b, uint16_t v)
{
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static void header(uint8_t *b, size_t size, uint8_t set, uint8_t id)
{
    memcpy(b, MAGIC, sizeof(MAGIC));
    put16(b + 14, (uint16_t)size);
    b[16] = set;
    b[17] = id;
    put16(b + 18, 0);
}

size_t pp_net_ipc_collect_msg(uint8_t *out, size_t cap, uint32_t buffer_mb,
                              const pp_net_provider *prov, int nprov)
{
    size_t n = PP_NET_IPC_HEADER + 12;
    if (cap < n || nprov < 0)
        return 0;
    put32(out + PP_NET_IPC_HEADER, buffer_mb);
    put32(out + PP_NET_IPC_HEADER + 4, 1); /* format: NetTrace */
    put32(out + PP_NET_IPC_HEADER + 8, (uint32_t)nprov);
    for (int i = 0; i < nprov; i++) {
        size_t len = strlen(prov[i].name);
        /* keywords, level, name (UTF-16 code units with the NUL, then the text), no filter */
        size_t need = 8 + 4 + 4 + 2 * (len + 1) + 4;
        if (cap - n < need || n + need > 0xffff)
            return 0;
        put64(out + n, prov[i].keywords);
        put32(out + n + 8, prov[i].level);
        put32(out + n + 12, (uint32_t)(len + 1));
        n += 16;
        for (size_t k = 0; k <= len; k++) {
            put16(out + n, (uint8_t)prov[i].name[k]);
            n += 2;
        }
        put32(out + n, 0);
        n += 4;
    }
    header(out, n, 0x02, 0x02);
    return n;
}

size_t pp_net_ipc_stop_msg(uint8_t out[28], uint64_t session)
{
    header(out, 28, 0x02, 0x01);
    put64(out + PP_NET_IPC_HEADER, session);
    return 28;
}

static const char *hresult_name(uint32_t hr)
{
    switch (hr) {
    case 0x80131384:
        return "bad encoding";
    case 0x80131385:
        return "unknown command";
    case 0x80131386:
        return "unknown magic";
    case 0x80070057:
        return "invalid argument";
    default:
        return "error";
    }
}

int pp_net_ipc_parse_reply(const uint8_t hdr[PP_NET_IPC_HEADER], size_t *payload, char *err,
                           size_t errlen)
{
    uint16_t size = (uint16_t)(hdr[14] | hdr[15] << 8);
    if (memcmp(hdr, MAGIC, sizeof(MAGIC)) != 0) {
        snprintf(err, errlen, "the reply does not start with DOTNET_IPC_V1: not a .NET runtime");
        return -1;
    }
    if (size < PP_NET_IPC_HEADER || size > PP_NET_IPC_HEADER + 64) {
        snprintf(err, errlen, "the reply's size %u is out of range", size);
        return -1;
    }
    *payload = size - PP_NET_IPC_HEADER;
    if (hdr[16] == 0xff && hdr[17] == 0x00)
        return 0;
    if (hdr[16] == 0xff && hdr[17] == 0xff) {
        return 1;
    }
    snprintf(err, errlen, "unexpected reply (command set 0x%02x, id 0x%02x)", hdr[16], hdr[17]);
    return -1;
}

void pp_net_tmpdir_from_environ(const char *env, size_t n, char *out, size_t len)
{
    snprintf(out, len, "/tmp");
    for (size_t i = 0; i < n;) {
        const char *e = env + i;
        const char *z = memchr(e, '\0', n - i);
        size_t el = z ? (size_t)(z - e) : n - i;
        if (el > 7 && memcmp(e, "TMPDIR=", 7) == 0) {
            const char *v = e + 7;
            size_t vl = el - 7;
            while (vl > 1 && v[vl - 1] == '/')
                vl--;
            bool plain = true; /* a control byte would reach messages: not followed */
            for (size_t k = 0; k < vl; k++)
                plain = plain && (unsigned char)v[k] >= 0x20 && v[k] != 0x7f;
            if (v[0] == '/' && vl < len && plain) {
                memcpy(out, v, vl);
                out[vl] = '\0';
            }
            return; /* the first definition, as getenv finds it */
        }
        i += el + 1;
    }
}

int pp_net_socket_name(int pid, char *dir, size_t dirlen, char *name, size_t namelen, char *err,
                       size_t errlen)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", pid);
    /* bounded: an environment larger than this is read only this far (TMPDIR past it: /tmp) */
    enum { ENV_MAX = 256 * 1024 };
    char *env = malloc(ENV_MAX);
    ssize_t n = env ? pp_read_small_file(path, env, ENV_MAX) : -1;
    int nspid = pp_read_nspid(pid, 0, NULL);
    unsigned long long start = pp_proc_start_ticks(pid);
    if (n < 0 || nspid <= 0 || start == 0) {
        free(env);
        snprintf(err, errlen, "process %d is gone or its /proc files cannot be read", pid);
        errno = ESRCH;
        return -1;
    }
    pp_net_tmpdir_from_environ(env, (size_t)n, dir, dirlen);
    free(env);
    snprintf(name, namelen, "dotnet-diagnostic-%d-%llu-socket", nspid, start);
    return 0;
}

/* The calling thread's cancel descriptor (pp_net_set_cancel_fd), -1 for none. */
static __thread int cancel_fd = -1;

void pp_net_set_cancel_fd(int fd)
{
    cancel_fd = fd;
}

/* Connects to the session's socket (checked: base/peersock.h). */
static int connect_target(const pp_net_session *s, double deadline, char *err, size_t errlen)
{
    pp_peer peer;
    char dir[4 * sizeof(s->dir)]; /* the target's TMPDIR, as quoted in messages */
    pp_escape_text(s->dir, dir, sizeof(dir));
    if (pp_peer_from_pid(s->pid, &peer) < 0) {
        snprintf(err, errlen, "process %d is gone", s->pid);
        return -1;
    }
    int dirfd = pp_open_in_proc_root(s->pid, s->dir, O_PATH | O_DIRECTORY);
    if (dirfd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s inside the root of process %d: %s", dir, s->pid,
                 strerror(e));
        errno = e;
        return -1;
    }
    char what[1200];
    snprintf(what, sizeof(what), "%s/%s of .NET process %d", dir, s->name, s->pid);
    pp_peersock_opts o = {.deadline = deadline,
                          .what = what,
                          .cancel_fds = &cancel_fd,
                          .ncancel = cancel_fd >= 0 ? 1 : 0};
    int fd = pp_peersock_connect_at(dirfd, s->name, &peer, &o, err, errlen);
    int e = errno;
    close(dirfd);
    if (fd < 0 && e == ENOENT)
        snprintf(err, errlen,
                 "no diagnostics socket %s in the root of .NET process %d (diagnostics disabled "
                 "with DOTNET_EnableDiagnostics=0, or not .NET Core 3.0 or later)",
                 what, s->pid);
    errno = e;
    return fd;
}

/* Reads an OK reply's payload (8 bytes: a session id) from fd into *id. */
static int read_reply(int fd, double deadline, uint64_t *id, const char *what, char *err,
                      size_t errlen)
{
    uint8_t hdr[PP_NET_IPC_HEADER], pl[64];
    size_t pn = 0;
    char why[160];
    if (pp_fdio_recv_exact(fd, hdr, sizeof(hdr), deadline, &cancel_fd, 1) < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", what,
                 e == ETIMEDOUT ? "no reply in time"
                 : e == EPIPE   ? "connection closed"
                                : strerror(e));
        errno = e;
        return -1;
    }
    int rc = pp_net_ipc_parse_reply(hdr, &pn, why, sizeof(why));
    if (rc < 0 || pp_fdio_recv_exact(fd, pl, pn, deadline, &cancel_fd, 1) < 0) {
        snprintf(err, errlen, "%s: %s", what, rc < 0 ? why : "reply cut short");
        errno = EPROTO;
        return -1;
    }
    if (rc == 1 || pn < 8) {
        uint32_t hr =
            pn >= 4 ? (uint32_t)(pl[0] | pl[1] << 8 | pl[2] << 16 | (uint32_t)pl[3] << 24) : 0;
        snprintf(err, errlen, "%s: the runtime refused it: HRESULT 0x%08x (%s)", what, hr,
                 hresult_name(hr));
        errno = EPROTO;
        return -1;
    }
    *id = 0;
    for (int i = 7; i >= 0; i--)
        *id = *id << 8 | pl[i];
    return 0;
}

/* Sends msg on fd and reads the OK reply's payload into *id. */
static int command(int fd, const uint8_t *msg, size_t n, double deadline, uint64_t *id,
                   const char *what, char *err, size_t errlen)
{
    if (pp_fdio_send_all(fd, msg, n, deadline, &cancel_fd, 1) < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", what, e == ETIMEDOUT ? "not sent in time" : strerror(e));
        errno = e;
        return -1;
    }
    return read_reply(fd, deadline, id, what, err, errlen);
}

int pp_net_session_start(int pid, const pp_net_provider *prov, int nprov, uint32_t buffer_mb,
                         double deadline, pp_net_session *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->pid = pid;
    s->fd = -1;
    if (pp_net_socket_name(pid, s->dir, sizeof(s->dir), s->name, sizeof(s->name), err, errlen) < 0)
        return -1;
    uint8_t msg[PP_NET_IPC_MAX_MSG];
    size_t n = pp_net_ipc_collect_msg(msg, sizeof(msg), buffer_mb, prov, nprov);
    if (n == 0) {
        snprintf(err, errlen, "the CollectTracing message does not fit in %d bytes",
                 PP_NET_IPC_MAX_MSG);
        errno = EINVAL;
        return -1;
    }
    int fd = connect_target(s, deadline, err, errlen);
    if (fd < 0)
        return -1;
    char what[160];
    snprintf(what, sizeof(what), "EventPipe CollectTracing to .NET process %d", pid);
    if (command(fd, msg, n, deadline, &s->id, what, err, errlen) < 0) {
        int e = errno;
        close(fd); /* a session the runtime started without our reading the reply ends with it */
        errno = e;
        return -1;
    }
    s->fd = fd;
    return 0;
}

ssize_t pp_net_session_read(pp_net_session *s, void *buf, size_t len, double deadline)
{
    return s->fd < 0 ? 0 : pp_fdio_recv_some(s->fd, buf, len, deadline, &cancel_fd, 1);
}

int pp_net_session_stop_send(pp_net_session *s, double deadline, char *err, size_t errlen)
{
    uint8_t msg[28];
    size_t n = pp_net_ipc_stop_msg(msg, s->id);
    int fd = connect_target(s, deadline, err, errlen);
    if (fd < 0)
        return -1;
    if (pp_fdio_send_all(fd, msg, n, deadline, &cancel_fd, 1) < 0) {
        int e = errno;
        snprintf(err, errlen, "EventPipe StopTracing to .NET process %d: %s", s->pid,
                 e == ETIMEDOUT ? "not sent in time" : strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int pp_net_session_stop_reply(pp_net_session *s, int fd, double deadline, char *err, size_t errlen)
{
    char what[160];
    snprintf(what, sizeof(what), "EventPipe StopTracing to .NET process %d", s->pid);
    uint64_t id;
    int rc = read_reply(fd, deadline, &id, what, err, errlen);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int pp_net_session_stop(pp_net_session *s, double deadline, char *err, size_t errlen)
{
    int fd = pp_net_session_stop_send(s, deadline, err, errlen);
    return fd < 0 ? -1 : pp_net_session_stop_reply(s, fd, deadline, err, errlen);
}

void pp_net_session_close(pp_net_session *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

int pp_net_rundown(int pid, pp_nettrace *p, double timeout_s, void (*journal)(void *, uint64_t),
                   void *jarg, char *err, size_t errlen)
{
    double deadline = pp_mono_now() + timeout_s;
    const pp_net_provider prov[] = {
        {PP_NET_PROVIDER_RUNTIME, PP_NET_KW_JIT | PP_NET_KW_LOADER, PP_NET_LEVEL_VERBOSE},
        {PP_NET_PROVIDER_RUNDOWN, PP_NET_KW_RUNDOWN, PP_NET_LEVEL_VERBOSE},
    };
    /* The buffer bounds what the runtime holds before it is streamed, allocated as used; a
     * rundown is written by one thread in one go: with 16 MiB, 3.1.23 dropped 13 % of the
     * methods of a process with 10,000 (bench/dotnet), with 256 MiB none. */
    pp_net_session s;
    if (pp_net_session_start(pid, prov, 2, 256, deadline, &s, err, errlen) < 0)
        return -1;
    if (journal)
        journal(jarg, s.id);
    bool acked = false;
    /* The runtime answers the stop once the session's rundown is written: the stream is read
     * meanwhile (a rundown larger than the socket's buffers would wait for the reader). */
    int sfd = pp_net_session_stop_send(&s, deadline, err, errlen);
    if (sfd < 0 && errno != ECANCELED) /* once more: a session left running is no one's */
        sfd = pp_net_session_stop_send(&s, deadline, err, errlen);
    int rc = sfd < 0 ? -1 : 0;
    uint8_t buf[65536];
    bool eof = false;
    while (rc == 0 && (!eof || sfd >= 0)) {
        struct pollfd pf[3] = {{.fd = eof ? -1 : s.fd, .events = POLLIN},
                               {.fd = sfd, .events = POLLIN},
                               {.fd = cancel_fd, .events = POLLIN}};
        double left = deadline - pp_mono_now();
        int pr = left > 0 ? poll(pf, 3, (int)(left * 1000) + 1) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr > 0 && pf[2].revents) {
            snprintf(err, errlen,
                     "the rundown of .NET process %d: cancelled (polyprof is stopping)", pid);
            rc = -1;
            break;
        }
        if (pr <= 0) {
            snprintf(err, errlen, "the rundown of .NET process %d: %s", pid,
                     sfd >= 0 ? "no reply to StopTracing in time" : "not ended in time");
            rc = -1;
            break;
        }
        if (sfd >= 0 && pf[1].revents) {
            rc = pp_net_session_stop_reply(&s, sfd, deadline, err, errlen);
            acked = rc == 0;
            sfd = -1;
        }
        if (rc == 0 && !eof && pf[0].revents) {
            ssize_t r = pp_net_session_read(&s, buf, sizeof(buf), deadline);
            if (r == 0) {
                eof = true;
            } else if (r < 0) {
                snprintf(err, errlen, "reading the rundown of .NET process %d: %s", pid,
                         strerror(errno));
                rc = -1;
            } else if (pp_nettrace_push(p, buf, (size_t)r) < 0) {
                snprintf(err, errlen, ".NET process %d: %s", pid, pp_nettrace_error(p));
                rc = -1;
            }
        }
    }
    if (sfd >= 0)
        close(sfd);
    if (rc == 0 && !pp_nettrace_done(p)) {
        snprintf(err, errlen, "the rundown stream of .NET process %d ended before its end tag",
                 pid);
        rc = -1;
    }
    pp_net_session_close(&s);
    if (journal && acked)
        journal(jarg, 0);
    return rc;
}
