/* One conversation with a Node process's inspector (docs/node.md, attach-maps): the user's
 * inspector if it already listens on the process's inspector port, else one opened with SIGUSR1
 * and, whatever happens, closed again and verified closed.
 *
 * Why a close must wait for the event loop: one SIGUSR1 makes Node request the inspector's start
 * twice, as a V8 interrupt (run between JavaScript instructions) and as a libuv async handle (run
 * in the event loop's poll phase). In a process busy in a long task the interrupt opens the
 * inspector at once, and the async request waits until the task ends; a process._debugEnd()
 * before that is undone by it, and the inspector listens again for good (issue 25: after 7 of
 * 8 sessions). So polyprof closes only after a barrier, a promise resolved two setImmediate hops
 * later (a check phase after a whole poll phase), and every close also repeats itself after such
 * two hops. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/node/node.h"

#define OPEN_WAIT 5.0   /* seconds for the inspector to listen after SIGUSR1 */
#define CLOSE_WAIT 3.0  /* seconds for its socket to go */
#define TALK_LIMIT 10.0 /* seconds for one DevTools conversation */
#define MAX_LISTEN 64

/* The process's state of polyprof's conversations, under a registered symbol: gen counts the
 * conversations, wd is the watchdog's timer, close(g) closes the inspector now and again once
 * the event loop went through a poll phase (where a start request still pending re-opens it),
 * unless a later conversation (another gen) has begun by then. */
#define KEY "Symbol.for('polyprof.inspector')"
#define PROLOGUE                                                                                   \
    "(()=>{if(process.pid!==%d)return'other';let s=globalThis[" KEY "];"                           \
    "if(!s){s={gen:0,wd:null};Object.defineProperty(globalThis," KEY                               \
    ",{value:s,configurable:true});}"                                                              \
    "s.close=g=>{process._debugEnd();"                                                             \
    "setImmediate(()=>setImmediate(()=>{if(s.gen===g)process._debugEnd();}));};"                   \
    "clearTimeout(s.wd);const g=++s.gen;s.wd=setTimeout(()=>s.close(g),10000);s.wd.unref();"       \
    "return'armed';})()"
#define CLOSE                                                                                      \
    "(()=>{if(process.pid!==%d)return'other';const s=globalThis[" KEY "];"                         \
    "if(!s){process._debugEnd();return'closed';}clearTimeout(s.wd);s.close(s.gen);return'closed';" \
    "})()"
#define CLOSE_GUARDED                                                                              \
    "(()=>{if(process.pid!==%d)return'other';const s=globalThis[" KEY "];"                         \
    "if(s)s.close(s.gen);else process._debugEnd();return'closed';})()"
#define BARRIER                                                                                    \
    "process.pid!==%d?'other':new Promise(r=>setImmediate(()=>setImmediate(()=>r('turned'))))"

bool pp_node_same_ns(int pid, const char *ns)
{
    char a[64], b[64];
    struct stat sa, sb;
    snprintf(a, sizeof(a), "/proc/%d/ns/%s", pid, ns);
    snprintf(b, sizeof(b), "/proc/self/ns/%s", ns);
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_ino == sb.st_ino &&
           sa.st_dev == sb.st_dev;
}

/* What the conversation knows about the process's listening sockets. */
typedef struct insp {
    int pid, nspid, netns;
    unsigned long long start;
    pp_node_listener before[MAX_LISTEN]; /* listening before the signal */
    size_t nbefore;
    pp_node_listener l; /* the inspector */
    bool theirs, signalled;
} insp;

static bool had_inode(const insp *s, unsigned long long inode)
{
    for (size_t i = 0; i < s->nbefore; i++)
        if (s->before[i].inode == inode)
            return true;
    return false;
}

/* A socket pid listens on that was not listening before the signal, on port (any port: -1). */
static bool new_listener(const insp *s, int port, pp_node_listener *found)
{
    pp_node_listener now[MAX_LISTEN];
    size_t n = pp_node_listeners(s->pid, now, MAX_LISTEN);
    for (size_t i = 0; i < n; i++)
        if ((port < 0 || now[i].port == port) && !had_inode(s, now[i].inode)) {
            if (found)
                *found = now[i];
            return true;
        }
    return false;
}

/* Waits (CLOSE_WAIT at most) until no new listener is on port: true, also when pid is gone. */
static bool wait_gone(const insp *s, int port)
{
    double until = pp_mono_now() + CLOSE_WAIT;
    while (!pp_pid_gone(s->pid)) {
        if (!new_listener(s, port, NULL))
            return true;
        if (pp_mono_now() >= until)
            return false;
        usleep(20000);
    }
    return true;
}

/* The inspector's address: the user's (s->theirs) on the flags' port, else the socket that pid
 * starts listening on after SIGUSR1. 0, or -1 with err. */
static int open_inspector(insp *s, const pp_node_flags *f, char *err, size_t errlen)
{
    s->nbefore = pp_node_listeners(s->pid, s->before, MAX_LISTEN);
    for (size_t i = 0; i < s->nbefore; i++)
        if (s->before[i].port == f->port) {
            s->l = s->before[i];
            s->theirs = true;
            return 0;
        }
    char path[64], status[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", s->pid);
    /* the check and the signal as close together as possible, for the same process */
    if (pp_read_small_file(path, status, sizeof(status)) <= 0 ||
        pp_node_sig_caught(status, SIGUSR1) != 1 || pp_proc_start_ticks(s->pid) != s->start) {
        snprintf(err, errlen, "the process exited");
        return -1;
    }
    if (kill(s->pid, SIGUSR1) < 0) {
        snprintf(err, errlen, "cannot signal it: %s", strerror(errno));
        return -1;
    }
    s->signalled = true;
    pp_debug("nodejs: sent SIGUSR1 to pid %d to open its inspector", s->pid);
    double until = pp_mono_now() + OPEN_WAIT;
    while (pp_mono_now() < until) {
        if (new_listener(s, -1, &s->l))
            return 0;
        if (pp_pid_gone(s->pid)) {
            snprintf(err, errlen, "the process exited");
            return -1;
        }
        usleep(20000);
    }
    snprintf(err, errlen, "its inspector did not open within %.0f s of SIGUSR1", OPEN_WAIT);
    return -1;
}

/* Closes the inspector pid opened on port (any port: -1) since the signal, if there is one and
 * it answers as that process: connects only to a socket of pid's own (its fds) that was not
 * listening before. Whether one was found. */
static bool close_guarded(const insp *s, int port)
{
    pp_node_listener l;
    if (!new_listener(s, port, &l))
        return false;
    pp_debug("nodejs: closing the inspector of pid %d on port %d", s->pid, l.port);
    char js[512], *r = NULL, e2[256];
    snprintf(js, sizeof(js), CLOSE_GUARDED, s->nspid);
    const char *x = js;
    pp_cdp_evaluate(s->netns, l.addr, l.port, &x, 1, &r, pp_mono_now() + 3, e2, sizeof(e2));
    free(r);
    return true;
}

/* After SIGUSR1 without a conversation: whatever opened is closed; an ERROR when that cannot be
 * verified. */
static void close_unused(const insp *s, const char *why)
{
    if (pp_pid_gone(s->pid) || pp_proc_start_ticks(s->pid) != s->start)
        return;
    if (close_guarded(s, -1) && !wait_gone(s, -1)) {
        pp_error("nodejs: pid %d: the inspector polyprof opened with SIGUSR1 still listens after "
                 "process._debugEnd() (%s); any local user who can connect to it can run code "
                 "in that process: restart it, or close the inspector from its code "
                 "(require('inspector').close())",
                 s->pid, why);
        return;
    }
    if (!new_listener(s, -1, NULL))
        pp_error("nodejs: pid %d: its inspector did not open within %.0f s of polyprof's "
                 "SIGUSR1 (its main thread is blocked?): when it opens it later, it stays open "
                 "until the process exits; check with `ss -ltnp` and restart the process if it "
                 "listens",
                 s->pid, OPEN_WAIT);
}

int pp_node_inspect(int pid, unsigned long long start, int nspid, const pp_node_flags *f,
                    const char *js, char **answer, char *err, size_t errlen)
{
    insp s;
    memset(&s, 0, sizeof(s));
    s.pid = pid;
    s.start = start;
    s.nspid = nspid;
    s.netns = pp_node_same_ns(pid, "net") ? 0 : pid;
    *answer = NULL;
    err[0] = '\0';
    if (open_inspector(&s, f, err, errlen) < 0) {
        if (s.signalled)
            close_unused(&s, err);
        return -1;
    }
    if (s.theirs) { /* the user's: used, left open */
        int got = pp_cdp_evaluate(s.netns, s.l.addr, s.l.port, &js, 1, answer,
                                  pp_mono_now() + TALK_LIMIT, err, errlen);
        return got < 1 ? -1 : 0;
    }
    /* the prologue arms a watchdog that closes the inspector should polyprof die before the
     * close; the barrier waits until the event loop has turned */
    char pro[1024], barrier[256], close[512];
    snprintf(pro, sizeof(pro), PROLOGUE, nspid);
    snprintf(barrier, sizeof(barrier), BARRIER, nspid);
    snprintf(close, sizeof(close), CLOSE, nspid);
    const char *exprs[4] = {pro, js, barrier, close};
    char *res[4];
    int got = pp_cdp_evaluate(s.netns, s.l.addr, s.l.port, exprs, 4, res,
                              pp_mono_now() + TALK_LIMIT, err, errlen);
    bool turned = res[2] && !strcmp(res[2], "\"turned\"");
    *answer = res[1];
    free(res[0]);
    free(res[2]);
    free(res[3]);
    if (!wait_gone(&s, s.l.port)) {
        close_guarded(&s, s.l.port); /* the conversation broke off */
        if (!wait_gone(&s, s.l.port)) {
            pp_error("nodejs: pid %d: the inspector polyprof opened with SIGUSR1 still listens "
                     "on %s port %d after process._debugEnd(); any local user who can connect "
                     "to it can run code in that process: restart it, or close the inspector "
                     "from its code (require('inspector').close())",
                     pid, s.l.addr, s.l.port);
            return -1;
        }
    }
    if (got < 2 && !err[0])
        snprintf(err, errlen, "the inspector closed the connection");
    if (!turned && !pp_pid_gone(pid) && pp_proc_start_ticks(pid) == start)
        pp_error("nodejs: pid %d: the conversation with its inspector ended before its event "
                 "loop turned (%s): the inspector (port %d) is closed now, Node re-opens it once "
                 "when the loop turns, and polyprof's close scheduled for that moment cannot be "
                 "verified: check with `ss -ltnp` and restart the process if it listens",
                 pid, err[0] ? err : "a long task", s.l.port);
    return got < 2 ? -1 : 0;
}
