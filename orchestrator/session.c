#include "orchestrator/session.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "merge/collapsed.h"
#include "merge/header.h"
#include "merge/html.h"
#include "merge/profile.h"
#include "merge/scale.h"
#include "base/child.h"
#include "orchestrator/adopt.h"
#include "orchestrator/coverage.h"
#include "orchestrator/discovery.h"
#include "orchestrator/exports.h"
#include "orchestrator/extmeta.h"
#include "orchestrator/heartbeat.h"
#include "orchestrator/history_hook.h"
#include "orchestrator/hostinfo.h"
#include "orchestrator/identity.h"
#include "base/log.h"
#include "orchestrator/notices.h"
#include "orchestrator/output.h"
#include "orchestrator/runtime_modes.h"
#include "orchestrator/summary.h"
#include "orchestrator/upload.h"
#include "base/procfiles.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"
#include "runtimes/symbols/symbolizer.h"
#include "runtimes/system/sampler.h"

#define DRAIN_INTERVAL_MS 2000

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

void pp_session_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
}

void pp_session_signals_setup(void)
{
    sigset_t mask;
    pp_session_stop_signals(&mask);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    const int ignored[] = {SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        signal(ignored[i], SIG_IGN);
}

/* Waits up to ms for a termination signal (returns true when one arrived); meanwhile reads the
 * mappings of processes the sampler announces as first sampled (news_fd, -1 for none), and
 * registers those of walked runtimes with their walker (adopt, NULL for none). */
static bool wait_signal(int sfd, pp_sampler *sampler, pp_adopter *adopt, pp_discovery *disc, int ms)
{
    double until = pp_mono_now() + (ms < 0 ? 0 : ms) / 1000.0;
    int news_fd = sampler ? pp_sampler_news_fd(sampler) : -1;
    double adopt_at = -1; /* when the adopter asked to run next (monotonic); -1: no timer */
    for (;;) {
        double now = pp_mono_now();
        int left = (int)((until - now) * 1000 + 0.5);
        if (left < 0)
            left = 0;
        struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = news_fd, .events = POLLIN}};
        int wait = left;
        if (adopt_at >= 0) {
            int a = (int)((adopt_at - now) * 1000 + 0.5);
            wait = a < 0 ? 0 : a < wait ? a : wait;
        }
        double due = now + wait / 1000.0;
        /* rows built meanwhile reach the unwinder soon; the adopter still runs on its own
         * schedule (news, its timer), not at these ticks (run at every tick, it kept JVMs from
         * answering the attach requests of their metadata in time) */
        int r = poll(p, news_fd >= 0 ? 2 : 1,
                     sampler && wait > PP_SAMPLER_ROWS_POLL_MS ? PP_SAMPLER_ROWS_POLL_MS : wait);
        if (r > 0 && (p[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                pp_info("received signal %u (%s), finishing the current session", si.ssi_signo,
                        strsignal((int)si.ssi_signo));
                return true;
            }
        }
        if (r > 0 && news_fd >= 0 && (p[1].revents & POLLIN))
            pp_sampler_take_news(sampler);
        if (r > 0 && news_fd >= 0 && (p[1].revents & (POLLERR | POLLHUP | POLLNVAL)))
            news_fd = -1; /* never expected; the drain still reads what was announced */
        if (sampler)
            pp_sampler_load_rows(sampler);
        if (adopt && (r != 0 || pp_mono_now() >= due)) {
            int adopt_ms = pp_adopter_run(adopt, sampler, disc, pp_mono_now());
            adopt_at = adopt_ms >= 0 ? pp_mono_now() + adopt_ms / 1000.0 : -1;
        }
        if (pp_mono_now() >= until)
            return false;
    }
}

/* Debug view of what the session holds so far: the busiest processes. */
static void log_drain(const pp_profile *prof)
{
    size_t n = pp_profile_npids(prof);
    const pp_pid_profile *top[3] = {0};
    for (size_t i = 0; i < n; i++) {
        const pp_pid_profile *pp = pp_profile_at(prof, i);
        for (int k = 0; k < 3; k++) {
            if (!top[k] || pp_pid_total(pp) > pp_pid_total(top[k])) {
                for (int j = 2; j > k; j--)
                    top[j] = top[j - 1];
                top[k] = pp;
                break;
            }
        }
    }
    char buf[512];
    int len = snprintf(buf, sizeof(buf), "drained: %zu processes so far; busiest:", n);
    for (int k = 0; k < 3 && top[k] && len < (int)sizeof(buf); k++)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len, " %s[%d]=%llu",
                        pp_profile_str(prof, top[k]->comm), top[k]->pid,
                        (unsigned long long)pp_pid_total(top[k]));
    pp_debug("%s", buf);
}

static json_t *memory_counters(const pp_symbolizer_stats *ss, const pp_sampler_stats *d,
                               const pp_profile *prof)
{
    struct mallinfo2 mi = mallinfo2();
    return json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I}", "heap_in_use_bytes", (json_int_t)(mi.uordblks + mi.hblkhd),
        "symbol_tables_bytes", (json_int_t)ss->binary_bytes, "perf_maps_bytes",
        (json_int_t)ss->perfmap_bytes, "processes_known", (json_int_t)ss->procs, "profile_bytes",
        (json_int_t)pp_profile_bytes(prof), "bpf_maps_bytes", (json_int_t)d->bpf_maps_bytes);
}

static bool controller_gone(const pp_config *cfg)
{
    return cfg->controller_pid > 0 && pp_pid_gone(cfg->controller_pid);
}

/* polyprof's own counters for the header's "polyprof" object. */
static json_t *own_counters(const pp_sampler_stats *d, const char *mode, double cpu,
                            double discovery_ms, long rss, uint64_t perfmap_dropped)
{
    json_t *o = json_object();
    json_object_set_new(o, "version", json_string(PP_VERSION));
    json_object_set_new(o, "sampler", json_string(mode));
    json_object_set_new(o, "samples", json_integer((json_int_t)d->samples));
    json_object_set_new(o, "dropped_map_full", json_integer((json_int_t)d->map_full));
    json_object_set_new(o, "user_stacks_lost", json_integer((json_int_t)d->ustacks_lost));
    json_object_set_new(o, "kernel_stacks_lost", json_integer((json_int_t)d->kstacks_lost));
    json_object_set_new(o, "user_stack_errors", json_integer((json_int_t)d->ustack_errors));
    json_object_set_new(o, "lost_samples", json_integer((json_int_t)d->lost));
    json_object_set_new(o, "filtered_samples", json_integer((json_int_t)d->filtered));
    json_object_set_new(o, "new_processes", json_integer((json_int_t)d->news));
    json_object_set_new(o, "new_processes_unannounced", json_integer((json_int_t)d->news_lost));
    json_object_set_new(o, "cpu_seconds", json_real(cpu));
    json_object_set_new(o, "rss_kb", json_integer(rss));
    json_object_set_new(o, "discovery_ms", json_real(discovery_ms));
    json_object_set_new(o, "perf_map_entries_dropped", json_integer((json_int_t)perfmap_dropped));
    /* perf-event mode: samples of tracked threads not counted per thread (table full) */
    json_object_set_new(o, "sampled_threads_dropped", json_integer((json_int_t)d->threads_full));
    json_t *w = json_object(); /* in-sampler walks by outcome (docs/ARCHITECTURE.md) */
    json_object_set_new(w, "ok", json_integer((json_int_t)d->walk_ok));
    json_object_set_new(w, "no_thread_state", json_integer((json_int_t)d->walk_no_thread));
    json_object_set_new(w, "no_frame", json_integer((json_int_t)d->walk_idle));
    json_object_set_new(w, "read_failed", json_integer((json_int_t)d->walk_read));
    json_object_set_new(w, "partial", json_integer((json_int_t)d->walk_partial));
    json_object_set_new(w, "truncated", json_integer((json_int_t)d->walk_truncated));
    json_object_set_new(w, "trace_lost", json_integer((json_int_t)d->walk_lost));
    json_object_set_new(w, "stale", json_integer((json_int_t)d->walk_stale));
    json_object_set_new(w, "inherited", json_integer((json_int_t)d->walk_inherited));
    json_object_set_new(w, "frames_lost", json_integer((json_int_t)d->walk_frames_lost));
    json_object_set_new(o, "runtime_walks", w);
    json_t *u = json_object(); /* native user stacks (docs/ARCHITECTURE.md, "Native unwinding") */
    json_object_set_new(u, "table_bytes", json_integer((json_int_t)d->unwind_table_bytes));
    json_object_set_new(u, "cfi_frames", json_integer((json_int_t)d->unwind_cfi_frames));
    json_object_set_new(u, "fp_frames", json_integer((json_int_t)d->unwind_fp_frames));
    json_object_set_new(u, "cfi_samples", json_integer((json_int_t)d->unwind_cfi));
    json_object_set_new(u, "fallback_samples", json_integer((json_int_t)d->unwind_fallback));
    json_object_set_new(u, "truncated_samples", json_integer((json_int_t)d->unwind_truncated));
    json_object_set_new(u, "unloaded_samples", json_integer((json_int_t)d->unwind_unloaded));
    json_object_set_new(o, "unwind", u);
    return o;
}

static void stats_delta(const pp_sampler_stats *now, const pp_sampler_stats *before,
                        pp_sampler_stats *d)
{
    d->samples = now->samples - before->samples;
    d->map_full = now->map_full - before->map_full;
    d->ustacks_lost = now->ustacks_lost - before->ustacks_lost;
    d->kstacks_lost = now->kstacks_lost - before->kstacks_lost;
    d->ustack_errors = now->ustack_errors - before->ustack_errors;
    d->lost = now->lost - before->lost;
    d->filtered = now->filtered - before->filtered;
    d->drains = now->drains - before->drains;
    d->news = now->news - before->news;
    d->news_lost = now->news_lost - before->news_lost;
    d->threads_full = now->threads_full - before->threads_full;
    d->unwind_cfi = now->unwind_cfi - before->unwind_cfi;
    d->walk_ok = now->walk_ok - before->walk_ok;
    d->walk_no_thread = now->walk_no_thread - before->walk_no_thread;
    d->walk_idle = now->walk_idle - before->walk_idle;
    d->walk_read = now->walk_read - before->walk_read;
    d->walk_partial = now->walk_partial - before->walk_partial;
    d->walk_truncated = now->walk_truncated - before->walk_truncated;
    d->walk_lost = now->walk_lost - before->walk_lost;
    d->walk_stale = now->walk_stale - before->walk_stale;
    d->walk_inherited = now->walk_inherited - before->walk_inherited;
    d->walk_frames_lost = now->walk_frames_lost - before->walk_frames_lost;
    d->unwind_cfi_frames = now->unwind_cfi_frames - before->unwind_cfi_frames;
    d->unwind_fp_frames = now->unwind_fp_frames - before->unwind_fp_frames;
    d->unwind_fallback = now->unwind_fallback - before->unwind_fallback;
    d->unwind_truncated = now->unwind_truncated - before->unwind_truncated;
    d->unwind_unloaded = now->unwind_unloaded - before->unwind_unloaded;
    d->unwind_table_bytes = now->unwind_table_bytes; /* a level, not a count */
    d->bpf_maps_bytes = now->bpf_maps_bytes;
}

/* The .html flame graph beside the .col at col_path (--flamegraph, gProfiler's default). A
 * failure is logged; the session's .col is already written. */
static void write_flamegraph(const pp_config *cfg, const char *col_path, const char *text,
                             size_t len, const pp_render_opts *ro)
{
    size_t hlen = 0;
    char *html = pp_html_render(text, len, ro, &hlen);
    char path[4096], err[512];
    if (!html)
        pp_error("out of memory while rendering the flame graph");
    else if (pp_output_write_html(cfg->output_dir, col_path, html, hlen, cfg->rotating_output, path,
                                  sizeof(path), err, sizeof(err)) < 0)
        pp_error("%s", err);
    else
        pp_info("Saved flamegraph to %s", path);
    free(html);
}

static int write_session(const pp_config *cfg, const json_t *static_md, const json_t *ext,
                         pp_profile *prof, pp_host_metrics *metrics, const json_t *counters,
                         time_t start, pp_uploader *up, pp_history_sink *hist, double session_end)
{
    pp_header_info hi = {
        .metadata = static_md,
        .external_metadata =
            ext && !cfg->disable_metadata_collection ? json_object_get(ext, "static") : NULL,
        .metrics_enabled = !cfg->disable_metrics_collection,
        .container_names_enabled = !cfg->disable_container_names,
        .app_metadata_enabled = !cfg->disable_application_metadata,
        .profiling_mode = "cpu",
        .frequency = cfg->frequency,
        .current_time = time(NULL),
        .polyprof = counters,
    };
    pp_metrics_end(metrics, &hi.cpu_avg, &hi.mem_avg);
    json_t *header = pp_header_build(&hi);
    pp_render_opts ro = {
        .v1 = cfg->profile_api_version != NULL,
        .app_metadata_enabled = !cfg->disable_application_metadata,
        .appids_enabled = !cfg->disable_application_identifiers,
    };
    size_t len = 0;
    char *text = header ? pp_col_render(prof, header, &ro, &len) : NULL;
    json_decref(header);
    if (!text) {
        pp_error("out of memory while rendering the profile");
        return -1;
    }
    int rc = 0;
    if (up) {
        pp_session_result res = {
            .col_text = text,
            .len = len,
            .start = start,
            .end = hi.current_time,
            .cpu_avg = hi.metrics_enabled ? hi.cpu_avg : NAN,
            .mem_avg = hi.metrics_enabled ? hi.mem_avg : NAN,
            .frequency = cfg->frequency,
        };
        pp_uploader_submit(up, &res);
    }
    if (cfg->output_dir) {
        char path[4096], err[512];
        if (pp_output_write(cfg->output_dir, hi.current_time, text, len, cfg->rotating_output, path,
                            sizeof(path), err, sizeof(err)) < 0) {
            pp_error("%s", err);
            rc = -1;
        } else {
            pp_info("Saved collapsed stacks to %s (%.0f ms after the session end)", path,
                    (pp_mono_now() - session_end) * 1000);
            if (cfg->flamegraph)
                write_flamegraph(cfg, path, text, len, &ro);
            pp_write_exports(cfg, prof, path, start, hi.current_time, &ro);
        }
    }
    pp_history_sink_session(hist, prof, start, hi.current_time, static_md);
    free(text);
    return rc;
}

/* Everything that lives for the whole run. */
typedef struct run_state {
    const pp_config *cfg;
    int sfd;
    pp_uploader *up;
    pp_history_sink *hist; /* --history-dir, NULL when off */
    pp_symbolizer *sym;
    pp_sampler *sampler;
    pp_adopter *adopt; /* with the sampler: processes started during a session */
    pp_discovery *disc;
    pp_identity *ident;
    json_t *static_md;
    pp_sampler_stats prev;
    uint64_t perfmap_dropped_prev; /* symbolizer's perfmap_entries_dropped at the last session */
    pp_runtime_ctx ctx[PP_KIND_COUNT]; /* per runtime with a mode option (lives for the run:
                                          an abandoned backend may still read it) */
    bool profiled[PP_KIND_COUNT];      /* its mode is not disabled and a backend exists */
    size_t nprofiled;
    size_t nactive;        /* runtimes whose mode is not disabled (backends or hooks act on them) */
    char tmpdir[PATH_MAX]; /* private temp directory of the runtime profilers, "" if none */
    char target_tmpdir[PATH_MAX]; /* pp_target_tmpdir, "" if none */
    int *pids;                    /* the --pids that exist at start */
    size_t npids;
    bool heartbeat_warned;
} run_state;

static void run_teardown(run_state *rs)
{
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (pp_runtime_get((pp_proc_kind)k)->at_exit)
            pp_runtime_get((pp_proc_kind)k)->at_exit(&rs->ctx[k]);
    json_decref(rs->static_md);
    pp_history_sink_close(rs->hist);
    if (rs->tmpdir[0])
        pp_rmtree(rs->tmpdir);
    /* An abandoned runtime profiler (stuck in a target) may still use the sampler (which reads
     * the --pids array), the symbolizer and its runtime's context (rs is static, main keeps the
     * configuration): they are left to the process's exit (main). */
    size_t stuck = pp_runner_abandoned();
    if (stuck)
        pp_debug("%zu runtime profiler(s) still stuck at exit: the sampler is left to the exit",
                 stuck);
    else {
        pp_sampler_stop(rs->sampler);
        free(rs->pids);
    }
    pp_adopter_free(rs->adopt);
    pp_uploader_stop(rs->up);
    pp_identity_free(rs->ident);
    pp_discovery_free(rs->disc);
    if (!stuck)
        pp_symbolizer_free(rs->sym);
    if (rs->sfd >= 0)
        close(rs->sfd);
}

/* The runtimes profiled by a runtime profiler: a mode other than disabled, and a backend for it
 * (the modes that have none were reported at start, pp_log_startup_notices). */
static void pick_runtimes(run_state *rs)
{
    const pp_config *cfg = rs->cfg;
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        const char *mode = cfg->runtime_mode[k];
        rs->ctx[k] = (pp_runtime_ctx){.rt = rt,
                                      .mode = mode ? mode : "disabled",
                                      .frequency = cfg->frequency,
                                      .duration = cfg->duration,
                                      .profiling_mode = cfg->profiling_mode,
                                      .insert_dso_name = cfg->insert_dso_name,
                                      .values = cfg->named_options,
                                      .nvalues = cfg->nnamed_options};
        if (mode && strcmp(mode, "disabled") != 0)
            rs->nactive++;
        if (mode && strcmp(mode, "disabled") != 0 && rt->backends) {
            rs->profiled[k] = true;
            rs->nprofiled++;
        }
    }
}

/* This session's runtime profilers: each profiled runtime's backend for its mode ("auto" picks
 * the first available one now, so a tool installed during the run is used from the next
 * session). An explicit mode whose tool is missing still gets its backend, whose start fails
 * and gives the processes an error stack. */
static size_t session_tasks(run_state *rs, pp_runner_task *tasks)
{
    size_t n = 0;
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        if (!rs->profiled[k])
            continue;
        char why[1024];
        const pp_backend *b = pp_runtime_backend(rs->ctx[k].rt, rs->ctx[k].mode, why, sizeof(why));
        if (b && why[0])
            pp_error("--%s-mode %s: %s", rs->ctx[k].rt->label, rs->ctx[k].mode, why);
        if (b)
            tasks[n++] =
                (pp_runner_task){.kind = (pp_proc_kind)k, .backend = b, .ctx = &rs->ctx[k]};
    }
    return n;
}

/* A hook of every runtime that has it, over this session's processes. */
static void each_runtime_hook(run_state *rs, const pp_proc_list *procs, bool last_drain)
{
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        void (*hook)(const pp_runtime_ctx *, const pp_proc *, size_t) =
            last_drain ? rt->before_last_drain : rt->session_begin;
        if (hook)
            hook(&rs->ctx[k], procs->procs, procs->n);
    }
}

/* The stacks of processes the runtimes' hooks could not prepare this session. */
static void merge_hook_stacks(run_state *rs, pp_profile *prof)
{
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        if (!rt->hook_stacks)
            continue;
        pp_profile *p = pp_profile_new();
        if (!p || rt->hook_stacks(&rs->ctx[k], p) < 0 ||
            pp_merge_runtime(prof, p, rs->sampler != NULL) < 0)
            pp_warn("out of memory while merging the %s hooks' stacks", rt->label);
        pp_profile_free(p);
    }
}

/* The --pids that exist now, as gProfiler: the others are dropped with a warning; none left is
 * fatal (-1). */
static int keep_live_pids(run_state *rs, const pp_config *cfg)
{
    if (!cfg->npids)
        return 0;
    rs->pids = calloc(cfg->npids, sizeof(int));
    if (!rs->pids) {
        pp_critical("out of memory");
        return -1;
    }
    for (size_t i = 0; i < cfg->npids; i++) {
        if (pp_pid_gone(cfg->pids[i]))
            pp_warn("--pids: process %d does not exist; it is not profiled", cfg->pids[i]);
        else
            rs->pids[rs->npids++] = cfg->pids[i];
    }
    if (!rs->npids) {
        pp_critical("--pids: none of the given processes exist; nothing to profile");
        return -1;
    }
    return 0;
}

/* A heartbeat at the end of every session (--heartbeat-file), for a liveness probe. */
static void heartbeat(run_state *rs)
{
    char err[512];
    if (!rs->cfg->heartbeat_file ||
        pp_heartbeat_touch(rs->cfg->heartbeat_file, err, sizeof(err)) == 0)
        return;
    if (!rs->heartbeat_warned)
        pp_warn("%s (logged once)", err);
    rs->heartbeat_warned = true;
}

/* --external-metadata, read again for this session; a file that became unreadable or stale is
 * ignored for the session, with a warning. NULL without the option. */
static json_t *session_extmeta(const pp_config *cfg)
{
    char err[512];
    if (!cfg->external_metadata)
        return NULL;
    json_t *ext = pp_extmeta_load(cfg->external_metadata, time(NULL), err, sizeof(err));
    if (ext)
        return ext;
    pp_warn("--external-metadata: %s; ignored for this session", err);
    return json_pack("{s:{},s:{}}", "static", "application");
}

static int run_init(run_state *rs, const pp_config *cfg)
{
    memset(rs, 0, sizeof(*rs));
    rs->cfg = cfg;
    rs->sfd = -1;
    char err[512];
    if (cfg->external_metadata) {
        json_t *ext = pp_extmeta_load(cfg->external_metadata, time(NULL), err, sizeof(err));
        if (!ext) {
            pp_critical("--external-metadata: %s", err);
            return -1;
        }
        json_decref(ext);
    }
    if (keep_live_pids(rs, cfg) < 0)
        return -1;
    pp_log_startup_notices(cfg);
    sigset_t mask;
    pp_session_stop_signals(&mask);
    rs->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (rs->sfd < 0) {
        pp_critical("cannot create a signalfd: %s", strerror(errno));
        return -1;
    }
    if (pp_uploader_start(cfg, &rs->up, err, sizeof(err)) < 0) {
        pp_critical("%s", err);
        return -1;
    }
    if (!(rs->hist = pp_history_sink_open(cfg, err, sizeof(err))) && err[0]) {
        pp_critical("--history-dir: %s", err);
        return -1;
    }
    pp_discovery_opts dopts = {.pids = rs->pids,
                               .npids = rs->npids,
                               .min_duration = cfg->min_duration,
                               .self_pid = getpid()};
    for (int k = 0; k < PP_KIND_COUNT; k++)
        dopts.maps_regex[k] = cfg->maps_regex[k];
    rs->disc = pp_discovery_new(&dopts, err, sizeof(err));
    rs->sym = pp_symbolizer_new(0);
    rs->ident = pp_identity_new(cfg);
    if (!rs->disc || !rs->sym || !rs->ident) {
        pp_critical("cannot initialize: %s", rs->disc ? "out of memory" : err);
        return -1;
    }
    pp_symbolizer_set_dso_names(rs->sym, cfg->insert_dso_name);
    pick_runtimes(rs);
    pp_log_runtime_modes(cfg, rs->profiled);
    if (rs->nprofiled && pp_session_tmpdir(rs->tmpdir, sizeof(rs->tmpdir), err, sizeof(err)) < 0) {
        pp_critical("cannot create a temporary directory for the runtime profilers: %s", err);
        return -1;
    }
    if (rs->nactive &&
        pp_target_tmpdir(rs->target_tmpdir, sizeof(rs->target_tmpdir), err, sizeof(err)) < 0) {
        pp_critical("cannot choose the directory for files the profiled processes read: %s", err);
        return -1;
    }
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        rs->ctx[k].tmpdir = rs->tmpdir[0] ? rs->tmpdir : NULL;
        rs->ctx[k].target_tmpdir = rs->target_tmpdir[0] ? rs->target_tmpdir : NULL;
        rs->ctx[k].stop_fd = rs->sfd;
    }
    if (cfg->perf_mode != PP_PERF_DISABLED) {
        pp_sampler_opts so = {
            .kind = cfg->perf_mode == PP_PERF_EVENT ? PP_SAMPLER_PERF_EVENT : PP_SAMPLER_AUTO,
            .frequency = cfg->frequency,
            .pids = rs->pids,
            .npids = rs->npids,
            .fp_only = cfg->perf_fp_only,
            .stack_size = (unsigned)cfg->perf_dwarf_stack_size,
        };
        rs->sampler = pp_sampler_start(&so, rs->sym, err, sizeof(err));
        if (!rs->sampler) {
            pp_critical("cannot start the system sampler: %s", err);
            return -1;
        }
        pp_info("system sampler running (%s mode, %d Hz, native stacks by %s)",
                pp_sampler_kind_name(rs->sampler), cfg->frequency,
                cfg->perf_fp_only ? "frame pointers only" : "CFI with frame-pointer fallback");
        for (int k = 1; k < PP_KIND_COUNT; k++)
            rs->ctx[k].sampler = rs->sampler; /* for in-sampler walks */
        rs->adopt = pp_sampler_can_walk(rs->sampler) ? pp_adopter_new() : NULL;
        /* Load the kernel symbol table now (about 50 ms of kernel time to read kallsyms), so
         * that it is never paid between a session's end and its file. */
        char warm[256];
        pp_symbolize_kernel(rs->sym, 0, warm, sizeof(warm));
    }
    rs->static_md = pp_host_metadata(cfg, time(NULL));
    return 0;
}

static void drain(run_state *rs, pp_profile *prof)
{
    pp_symbolizer_begin_pass(rs->sym);
    if (pp_sampler_drain(rs->sampler, prof) < 0)
        pp_warn("some samples could not be stored (out of memory)");
    pp_symbolizer_end_pass(rs->sym);
}

/* One session: discovery, runtime profilers and sampler over the same window, merge, identity,
 * output. Sets *stop when a termination signal arrived. Returns 0 or -1 (output failed). */
static int run_session(run_state *rs, bool *stop)
{
    const pp_config *cfg = rs->cfg;
    double start = pp_mono_now(), deadline = start + cfg->duration;
    time_t wall_start = time(NULL);
    double cpu0 = cpu_seconds();
    pp_host_metrics metrics;
    pp_metrics_begin(&metrics);
    pp_profile *prof = pp_profile_new();
    pp_proc_list procs = {0};
    if (!prof) {
        pp_critical("out of memory");
        return -1;
    }
    pp_symbolizer_begin_session(rs->sym, cfg->duration); /* large perf maps: read meanwhile */
    double t0 = pp_mono_now();
    if (pp_discover(rs->disc, &procs) < 0)
        pp_warn("cannot read /proc: processes are not classified this session");
    double disc_ms = (pp_mono_now() - t0) * 1000;
    /* the hooks first: they read the runtimes' options that identity's metadata follows */
    each_runtime_hook(rs, &procs, false); /* e.g. JIT symbols for the sampler */
    pp_identity_set_procs(rs->ident, &procs);
    pp_runner_task tasks[PP_KIND_COUNT];
    size_t ntasks = session_tasks(rs, tasks);
    if (rs->adopt)
        pp_adopter_session(rs->adopt, tasks, ntasks);
    pp_summary sum;
    pp_summary_begin(&sum, &procs, tasks, ntasks);
    pp_runner *runner =
        ntasks ? pp_runner_start(tasks, ntasks, procs.procs, procs.n, deadline) : NULL;
    pp_info("profiling session started (%d s, %zu processes classified in %.1f ms)", cfg->duration,
            procs.n, disc_ms);

    bool maps_refreshed = false;
    for (;;) {
        double left = deadline - pp_mono_now();
        if (left <= 0)
            break;
        if (!maps_refreshed && left * 1000 <= DRAIN_INTERVAL_MS) {
            each_runtime_hook(rs, &procs, true); /* code compiled during the session */
            maps_refreshed = true;
            left = deadline - pp_mono_now();
        }
        int ms = left * 1000 < DRAIN_INTERVAL_MS ? (int)(left * 1000 + 0.5) : DRAIN_INTERVAL_MS;
        if (wait_signal(rs->sfd, rs->sampler, rs->adopt, rs->disc, ms)) {
            *stop = true;
            pp_uploader_stop_window(rs->up);     /* the stop's bound counts from the signal */
            pp_symbolizer_stop_reading(rs->sym); /* a perf map being read: at its next chunk */
            break;
        }
        if (rs->sampler && pp_mono_now() < deadline) {
            drain(rs, prof);
            log_drain(prof);
        }
        pp_metrics_poll(&metrics);
    }
    double end = fmin(deadline, pp_mono_now());
    double t_end = pp_mono_now();
    pp_sampler_stats now = {0}, delta = {0};
    if (rs->sampler) {
        drain(rs, prof);
        pp_sampler_get_stats(rs->sampler, &now);
        stats_delta(&now, &rs->prev, &delta);
        rs->prev = now;
        if (delta.map_full || delta.ustacks_lost || delta.kstacks_lost || delta.lost)
            pp_warn("sampler drops this session: %llu samples (map full), %llu lost, "
                    "%llu user / %llu kernel stack traces lost (ring buffer full)",
                    (unsigned long long)delta.map_full, (unsigned long long)delta.lost,
                    (unsigned long long)delta.ustacks_lost, (unsigned long long)delta.kstacks_lost);
    }
    json_t *coverage = NULL;
    if (runner) {
        pp_profile **rts;
        size_t nrt = pp_runner_finish(runner, 2.0, &rts);
        pp_walk_cov *cov = NULL;
        size_t ncov = rs->sampler ? pp_sampler_walk_coverage(rs->sampler, &cov) : 0;
        coverage = pp_runtime_coverage(rs->ctx, &procs, tasks, ntasks, prof, rts, nrt, cov, ncov);
        pp_summary_walked(&sum, cov, ncov);
        free(cov);
        for (size_t i = 0; i < nrt; i++) {
            pp_log_runtime_counts(prof, rts[i]);
            pp_summary_runtime(&sum, rts[i]);
            if (pp_merge_runtime(prof, rts[i], rs->sampler != NULL) < 0)
                pp_warn("out of memory while merging runtime profiles");
        }
        pp_coverage_note_merge(coverage, prof);
        pp_runner_free(runner);
    }
    merge_hook_stacks(rs, prof);
    if (pp_profile_drop_tids(prof) < 0) /* the threads served the merge; the output has none */
        pp_warn("out of memory while folding the threads' stacks");
    double t_merged = pp_mono_now();
    pp_identity_annotate(rs->ident, prof, rs->disc, end);
    json_t *ext = session_extmeta(cfg);
    pp_extmeta_apply(ext, prof);
    pp_debug("session end: drain and merge %.1f ms, identity %.1f ms", (t_merged - t_end) * 1000,
             (pp_mono_now() - t_merged) * 1000);
    pp_symbolizer_stats ss;
    pp_symbolizer_get_stats(rs->sym, &ss);
    json_t *counters = own_counters(
        &delta, rs->sampler ? pp_sampler_kind_name(rs->sampler) : "none", cpu_seconds() - cpu0,
        disc_ms, rss_kb(), ss.perfmap_entries_dropped - rs->perfmap_dropped_prev);
    rs->perfmap_dropped_prev = ss.perfmap_entries_dropped;
    json_object_set_new(counters, "runtime_samples", coverage ? coverage : json_array());
    json_object_set_new(counters, "memory", memory_counters(&ss, &delta, prof));
    int rc = write_session(cfg, rs->static_md, ext, prof, &metrics, counters, wall_start, rs->up,
                           rs->hist, end);
    json_decref(counters);
    json_decref(ext);
    heartbeat(rs);
    pp_summary_end(&sum, prof, rs->up);
    pp_profile_free(prof);
    pp_proc_list_free(&procs);
    /* A session allocates and frees a lot at its end (runtime profiles, outputs): give the free
     * pages back, so that a continuous run's RSS follows what it holds, not its peaks. */
    malloc_trim(0);
    return rc;
}

int pp_run_sessions(const pp_config *cfg)
{
    static run_state rs; /* an abandoned runtime profiler may read rs.ctx after the return */
    if (run_init(&rs, cfg) < 0) {
        run_teardown(&rs);
        return 1;
    }
    int exit_code = 0;
    bool stop = false;
    while (!stop) {
        if (run_session(&rs, &stop) < 0 && !cfg->continuous) {
            exit_code = 1; /* in continuous mode a failed session does not end the run */
            break;
        }
        if (!cfg->continuous)
            break;
        if (controller_gone(cfg)) {
            pp_info("Controller process %d has exited; polyprof stopping...", cfg->controller_pid);
            break;
        }
    }
    run_teardown(&rs);
    return exit_code;
}
