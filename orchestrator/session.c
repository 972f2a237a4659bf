#include "orchestrator/session.h"

#include <errno.h>
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
#include "merge/profile.h"
#include "orchestrator/hostinfo.h"
#include "orchestrator/log.h"
#include "orchestrator/output.h"
#include "orchestrator/upload.h"
#include "runtimes/symbols/symbolizer.h"
#include "runtimes/system/sampler.h"

#define DRAIN_INTERVAL_MS 2000

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

/* Waits up to ms for a termination signal; returns true when one arrived. */
static bool wait_signal(int sfd, int ms)
{
    if (ms < 0)
        ms = 0;
    struct pollfd p = {.fd = sfd, .events = POLLIN};
    int r = poll(&p, 1, ms);
    if (r > 0 && (p.revents & POLLIN)) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            pp_info("received signal %u, finishing the current session", si.ssi_signo);
            return true;
        }
    }
    return false;
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

static bool controller_gone(const pp_config *cfg)
{
    return cfg->controller_pid > 0 && kill(cfg->controller_pid, 0) < 0 && errno == ESRCH;
}

static json_t *own_counters(const pp_sampler_stats *d, const char *mode, double cpu, double peak_ms,
                            long rss)
{
    return json_pack(
        "{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:I}", "version", PP_VERSION, "sampler", mode,
        "samples", (json_int_t)d->samples, "dropped_map_full", (json_int_t)d->map_full,
        "user_stack_collisions", (json_int_t)d->ustack_collisions, "kernel_stack_collisions",
        (json_int_t)d->kstack_collisions, "user_stack_errors", (json_int_t)d->ustack_errors,
        "lost_samples", (json_int_t)d->lost, "filtered_samples", (json_int_t)d->filtered,
        "cpu_seconds", cpu, "rss_kb", (json_int_t)rss);
    (void)peak_ms;
}

static void stats_delta(const pp_sampler_stats *now, const pp_sampler_stats *before,
                        pp_sampler_stats *d)
{
    d->samples = now->samples - before->samples;
    d->map_full = now->map_full - before->map_full;
    d->ustack_collisions = now->ustack_collisions - before->ustack_collisions;
    d->kstack_collisions = now->kstack_collisions - before->kstack_collisions;
    d->ustack_errors = now->ustack_errors - before->ustack_errors;
    d->lost = now->lost - before->lost;
    d->filtered = now->filtered - before->filtered;
    d->drains = now->drains - before->drains;
}

static int write_session(const pp_config *cfg, const json_t *static_md, pp_profile *prof,
                         pp_host_metrics *metrics, const json_t *counters, time_t start,
                         pp_uploader *up, double session_end)
{
    pp_header_info hi = {
        .metadata = static_md,
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
                    (mono_now() - session_end) * 1000);
        }
    }
    free(text);
    return rc;
}

int pp_run_sessions(const pp_config *cfg)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        pp_critical("cannot create a signalfd: %s", strerror(errno));
        return 1;
    }

    pp_uploader *up = NULL;
    char uerr[512];
    if (pp_uploader_start(cfg, &up, uerr, sizeof(uerr)) < 0) {
        pp_critical("%s", uerr);
        close(sfd);
        return 1;
    }
    pp_symbolizer *sym = pp_symbolizer_new(0);
    pp_sampler *sampler = NULL;
    int exit_code = 0;
    if (!sym) {
        pp_critical("out of memory");
        pp_uploader_stop(up);
        close(sfd);
        return 1;
    }
    if (cfg->perf_mode != PP_PERF_DISABLED) {
        pp_sampler_opts so = {
            .kind = cfg->perf_mode == PP_PERF_EVENT ? PP_SAMPLER_PERF_EVENT : PP_SAMPLER_AUTO,
            .frequency = cfg->frequency,
            .pids = cfg->pids,
            .npids = cfg->npids,
        };
        char err[512];
        sampler = pp_sampler_start(&so, sym, err, sizeof(err));
        if (!sampler) {
            pp_critical("cannot start the system sampler: %s", err);
            pp_symbolizer_free(sym);
            pp_uploader_stop(up);
            close(sfd);
            return 1;
        }
        pp_info("system sampler running (%s mode, %d Hz)", pp_sampler_kind_name(sampler),
                cfg->frequency);
        /* Load the kernel symbol table now (about 50 ms of kernel time to read kallsyms), so
         * that it is never paid between a session's end and its file. */
        char warm[256];
        pp_symbolize_kernel(sym, 0, warm, sizeof(warm));
    }

    json_t *static_md = pp_host_metadata(cfg, time(NULL));
    pp_sampler_stats prev = {0};
    bool stop = false;
    while (!stop) {
        double start = mono_now(), deadline = start + cfg->duration;
        time_t wall_start = time(NULL);
        double cpu0 = cpu_seconds();
        pp_host_metrics metrics;
        pp_metrics_begin(&metrics);
        pp_profile *prof = pp_profile_new();
        if (!prof) {
            pp_critical("out of memory");
            exit_code = 1;
            break;
        }
        pp_info("profiling session started (%d s)", cfg->duration);
        for (;;) {
            double left = deadline - mono_now();
            if (left <= 0)
                break;
            int ms = left * 1000 < DRAIN_INTERVAL_MS ? (int)(left * 1000 + 0.5) : DRAIN_INTERVAL_MS;
            if (wait_signal(sfd, ms)) {
                stop = true;
                break;
            }
            if (sampler && mono_now() < deadline) {
                pp_symbolizer_begin_pass(sym);
                if (pp_sampler_drain(sampler, prof) < 0)
                    pp_warn("some samples could not be stored (out of memory)");
                log_drain(prof);
            }
            pp_metrics_poll(&metrics);
        }
        pp_sampler_stats now = {0}, delta = {0};
        if (sampler) {
            pp_symbolizer_begin_pass(sym);
            if (pp_sampler_drain(sampler, prof) < 0)
                pp_warn("some samples could not be stored (out of memory)");
            pp_sampler_get_stats(sampler, &now);
            stats_delta(&now, &prev, &delta);
            prev = now;
            if (delta.map_full || delta.ustack_collisions || delta.kstack_collisions || delta.lost)
                pp_warn("sampler drops this session: %llu samples (map full), %llu lost, "
                        "%llu user / %llu kernel stacks (hash collisions)",
                        (unsigned long long)delta.map_full, (unsigned long long)delta.lost,
                        (unsigned long long)delta.ustack_collisions,
                        (unsigned long long)delta.kstack_collisions);
        }
        json_t *counters = own_counters(&delta, sampler ? pp_sampler_kind_name(sampler) : "none",
                                        cpu_seconds() - cpu0, 0, rss_kb());
        if (write_session(cfg, static_md, prof, &metrics, counters, wall_start, up, fmin(deadline, mono_now())) < 0)
            exit_code = 1;
        json_decref(counters);
        pp_profile_free(prof);
        if (!cfg->continuous)
            break;
        if (controller_gone(cfg)) {
            pp_info("Controller process %d has exited; polyprof stopping...", cfg->controller_pid);
            break;
        }
        if (exit_code && !cfg->continuous)
            break;
        exit_code = 0; /* in continuous mode a failed session does not end the run */
    }
    json_decref(static_md);
    pp_sampler_stop(sampler);
    pp_uploader_stop(up);
    pp_symbolizer_free(sym);
    close(sfd);
    return exit_code;
}
