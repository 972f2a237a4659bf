/* perf_event backend of the system sampler (see sampler.h): one CPU-clock event per CPU with
 * PERF_SAMPLE_CALLCHAIN into mmap ring buffers, read by a thread that aggregates identical
 * (pid, callchain) samples in user space. No BPF needed. */
#ifndef PP_PERF_SAMPLER_H
#define PP_PERF_SAMPLER_H

#include "runtimes/system/emit.h"
#include "runtimes/system/sampler.h"

typedef struct pp_perf_sampler pp_perf_sampler;

pp_perf_sampler *pp_perf_sampler_start(const pp_sampler_opts *o, pp_symbolizer *sym, char *err,
                                       size_t errlen);
int pp_perf_sampler_drain(pp_perf_sampler *s, pp_profile *out);
int pp_perf_sampler_news_fd(pp_perf_sampler *s);
void pp_perf_sampler_count_threads(pp_perf_sampler *s, int pid);
void pp_perf_sampler_take_news(pp_perf_sampler *s);
void pp_perf_sampler_get_stats(pp_perf_sampler *s, pp_sampler_stats *st);
void pp_perf_sampler_stop(pp_perf_sampler *s);
/* pp_sampler_track_threads and pp_sampler_sampled_threads of sampler.h. */
int pp_perf_sampler_track_threads(pp_perf_sampler *s, int pid, bool on);
size_t pp_perf_sampler_sampled_threads(pp_perf_sampler *s, const int *pids, size_t npids,
                                       pp_thread_hits *out, size_t cap);

#endif
