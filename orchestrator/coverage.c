#include "orchestrator/coverage.h"

#include <string.h>

#include "base/log.h"
#include "base/utf8.h"
#include "merge/scale.h"

/* Fewer sampler samples than this never warn about coverage (too few to say). */
#define MIN_COVERAGE_SAMPLES 20

/* The header's polyprof.runtime_samples: for every process given to a runtime profiler this
 * session, {pid, comm (UTF-8), runtime, mode, runtime_samples, sampler_samples}: the sampler
 * samples that carried the runtime's frames (in-sampler walks, cov) or the samples the runtime
 * profiler delivered (its profile in rts), and the sampler's samples of the pid (sys, before the
 * merge). "profiler" says which served it: the sampler's walk, the profiler named by the
 * process's runtime profile, else the task's backend. A process with coverage below 50 % is logged
 * (once an hour). */
json_t *pp_runtime_coverage(const pp_runtime_ctx *ctx, const pp_proc_list *procs,
                            const pp_runner_task *tasks, size_t ntasks, const pp_profile *sys,
                            pp_profile *const *rts, size_t nrt, const pp_walk_cov *cov, size_t ncov)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < procs->n; i++) {
        const pp_proc *p = &procs->procs[i];
        const pp_runner_task *t = NULL;
        for (size_t k = 0; k < ntasks && !t; k++)
            t = tasks[k].kind == p->kind && !p->blacklisted ? &tasks[k] : NULL;
        if (!t)
            continue;
        const pp_pid_profile *sp = pp_profile_get((pp_profile *)sys, p->pid, false);
        uint64_t rt_samples = 0, sampler = sp ? pp_pid_total(sp) : 0;
        const char *profiler = t->backend->name;
        bool walked = false;
        for (size_t k = 0; k < ncov; k++)
            if (cov[k].pid == p->pid) { /* an entry per registration: pid reuse adds one */
                rt_samples = (walked ? rt_samples : 0) + cov[k].rt_samples;
                sampler = (walked ? sampler : 0) + cov[k].samples;
                profiler = "sampler-walk";
                walked = true;
            }
        for (size_t k = 0; k < nrt; k++) {
            const pp_pid_profile *r = pp_profile_get(rts[k], p->pid, false);
            if (r && r->profiler && !walked) /* a backend handing processes over names who */
                profiler = r->profiler;
            if (r && pp_pid_total(r) && !pp_is_error_stack(rts[k], r, NULL))
                rt_samples = pp_pid_total(r);
        }
        char comm[sizeof(p->comm) * 3]; /* UTF-8 for JSON: an invalid byte becomes U+FFFD */
        pp_utf8_copy(comm, sizeof(comm), p->comm, strlen(p->comm));
        json_array_append_new(list, json_pack("{s:i,s:s,s:s,s:s,s:s,s:I,s:I}", "pid", p->pid,
                                              "comm", comm, "runtime", ctx[p->kind].rt->label,
                                              "mode", ctx[p->kind].mode, "profiler", profiler,
                                              "runtime_samples", (json_int_t)rt_samples,
                                              "sampler_samples", (json_int_t)sampler));
        /* (a process with no runtime sample at all got an error or skip message instead) */
        if (sampler >= MIN_COVERAGE_SAMPLES && rt_samples > 0 && rt_samples * 2 < sampler)
            pp_warn_proc(p->pid, p->start_ticks,
                         "%s pid %d (%s): %s gave runtime frames for %llu of its %llu samples "
                         "(below 50 %%): the rest keeps native frames or is scaled from few "
                         "samples (polyprof.runtime_samples in the header; docs/ARCHITECTURE.md)",
                         ctx[p->kind].rt->label, p->pid, p->comm, profiler,
                         (unsigned long long)rt_samples, (unsigned long long)sampler);
    }
    /* processes walked that discovery did not list: forks of registered ones (bpf/sampler.h,
     * PP_RT_FORK_DEPTH) born during the session */
    for (size_t k = 0; list && k < ncov; k++) {
        bool listed = false;
        for (size_t i = 0; i < procs->n && !listed; i++)
            listed = procs->procs[i].pid == cov[k].pid;
        for (size_t j = 0; j < k && !listed; j++)
            listed = cov[j].pid == cov[k].pid;
        const pp_runtime_ctx *c = NULL;
        for (int r = 0; r < PP_KIND_COUNT && !c; r++)
            if (ctx[r].rt && ctx[r].rt->walker && ctx[r].rt->walker->kind == cov[k].walker)
                c = &ctx[r];
        if (listed || !c)
            continue;
        uint64_t rt_samples = 0, sampler = 0;
        for (size_t j = k; j < ncov; j++)
            if (cov[j].pid == cov[k].pid) {
                rt_samples += cov[j].rt_samples;
                sampler += cov[j].samples;
            }
        json_array_append_new(
            list, json_pack("{s:i,s:s,s:s,s:s,s:I,s:I}", "pid", cov[k].pid, "runtime", c->rt->label,
                            "mode", c->mode, "profiler", "sampler-walk", "runtime_samples",
                            (json_int_t)rt_samples, "sampler_samples", (json_int_t)sampler));
    }
    return list;
}

void pp_coverage_note_merge(json_t *list, const pp_profile *merged)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const pp_pid_profile *pp = pp_profile_get(
            (pp_profile *)merged, (int)json_integer_value(json_object_get(e, "pid")), false);
        if (pp && pp->uncovered_of)
            json_object_set_new(e, "native_kept",
                                json_pack("{s:I,s:I}", "runtime_samples",
                                          (json_int_t)pp->uncovered_rt, "sampler_samples",
                                          (json_int_t)pp->uncovered_of));
    }
}

/* Before a merge: per pid, the runtime profiler's sample count and the system sampler's (the
 * count the runtime stacks are scaled to). */
void pp_log_runtime_counts(pp_profile *sys, const pp_profile *rt)
{
    for (size_t i = 0; i < pp_profile_npids(rt); i++) {
        const pp_pid_profile *r = pp_profile_at(rt, i);
        const pp_pid_profile *s = pp_profile_get(sys, r->pid, false);
        pp_debug("runtime %s pid %d: %llu runtime samples, %llu sampler samples",
                 r->runtime ? r->runtime : "?", r->pid, (unsigned long long)pp_pid_total(r),
                 (unsigned long long)(s ? pp_pid_total(s) : 0));
    }
}

/* Where polyprof's memory is (the header's polyprof.memory; the soak of bench/soak reads it):
 * malloc's bytes in use, its mmapped blocks included (RSS also holds freed memory malloc keeps),
 * the cached symbol tables,
 * the JIT perf maps, the processes the symbolizer knows and this session's profile. */
