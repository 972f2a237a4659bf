/* Java: the runtime profiler (`--java-mode jfr|ap|auto`), application metadata (java_version,
 * libjvm_elfid, jvm_flags) and appid.
 *
 * Modes: `jfr` records jdk.CPUTimeSample (JDK 25+) or jdk.ExecutionSample +
 * jdk.NativeMethodSample with the JVM's own Flight Recorder through the attach client
 * (jfr_session.h) and parses the file natively (jfr.h); `ap` runs the user's
 * async-profiler (asprof.h); `auto` is `ap` when asprof is found, else `jfr`. polyprof never
 * starts a java, jcmd or jfr process.
 *
 * Metadata comes from the attach client when the JVM can be attached (VM.system_properties for
 * the `java -version` text, VM.flags -all for jvm_flags), else from the JDK's `release` file
 * next to the mapped libjvm (version only, jvm_flags []). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "base/elfinfo.h"
#include "base/inroot.h"
#include "base/safefile.h"
#include "runtimes/java/asprof.h"
#include "runtimes/java/attach.h"
#include "runtimes/java/java.h"
#include "runtimes/java/javaopts.h"
#include "runtimes/java/jfr_session.h"
#include "runtimes/java/jvminfo.h"
#include "runtimes/java/jvmutil.h"
#include "runtimes/java/manifest.h"
#include "runtimes/appid.h"
#include "runtimes/java/safemode.h"
#include "base/procfiles.h"
#include "base/resource.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"

/* ---- metadata and appid ---- */

static json_t *release_version(int pid, json_t **elfid)
{
    char lib[PATH_MAX], v[64], date[32], fdpath[PP_FD_PATH_LEN];
    if (pp_java_release_info(pid, lib, sizeof(lib), v, sizeof(v), date, sizeof(date)) < 0)
        return NULL;
    pp_elfinfo li;
    int fd = pp_open_in_proc_root_path(pid, lib, fdpath, sizeof(fdpath));
    if (fd >= 0 && pp_elfinfo_read(fdpath, &li) == 0 && li.buildid[0])
        *elfid = json_string(li.buildid);
    if (fd >= 0)
        close(fd);
    if (!v[0])
        return NULL;
    /* the release file is the container's: its text is escaped as the JVM's answers are */
    char ev[4 * sizeof(v)], edate[4 * sizeof(date)], line[sizeof(ev) + sizeof(edate) + 32];
    pp_escape_text(v, ev, sizeof(ev));
    pp_escape_text(date, edate, sizeof(edate));
    if (date[0])
        snprintf(line, sizeof(line), "openjdk version \"%s\" %s", ev, edate);
    else
        snprintf(line, sizeof(line), "openjdk version \"%s\"", ev);
    return json_string(line);
}

static bool may_attach(int pid)
{
    char why[128];
    return !pp_java_no_attach(pid) && !pp_java_safemode_reason(NULL, 0) &&
           pp_java_supported(pid, why, sizeof(why));
}

/* "jar_manifest": the application JAR's manifest attributes (polyprof's addition to gProfiler's
 * keys), or NULL when the process was not started from a JAR or it cannot be read. */
static json_t *jar_manifest(int pid)
{
    char cwd[PATH_MAX], root[64], jar[PATH_MAX];
    int argc;
    char **argv = pp_appid_proc_cmdline(pid, &argc, cwd, sizeof(cwd));
    const char *app = argv ? pp_java_app_jar(argv, argc, jar, sizeof(jar)) : NULL;
    free(argv);
    snprintf(root, sizeof(root), "/proc/%d/root", pid);
    pp_jar_manifest m;
    if (!app || !cwd[0] || pp_java_jar_manifest(root, cwd, jar, &m) < 0)
        return NULL;
#define STR_OR_NULL(s) ((s)[0] ? json_string(s) : json_null())
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "path", jar, "main_class",
                     STR_OR_NULL(m.main_class), "start_class", STR_OR_NULL(m.start_class),
                     "implementation_title", STR_OR_NULL(m.implementation_title),
                     "implementation_version", STR_OR_NULL(m.implementation_version));
#undef STR_OR_NULL
}

/* Logs why a metadata request got nothing: the JVM's answer (untrusted text, escaped) or the
 * attach error. */
static void no_answer(int pid, const char *what, const char *out, const char *err)
{
    char why[256];
    pp_escape_text(out ? out : err, why, sizeof(why));
    pp_debug("java: no %s for pid %d: %s", what, pid, why);
}

json_t *pp_java_metadata(int pid)
{
    json_t *o = json_object();
    json_t *elfid = json_null();
    json_t *version = release_version(pid, &elfid);
    json_t *flags = NULL;
    if (may_attach(pid)) {
        /* one budget for both requests: a JVM that does not answer costs it once */
        double until = pp_mono_now() + PP_JAVA_METADATA_TIMEOUT;
        char *out = NULL, err[256];
        if (pp_jattach_jcmd(pid, "VM.system_properties", PP_JAVA_METADATA_TIMEOUT, &out, err,
                            sizeof(err)) == 0) {
            char *text = pp_java_version_from_props(out);
            if (text) {
                json_decref(version);
                version = json_string(text);
                free(text);
            }
        } else
            no_answer(pid, "attach metadata", out, err);
        free(out);
        out = NULL;
        if (!pp_java_jvm_flags_none()) {
            double left = until - pp_mono_now();
            if (left <= 0)
                pp_debug("java: no jvm_flags for pid %d: its version request used the %.0f s "
                         "budget",
                         pid, PP_JAVA_METADATA_TIMEOUT);
            else if (pp_jattach_jcmd(pid, "VM.flags -all", left, &out, err, sizeof(err)) == 0)
                flags = pp_java_jvm_flags(out);
            else
                no_answer(pid, "jvm_flags", out, err);
        }
        free(out);
    }
    json_object_set_new(o, "java_version", version ? version : json_string("/java not found"));
    json_object_set_new(o, "libjvm_elfid", elfid);
    json_object_set_new(o, "jvm_flags", flags ? flags : json_array());
    json_t *jar = jar_manifest(pid);
    if (jar)
        json_object_set_new(o, "jar_manifest", jar);
    return o;
}

/* ---- profiling sessions ---- */

/* JVMs are started and finished on a few threads: one that does not answer holds up only its
 * own thread, for at most its own timeout. */
#define START_THREADS 4
/* The recordings are stopped, read and discarded within this time after the session's end (or
 * its stop), inside the runner's 2 s grace (runner.h). */
#define FINISH_S 1.5

typedef struct jvm {
    pp_proc proc;
    pp_jfr_rec rec;        /* jfr mode */
    pp_asprof_session *ap; /* ap mode */
    bool hserr_before;     /* an hs_err file existed at the start */
    const char *err_what;  /* "error" or "skipped" */
    char err[320];         /* the reason of the pid's error/skip stack, "" = profiling */
    pp_profile *jfr;       /* jfr mode: the recording parsed by a finish thread */
    int jfr_rc;            /* its pp_jfr_rec_finish result */
    char jfr_err[256];
} jvm;

typedef struct java_session {
    const pp_runtime_ctx *ctx;
    bool ap_mode;
    pp_asprof_lib *aplib; /* ap mode: the library read out of the jar */
    char aperr[256];      /* ap mode: why there is none */
    jvm *jvms;
    size_t n;
    double deadline;
    int duration_s;     /* of the JFR recordings */
    atomic_size_t next; /* next JVM to start (then to finish) */
    int stop_fd;        /* eventfd written by stop() */
    pthread_t threads[START_THREADS];
    size_t nthreads;       /* jfr mode: start threads running until collect joins them */
    atomic_size_t started; /* JVMs whose start is done */
    double finish_by;      /* jfr mode: the recordings' stops and discards end by then */
} java_session;

static pp_java_watch *watch; /* opened by the first session, lives for the run */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;

static void read_comm(int pid, const char *fallback, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", pid);
    if (pp_read_small_file(path, out, len) > 0) {
        out[strcspn(out, "\n")] = '\0';
        return;
    }
    snprintf(out, len, "%s", fallback);
}

/* The pid's single error/skip stack. */
static void frame_stack(pp_profile *prof, const jvm *j)
{
    char comm[32];
    read_comm(j->proc.pid, j->proc.comm, comm, sizeof(comm));
    pp_error_stack(prof, j->proc.pid, comm, "java", j->err_what, j->err);
}

static void set_error(jvm *j, const char *what, const char *reason)
{
    j->err_what = what;
    snprintf(j->err, sizeof(j->err), "%s", reason);
}

/* --java-jfr-sampler: jdk.CPUTimeSample where the JVM has it (JDK 25+, by its release file)
 * unless `execution` is asked; `cputime` on an older JVM falls back to execution (it has no
 * CPUTimeSample event). */
static pp_jfr_sampler jfr_sampler(const pp_runtime_ctx *ctx, int pid)
{
    char lib[PATH_MAX], v[64] = "";
    if (pp_java_release_info(pid, lib, sizeof(lib), v, sizeof(v), NULL, 0) < 0)
        v[0] = '\0';
    const char *want = pp_runtime_opt(ctx, "java-jfr-sampler");
    if (want && strcmp(want, "auto") && strcmp(want, "cputime") && strcmp(want, "execution"))
        pp_log_proc(PP_LOG_WARNING, 0, 0,
                    "--java-jfr-sampler %s: not auto, cputime or execution; using auto", want);
    pp_jfr_sampler sm = want && strcmp(want, "execution") == 0
                            ? PP_JFR_SAMPLER_EXECUTION
                            : pp_jfr_sampler_for(pp_java_major(v));
    pp_debug("java: pid %d (version %s): JFR sampler %s", pid, v[0] ? v : "unknown",
             sm == PP_JFR_SAMPLER_CPUTIME ? "jdk.CPUTimeSample"
                                          : "jdk.ExecutionSample + jdk.NativeMethodSample");
    return sm;
}

static void start_one(java_session *s, jvm *j)
{
    char reason[64], why[128], err[256];
    if (pp_java_safemode_reason(reason, sizeof(reason))) {
        char r2[96];
        snprintf(r2, sizeof(r2), "disabled due to %s", reason);
        set_error(j, "skipped", r2);
        return;
    }
    if (!pp_java_supported(j->proc.pid, why, sizeof(why))) {
        pp_info_proc(j->proc.pid, j->proc.start_ticks, "java: not profiling pid %d: %s",
                     j->proc.pid, why);
        set_error(j, "skipped", "profiling this JVM is not supported");
        return;
    }
    if (pp_jfr_rec_init(&j->rec, j->proc.pid, err, sizeof(err)) < 0) {
        set_error(j, "error", err);
        return;
    }
    j->hserr_before = pp_jfr_rec_hserr(&j->rec);
    /* JFR and async-profiler record each sample's thread: the merge scales per thread */
    pp_runtime_count_threads(s->ctx, j->proc.pid);
    if (s->ap_mode && !s->aplib) {
        set_error(j, "error", s->aperr);
    } else if (s->ap_mode) {
        j->ap = pp_asprof_start(s->aplib, j->proc.pid, s->ctx, s->deadline, err, sizeof(err));
        if (!j->ap) {
            pp_warn_proc(j->proc.pid, j->proc.start_ticks,
                         "java: cannot start async-profiler in pid %d: %s", j->proc.pid, err);
            set_error(j, "error", err);
        }
    } else if (pp_jfr_rec_start(&j->rec, jfr_sampler(s->ctx, j->proc.pid), s->ctx->frequency,
                                s->duration_s, s->deadline - pp_mono_now(), err, sizeof(err)) < 0) {
        pp_warn_proc(j->proc.pid, j->proc.start_ticks, "java: cannot start JFR in pid %d: %s",
                     j->proc.pid, err);
        set_error(j, "error", err);
    }
}

static void *start_worker(void *arg)
{
    java_session *s = arg;
    /* a stop() ends this thread's attach requests at once (ap mode: the caller's thread, which
     * also collects; its starts keep their own bounds) */
    if (!s->ap_mode)
        pp_jattach_set_cancel_fd(s->stop_fd);
    for (;;) {
        size_t i = atomic_fetch_add(&s->next, 1);
        if (i >= s->n)
            break;
        start_one(s, &s->jvms[i]);
        if (atomic_fetch_add(&s->started, 1) + 1 == s->n) /* the last JVM */
            pp_debug("java: %s sessions started in %zu JVMs", s->ap_mode ? "async-profiler" : "JFR",
                     s->n);
    }
    pp_jattach_set_cancel_fd(-1);
    return NULL;
}

static void *java_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline,
                        bool ap_mode)
{
    java_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->ctx = ctx;
    s->deadline = deadline;
    s->ap_mode = ap_mode;
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->jvms = calloc(n ? n : 1, sizeof(*s->jvms));
    char jar[PATH_MAX];
    bool found = !ap_mode || pp_asprof_find(jar, sizeof(jar)) == 0; /* else logged */
    if (ap_mode && found && !(s->aplib = pp_asprof_lib_load(jar, s->aperr, sizeof(s->aperr))))
        pp_warn("java: %s", s->aperr);
    if (!s->jvms || s->stop_fd < 0 || !found) {
        if (s->stop_fd >= 0)
            close(s->stop_fd);
        pp_asprof_lib_free(s->aplib);
        free(s->jvms);
        free(s);
        return NULL;
    }
    pthread_mutex_lock(&watch_lock);
    if (!watch)
        watch = pp_java_watch_open();
    pthread_mutex_unlock(&watch_lock);
    s->n = n;
    s->duration_s = (int)ceil(deadline - pp_mono_now()) + 30;
    for (size_t i = 0; i < n; i++) {
        s->jvms[i].proc = procs[i];
        s->jvms[i].rec.tmp_fd = s->jvms[i].rec.cwd_fd = s->jvms[i].rec.errdir_fd = -1;
    }
    /* The first JFR start in a JVM costs it seconds of class loading and compilation: start
     * the JVMs concurrently (a few threads), so one slow JVM does not delay the others, and
     * return at once, so that stop() reaches the starts (collect joins the threads).
     * async-profiler: this thread, which also collects and frees (asprof.h), and the JVMs
     * sharing a /tmp share the library file placed for each load. */
    for (; !s->ap_mode && s->nthreads < START_THREADS && s->nthreads < n; s->nthreads++)
        if (pthread_create(&s->threads[s->nthreads], NULL, start_worker, s) != 0)
            break;
    if (s->ap_mode || s->nthreads == 0)
        start_worker(s);
    return s;
}

/* Waits for the start threads (they end by the deadline, or at once after stop()). */
static void join_starts(java_session *s)
{
    for (size_t t = 0; t < s->nthreads; t++)
        pthread_join(s->threads[t], NULL);
    s->nthreads = 0;
}

/* jfr mode: stops and reads one JVM's recording into its own profile (the parse of each JVM
 * runs on its thread), or discards a recording whose start got no answer. */
static void finish_one(java_session *s, jvm *j)
{
    double left = s->finish_by - pp_mono_now();
    if (!j->err[0] && !j->rec.running) {
        j->jfr_rc = -1;
        snprintf(j->jfr_err, sizeof(j->jfr_err), "no recording");
    } else if (!j->err[0]) {
        j->jfr = pp_profile_new();
        pp_pid_profile *pp = j->jfr ? pp_profile_get(j->jfr, j->proc.pid, true) : NULL;
        j->jfr_rc = pp ? pp_jfr_rec_finish(&j->rec, j->jfr, pp, left > 0.2 ? left : 0.2, j->jfr_err,
                                           sizeof(j->jfr_err))
                       : -1;
        if (!pp)
            snprintf(j->jfr_err, sizeof(j->jfr_err), "out of memory");
        left = s->finish_by - pp_mono_now();
    }
    /* a start that got no answer may still have started the recording */
    pp_jfr_rec_discard(&j->rec, fmin(PP_JAVA_QUICK_TIMEOUT, left > 0.2 ? left : 0.2));
}

static void *finish_worker(void *arg)
{
    java_session *s = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&s->next, 1);
        if (i >= s->n)
            return NULL;
        finish_one(s, &s->jvms[i]);
    }
}

/* jfr mode: finish_one on every JVM, a few at a time. */
static void finish_all(java_session *s)
{
    s->finish_by = fmin(s->deadline, pp_mono_now()) + FINISH_S;
    atomic_store(&s->next, 0);
    pthread_t th[START_THREADS];
    size_t nth = 0;
    for (; nth < START_THREADS && nth + 1 < s->n; nth++)
        if (pthread_create(&th[nth], NULL, finish_worker, s) != 0)
            break;
    finish_worker(s);
    for (size_t t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
}

/* Waits for the deadline or stop(), reading process exits meanwhile (at most every 200 ms). */
static void wait_session(java_session *s)
{
    int pids[256];
    size_t np = 0;
    for (size_t i = 0; i < s->n && np < 256; i++)
        if (!s->jvms[i].err[0])
            pids[np++] = s->jvms[i].proc.pid;
    int wfd = pp_java_watch_fd(watch);
    pp_java_watch_read(watch, NULL, 0); /* drop what piled up between sessions */
    for (;;) {
        double left = s->deadline - pp_mono_now();
        if (left <= 0)
            break;
        struct pollfd p[2] = {{.fd = s->stop_fd, .events = POLLIN}, {.fd = wfd, .events = POLLIN}};
        int r = poll(p, wfd >= 0 ? 2 : 1, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            break;
        if (wfd >= 0 && (p[1].revents & POLLIN)) {
            pp_java_watch_read(watch, pids, np);
            /* rate limit: events of the whole host arrive here */
            struct pollfd q = {.fd = s->stop_fd, .events = POLLIN};
            if (poll(&q, 1, 200) > 0)
                break;
        }
    }
    pp_java_watch_read(watch, pids, np);
}

/* A profiled JVM is gone: safemode decides whether Java profiling stops for this run. */
static void jvm_gone(jvm *j)
{
    pp_java_watch_read(watch, &j->proc.pid, 1);
    const char *reason = pp_java_watch_reason(watch, j->proc.pid);
    if (!reason && !j->hserr_before && pp_jfr_rec_hserr(&j->rec))
        reason = "hserr";
    if (reason && !pp_java_safemode_on(reason)) {
        pp_info("java: JVM %d (%s) died during profiling (%s); that safemode option is off, "
                "Java profiling goes on",
                j->proc.pid, j->proc.comm, reason);
        reason = NULL;
    }
    if (reason) {
        pp_warn("java: JVM %d (%s) died during profiling (%s)", j->proc.pid, j->proc.comm, reason);
        pp_java_safemode_trigger(reason);
    }
    set_error(j, "error", "process went down during profiling");
    j->rec.running = false;
}

/* jfr mode: what finish_one read for j, copied into pp of out. */
static int jfr_result(pp_profile *out, pp_pid_profile *pp, const jvm *j, char *err, size_t errlen)
{
    if (j->jfr_rc < 0) {
        snprintf(err, errlen, "%s", j->jfr_err[0] ? j->jfr_err : "no recording");
        return -1;
    }
    const pp_pid_profile *src = pp_profile_get(j->jfr, j->proc.pid, false);
    if (src && pp_pid_add_all(out, pp, j->jfr, src) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int java_collect(void *session, pp_profile *out)
{
    java_session *s = session;
    wait_session(s);
    join_starts(s);
    if (!s->ap_mode)
        finish_all(s);
    for (size_t i = 0; i < s->n; i++) {
        jvm *j = &s->jvms[i];
        if (!j->err[0] && pp_proc_start_ticks(j->proc.pid) != j->proc.start_ticks)
            jvm_gone(j);
        if (j->err[0]) {
            frame_stack(out, j);
            continue;
        }
        pp_pid_profile *pp = pp_profile_get(out, j->proc.pid, true);
        if (!pp)
            continue;
        char comm[32], err[256] = "";
        read_comm(j->proc.pid, j->proc.comm, comm, sizeof(comm));
        pp->comm = pp_profile_intern(out, comm);
        pp->runtime = "java";
        int rc = s->ap_mode ? pp_asprof_collect(j->ap, out, pp, err, sizeof(err))
                            : jfr_result(out, pp, j, err, sizeof(err));
        if (rc < 0) {
            if (pp_proc_start_ticks(j->proc.pid) != j->proc.start_ticks)
                jvm_gone(j);
            else
                set_error(j, "error", err);
            pp_warn_proc(j->proc.pid, j->proc.start_ticks, "java: no profile for pid %d: %s",
                         j->proc.pid, err);
            frame_stack(out, j);
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        pp_asprof_free(s->jvms[i].ap); /* same thread as start and collect */
        s->jvms[i].ap = NULL;
    }
    return 0;
}

static void java_stop(void *session)
{
    java_session *s = session;
    uint64_t one = 1;
    if (write(s->stop_fd, &one, sizeof(one)) < 0)
        pp_debug("java: cannot signal the session to stop: %s", strerror(errno));
}

static void java_free(void *session)
{
    java_session *s = session;
    if (!s)
        return;
    join_starts(s); /* collect did unless the runner abandoned it before */
    for (size_t i = 0; i < s->n; i++) {
        pp_jfr_rec_close(&s->jvms[i].rec);
        pp_asprof_free(s->jvms[i].ap);
        pp_profile_free(s->jvms[i].jfr);
    }
    pp_asprof_lib_free(s->aplib);
    close(s->stop_fd);
    free(s->jvms);
    free(s);
}

static void *jfr_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    return java_start(ctx, procs, n, deadline, false);
}

static void *ap_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    return java_start(ctx, procs, n, deadline, true);
}

static bool ap_available(char *why, size_t len)
{
    char path[PATH_MAX];
    if (pp_asprof_find(path, sizeof(path)) == 0)
        return true;
    snprintf(why, len,
             "async-profiler was not found (put async-profiler's jar from Maven Central, "
             "tools.profiler:async-profiler, at java/async-profiler.jar in polyprof's resources "
             "directory, or use --java-mode jfr)");
    return false;
}

static const char *const jfr_modes[] = {"jfr", NULL};
static const char *const ap_modes[] = {"ap", NULL};

const pp_backend pp_java_jfr_backend = {
    .name = "jfr",
    .modes = jfr_modes,
    .start = jfr_start,
    .collect = java_collect,
    .stop = java_stop,
    .free = java_free,
};

const pp_backend pp_java_ap_backend = {
    .name = "async-profiler",
    .modes = ap_modes,
    .available = ap_available,
    .start = ap_start,
    .collect = java_collect,
    .stop = java_stop,
    .free = java_free,
};
