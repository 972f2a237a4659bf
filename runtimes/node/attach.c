/* --nodejs-mode attach-maps: makes running Node processes write /tmp/perf-<pid>.map, which the
 * system sampler's symbolizer reads, without a restart (gProfiler's mode of the same name;
 * docs/node.md). Per new Node process, once:
 *
 *   1. it must catch SIGUSR1 (SigCgt of /proc/<pid>/status): a program that merely matched the
 *      Node rule (node_exporter...) is never signalled; --disable-sigusr1 gets a skipped stack;
 *   2. the perf-map addon (npm linux-perf, built per Node major and libc at `make deps`, found
 *      through base/resource.h) is copied into <target dir> inside the process's root;
 *   3. the inspector (inspector.c): the user's if it is already listening on the process's
 *      inspector port, else opened with SIGUSR1, closed again and verified closed;
 *   4. over the DevTools protocol (cdp.c, from a thread inside the process's network
 *      namespace): check process.pid and the pid namespace, load the addon with process.dlopen
 *      (CommonJS and ES modules alike), start it (existing code is logged too);
 *   5. the copied addon is removed at once (the process keeps its mapping).
 *
 * At the end of the run (and for processes gone in the meantime) the same handshake stops the
 * addon, and the map polyprof caused is deleted. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/child.h"
#include "base/elfinfo.h"
#include "base/inroot.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "base/resource.h"
#include "runtimes/node/node.h"
#include "runtimes/runner.h"

#define MAX_TRACKED 4096

typedef enum { T_ATTACHED = 1, T_LEFT, T_SKIPPED, T_ERROR } tstate;

typedef struct tracked {
    int pid, nspid;
    unsigned long long start;
    tstate state;
    bool seen;     /* in this session's processes */
    bool same_mnt; /* shares polyprof's mount namespace (its /tmp is ours) */
    int attempts;  /* failed attaches (an error is retried once, next session) */
    char comm[17];
    char reason[200];
} tracked;

static tracked tab[MAX_TRACKED];
static size_t ntab;

static tracked *find(int pid, unsigned long long start)
{
    for (size_t i = 0; i < ntab; i++)
        if (tab[i].pid == pid && tab[i].start == start)
            return &tab[i];
    return NULL;
}

static void set_reason(tracked *t, tstate st, const char *reason)
{
    t->state = st;
    size_t l = strnlen(reason, sizeof(t->reason) - 1);
    memcpy(t->reason, reason, l);
    t->reason[l] = '\0';
}

/* ---- files inside the process's root ---- */

/* The target directory inside pid's root, created root-owned 0755 if missing; refused when it
 * is not a root-owned directory others cannot write. A directory fd, or -1. */
static int target_dir(int pid, const char *dir, char *err, size_t errlen)
{
    const char *slash = strrchr(dir, '/');
    if (!slash || slash == dir || strncmp(dir, "/tmp/", 5) != 0 || strchr(dir + 5, '/')) {
        snprintf(err, errlen, "unexpected target directory %s", dir);
        return -1;
    }
    int tmp = pp_open_in_proc_root(pid, "/tmp", O_RDONLY | O_DIRECTORY);
    if (tmp < 0) {
        snprintf(err, errlen, "cannot open /tmp inside pid %d's root: %s", pid, strerror(errno));
        return -1;
    }
    if (mkdirat(tmp, slash + 1, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s inside pid %d's root: %s", dir, pid,
                 strerror(errno));
        close(tmp);
        return -1;
    }
    int fd = openat(tmp, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(tmp);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
        snprintf(err, errlen, "%s inside pid %d's root is not a directory only root can write", dir,
                 pid);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fchmod(fd, 0755);
    return fd;
}

/* Removes the target directory inside pid's root if it is empty (other runtimes may keep files
 * there). */
static void remove_target_dir(int pid, const char *dir)
{
    int tmp = pp_open_in_proc_root(pid, "/tmp", O_RDONLY | O_DIRECTORY);
    if (tmp >= 0) {
        unlinkat(tmp, strrchr(dir, '/') + 1, AT_REMOVEDIR);
        close(tmp);
    }
}

/* Copies src to name in dirfd (replacing a leftover), readable by the process's user. */
static int place_file(const char *src, int dirfd, const char *name, char *err, size_t errlen)
{
    size_t len;
    char *data = pp_read_file(src, 64u << 20, 0, &len);
    if (!data) {
        snprintf(err, errlen, "cannot read %.300s: %s", src, strerror(errno));
        return -1;
    }
    unlinkat(dirfd, name, 0);
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -1 : 0;
    for (size_t off = 0; rc == 0 && off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w <= 0)
            rc = -1;
        else
            off += (size_t)w;
    }
    if (rc < 0)
        snprintf(err, errlen, "cannot write the perf-map addon into the process's root: %s",
                 strerror(errno));
    if (fd >= 0) {
        if (fchmod(fd, 0644) < 0 || close(fd) < 0)
            rc = -1;
    }
    if (rc < 0)
        unlinkat(dirfd, name, 0);
    free(data);
    return rc;
}

/* Removes the map pid's Node writes (/tmp/perf-<nspid>.map inside its root; in ours when the
 * process is gone and shared our mount namespace). */
static void remove_map(const tracked *t, bool gone)
{
    char name[64];
    snprintf(name, sizeof(name), "perf-%d.map", t->nspid);
    int tmp = gone ? (t->same_mnt ? open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1)
                   : pp_open_in_proc_root(t->pid, "/tmp", O_RDONLY | O_DIRECTORY);
    if (tmp < 0)
        return;
    if (unlinkat(tmp, name, 0) == 0)
        pp_debug("nodejs: removed /tmp/%s of pid %d", name, t->pid);
    close(tmp);
}

/* ---- facts about the process ---- */

static int node_version_literal(const char *s)
{
    unsigned a, b, c;
    char tail;
    return sscanf(s, "node.js/v%u.%u.%u%c", &a, &b, &c, &tail) == 3 && a >= 4 && a < 100;
}

int pp_node_exe_version(int pid, char *out, size_t len)
{
    char exe[64], ver[32];
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    if (pp_elf_find_string(exe, "node.js/v", "0123456789.", 24, node_version_literal, ver,
                           sizeof(ver)) < 0)
        return -1;
    snprintf(out, len, "%s", ver + strlen("node.js/"));
    return 0;
}

/* The addon for pid: "node/linux-perf/<libc>/<major>/linux-perf.node". */
static int find_addon(int pid, char *path, size_t len, char *err, size_t errlen)
{
    char ver[32], tmp[256];
    bool musl = pp_find_mapping(pid, "ld-musl", tmp, sizeof(tmp)) == 0;
    if (pp_node_exe_version(pid, ver, sizeof(ver)) < 0) {
        snprintf(err, errlen, "no perf-map addon for an unknown Node version/%s",
                 musl ? "musl" : "glibc");
        return -1;
    }
    int major = atoi(ver + 1);
    char rel[128];
    snprintf(rel, sizeof(rel), "node/linux-perf/%s/%d/linux-perf.node", musl ? "musl" : "glibc",
             major);
    if (pp_resource_lookup(NULL, rel, false, path, len) == 0)
        return 0;
    char where[1024];
    pp_resource_describe(NULL, rel, false, where, sizeof(where));
    pp_debug("nodejs: %s not found (looked for %s)", rel, where);
    snprintf(err, errlen, "no perf-map addon for Node %d/%s", major, musl ? "musl" : "glibc");
    return -1;
}

/* The JavaScript of the attach and of the stop; the instance lives under a registered symbol,
 * so a later polyprof run finds it (and a foreign map is never truncated). */
#define JS_KEY "Symbol.for('polyprof.linux-perf')"
#define JS_CHECK                                                                                   \
    "if(process.pid!==%d)return'wrong pid '+process.pid;"                                          \
    "const fs=(typeof process.getBuiltinModule==='function'&&process.getBuiltinModule('fs'))||"    \
    "(process.mainModule&&process.mainModule.require('fs'));"                                      \
    "if(fs&&fs.readlinkSync('/proc/self/ns/pid')!=='%s')return'wrong pid namespace';"

static void attach_js(char *out, size_t len, int nspid, const char *pidns, const char *addon)
{
    snprintf(out, len,
             "(()=>{" JS_CHECK "let g=globalThis[" JS_KEY "];"
             "if(!g){if(fs&&fs.existsSync('/tmp/perf-'+process.pid+'.map'))return'foreign map';"
             "const m={exports:{}};process.dlopen(m,'%.300s');g={lp:new m.exports.LinuxPerf()};"
             "Object.defineProperty(globalThis," JS_KEY ",{value:g,configurable:true});}"
             "return g.lp.start()?'started':'already';})()",
             nspid, pidns, addon);
}

static void stop_js(char *out, size_t len, int nspid, const char *pidns)
{
    snprintf(out, len,
             "(()=>{" JS_CHECK "const g=globalThis[" JS_KEY "];if(!g)return'none';"
             "return g.lp.stop()?'stopped':'not running';})()",
             nspid, pidns);
}

static bool pidns_link(int pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
    ssize_t l = readlink(path, out, len - 1);
    if (l <= 0 || memchr(out, '\'', (size_t)l) || memchr(out, '\\', (size_t)l))
        return false;
    out[l] = '\0';
    return true;
}

/* ---- one process ---- */

static void attach_one(const pp_runtime_ctx *ctx, tracked *t)
{
    char path[64], status[4096], err[512];
    snprintf(path, sizeof(path), "/proc/%d/status", t->pid);
    pp_node_flags f;
    if (pp_read_small_file(path, status, sizeof(status)) <= 0 || pp_node_read_flags(t->pid, &f)) {
        set_reason(t, T_ERROR, "the process exited");
        return;
    }
    t->nspid = pp_node_nspid(status);
    t->same_mnt = pp_node_same_ns(t->pid, "mnt");
    if (f.perf_basic_prof || f.perf_prof) { /* it writes its own map or jitdump */
        set_reason(t, T_LEFT, "started with a perf flag");
        return;
    }
    if (pp_node_sig_caught(status, SIGUSR1) != 1) {
        if (f.disable_sigusr1) {
            set_reason(t, T_SKIPPED,
                       "started with --disable-sigusr1, its inspector cannot be opened; start it "
                       "with --perf-basic-prof instead");
        } else {
            /* node_exporter and the like: SIGUSR1 would kill them; they keep native frames */
            pp_info("nodejs: pid %d (%s) does not handle SIGUSR1: not a Node.js process whose "
                    "inspector can be opened; it is not signalled",
                    t->pid, t->comm);
            set_reason(t, T_LEFT, "does not handle SIGUSR1");
        }
        return;
    }
    char addon[4096], pidns[64];
    if (find_addon(t->pid, addon, sizeof(addon), err, sizeof(err)) < 0) {
        set_reason(t, T_ERROR, err);
        return;
    }
    if (!ctx->target_tmpdir || !pidns_link(t->pid, pidns, sizeof(pidns))) {
        set_reason(t, T_ERROR, "no directory for the perf-map addon");
        return;
    }
    int dfd = target_dir(t->pid, ctx->target_tmpdir, err, sizeof(err));
    char name[64], inside[4200];
    snprintf(name, sizeof(name), "linux-perf-%d.node", getpid());
    snprintf(inside, sizeof(inside), "%s/%s", ctx->target_tmpdir, name);
    if (dfd < 0 || place_file(addon, dfd, name, err, sizeof(err)) < 0) {
        set_reason(t, T_ERROR, err);
        if (dfd >= 0)
            close(dfd);
        return;
    }
    char js[2048], *answer = NULL;
    attach_js(js, sizeof(js), t->nspid, pidns, inside);
    int rc = pp_node_inspect(t->pid, t->start, t->nspid, &f, js, &answer, err, sizeof(err));
    unlinkat(dfd, name, 0); /* loaded (or not): the process needs the file no more */
    close(dfd);
    remove_target_dir(t->pid, ctx->target_tmpdir);
    if (rc == 0 && answer && (!strcmp(answer, "\"started\"") || !strcmp(answer, "\"already\""))) {
        t->state = T_ATTACHED;
        pp_info("nodejs: pid %d writes its perf map now (%s)", t->pid,
                strcmp(answer, "\"started\"") ? "left on by an earlier polyprof" : "attached");
    } else if (rc == 0 && answer && !strcmp(answer, "\"foreign map\"")) {
        set_reason(t, T_LEFT, "already has a perf map");
        pp_info("nodejs: pid %d already has a perf map that polyprof did not cause; left alone",
                t->pid);
    } else {
        char why[300];
        snprintf(why, sizeof(why), "cannot attach: %.200s",
                 rc < 0   ? err
                 : answer ? answer
                          : "no answer");
        set_reason(t, T_ERROR, why);
        if (!pp_proc_alive(t->pid))
            set_reason(t, T_ERROR, "the process exited during the attach");
    }
    free(answer);
}

/* Stops the addon in a process polyprof attached and removes the map. */
static void detach_one(tracked *t)
{
    bool gone = pp_pid_gone(t->pid) || pp_proc_start_ticks(t->pid) != t->start;
    if (!gone) {
        pp_node_flags f;
        char js[1024], pidns[64], err[512], *answer = NULL;
        if (pp_node_read_flags(t->pid, &f) == 0 && pidns_link(t->pid, pidns, sizeof(pidns))) {
            stop_js(js, sizeof(js), t->nspid, pidns);
            if (pp_node_inspect(t->pid, t->start, t->nspid, &f, js, &answer, err, sizeof(err)) <
                    0 &&
                !pp_pid_gone(t->pid))
                pp_warn("nodejs: cannot stop the perf map of pid %d (%s): it keeps writing it "
                        "until it exits",
                        t->pid, err);
        }
        free(answer);
    }
    remove_map(t, gone);
    t->state = T_LEFT;
}

/* ---- the hooks ---- */

static bool attaching(const pp_runtime_ctx *ctx)
{
    return !strcmp(ctx->mode, "attach-maps") || !strcmp(ctx->mode, "auto");
}

void pp_node_session_begin(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n)
{
    if (!attaching(ctx))
        return;
    for (size_t i = 0; i < ntab; i++)
        tab[i].seen = false;
    /* attached processes that are gone: their maps go now */
    for (size_t i = 0; i < ntab; i++)
        if (tab[i].state == T_ATTACHED &&
            (pp_pid_gone(tab[i].pid) || pp_proc_start_ticks(tab[i].pid) != tab[i].start))
            detach_one(&tab[i]);
    double budget = pp_mono_now() + (ctx->duration > 4 ? ctx->duration / 2.0 : 2.0);
    for (size_t i = 0; i < n; i++) {
        const pp_proc *p = &procs[i];
        if (p->kind != PP_KIND_NODE || p->blacklisted)
            continue;
        tracked *t = find(p->pid, p->start_ticks);
        if (!t) {
            if (ntab == MAX_TRACKED) {
                /* forget a process that left (never an attached one) */
                size_t k;
                for (k = 0; k < ntab && tab[k].state == T_ATTACHED; k++)
                    ;
                if (k == ntab)
                    continue;
                tab[k] = tab[--ntab];
            }
            t = &tab[ntab++];
            memset(t, 0, sizeof(*t));
            t->pid = p->pid;
            t->start = p->start_ticks;
            snprintf(t->comm, sizeof(t->comm), "%s", p->comm);
        }
        t->seen = true;
        bool retry = t->state == T_ERROR && t->attempts < 2;
        if ((t->state && !retry) || pp_mono_now() > budget)
            continue;
        attach_one(ctx, t);
        if (t->state == T_ERROR) {
            t->attempts++;
            pp_warn("nodejs: pid %d (%s): %s", t->pid, t->comm, t->reason);
        }
    }
}

int pp_node_hook_stacks(const pp_runtime_ctx *ctx, pp_profile *out)
{
    if (!attaching(ctx))
        return 0;
    for (size_t i = 0; i < ntab; i++) {
        const tracked *t = &tab[i];
        if (!t->seen || (t->state != T_SKIPPED && t->state != T_ERROR))
            continue;
        if (pp_error_stack(out, t->pid, t->comm, ctx->rt->label,
                           t->state == T_SKIPPED ? "skipped" : "error", t->reason) < 0)
            return -1;
    }
    return 0;
}

void pp_node_at_exit(const pp_runtime_ctx *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < ntab; i++)
        if (tab[i].state == T_ATTACHED)
            detach_one(&tab[i]);
    ntab = 0;
}
