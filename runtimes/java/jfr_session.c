/* One JFR recording per JVM per session: see jfr_session.h. */
#include "runtimes/java/jfr_session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "base/inroot.h"
#include "base/safefile.h"
#include "runtimes/java/attach.h"
#include "runtimes/java/java.h"
#include "runtimes/java/jfr.h"
#include "runtimes/java/jvmutil.h"
#include "base/procfiles.h"

static atomic_uint rec_counter;

pp_jfr_sampler pp_jfr_sampler_for(int major)
{
    return major >= 25 ? PP_JFR_SAMPLER_CPUTIME : PP_JFR_SAMPLER_EXECUTION;
}

void pp_jfr_start_cmdline(char *buf, size_t len, const char *name, pp_jfr_sampler sampler,
                          int frequency, int duration_s, bool disk, const char *filename)
{
    int period = frequency > 0 ? (2000 / frequency + 1) / 2 : 91; /* round(1000 / f) */
    if (period < 1)
        period = 1;
    char events[256];
    if (sampler == PP_JFR_SAMPLER_CPUTIME)
        snprintf(events, sizeof(events),
                 "+jdk.CPUTimeSample#enabled=true +jdk.CPUTimeSample#throttle=%dms", period);
    else
        snprintf(events, sizeof(events),
                 "+jdk.ExecutionSample#enabled=true +jdk.ExecutionSample#period=%dms "
                 "+jdk.NativeMethodSample#enabled=true +jdk.NativeMethodSample#period=%dms",
                 period, period);
    snprintf(buf, len, "JFR.start name=%s settings=none %s duration=%ds disk=%s filename=%s", name,
             events, duration_s, disk ? "true" : "false", filename);
}

/* This polyprof's identity in recording names: its pid namespace, pid and start time. */
static unsigned long long self_ns, self_ticks;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_init(void)
{
    struct stat sb;
    self_ns = stat("/proc/self/ns/pid", &sb) == 0 ? (unsigned long long)sb.st_ino : 0;
    self_ticks = pp_proc_start_ticks((int)getpid());
}

bool pp_jfr_polyprof_name(const char *name, unsigned long long *ns, long *pid,
                          unsigned long long *ticks)
{
    unsigned long long a, c;
    long b;
    unsigned n;
    int end = 0;
    if (sscanf(name, "polyprof_%llu_%ld_%llu_%u%n", &a, &b, &c, &n, &end) != 4 || name[end])
        return false;
    *ns = a;
    *pid = b;
    *ticks = c;
    return true;
}

/* Whether pid is a running polyprof (its directories are in use). */
static bool polyprof_alive(long pid)
{
    char path[64], comm[32];
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    return pp_read_small_file(path, comm, sizeof(comm)) > 0 && strncmp(comm, "polyprof", 8) == 0;
}

int pp_jfr_cleanup_stale(int tmp_fd)
{
    int dfd = openat(tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    int removed = 0;
    struct dirent *e;
    for (int i = 0; i < 1000000 && (e = readdir(d)); i++) {
        if (strncmp(e->d_name, "polyprof-jfr-", 13) != 0)
            continue;
        long owner = strtol(e->d_name + 13, NULL, 10);
        if (owner <= 0 || owner == (long)getpid() || polyprof_alive(owner))
            continue;
        static const char *const files[] = {"start.jfr", "rec.jfr", "orphan.jfr"};
        for (size_t k = 0; k < 3; k++) {
            char rel[320];
            snprintf(rel, sizeof(rel), "%s/%s", e->d_name, files[k]);
            unlinkat(tmp_fd, rel, 0);
        }
        if (unlinkat(tmp_fd, e->d_name, AT_REMOVEDIR) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int pp_jfr_check_names(const char *check, char names[][64], bool *running, int max)
{
    int n = 0;
    for (const char *p = check; p && *p && n < max;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        /* "Recording 2: name=x maxsize=250.0MB (running)" */
        const char *nm =
            len > 10 && strncmp(p, "Recording ", 10) == 0 ? memmem(p, len, ": name=", 7) : NULL;
        if (nm) {
            nm += 7;
            size_t l = strcspn(nm, " \n");
            if (l > 0 && l < 64 && nm + l <= p + len) {
                memcpy(names[n], nm, l);
                names[n][l] = '\0';
                running[n] = memmem(p, len, "(running)", 9) != NULL;
                n++;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

bool pp_jfr_orphan_name(const char *name)
{
    unsigned long long ns, ticks;
    long pid;
    if (!pp_jfr_polyprof_name(name, &ns, &pid, &ticks))
        return false;
    pthread_once(&self_once, self_init);
    if (ns != self_ns) /* another pid namespace: its owner cannot be checked from here */
        return false;
    if (pid == (long)getpid())
        return ticks != self_ticks;
    return !polyprof_alive(pid) || pp_proc_start_ticks((int)pid) != ticks;
}

/* -XX:ErrorFile=<path> from the command line, %p expanded to the namespace pid. */
static void read_errfile(int pid, int nspid, char *out, size_t len)
{
    char path[64], buf[65536];
    out[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    ssize_t n = pp_read_small_file(path, buf, sizeof(buf));
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
        if (strncmp(buf + i, "-XX:ErrorFile=", 14) != 0)
            continue;
        size_t o = 0;
        for (const char *s = buf + i + 14; *s && o + 12 < len; s++) {
            if (s[0] == '%' && s[1] == 'p') {
                o += (size_t)snprintf(out + o, len - o, "%d", nspid);
                s++;
            } else {
                out[o++] = *s;
            }
        }
        out[o] = '\0';
    }
}

/* The directory of -XX:ErrorFile, opened O_PATH while the JVM is alive and held as its /tmp and
 * cwd are: an absolute path resolved inside the JVM's root, a relative one below its cwd (which
 * then acts as the root: ".." and absolute symlinks cannot leave it). -1 when none. */
static int open_errdir(int pid, int cwd_fd, const char *errfile)
{
    const char *slash = strrchr(errfile, '/');
    if (!errfile[0] || (slash && !slash[1]))
        return -1;
    char dir[256];
    size_t dl = slash ? (size_t)(slash - errfile) : 0;
    if (dl >= sizeof(dir))
        return -1;
    memcpy(dir, errfile, dl);
    dir[dl] = '\0';
    if (errfile[0] == '/')
        return pp_open_in_proc_root(pid, dl ? dir : "/", O_PATH | O_DIRECTORY);
    return cwd_fd >= 0 ? pp_openat_in_root(cwd_fd, dl ? dir : ".", O_PATH | O_DIRECTORY) : -1;
}

int pp_jfr_rec_init(pp_jfr_rec *r, int pid, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->pid = pid;
    r->tmp_fd = r->cwd_fd = r->errdir_fd = -1;
    char path[96], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    pp_jattach_status st;
    if (pp_read_small_file(path, text, sizeof(text)) <= 0 ||
        pp_jattach_parse_status(text, &st) < 0) {
        snprintf(err, errlen, "process went down during profiling");
        return -1;
    }
    r->nspid = st.nspid;
    r->uid = st.euid;
    r->gid = st.egid;
    r->start_ticks = pp_proc_start_ticks(pid);
    /* the JVM's /tmp resolved inside its root: a symlinked /tmp stays in the container */
    r->tmp_fd = pp_open_in_proc_root(pid, "/tmp", O_PATH | O_DIRECTORY);
    int tmp_errno = errno;
    snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
    r->cwd_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    read_errfile(pid, r->nspid, r->errfile, sizeof(r->errfile));
    r->errdir_fd = open_errdir(pid, r->cwd_fd, r->errfile);
    pthread_once(&self_once, self_init);
    snprintf(r->name, sizeof(r->name), "polyprof_%llu_%d_%llu_%u", self_ns, (int)getpid(),
             self_ticks, atomic_fetch_add(&rec_counter, 1) + 1);
    if (r->tmp_fd < 0) {
        snprintf(err, errlen, "cannot open the /tmp of process %d: %s", pid, strerror(tmp_errno));
        return -1;
    }
    return 0;
}

int pp_jfr_make_private_dir(pp_jfr_rec *r, char *name, size_t len, char *err, size_t errlen)
{
    /* the pid keeps the name recognisable (pp_jfr_cleanup_stale); the random part makes it
     * unpredictable, so that no name can be planted in advance (it used to be a counter: a user
     * who made polyprof-jfr-<pid>-1..300 denied every session) */
    for (int attempt = 0; attempt < 8; attempt++) {
        char rnd[PP_JFR_DIR_RANDOM + 1];
        pp_random_chars(rnd, PP_JFR_DIR_RANDOM);
        snprintf(name, len, "polyprof-jfr-%d-%s", (int)getpid(), rnd);
        if (mkdirat(r->tmp_fd, name, 0700) == 0) {
            if (fchownat(r->tmp_fd, name, r->uid, r->gid, AT_SYMLINK_NOFOLLOW) < 0) {
                snprintf(err, errlen, "cannot give a directory to the JVM's user %u: %s",
                         (unsigned)r->uid, strerror(errno));
                unlinkat(r->tmp_fd, name, AT_REMOVEDIR);
                return -1;
            }
            return 0;
        }
        if (errno != EEXIST)
            break;
    }
    snprintf(err, errlen, "cannot create a directory in the JVM's /tmp: %s", strerror(errno));
    return -1;
}

static void remove_private_dir(pp_jfr_rec *r, const char *dir, const char *file)
{
    char rel[160];
    snprintf(rel, sizeof(rel), "%s/%s", dir, file);
    unlinkat(r->tmp_fd, rel, 0);
    if (unlinkat(r->tmp_fd, dir, AT_REMOVEDIR) < 0)
        pp_warn_proc(r->pid, r->start_ticks, "java: cannot remove /tmp/%s of JVM %d: %s", dir,
                     r->pid, strerror(errno));
}

/* Runs a jcmd; 0 on result code 0, else -1 with the JVM's message or the attach error (errno
 * as pp_jattach_cmd sets it; 0 when the JVM answered). */
static int jcmd(pp_jfr_rec *r, const char *cmd, double timeout, char *err, size_t errlen)
{
    char *out = NULL;
    int rc = pp_jattach_jcmd(r->pid, cmd, timeout, &out, err, errlen);
    int e = rc < 0 ? errno : 0;
    if (rc > 0 || (rc == 0 && out && strstr(out, "Could not") != NULL)) {
        /* the JVM's first line, bounded and escaped: it becomes a frame and a log line */
        char line[256];
        const char *msg = out ? out : "";
        while (*msg == '\n' || *msg == ' ')
            msg++;
        snprintf(line, sizeof(line), "%.*s", (int)strcspn(msg, "\n"), msg);
        pp_escape_text(line, err, errlen);
        rc = -1;
    }
    free(out);
    errno = e;
    return rc;
}

/* Whether the last failed request ended because the JVM did not answer in time, is stopped, or
 * the caller cancelled it (errno of jcmd / pp_jattach_cmd). */
static bool no_answer(void)
{
    return errno == ETIMEDOUT || errno == ECANCELED || errno == EAGAIN;
}

/* pp_java_each_thread: the thread's CPU ticks (utime + stime) into arg, a pp_u64map. */
static int add_thread_cpu(void *arg, int pid, long tid)
{
    char spath[96], stat[1024];
    snprintf(spath, sizeof(spath), "/proc/%d/task/%ld/stat", pid, tid);
    ssize_t n = pp_read_small_file(spath, stat, sizeof(stat));
    const char *p = n > 0 ? strrchr(stat, ')') : NULL;
    unsigned long long ut, st;
    /* after "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt
     * cmajflt utime stime */
    return p &&
           sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2 &&
           pp_u64map_put(arg, (uint64_t)tid, ut + st) < 0;
}

/* CPU ticks of each thread of pid into m (tid -> ticks); bounded. */
static void thread_cpu(int pid, pp_u64map *m)
{
    pp_java_each_thread(pid, add_thread_cpu, m);
}

typedef struct native_filter {
    pp_u64map now;
    const pp_u64map *before;
    unsigned long long min_ticks;
    pp_java_tids tids; /* the JVM's thread ids -> the sampler's */
} native_filter;

/* sampler_tid: the JVM's thread id as the system sampler names it (0 unknown). */
static uint32_t sampler_tid(void *arg, long tid)
{
    return pp_java_tids_map(&((native_filter *)arg)->tids, tid);
}

/* keep_native_tid: the thread ran at least a quarter of the session. */
static int busy_thread(void *arg, long tid)
{
    native_filter *f = arg;
    if (f->tids.other_ns && tid > 0)
        tid = sampler_tid(f, tid);
    uint64_t *now = tid > 0 ? pp_u64map_get(&f->now, (uint64_t)tid) : NULL;
    uint64_t *then = tid > 0 ? pp_u64map_get(f->before, (uint64_t)tid) : NULL;
    unsigned long long used = now ? *now - (then && *then <= *now ? *then : 0) : 0;
    return used >= f->min_ticks;
}

/* Stops a recording a polyprof that is gone left running, into a private file removed at once
 * (a plain JFR.stop would write to the file its JFR.start named, in a directory that is gone,
 * and the JVM would log an I/O error). */
static void stop_orphan(pp_jfr_rec *r, const char *name, double timeout)
{
    char dir[64], cmd[256], err[256];
    if (timeout < 0.2 || pp_jfr_make_private_dir(r, dir, sizeof(dir), err, sizeof(err)) < 0)
        return;
    snprintf(cmd, sizeof(cmd), "JFR.stop name=%.63s filename=/tmp/%.63s/orphan.jfr", name, dir);
    if (jcmd(r, cmd, timeout, err, sizeof(err)) == 0)
        pp_info_proc(r->pid, r->start_ticks,
                     "java: pid %d: stopped JFR recording %s left by a polyprof that is gone",
                     r->pid, name);
    else
        pp_debug("java: pid %d: cannot stop JFR recording %s: %s", r->pid, name, err);
    remove_private_dir(r, dir, "orphan.jfr");
}

/* JFR.check: stops polyprof's orphans, logs the JVM's own recordings (once per JVM and hour).
 * -1 when the JVM did not answer (errno as jcmd sets it). */
static int check_recordings(pp_jfr_rec *r, double until, bool *others, char *err, size_t errlen)
{
    char *out = NULL;
    if (pp_jattach_jcmd(r->pid, "JFR.check", fmin(PP_JAVA_ATTACH_TIMEOUT, until - pp_mono_now()),
                        &out, err, errlen) != 0) {
        int e = errno;
        free(out);
        errno = e;
        return -1;
    }
    char names[16][64], users[256] = "";
    bool running[16];
    int n = pp_jfr_check_names(out, names, running, 16);
    free(out);
    *others = false;
    for (int i = 0; i < n; i++) {
        if (pp_jfr_orphan_name(names[i])) {
            stop_orphan(r, names[i], fmin(PP_JAVA_ATTACH_TIMEOUT, until - pp_mono_now() - 0.5));
        } else if (running[i]) {
            /* the JVM's own, or another live polyprof's: either way polyprof's recording must
             * go to disk */
            *others = true;
            size_t l = strlen(users);
            if (strncmp(names[i], "polyprof_", 9) != 0)
                snprintf(users + l, sizeof(users) - l, "%s%.63s", l ? ", " : "", names[i]);
        }
    }
    char eusers[sizeof(users)];
    pp_escape_text(users, eusers, sizeof(eusers)); /* names the JVM gave */
    if (users[0])
        pp_info_proc(r->pid, r->start_ticks,
                     "java: pid %d has other JFR recordings running (%s): while polyprof "
                     "records, JFR applies the most detailed setting of all recordings, so "
                     "theirs also get polyprof's samples (docs/java.md)",
                     r->pid, eusers);
    return 0;
}

/* Whether the JVM's JFR repository exists (JFR sets jdk.jfr.repository when it creates it):
 * an in-memory recording gets no data once it does. True when the JVM does not say. */
static bool repository_exists(pp_jfr_rec *r, double until)
{
    char *out = NULL, err[256];
    bool exists = true;
    if (pp_jattach_jcmd(r->pid, "VM.system_properties",
                        fmin(PP_JAVA_ATTACH_TIMEOUT, until - pp_mono_now()), &out, err,
                        sizeof(err)) == 0 &&
        out)
        exists = pp_jfr_props_repository(out);
    free(out);
    return exists;
}

bool pp_jfr_props_repository(const char *props)
{
    for (const char *p = props; p && *p;) {
        if (strncmp(p, "jdk.jfr.repository=", 19) == 0)
            return p[19] != '\n' && p[19] != '\0';
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return false;
}

int pp_jfr_rec_start(pp_jfr_rec *r, pp_jfr_sampler sampler, int frequency, int duration_s,
                     double timeout_s, char *err, size_t errlen)
{
    if (timeout_s < 1)
        timeout_s = 1;
    /* the whole start, every request included, ends by this time */
    double until = pp_mono_now() + timeout_s;
    bool silent = false, others = false, disk = false;
    char e2[256];
    if (!pp_java_jfr_initialized(r->pid)) {
        if (jcmd(r, "JFR.configure stackdepth=1024", fmin(PP_JAVA_ATTACH_TIMEOUT, timeout_s), e2,
                 sizeof(e2)) < 0) {
            silent = no_answer();
            pp_debug("java: JFR.configure in pid %d: %s", r->pid, e2);
        }
    } else if (check_recordings(r, until, &others, e2, sizeof(e2)) < 0) {
        silent = no_answer();
    } else {
        disk = others || repository_exists(r, until);
    }
    if (silent) {
        /* a JVM that did not answer (or a cancelled start) is not asked again: one timeout per
         * JVM and session, however long the session */
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    char dir[64], file[128], cmd[640];
    if (pp_jfr_make_private_dir(r, dir, sizeof(dir), err, errlen) < 0)
        return -1;
    snprintf(file, sizeof(file), "/tmp/%s/start.jfr", dir);
    pp_jfr_start_cmdline(cmd, sizeof(cmd), r->name, sampler, frequency, duration_s, disk, file);
    r->sampler = sampler;
    int rc = jcmd(r, cmd, until - pp_mono_now(), err, errlen);
    remove_private_dir(r, dir, "start.jfr");
    if (rc == 0 && sampler == PP_JFR_SAMPLER_EXECUTION) {
        pp_u64map_free(&r->cpu0);
        r->t0 = pp_mono_now();
        thread_cpu(r->pid, &r->cpu0);
    }
    if (rc == 0)
        r->running = true;
    else
        r->maybe_running = true; /* e.g. no answer in time: the JVM may still start it */
    return rc;
}

int pp_jfr_rec_finish(pp_jfr_rec *r, pp_profile *prof, pp_pid_profile *pp, double timeout_s,
                      char *err, size_t errlen)
{
    char dir[64], cmd[256];
    if (!r->running) {
        snprintf(err, errlen, "no recording");
        return -1;
    }
    if (pp_jfr_make_private_dir(r, dir, sizeof(dir), err, errlen) < 0)
        return -1;
    snprintf(cmd, sizeof(cmd), "JFR.stop name=%s filename=/tmp/%s/rec.jfr", r->name, dir);
    int rc = jcmd(r, cmd, timeout_s, err, errlen);
    if (rc == 0)
        r->running = false;
    int fd = -1;
    if (rc == 0) {
        char rel[128];
        snprintf(rel, sizeof(rel), "%s/rec.jfr", dir);
        fd = openat(r->tmp_fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
            snprintf(err, errlen, "the JVM wrote no recording file");
            rc = -1;
        } else if (sb.st_size == 0) {
            snprintf(err, errlen, "JFR wrote an empty recording");
            rc = -1;
        }
    }
    if (rc == 0) {
        /* Parse through our descriptor: the JVM's user cannot swap the file for a link. */
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        pp_jfr_stats st = {0};
        native_filter nf = {.before = &r->cpu0};
        pp_jfr_opts opts = {
            .events = PP_JFR_CPUTIME, .arg = &nf, .per_thread = true, .sampler_tid = sampler_tid};
        pp_java_tids_init(&nf.tids, r->pid);
        if (r->sampler == PP_JFR_SAMPLER_EXECUTION) {
            thread_cpu(r->pid, &nf.now);
            double quarter = (pp_mono_now() - r->t0) / 4 * (double)sysconf(_SC_CLK_TCK);
            nf.min_ticks = quarter > 1 ? (unsigned long long)quarter : 1;
            opts.events = PP_JFR_EXECUTION | PP_JFR_NATIVE;
            opts.keep_native_tid = busy_thread;
        }
        rc = pp_jfr_parse_file(path, &opts, prof, pp, &st, err, errlen);
        pp_u64map_free(&nf.now);
        pp_java_tids_free(&nf.tids);
        pp_debug("java: pid %d: JFR file parsed: %llu chunks, %llu samples (%llu truncated)",
                 r->pid, (unsigned long long)st.chunks, (unsigned long long)st.samples,
                 (unsigned long long)st.truncated);
        if (rc < 0 && st.samples > 0) {
            pp_warn_proc(r->pid, r->start_ticks, "java: pid %d: JFR file partly parsed: %s", r->pid,
                         err);
            rc = 0;
        }
    }
    if (fd >= 0)
        close(fd);
    remove_private_dir(r, dir, "rec.jfr");
    return rc;
}

void pp_jfr_rec_discard(pp_jfr_rec *r, double timeout_s)
{
    if ((r->running || r->maybe_running) && pp_proc_start_ticks(r->pid) == r->start_ticks) {
        char cmd[128], err[256];
        snprintf(cmd, sizeof(cmd), "JFR.stop name=%s", r->name);
        if (jcmd(r, cmd, timeout_s, err, sizeof(err)) < 0)
            pp_debug("java: discarding recording %s in pid %d: %s", r->name, r->pid, err);
    }
    r->running = r->maybe_running = false;
}

void pp_jfr_rec_close(pp_jfr_rec *r)
{
    pp_jfr_rec_discard(r, PP_JAVA_QUICK_TIMEOUT);
    if (r->tmp_fd >= 0)
        close(r->tmp_fd);
    if (r->cwd_fd >= 0)
        close(r->cwd_fd);
    if (r->errdir_fd >= 0)
        close(r->errdir_fd);
    r->tmp_fd = r->cwd_fd = r->errdir_fd = -1;
    pp_u64map_free(&r->cpu0);
}

/* Only the last component is looked up (the directories were resolved at the start), and not
 * followed: a symlink there could lead out of the JVM's root; the JVM writes a regular file. */
static bool present(int dirfd, const char *name)
{
    struct stat sb;
    return dirfd >= 0 && *name && fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

bool pp_jfr_rec_hserr(const pp_jfr_rec *r)
{
    char name[64];
    snprintf(name, sizeof(name), "hs_err_pid%d.log", r->nspid);
    const char *base = strrchr(r->errfile, '/');
    return present(r->errdir_fd, base ? base + 1 : r->errfile) || present(r->cwd_fd, name) ||
           present(r->tmp_fd, name);
}
