/* Unit tests: scaling and the merge rules of gProfiler (§3.2), plus a property test. */
#include "tests/unit/testutil.h"

#include "merge/collapsed.h"
#include "merge/header.h"
#include "merge/scale.h"

TestSuite(scale, .init = pp_test_quiet_log);

/* Adds "a;b;c" (frames split on ';') with count to pid in p, on thread tid (0: none). */
static void add_tid(pp_profile *p, int pid, uint32_t tid, const char *comm, const char *stack,
                    uint64_t count)
{
    pp_pid_profile *pp = pp_profile_get(p, pid, true);
    pp->comm = pp_profile_intern(p, comm);
    uint32_t f[64];
    size_t n = 0;
    char *dup = strdup(stack), *save = NULL;
    for (char *t = strtok_r(dup, ";", &save); t; t = strtok_r(NULL, ";", &save))
        f[n++] = pp_profile_intern(p, t);
    free(dup);
    cr_assert_eq(pp_pid_add_tid(pp, tid, f, n, count), 0);
}

static void add(pp_profile *p, int pid, const char *comm, const char *stack, uint64_t count)
{
    add_tid(p, pid, 0, comm, stack, count);
}

/* Renders just the stack lines (v1 style: comm;frames count) for comparisons. */
static char *lines(pp_profile *p)
{
    pp_header_info hi = {.profiling_mode = "cpu", .frequency = 11};
    json_t *h = pp_header_build(&hi);
    pp_render_opts o = {.v1 = true};
    size_t len;
    char *t = pp_col_render(p, h, &o, &len);
    json_decref(h);
    char *nl = strchr(t, '\n');
    char *r = strdup(nl ? nl + 1 : "");
    free(t);
    return r;
}

Test(scale, largest_remainder_sums_exactly_and_is_deterministic)
{
    pp_profile *p = pp_profile_new();
    add(p, 1, "x", "a", 1);
    add(p, 1, "x", "b", 1);
    add(p, 1, "x", "c", 1);
    pp_pid_profile *pp = pp_profile_get(p, 1, false);
    pp_scale_to(pp, 10);
    cr_assert_eq(pp_pid_total(pp), 10);
    char *l = lines(p);
    cr_assert_str_eq(l, "x;a 4\nx;b 3\nx;c 3", "ties go to the first-seen stack");
    free(l);
    pp_scale_to(pp, 2); /* 4,3,3 of 10 -> 0.8, 0.6, 0.6 -> floor 0,0,0; +1 to a and b */
    l = lines(p);
    cr_assert_str_eq(l, "x;a 1\nx;b 1", "zero stacks are not written");
    free(l);
    pp_profile_free(p);
}

Test(scale, runtime_replaces_and_is_scaled_to_sampler_count)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add(sys, 10, "python", "_PyEval_EvalFrameDefault;do_syscall_64_[k]", 6);
    add(sys, 10, "python", "[unknown]", 4);
    add(sys, 11, "bash", "main", 3);
    add(rt, 10, "python", "<module> (a.py:1)_[p];f (a.py:2)_[p]", 30);
    add(rt, 10, "python", "<module> (a.py:1)_[p];g (a.py:5)_[p]", 10);
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l, "python;<module> (a.py:1)_[p];f (a.py:2)_[p] 8\n"
                        "python;<module> (a.py:1)_[p];g (a.py:5)_[p] 2\n"
                        "bash;main 3");
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

Test(scale, no_sampler_samples_keeps_runtime_unscaled_and_appends)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add(sys, 1, "a", "x", 2);
    add(rt, 7, "java", "Main.main()V_[j]", 13);
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l, "a;x 2\njava;Main.main()V_[j] 13");
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

Test(scale, error_stack_is_attached_to_sampler_stacks)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add(sys, 5, "python", "_PyObject_Call_Prepend;do_syscall_64_[k]", 2);
    add(sys, 5, "python", "main", 1);
    add(rt, 5, "python", "[Profiling error: exception CalledProcessError]", 1);
    cr_assert(pp_is_error_stack(rt, pp_profile_get(rt, 5, false), NULL));
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l, "python;[Profiling error: exception CalledProcessError];"
                        "_PyObject_Call_Prepend;do_syscall_64_[k] 2\n"
                        "python;[Profiling error: exception CalledProcessError];main 1");
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

Test(scale, error_stack_without_sampler_samples_emits_nothing_but_keeps_metadata)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add(rt, 5, "java", "[Profiling skipped: profiling this JVM is not supported]", 1);
    pp_profile_get(rt, 5, false)->app_metadata = json_pack("{s:s}", "java_version", "8");
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l, "");
    free(l);
    pp_pid_profile *pp = pp_profile_get(sys, 5, false);
    cr_assert_not_null(pp);
    cr_assert_not_null(pp->app_metadata);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

Test(scale, perf_disabled_concatenates_unscaled_with_error_stacks)
{
    pp_profile *sys = pp_profile_new(), *rt1 = pp_profile_new(), *rt2 = pp_profile_new();
    add(rt1, 1, "python", "f (a.py:1)_[p]", 17);
    add(rt2, 2, "java", "[Profiling error: process went down during profiling]", 1);
    cr_assert_eq(pp_merge_runtime(sys, rt1, false), 0);
    cr_assert_eq(pp_merge_runtime(sys, rt2, false), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l, "python;f (a.py:1)_[p] 17\n"
                        "java;[Profiling error: process went down during profiling] 1");
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt1);
    pp_profile_free(rt2);
}

Test(scale, empty_runtime_profile_keeps_sampler_stacks_and_container_carries_over)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add(sys, 3, "ruby", "rb_vm_exec", 4);
    pp_profile_get(sys, 3, false)->container = pp_profile_intern(sys, "web");
    pp_profile_get(rt, 3, true); /* no stacks */
    add(rt, 4, "ruby", "fib (x.rb:3)_[rb]", 2);
    add(sys, 4, "ruby", "rb_vm_exec", 9);
    pp_profile_get(sys, 4, false)->container = pp_profile_intern(sys, "api");
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    cr_assert_eq(pp_pid_total(pp_profile_get(sys, 3, false)), 4);
    cr_assert_str_eq(pp_profile_str(sys, pp_profile_get(sys, 4, false)->container), "api");
    cr_assert_eq(pp_pid_total(pp_profile_get(sys, 4, false)), 9);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

Test(scale, property_totals_equal_sampler_totals)
{
    unsigned seed = 12345;
    for (int round = 0; round < 300; round++) {
        pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
        int npids = 1 + rand_r(&seed) % 6;
        uint64_t want[8] = {0};
        for (int pid = 1; pid <= npids; pid++) {
            int ns = rand_r(&seed) % 5; /* 0: pid absent from the sampler */
            for (int s = 0; s < ns; s++) {
                char st[32];
                snprintf(st, sizeof(st), "n%d", rand_r(&seed) % 7);
                uint64_t c = 1 + (uint64_t)(rand_r(&seed) % 1000);
                add(sys, pid, "c", st, c);
                want[pid] += c;
            }
            int nr = 1 + rand_r(&seed) % 40;
            uint64_t rt_total = 0;
            for (int s = 0; s < nr; s++) {
                char st[32];
                snprintf(st, sizeof(st), "r%d;q%d", rand_r(&seed) % 9, rand_r(&seed) % 9);
                uint64_t c = 1 + (uint64_t)(rand_r(&seed) % 100000);
                add(rt, pid, "c", st, c);
                rt_total += c;
            }
            if (want[pid] == 0)
                want[pid] = rt_total; /* unscaled */
        }
        cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
        for (int pid = 1; pid <= npids; pid++)
            cr_assert_eq(pp_pid_total(pp_profile_get(sys, pid, false)), want[pid],
                         "round %d pid %d", round, pid);
        pp_profile_free(sys);
        pp_profile_free(rt);
    }
}

Test(scale, threads_keep_stacks_apart_until_dropped)
{
    pp_profile *p = pp_profile_new();
    add_tid(p, 1, 5, "x", "a;b", 2);
    add_tid(p, 1, 6, "x", "a;b", 3);
    add(p, 1, "x", "a;b", 1);
    add_tid(p, 1, 5, "x", "a;b", 4);
    pp_pid_profile *pp = pp_profile_get(p, 1, false);
    cr_assert_eq(pp_pid_nstacks(pp), 3);
    cr_assert(pp_pid_has_tids(pp));
    cr_assert_eq(pp_pid_stack_tid(pp, 0), 5);
    cr_assert_eq(pp_pid_stack_tid(pp, 2), 0);
    cr_assert_eq(pp_profile_drop_tids(p), 0);
    cr_assert_eq(pp_pid_nstacks(pp), 1);
    cr_assert_not(pp_pid_has_tids(pp));
    cr_assert_eq(pp_pid_total(pp), 10);
    char *l = lines(p);
    cr_assert_str_eq(l, "x;a;b 10");
    free(l);
    pp_profile_free(p);
}

/* The per-thread merge: the runtime's samples of each thread are scaled to the sampler's count
 * of that thread; threads the runtime did not sample (GC) keep their native stacks, as do
 * samples the sampler took before it counted threads (tid 0); runtime samples of a long thread
 * the sampler never saw on a CPU, and of no thread, are dropped, and so are a short thread's
 * when no small common thread's samples can take them (the pool); the process total is the
 * sampler's. */
Test(scale, per_thread_merge)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add_tid(sys, 10, 10, "java", "start_thread;JavaMain;Interpreter", 20);
    add_tid(sys, 10, 11, "java", "start_thread;thread_native_entry;[unknown]", 60);
    add_tid(sys, 10, 12, "java", "start_thread;GCTaskThread::run;G1ParTask::work", 40);
    add(sys, 10, "java", "start_thread;JavaThread::run", 5);
    add(sys, 20, "bash", "main", 3);
    add_tid(rt, 10, 10, "java", "Main.main()V_[j]", 7);
    add_tid(rt, 10, 11, "java", "W.run()V_[j];W.a()V_[j]", 30);
    add_tid(rt, 10, 11, "java", "W.run()V_[j];W.b()V_[j]", 10);
    add_tid(rt, 10, 13, "java", "Sleeper.run()V_[j]", 50); /* never on a CPU for the sampler */
    add_tid(rt, 10, 14, "java", "Short.run()V_[j]", 5);    /* short, the sampler missed it */
    add(rt, 10, "java", "Unknown.thread()V_[j]", 9);       /* no thread: dropped too */
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    pp_pid_profile *pp = pp_profile_get(sys, 10, false);
    cr_assert_eq(pp_pid_total(pp), 125, "the process total stays the sampler's");
    cr_assert_eq(pp->uncovered_of, 0, "every thread is covered");
    cr_assert_eq(pp_profile_drop_tids(sys), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l,
                     "java;start_thread;GCTaskThread::run;G1ParTask::work 40\n"
                     "java;start_thread;JavaThread::run 5\n"
                     "java;Main.main()V_[j] 20\n"
                     "java;W.run()V_[j];W.a()V_[j] 45\n"
                     "java;W.run()V_[j];W.b()V_[j] 15\n"
                     "bash;main 3",
                     "got %s", l);
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

/* A handful of runtime samples do not become a confident profile (issue 30): 2 runtime samples
 * of a thread the sampler counted 771 times stay 2, the other 769 keep their native stacks
 * under a frame that says so, and the pid carries the figures for the header. */
Test(scale, low_coverage_keeps_native_stacks_and_marks_the_process)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add_tid(sys, 10, 11, "java", "start_thread;JavaMain;work_a", 578);
    add_tid(sys, 10, 11, "java", "start_thread;JavaMain;work_b", 193);
    add_tid(rt, 10, 11, "java", "Main.a()V_[j]", 2);
    pp_profile_get(rt, 10, false)->profiler = "jfr";
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    pp_pid_profile *pp = pp_profile_get(sys, 10, false);
    cr_assert_eq(pp_pid_total(pp), 771);
    cr_assert_eq(pp->uncovered_rt, 2);
    cr_assert_eq(pp->uncovered_of, 771);
    cr_assert_eq(pp_profile_drop_tids(sys), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l,
                     "java;[Profiling error: jfr covered 2 of 771 samples];start_thread;JavaMain;"
                     "work_a 577\n"
                     "java;[Profiling error: jfr covered 2 of 771 samples];start_thread;JavaMain;"
                     "work_b 192\n"
                     "java;Main.a()V_[j] 2",
                     "got %s", l);
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

/* A healthy profiler that samples at a lower rate than the sampler (JFR's ExecutionSample at
 * 20 ms against the sampler at 499 Hz: 7.5 %) is scaled up as before, unmarked. */
Test(scale, a_lower_rate_profiler_is_covered)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add_tid(sys, 10, 11, "java", "start_thread;JavaMain;work", 771);
    add_tid(rt, 10, 11, "java", "Main.a()V_[j]", 43);
    add_tid(rt, 10, 11, "java", "Main.b()V_[j]", 15);
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    pp_pid_profile *pp = pp_profile_get(sys, 10, false);
    cr_assert_eq(pp->uncovered_of, 0);
    cr_assert_eq(pp_profile_drop_tids(sys), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l, "java;Main.a()V_[j] 572\njava;Main.b()V_[j] 199", "got %s", l);
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

/* The threshold: fewer than 10 runtime samples where the sampler counted 400 or more, whatever
 * the share (docs/decisions.md, "Low runtime coverage"). */
Test(scale, coverage_threshold)
{
    cr_assert(pp_coverage_enough(10, 100000));
    cr_assert_not(pp_coverage_enough(9, 400));
    cr_assert(pp_coverage_enough(9, 399), "too few sampler samples to judge");
    cr_assert(pp_coverage_enough(30, 400), "7.5 %: a profiler at 20 ms against 499 Hz");
    cr_assert_not(pp_coverage_enough(2, 771));
    cr_assert(pp_coverage_enough(2, 3));
    cr_assert(pp_coverage_enough(0, 0));
}

/* One thread covered, one not: the process is covered as a whole, the thread that is not keeps
 * its native stacks under the marker, and its 2 samples are not scaled. */
Test(scale, low_coverage_thread_is_marked_in_a_covered_process)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add_tid(sys, 10, 11, "java", "work", 771);
    add_tid(sys, 10, 12, "java", "loop", 1000);
    add_tid(rt, 10, 11, "java", "Main.a()V_[j]", 2);
    add_tid(rt, 10, 12, "java", "X.x()V_[j]", 750);
    add_tid(rt, 10, 12, "java", "Y.y()V_[j]", 250);
    pp_profile_get(rt, 10, false)->profiler = "jfr";
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    cr_assert_eq(pp_profile_drop_tids(sys), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l,
                     "java;[Profiling error: jfr covered 2 of 771 samples];work 769\n"
                     "java;X.x()V_[j] 750\n"
                     "java;Y.y()V_[j] 250\n"
                     "java;Main.a()V_[j] 2",
                     "got %s", l);
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

/* A gap spread over threads too small to judge alone (3 and 2 runtime samples of 300 and 200
 * sampler samples) is judged on the common threads together: they are marked; the GC thread,
 * which the runtime never samples, keeps its native stacks unmarked and out of the figures. */
Test(scale, a_gap_over_small_threads_is_marked_and_gc_is_not)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add_tid(sys, 10, 5, "java", "GC", 1000);
    add_tid(sys, 10, 11, "java", "a", 300);
    add_tid(sys, 10, 12, "java", "b", 200);
    add_tid(rt, 10, 11, "java", "A", 3);
    add_tid(rt, 10, 12, "java", "B", 2);
    pp_profile_get(rt, 10, false)->profiler = "jfr";
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    pp_pid_profile *pp = pp_profile_get(sys, 10, false);
    cr_assert_eq(pp_pid_total(pp), 1500);
    cr_assert_eq(pp->uncovered_rt, 5);
    cr_assert_eq(pp->uncovered_of, 500);
    cr_assert_eq(pp_profile_drop_tids(sys), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l,
                     "java;GC 1000\n"
                     "java;[Profiling error: jfr covered 5 of 500 samples];a 297\n"
                     "java;[Profiling error: jfr covered 5 of 500 samples];b 198\n"
                     "java;A 3\njava;B 2",
                     "got %s", l);
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

/* Thread churn (a thread per request): each short thread is caught by one side, or both with a
 * few samples. The runtime samples of the small common threads and of the short threads only
 * the runtime saw are pooled and take the small common threads' sampler samples at the process's
 * rate, so the runtime-only threads' B is not lost (the per-thread merge dropped it: A 40). The
 * threads only the sampler saw keep their native stacks (they cannot be told from GC threads),
 * as do the GC thread and tid 0; the long off-CPU thread's samples are dropped. */
Test(scale, thread_churn_pools_short_threads)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add_tid(sys, 10, 5, "java", "GC", 10);
    add(sys, 10, "java", "start_thread", 3);
    for (uint32_t t = 101; t <= 110; t++)
        add_tid(sys, 10, t, "java", "start_thread;[unknown]", 2);
    for (uint32_t t = 201; t <= 220; t++) {
        add_tid(sys, 10, t, "java", "start_thread;x", 2);
        add_tid(rt, 10, t, "java", "A", 2);
    }
    for (uint32_t t = 221; t <= 240; t++)
        add_tid(rt, 10, t, "java", "B", 2);
    add_tid(rt, 10, 400, "java", "Sleeper", 50);
    add_tid(sys, 10, 300, "java", "start_thread;y", 20);
    add_tid(rt, 10, 300, "java", "A", 20);
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    cr_assert_eq(pp_pid_total(pp_profile_get(sys, 10, false)), 93);
    cr_assert_eq(pp_profile_drop_tids(sys), 0);
    char *l = lines(sys);
    /* the pool: 80 runtime samples at the rate 60/60 stand for 80, at most the pool's 40 */
    cr_assert_str_eq(
        l, "java;GC 10\njava;start_thread 3\njava;start_thread;[unknown] 20\njava;A 40\njava;B 20",
        "got %s", l);
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}

Test(scale, per_thread_merge_without_a_common_thread_scales_the_process)
{
    pp_profile *sys = pp_profile_new(), *rt = pp_profile_new();
    add_tid(sys, 10, 10, "java", "native", 8);
    add_tid(rt, 10, 99, "java", "A.a()V_[j]", 3); /* e.g. ids of another pid namespace */
    add_tid(rt, 10, 98, "java", "A.b()V_[j]", 1);
    cr_assert_eq(pp_merge_runtime(sys, rt, true), 0);
    cr_assert_eq(pp_profile_drop_tids(sys), 0);
    char *l = lines(sys);
    cr_assert_str_eq(l, "java;A.a()V_[j] 6\njava;A.b()V_[j] 2");
    free(l);
    pp_profile_free(sys);
    pp_profile_free(rt);
}
