/* Unit tests: the registered in-sampler walks (runtimes/system/walks.c): a fork's entry has no
 * state of its own; an entry removed during a session (its process exited) keeps its counts for
 * the session's coverage; two registrations of one pid are two coverage entries. */
#include "tests/unit/testutil.h"

#include "runtimes/system/walks.h"

TestSuite(walks, .init = pp_test_quiet_log);

static int freed;
static void count_free(void *state)
{
    free(state);
    freed++;
}
static const pp_walker_ops ops = {.free = count_free};

static pp_walk_ent ent(int pid, int via)
{
    return (pp_walk_ent){
        .pid = pid, .walker = 1, .ops = &ops, .state = via ? NULL : malloc(8), .via = via};
}

Test(walks, removed_entries_keep_their_counts_for_coverage)
{
    pp_walks w;
    pp_walks_init(&w);
    freed = 0;
    pp_walk_ent a = ent(10, 0), b = ent(11, 10);
    cr_assert_eq(pp_walks_put(&w, &a), 0);
    cr_assert_eq(pp_walks_put(&w, &b), 0);
    pp_walks_get(&w, 10)->samples = 5;
    pp_walks_get(&w, 10)->rt_samples = 4;
    pp_walks_get(&w, 11)->samples = 3;
    pp_walks_get(&w, 11)->rt_samples = 3;
    pp_walks_remove(&w, 11); /* the fork exited */
    cr_assert_eq(freed, 0, "a fork has no state of its own");
    cr_assert_null(pp_walks_get(&w, 11));
    pp_walk_ent again = ent(11, 0); /* the pid reused, registered itself */
    cr_assert_eq(pp_walks_put(&w, &again), 0);
    pp_walks_get(&w, 11)->samples = 2;

    pp_walk_cov *cov;
    size_t n = pp_walks_coverage(&w, &cov);
    cr_assert_eq(n, 3);
    uint64_t s11 = 0, r11 = 0, s10 = 0;
    for (size_t i = 0; i < n; i++) {
        if (cov[i].pid == 11) {
            s11 += cov[i].samples;
            r11 += cov[i].rt_samples;
        } else if (cov[i].pid == 10) {
            s10 += cov[i].samples;
            cr_assert_eq(cov[i].rt_samples, 4);
        }
    }
    cr_assert_eq(s10, 5);
    cr_assert_eq(s11, 5);
    cr_assert_eq(r11, 3);
    free(cov);
    cr_assert_eq(pp_walks_coverage(&w, &cov), 0, "counts reset, retired entries reported once");
    free(cov);
    pp_walks_destroy(&w);
    cr_assert_eq(freed, 2);
}
