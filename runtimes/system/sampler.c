/* Backend selection for the system sampler: BPF when it loads, else perf_event. */
#include "runtimes/system/sampler.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "runtimes/system/bpf_sampler.h"
#include "runtimes/system/perf_sampler.h"

struct pp_sampler {
    pp_sampler_kind kind;
    pp_bpf_sampler *bpf;
    pp_perf_sampler *perf;
};

pp_sampler *pp_sampler_start(const pp_sampler_opts *opts, pp_symbolizer *sym, char *err,
                             size_t errlen)
{
    pp_sampler *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (opts->kind != PP_SAMPLER_PERF_EVENT) {
        char berr[256];
        s->bpf = pp_bpf_sampler_start(opts, sym, berr, sizeof(berr));
        if (s->bpf) {
            s->kind = PP_SAMPLER_BPF;
            return s;
        }
        pp_warn("BPF sampler unavailable (%s); falling back to --perf-mode perf-event", berr);
    }
    s->perf = pp_perf_sampler_start(opts, sym, err, errlen);
    if (!s->perf) {
        free(s);
        return NULL;
    }
    s->kind = PP_SAMPLER_PERF_EVENT;
    return s;
}

const char *pp_sampler_kind_name(const pp_sampler *s)
{
    return s->kind == PP_SAMPLER_BPF ? "bpf" : "perf-event";
}

int pp_sampler_drain(pp_sampler *s, pp_profile *out)
{
    return s->bpf ? pp_bpf_sampler_drain(s->bpf, out) : pp_perf_sampler_drain(s->perf, out);
}

int pp_sampler_news_fd(pp_sampler *s)
{
    return s->bpf ? pp_bpf_sampler_news_fd(s->bpf) : pp_perf_sampler_news_fd(s->perf);
}

size_t pp_sampler_new_pids(pp_sampler *s, int *pids, size_t cap)
{
    return s && s->bpf ? pp_bpf_sampler_new_pids(s->bpf, pids, cap) : 0;
}

void pp_sampler_take_news(pp_sampler *s)
{
    if (s->bpf)
        pp_bpf_sampler_take_news(s->bpf);
    else
        pp_perf_sampler_take_news(s->perf);
}

void pp_sampler_load_rows(pp_sampler *s)
{
    if (s->bpf)
        pp_bpf_sampler_load_rows(s->bpf);
}

void pp_sampler_get_stats(pp_sampler *s, pp_sampler_stats *st)
{
    if (s->bpf)
        pp_bpf_sampler_get_stats(s->bpf, st);
    else
        pp_perf_sampler_get_stats(s->perf, st);
}

void pp_sampler_stop(pp_sampler *s)
{
    if (!s)
        return;
    pp_bpf_sampler_stop(s->bpf);
    pp_perf_sampler_stop(s->perf);
    free(s);
}

bool pp_sampler_can_walk(const pp_sampler *s)
{
    return s && s->bpf;
}

int pp_sampler_walk_attach(pp_sampler *s, int pid, unsigned long long start_ticks, unsigned walker,
                           const void *info, size_t len, const pp_walker_ops *ops, void *state,
                           char *err, size_t errlen)
{
    if (!s || !s->bpf) {
        snprintf(err, errlen, "the system sampler cannot walk runtimes in perf-event mode");
        ops->free(state);
        return -1;
    }
    return pp_bpf_sampler_walk_attach(s->bpf, pid, start_ticks, walker, info, len, ops, state, err,
                                      errlen);
}

bool pp_sampler_walk_forked(pp_sampler *s, int pid)
{
    return s && s->bpf && pp_bpf_sampler_walk_forked(s->bpf, pid);
}

void pp_sampler_count_threads(pp_sampler *s, int pid)
{
    if (s && s->bpf && pp_bpf_sampler_count_threads(s->bpf, pid) < 0)
        pp_debug("sampler: cannot count pid %d per thread", pid);
    else if (s && s->perf)
        pp_perf_sampler_count_threads(s->perf, pid);
}

bool pp_sampler_walk_attached(pp_sampler *s, int pid, unsigned long long start_ticks)
{
    return s && s->bpf && pp_bpf_sampler_walk_attached(s->bpf, pid, start_ticks);
}

size_t pp_sampler_walk_coverage(pp_sampler *s, pp_walk_cov **out)
{
    *out = NULL;
    return s && s->bpf ? pp_bpf_sampler_walk_coverage(s->bpf, out) : 0;
}

bool pp_sampler_can_track_threads(const pp_sampler *s)
{
    return s && s->perf;
}

int pp_sampler_track_threads(pp_sampler *s, int pid, bool on)
{
    return s && s->perf ? pp_perf_sampler_track_threads(s->perf, pid, on) : -1;
}

size_t pp_sampler_sampled_threads(pp_sampler *s, const int *pids, size_t npids, pp_thread_hits *out,
                                  size_t cap)
{
    return s && s->perf && npids ? pp_perf_sampler_sampled_threads(s->perf, pids, npids, out, cap)
                                 : 0;
}
