/* Unit tests: every registered runtime against the shared contract, so that a runtime is checked
 * the day it is registered (runtimes/registry.h):
 * - its descriptor is consistent (names, modes, backends, frame suffixes, option rows);
 * - each backend honours start/collect/stop/free: collect returns by the deadline plus a grace,
 *   stop() makes a blocked collect() return promptly, the runner runs it without abandoning it,
 *   and what it reports concerns only the processes it was given. Backends run against a
 *   process that is not of their runtime (a `sleep`): an error or skip stack, or nothing, are
 *   both correct; a backend whose external tool is missing must fail start() cleanly. */
#include "tests/unit/testutil.h"

#include <pthread.h>
#include <time.h>

#include "orchestrator/cli_opts.h"
#include "orchestrator/discovery.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool accepted_mode(const pp_runtime *rt, const char *mode)
{
    for (const pp_choice *c = rt->modes; c && c->in; c++)
        if (strcmp(c->out ? c->out : c->in, mode) == 0)
            return true;
    return false;
}

Test(conformance, descriptors_are_consistent)
{
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        cr_assert_not_null(rt, "kind %d has no descriptor", k);
        cr_assert(rt->name && rt->name[0] && rt->label && rt->label[0]);
        cr_expect_str_eq(pp_proc_kind_name((pp_proc_kind)k), rt->name);
        for (int j = 1; j < k; j++) {
            cr_expect_str_neq(pp_runtime_get((pp_proc_kind)j)->name, rt->name);
            cr_expect_str_neq(pp_runtime_get((pp_proc_kind)j)->label, rt->label);
        }
        cr_expect(rt->default_regex || rt->detector, "%s: no way to detect it", rt->name);
        cr_expect_not_null(rt->regex_option, "%s: no --%s-*-regex option", rt->name, rt->label);
        if (rt->modes) {
            cr_expect(accepted_mode(rt, "disabled"), "%s: no disabled mode", rt->name);
            cr_expect(accepted_mode(rt, rt->default_mode), "%s: bad default", rt->name);
        }
        cr_expect(!rt->backends || rt->modes, "%s: backends but no --%s-mode", rt->name, rt->label);
        for (const pp_backend *const *b = rt->backends; b && *b; b++) {
            cr_expect((*b)->start && (*b)->collect && (*b)->free && (*b)->name);
            cr_expect((*b)->modes && (*b)->modes[0], "%s/%s serves no mode", rt->name, (*b)->name);
            for (const char *const *m = (*b)->modes; m && *m; m++)
                cr_expect(accepted_mode(rt, *m), "%s/%s: mode %s is not an option value", rt->name,
                          (*b)->name, *m);
        }
        /* every mode value a user can give has a backend, or the runtime has none at all (then
         * the start-up notice says so) */
        for (const pp_choice *c = rt->modes; rt->backends && c && c->in; c++) {
            const char *m = c->out ? c->out : c->in;
            char why[256];
            if (strcmp(m, "disabled") == 0 || strcmp(m, "auto") == 0)
                continue;
            bool served = false;
            for (const pp_backend *const *b = rt->backends; *b; b++)
                for (const char *const *x = (*b)->modes; *x; x++)
                    served |= strcmp(*x, m) == 0;
            cr_expect(served, "%s: --%s-mode %s has no backend", rt->name, rt->label, m);
            (void)why;
        }
        for (const char *const *s = rt->suffixes; s && *s; s++) {
            size_t n = strlen(*s);
            cr_expect(n > 3 && (*s)[0] == '_' && (*s)[1] == '[' && (*s)[n - 1] == ']',
                      "%s: bad suffix %s", rt->name, *s);
            for (int j = 1; j < k; j++)
                for (const char *const *o = pp_runtime_get((pp_proc_kind)j)->suffixes; o && *o; o++)
                    cr_expect_str_neq(*o, *s, "%s shares a suffix", rt->name);
        }
        cr_expect(!rt->backends || rt->suffixes, "%s: profiled but its frames have no suffix",
                  rt->name);
        for (size_t i = 0; i < rt->noptions; i++)
            cr_expect_eq(rt->options[i].off, PP_OFF_NONE, "%s: option %s must be stored by name",
                         rt->name, rt->options[i].name);
    }
}

Test(conformance, option_names_are_unique)
{
    pp_config cfg;
    char err[256];
    char *argv[] = {"polyprof", "-o", "x", NULL};
    cr_assert_eq(pp_cli_parse(3, argv, NULL, stdout, &cfg, err, sizeof(err)), PP_CLI_OK, "%s", err);
    for (size_t i = 0; i < pp_nopts; i++)
        for (size_t j = 0; j < i; j++) {
            cr_expect_str_neq(pp_opts[i].name, pp_opts[j].name);
            if (pp_opts[j].neg)
                cr_expect_str_neq(pp_opts[i].name, pp_opts[j].neg);
        }
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        if (rt->modes)
            cr_expect_str_eq(cfg.runtime_mode[k], rt->default_mode);
    }
    pp_config_free(&cfg);
}

/* ---- the backend contract ---- */

typedef struct target {
    pid_t pid;
    char tmpdir[64];
    pp_proc proc;
} target;

static void target_start(target *t, pp_proc_kind kind)
{
    t->pid = fork();
    cr_assert(t->pid >= 0);
    if (t->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl("/bin/sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    snprintf(t->tmpdir, sizeof(t->tmpdir), "/tmp/pp_test_XXXXXX");
    cr_assert(mkdtemp(t->tmpdir));
    t->proc = (pp_proc){.pid = t->pid, .kind = kind, .comm = "sleep"};
    /* its exec done: its comm is sleep */
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", t->pid);
    for (int i = 0; i < 2000 && strncmp(comm, "sleep", 5) != 0; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof(comm), f))
                comm[0] = '\0';
            fclose(f);
        }
        if (strncmp(comm, "sleep", 5) != 0)
            usleep(1000);
    }
    char stat[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", t->pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(stat, sizeof(stat), f));
    fclose(f);
    const char *p = strrchr(stat, ')');
    unsigned long long start = 0;
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p)
        start = strtoull(p + 1, NULL, 10);
    t->proc.start_ticks = start;
}

static void target_stop(target *t)
{
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->tmpdir);
    cr_expect_eq(system(cmd), 0);
}

static pp_runtime_ctx ctx_for(const pp_runtime *rt, const char *mode, const target *t)
{
    return (pp_runtime_ctx){.rt = rt,
                            .mode = mode,
                            .frequency = 11,
                            .duration = 1,
                            .profiling_mode = "cpu",
                            .tmpdir = t->tmpdir,
                            .target_tmpdir = NULL};
}

/* What a backend reported concerns the target only. */
static void check_output(const pp_runtime *rt, const pp_backend *b, pp_profile *out,
                         const target *t)
{
    for (size_t i = 0; i < pp_profile_npids(out); i++) {
        pp_pid_profile *pp = pp_profile_at(out, i);
        cr_expect_eq(pp->pid, t->pid, "%s/%s reported pid %d", rt->name, b->name, pp->pid);
        cr_expect(pp->runtime == NULL || strcmp(pp->runtime, rt->label) == 0,
                  "%s/%s: runtime label %s", rt->name, b->name, pp->runtime);
        size_t nf;
        const uint32_t *f = pp_pid_nstacks(pp) ? pp_pid_stack(pp, 0, &nf, NULL) : NULL;
        if (f && nf == 1) {
            const char *s = pp_profile_str(out, f[0]);
            if (s[0] == '[')
                cr_expect(strncmp(s, "[Profiling error: ", 18) == 0 ||
                              strncmp(s, "[Profiling skipped: ", 20) == 0,
                          "%s/%s: %s", rt->name, b->name, s);
        }
    }
}

typedef struct stopper {
    const pp_backend *b;
    void *session;
    double delay;
} stopper;

static void *stop_later(void *arg)
{
    stopper *s = arg;
    usleep((useconds_t)(s->delay * 1e6));
    s->b->stop(s->session);
    return NULL;
}

static int sessions_started, backends_available;

static void backend_contract(const pp_runtime *rt, const pp_backend *b, const char *mode)
{
    char why[256] = "";
    bool available = !b->available || b->available(why, sizeof(why));
    backends_available += available;
    target t;
    pp_proc_kind kind = PP_KIND_NATIVE;
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (pp_runtime_get((pp_proc_kind)k) == rt)
            kind = (pp_proc_kind)k;
    target_start(&t, kind);
    pp_runtime_ctx ctx = ctx_for(rt, mode, &t);

    /* 1. the deadline */
    double t0 = now_s();
    void *s = b->start(&ctx, &t.proc, 1, t0 + 0.5);
    if (!available) {
        cr_expect_null(s, "%s/%s started although its tool is missing (%s)", rt->name, b->name,
                       why);
    } else if (s) {
        sessions_started++;
        pp_profile *out = pp_profile_new();
        cr_expect_geq(b->collect(s, out), 0);
        double took = now_s() - t0;
        cr_expect_lt(took, 0.5 + 3.0, "%s/%s: collect returned %.1f s after start", rt->name,
                     b->name, took);
        check_output(rt, b, out, &t);
        pp_profile_free(out);
        b->free(s);
    }

    /* 2. stop() ends a blocked collect() */
    if (available && b->stop) {
        t0 = now_s();
        s = b->start(&ctx, &t.proc, 1, t0 + 60);
        if (s) {
            stopper st = {b, s, 0.3};
            pthread_t th;
            cr_assert_eq(pthread_create(&th, NULL, stop_later, &st), 0);
            pp_profile *out = pp_profile_new();
            b->collect(s, out);
            double took = now_s() - t0;
            pthread_join(th, NULL);
            cr_expect_lt(took, 0.3 + 5.0, "%s/%s: collect returned %.1f s after stop", rt->name,
                         b->name, took);
            check_output(rt, b, out, &t);
            pp_profile_free(out);
            b->free(s);
        }
    }

    /* 3. through the runner: finished by its deadline plus grace, not abandoned */
    pp_runner_task task = {.kind = t.proc.kind, .backend = b, .ctx = &ctx};
    t0 = now_s();
    pp_runner *r = pp_runner_start(&task, 1, &t.proc, 1, t0 + 0.3);
    pp_profile **res;
    size_t n = pp_runner_finish(r, 2.0, &res);
    cr_expect_eq(n, 1);
    for (size_t i = 0; i < n; i++) {
        check_output(rt, b, res[i], &t);
        if (!available) { /* start failed: the runner's error stack */
            pp_pid_profile *pp = pp_profile_get(res[i], t.pid, false);
            cr_expect_not_null(pp, "%s/%s: no error stack", rt->name, b->name);
        }
        for (size_t j = 0; j < pp_profile_npids(res[i]); j++) {
            size_t nf;
            pp_pid_profile *pp = pp_profile_at(res[i], j);
            const uint32_t *f = pp_pid_nstacks(pp) ? pp_pid_stack(pp, 0, &nf, NULL) : NULL;
            cr_expect(!f || strcmp(pp_profile_str(res[i], f[0]),
                                   "[Profiling error: profiler did not finish in time]") != 0,
                      "%s/%s was abandoned", rt->name, b->name);
        }
    }
    pp_runner_free(r);
    target_stop(&t);
}

Test(conformance, every_backend_honours_the_contract, .timeout = 120)
{
    pp_test_quiet_log();
    int checked = 0;
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        for (const pp_backend *const *b = rt->backends; b && *b; b++) {
            backend_contract(rt, *b, (*b)->modes[0]);
            checked++;
        }
    }
    cr_expect_geq(checked, 4, "the registered backends were checked (%d)", checked);
    cr_expect_eq(sessions_started, backends_available,
                 "every available backend ran a session (%d of %d)", sessions_started,
                 backends_available);
    cr_log_info("%d backends, %d available here", checked, backends_available);
}

Test(conformance, auto_takes_the_first_available_backend)
{
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        char why[256];
        const pp_backend *first = NULL;
        for (const pp_backend *const *b = rt->backends; b && *b && !first; b++)
            if (!(*b)->available || (*b)->available(why, sizeof(why)))
                first = *b;
        cr_expect_eq(pp_runtime_backend(rt, "auto", why, sizeof(why)), first, "%s", rt->name);
        cr_expect_null(pp_runtime_backend(rt, "disabled", why, sizeof(why)), "%s", rt->name);
    }
}
