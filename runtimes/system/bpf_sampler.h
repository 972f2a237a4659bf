/* eBPF backend of the system sampler (see sampler.h). */
#ifndef PP_BPF_SAMPLER_H
#define PP_BPF_SAMPLER_H

#include "runtimes/system/emit.h"
#include "runtimes/system/sampler.h"

typedef struct pp_bpf_sampler pp_bpf_sampler;

pp_bpf_sampler *pp_bpf_sampler_start(const pp_sampler_opts *o, pp_symbolizer *sym, char *err,
                                     size_t errlen);
int pp_bpf_sampler_drain(pp_bpf_sampler *s, pp_profile *out);
int pp_bpf_sampler_news_fd(pp_bpf_sampler *s);
void pp_bpf_sampler_take_news(pp_bpf_sampler *s);
/* Loads the unwind rows of files the per-file cache finished since the last call. */
void pp_bpf_sampler_load_rows(pp_bpf_sampler *s);
size_t pp_bpf_sampler_new_pids(pp_bpf_sampler *s, int *pids, size_t cap);
void pp_bpf_sampler_get_stats(pp_bpf_sampler *s, pp_sampler_stats *st);
void pp_bpf_sampler_stop(pp_bpf_sampler *s);
int pp_bpf_sampler_walk_attach(pp_bpf_sampler *s, int pid, unsigned long long start_ticks,
                               unsigned walker, const void *info, size_t len,
                               const pp_walker_ops *ops, void *state, char *err, size_t errlen);
bool pp_bpf_sampler_walk_attached(pp_bpf_sampler *s, int pid, unsigned long long start_ticks);
bool pp_bpf_sampler_walk_forked(pp_bpf_sampler *s, int pid);
int pp_bpf_sampler_count_threads(pp_bpf_sampler *s, int pid);
size_t pp_bpf_sampler_walk_coverage(pp_bpf_sampler *s, pp_walk_cov **out);

#endif
