#include "orchestrator/summary.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/textbuf.h"
#include "merge/scale.h"

static int by_pid(const void *a, const void *b)
{
    int x = ((const pp_summary_pid *)a)->pid, y = ((const pp_summary_pid *)b)->pid;
    return (x > y) - (x < y);
}

void pp_summary_begin(pp_summary *s, const pp_proc_list *procs, const pp_runner_task *tasks,
                      size_t ntasks)
{
    memset(s, 0, sizeof(*s));
    s->repeats0 = pp_log_repeats_counted();
    bool profiled[PP_KIND_COUNT] = {false};
    for (size_t i = 0; i < ntasks; i++)
        profiled[tasks[i].kind] = true;
    s->nprocs = procs->n;
    for (size_t i = 0; i < procs->n; i++) {
        const pp_proc *p = &procs->procs[i];
        s->procs[p->kind]++;
        if (profiled[p->kind] && !p->blacklisted)
            s->handed[p->kind]++;
    }
    size_t n = 0;
    for (int k = 0; k < PP_KIND_COUNT; k++)
        n += s->handed[k];
    s->pids = n ? malloc(n * sizeof(*s->pids)) : NULL;
    if (!s->pids)
        return; /* out of memory or none: runtime stacks are not attributed */
    for (size_t i = 0; i < procs->n; i++) {
        const pp_proc *p = &procs->procs[i];
        if (profiled[p->kind] && !p->blacklisted)
            s->pids[s->npids++] = (pp_summary_pid){p->pid, p->kind};
    }
    qsort(s->pids, s->npids, sizeof(*s->pids), by_pid);
}

static pp_summary_pid *find(pp_summary *s, int pid)
{
    pp_summary_pid key = {.pid = pid};
    return s->npids ? bsearch(&key, s->pids, s->npids, sizeof(*s->pids), by_pid) : NULL;
}

/* A process's outcome: runtime stacks from any source win over an error or skip stack, which
 * wins over nothing. */
static void set_outcome(pp_summary_pid *e, unsigned char outcome)
{
    if (e->outcome == PP_SUMMARY_RUNTIME || (e->outcome && outcome != PP_SUMMARY_RUNTIME))
        return;
    e->outcome = outcome;
}

void pp_summary_runtime(pp_summary *s, const pp_profile *rt)
{
    for (size_t i = 0; i < pp_profile_npids(rt); i++) {
        const pp_pid_profile *pp = pp_profile_at(rt, i);
        pp_summary_pid *e = find(s, pp->pid);
        if (!e)
            continue;
        uint32_t frame;
        if (pp_is_error_stack(rt, pp, &frame))
            set_outcome(e, strncmp(pp_profile_str(rt, frame), "[Profiling skipped", 18) == 0
                               ? PP_SUMMARY_SKIPPED
                               : PP_SUMMARY_ERROR);
        else if (pp_pid_total(pp) > 0)
            set_outcome(e, PP_SUMMARY_RUNTIME);
    }
}

void pp_summary_walked(pp_summary *s, const pp_walk_cov *cov, size_t ncov)
{
    for (size_t i = 0; i < ncov; i++) {
        pp_summary_pid *e = cov[i].rt_samples ? find(s, cov[i].pid) : NULL;
        if (e)
            set_outcome(e, PP_SUMMARY_RUNTIME);
    }
}

void pp_summary_format(const pp_summary *s, uint64_t samples, const char *upload,
                       unsigned long long repeats, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    pp_textbuf_add(out, len, &o, "%zu process%s", s->nprocs, s->nprocs == 1 ? "" : "es");
    const char *sep = " (";
    for (int k = 0; k < PP_KIND_COUNT; k++) {
        if (!s->procs[k])
            continue;
        pp_textbuf_add(out, len, &o, "%s%s %zu", sep, pp_proc_kind_name((pp_proc_kind)k),
                       s->procs[k]);
        sep = ", ";
    }
    pp_textbuf_add(out, len, &o, "%s; %llu sample%s; runtime stacks:", s->nprocs ? ")" : "",
                   (unsigned long long)samples, samples == 1 ? "" : "s");
    size_t got[PP_KIND_COUNT][PP_SUMMARY_SKIPPED + 1] = {{0}}; /* per kind, per outcome */
    for (size_t i = 0; i < s->npids; i++)
        got[s->pids[i].kind][s->pids[i].outcome]++;
    sep = " ";
    for (int k = 0; k < PP_KIND_COUNT; k++) {
        if (!s->handed[k])
            continue;
        size_t errors = got[k][PP_SUMMARY_ERROR], skipped = got[k][PP_SUMMARY_SKIPPED];
        pp_textbuf_add(out, len, &o, "%s%s %zu of %zu", sep, pp_proc_kind_name((pp_proc_kind)k),
                       got[k][PP_SUMMARY_RUNTIME], s->handed[k]);
        if (errors || skipped) {
            pp_textbuf_add(out, len, &o, " (");
            if (errors)
                pp_textbuf_add(out, len, &o, "%zu error%s", errors, errors == 1 ? "" : "s");
            if (skipped)
                pp_textbuf_add(out, len, &o, "%s%zu skipped", errors ? ", " : "", skipped);
            pp_textbuf_add(out, len, &o, ")");
        }
        sep = ", ";
    }
    if (*sep == ' ')
        pp_textbuf_add(out, len, &o, " none");
    pp_textbuf_add(out, len, &o, "; upload: %s", upload);
    if (repeats)
        pp_textbuf_add(out, len, &o, "; %llu repeated message%s not logged", repeats,
                       repeats == 1 ? "" : "s");
}

void pp_summary_end(pp_summary *s, const pp_profile *prof, pp_uploader *up)
{
    uint64_t samples = 0;
    for (size_t i = 0; i < pp_profile_npids(prof); i++)
        samples += pp_pid_total(pp_profile_at(prof, i));
    char upload[512], line[2048];
    pp_uploader_status(up, upload, sizeof(upload));
    pp_summary_format(s, samples, upload, pp_log_repeats_counted() - s->repeats0, line,
                      sizeof(line));
    pp_info("session summary: %s", line);
    free(s->pids);
    s->pids = NULL;
    s->npids = 0;
}
