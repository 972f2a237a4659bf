/* Deaths of profiled JVMs: see safemode.h. */
#include "runtimes/java/safemode.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"

#define MAX_EXITS 64

struct pp_java_watch {
    int nl_fd;
    int kmsg_fd;
    struct {
        int pid, status;
    } exits[MAX_EXITS];
    size_t nexits;
    int oom[MAX_EXITS];
    size_t noom;
};

static int open_connector(void)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
    if (fd < 0)
        return -1;
    int sz = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0};
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    enum proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
    char req[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(op))] __attribute__((aligned(8)));
    memset(req, 0, sizeof(req));
    struct nlmsghdr *nl = (struct nlmsghdr *)req;
    nl->nlmsg_len = NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(op));
    nl->nlmsg_type = NLMSG_DONE;
    struct cn_msg *cn = NLMSG_DATA(nl);
    cn->id.idx = CN_IDX_PROC;
    cn->id.val = CN_VAL_PROC;
    cn->len = sizeof(op);
    memcpy(cn->data, &op, sizeof(op));
    if (send(fd, req, nl->nlmsg_len, MSG_NOSIGNAL) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

pp_java_watch *pp_java_watch_open(void)
{
    pp_java_watch *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->nl_fd = open_connector();
    if (w->nl_fd < 0)
        pp_debug("java: no process-events connector (%s): safemode sees signals only through "
                 "hs_err files and OOM records",
                 strerror(errno));
    w->kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (w->kmsg_fd >= 0)
        lseek(w->kmsg_fd, 0, SEEK_END);
    return w;
}

void pp_java_watch_close(pp_java_watch *w)
{
    if (!w)
        return;
    if (w->nl_fd >= 0)
        close(w->nl_fd);
    if (w->kmsg_fd >= 0)
        close(w->kmsg_fd);
    free(w);
}

int pp_java_watch_fd(const pp_java_watch *w)
{
    return w ? w->nl_fd : -1;
}

static void kmsg_scan(pp_java_watch *w, const int *pids, size_t n);

void pp_java_watch_read(pp_java_watch *w, const int *pids, size_t n)
{
    if (!w)
        return;
    kmsg_scan(w, pids, n);
    if (w->nl_fd < 0)
        return;
    char buf[8192] __attribute__((aligned(8)));
    for (int round = 0; round < 10000; round++) {
        ssize_t r = recv(w->nl_fd, buf, sizeof(buf), 0);
        if (r < 0) {
            if (errno == ENOBUFS)
                continue; /* overflowed: events lost, keep reading */
            break;
        }
        for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)r);
             nh = NLMSG_NEXT(nh, r)) {
            if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(struct proc_event)))
                continue;
            struct cn_msg *cn = NLMSG_DATA(nh);
            /* the event follows the 20-byte cn_msg: copied out, as it is not 8-byte aligned
             * there (its timestamp is a u64) */
            struct proc_event evc;
            memcpy(&evc, cn->data, sizeof(evc));
            const struct proc_event *ev = &evc;
            if (ev->what != PROC_EVENT_EXIT ||
                ev->event_data.exit.process_pid != ev->event_data.exit.process_tgid)
                continue;
            int pid = ev->event_data.exit.process_tgid;
            for (size_t i = 0; i < n; i++) {
                if (pids[i] == pid && w->nexits < MAX_EXITS) {
                    w->exits[w->nexits].pid = pid;
                    w->exits[w->nexits].status = (int)ev->event_data.exit.exit_code;
                    w->nexits++;
                }
            }
        }
    }
}

bool pp_java_fatal_status(int status, int *sig)
{
    if (!WIFSIGNALED(status))
        return false; /* includes exit code 143 (0x8F00): the JVM's exit after SIGTERM */
    int s = WTERMSIG(status);
    if (sig)
        *sig = s;
    return s == SIGABRT || s == SIGKILL || s == SIGSEGV;
}

bool pp_java_kmsg_oom(const char *record, int pid)
{
    char pat[64];
    const char *msg = strchr(record, ';'); /* "prio,seq,ts,flags;message" */
    msg = msg ? msg + 1 : record;
    snprintf(pat, sizeof(pat), "Killed process %d ", pid);
    if (strstr(msg, pat))
        return true;
    snprintf(pat, sizeof(pat), ",pid=%d,", pid);
    return strncmp(msg, "oom-kill:", 9) == 0 && strstr(msg, pat) != NULL;
}

/* Reads the records written since the last call and remembers the pids of OOM kills among
 * pids[0..n). */
static void kmsg_scan(pp_java_watch *w, const int *pids, size_t n)
{
    if (w->kmsg_fd < 0)
        return;
    char rec[8192];
    for (int i = 0; i < 100000; i++) {
        ssize_t r = read(w->kmsg_fd, rec, sizeof(rec) - 1);
        if (r < 0) {
            if (errno == EPIPE || errno == EINTR)
                continue; /* overwritten records: skip */
            break;
        }
        rec[r] = '\0';
        for (size_t k = 0; k < n; k++)
            if (w->noom < MAX_EXITS && pp_java_kmsg_oom(rec, pids[k]))
                w->oom[w->noom++] = pids[k];
    }
}

const char *pp_java_watch_reason(pp_java_watch *w, int pid)
{
    if (!w)
        return NULL;
    for (size_t i = 0; i < w->noom; i++)
        if (w->oom[i] == pid)
            return "profiled-oom";
    for (size_t i = 0; i < w->nexits; i++) {
        int sig;
        if (w->exits[i].pid == pid && pp_java_fatal_status(w->exits[i].status, &sig))
            return "profiled-signaled";
    }
    return NULL;
}
