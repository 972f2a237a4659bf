/* Unit tests: the identity cache (orchestrator/identity.c) examines a process once for as long as
 * discovery lists it, sampled or idle, and again when its pid is reused or it is gone. */
#include "tests/unit/testutil.h"

#include <jansson.h>

#include "base/child.h"
#include "orchestrator/identity.h"

TestSuite(identity, .init = pp_test_quiet_log);

static int nothing(const char *arg)
{
    (void)arg;
    return 0;
}

/* One session: discovery listed procs (n of them), the sampler sampled the pid `sampled` (0:
 * none). Returns whether the sampled pid got application metadata. */
static bool session(pp_identity *id, pp_proc *procs, size_t n, int sampled)
{
    pp_proc_list l = {.procs = procs, .n = n, .cap = n};
    pp_identity_set_procs(id, &l);
    pp_profile *prof = pp_profile_new();
    cr_assert_not_null(prof);
    pp_pid_profile *pp = sampled ? pp_profile_get(prof, sampled, true) : NULL;
    pp_identity_annotate(id, prof, NULL, pp_mono_now());
    bool md = pp && pp->app_metadata != NULL;
    pp_profile_free(prof);
    return md;
}

Test(identity, an_idle_process_is_examined_once_while_listed)
{
    pid_t child = pp_test_spawn_isolated(nothing, NULL);
    pp_config cfg = {.disable_container_names = true};
    pp_identity *id = pp_identity_new(&cfg);
    cr_assert_not_null(id);
    /* a kind with metadata (the values do not matter here, only when they are computed) */
    pp_proc p = {.pid = child, .kind = PP_KIND_PYTHON, .start_ticks = 1234};
    snprintf(p.comm, sizeof(p.comm), "idle");

    cr_assert_not(session(id, &p, 1, 0));
    cr_assert_eq(pp_identity_computed(id), 1);
    for (int i = 0; i < 3; i++) /* listed, never sampled: kept */
        cr_assert_not(session(id, &p, 1, 0));
    cr_assert_eq(pp_identity_computed(id), 1);
    cr_assert(session(id, &p, 1, child), "sampled at last: it has its metadata");
    cr_assert_eq(pp_identity_computed(id), 1);

    pp_proc reused = p; /* the same pid, another process */
    reused.start_ticks = 5678;
    cr_assert(session(id, &reused, 1, child));
    cr_assert_eq(pp_identity_computed(id), 2);
    pp_proc exec_d = reused; /* the same process, now of another kind */
    exec_d.kind = PP_KIND_RUBY;
    session(id, &exec_d, 1, 0);
    cr_assert_eq(pp_identity_computed(id), 3);

    session(id, NULL, 0, 0); /* not listed, not sampled: forgotten */
    session(id, &exec_d, 1, 0);
    cr_assert_eq(pp_identity_computed(id), 4);

    pp_proc native = exec_d; /* nothing to compute for a process of no runtime */
    native.kind = PP_KIND_NATIVE;
    session(id, &native, 1, child);
    cr_assert_eq(pp_identity_computed(id), 4);
    pp_identity_free(id);
    pp_test_kill(child);
}

Test(identity, past_the_bound_a_new_process_is_examined_when_sampled)
{
    enum { N = 4100, BOUND = 4096 }; /* identity.c's IDENT_EAGER_MAX */
    pp_config cfg = {.disable_container_names = true};
    pp_identity *id = pp_identity_new(&cfg);
    cr_assert_not_null(id);
    pp_proc *procs = calloc(N, sizeof(*procs));
    cr_assert_not_null(procs);
    for (int i = 0; i < N; i++) /* pids above any pid_max: gone, quickly examined */
        procs[i] = (pp_proc){.pid = 1 << 23 | i, .kind = PP_KIND_PYTHON, .start_ticks = 1};
    session(id, procs, N, 0);
    cr_assert_eq(pp_identity_computed(id), BOUND);
    session(id, procs, N, procs[N - 1].pid);
    cr_assert_eq(pp_identity_computed(id), BOUND + 1, "examined once sampled");
    session(id, procs, N, 0);
    cr_assert_eq(pp_identity_computed(id), BOUND + 1, "then kept while listed");
    free(procs);
    pp_identity_free(id);
}
