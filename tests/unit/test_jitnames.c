/* Unit tests: in-memory JIT code names (runtimes/symbols/jitnames.c) and their use by the
 * symbolizer for anonymous executable memory. */
#include "tests/unit/testutil.h"

#include "runtimes/symbols/jitnames.h"
#include "runtimes/symbols/symbolizer.h"

TestSuite(jitnames, .init = pp_test_quiet_log);

Test(jitnames, ranges_are_found_and_later_code_wins)
{
    char b[64];
    cr_assert_eq(pp_jitnames_add(101, 0x1000, 0x40, "A"), 0);
    cr_assert_eq(pp_jitnames_add(101, 0x2000, 0x10, "B"), 0);
    cr_assert_eq(pp_jitnames_add(102, 0x1000, 0x40, "other process"), 0);
    cr_assert(pp_jitnames_find(101, 0x1000, b, sizeof(b)));
    cr_assert_str_eq(b, "A");
    cr_assert(pp_jitnames_find(101, 0x103f, b, sizeof(b)));
    cr_assert_str_eq(b, "A");
    cr_assert_not(pp_jitnames_find(101, 0x1040, b, sizeof(b)), "the end is exclusive");
    cr_assert_not(pp_jitnames_find(101, 0xfff, b, sizeof(b)));
    cr_assert(pp_jitnames_find(101, 0x2008, b, sizeof(b)));
    cr_assert_str_eq(b, "B");
    /* re-compiled code at a reused address: the later wins, also after a sort */
    cr_assert_eq(pp_jitnames_add(101, 0x1000, 0x20, "A2"), 0);
    cr_assert(pp_jitnames_find(101, 0x1010, b, sizeof(b)));
    cr_assert_str_eq(b, "A2");
    cr_assert(pp_jitnames_find(101, 0x1030, b, sizeof(b)), "past A2's end: A still");
    cr_assert_str_eq(b, "A");
    cr_assert(pp_jitnames_find(102, 0x1000, b, 6));
    cr_assert_str_eq(b, "other", "cut to the buffer");
    cr_assert_eq(pp_jitnames_count(101), 3);
    pp_jitnames_forget(101);
    cr_assert_not(pp_jitnames_find(101, 0x1000, b, sizeof(b)));
    cr_assert_eq(pp_jitnames_count(101), 0);
    cr_assert_eq(pp_jitnames_add(101, 0x1000, 0, "empty"), -1);
    pp_jitnames_forget(102);
}

Test(jitnames, the_symbolizer_names_anonymous_code_from_them)
{
    /* anonymous executable memory of this process */
    void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(code, MAP_FAILED);
    uint64_t ip = (uint64_t)(uintptr_t)code + 0x10;
    pp_symbolizer *s = pp_symbolizer_new(0);
    char b[256];
    pp_symbolizer_begin_pass(s);
    pp_symbolize_user(s, getpid(), ip, b, sizeof(b));
    cr_assert(strstr(b, "/tmp/perf-"), "unnamed before: %s", b);
    cr_assert_eq(pp_jitnames_add(getpid(), (uint64_t)(uintptr_t)code, 0x20, "N.C.M(int32)_[net]"),
                 0);
    pp_symbolize_user(s, getpid(), ip, b, sizeof(b));
    cr_assert_str_eq(b, "N.C.M(int32)_[net]");
    pp_symbolizer_free(s);
    pp_jitnames_forget(getpid());
    munmap(code, 4096);
}

Test(jitnames, memory_is_bounded_per_process_and_over_all_processes)
{
    static char name[4000];
    memset(name, 'n', sizeof(name) - 1);
    uint64_t d0 = pp_jitnames_dropped();
    size_t b0 = pp_jitnames_bytes();
    /* one process adding names without end: refused past its bound, and counted */
    size_t added = 0;
    for (uint64_t k = 0; k < 10000; k++)
        added += pp_jitnames_add(201, 0x100000 + k * 0x100, 0x100, name) == 0;
    cr_assert_lt(added, 10000, "refused at some point");
    cr_assert_leq(added * sizeof(name), PP_JITNAMES_MAX_BYTES);
    cr_assert_gt(added * sizeof(name), PP_JITNAMES_MAX_BYTES / 2, "the bound used, not less");
    cr_assert_eq(pp_jitnames_dropped() - d0, 10000 - added);
    cr_assert_leq(pp_jitnames_bytes() - b0, PP_JITNAMES_MAX_BYTES);
    /* more processes: all of them together stay within the host-wide bound */
    size_t more = 0;
    for (int pid = 202; pid < 206; pid++)
        for (uint64_t k = 0; k < 10000; k++)
            more += pp_jitnames_add(pid, 0x100000 + k * 0x100, 0x100, name) == 0;
    cr_assert_leq(pp_jitnames_bytes(), PP_JITNAMES_MAX_TOTAL);
    cr_assert_leq((added + more) * sizeof(name), PP_JITNAMES_MAX_TOTAL);
    cr_assert_eq(pp_jitnames_add(205, 0x10, 0x10, name), -1, "the last one is refused");
    /* the names held stay found; a process forgotten makes room for others */
    char b[8];
    cr_assert(pp_jitnames_find(201, 0x100000, b, sizeof(b)));
    pp_jitnames_forget(201);
    cr_assert_eq(pp_jitnames_add(205, 0x10, 0x10, name), 0, "room again");
    for (int pid = 201; pid < 206; pid++)
        pp_jitnames_forget(pid);
    cr_assert_eq(pp_jitnames_bytes(), b0, "all freed");
}

Test(jitnames, a_streaming_process_costs_each_lookup_its_additions_not_a_whole_sort)
{
    enum { N = 100000, ROUNDS = 200 };
    srand(7);
    char b[32];
    /* descending addresses: the table is not sorted as added */
    for (uint64_t k = 0; k < N; k++)
        cr_assert_eq(pp_jitnames_add(301, 0x40000000 - k * 0x100, 0x100, "m"), 0);
    cr_assert(pp_jitnames_find(301, 0x40000000, b, sizeof(b)));
    uint64_t w0 = pp_jitnames_sort_work();
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t at = 0x40000000 - (uint64_t)(rand() % N) * 0x100 + 0x80;
        cr_assert_eq(pp_jitnames_add(301, at, 0x40, "new"), 0);
        cr_assert(pp_jitnames_find(301, at + 0x10, b, sizeof(b)));
        cr_assert_str_eq(b, "new");
        cr_assert(pp_jitnames_find(301, at - 0x10, b, sizeof(b)));
        cr_assert_str_eq(b, "m");
    }
    uint64_t w = pp_jitnames_sort_work() - w0;
    cr_assert_lt(w, N, "%llu entries moved for %d additions to a table of %d",
                 (unsigned long long)w, ROUNDS, N);
    pp_jitnames_forget(301);
}

Test(jitnames, lookups_between_additions_find_the_latest_code_at_an_address)
{
    /* ranges at 200 slots, added again and again (sizes 0x100 or 0x80) with lookups in
     * between: every lookup answers as the latest addition holding the address */
    enum { SLOTS = 200, ADDS = 3000 };
    static int last_full[SLOTS], last_half[SLOTS]; /* the addition's number + 1 */
    memset(last_full, 0, sizeof(last_full));
    memset(last_half, 0, sizeof(last_half));
    srand(11);
    char b[32], want[32];
    for (int i = 0; i < ADDS; i++) {
        int s = rand() % SLOTS;
        bool half = rand() % 4 == 0;
        snprintf(want, sizeof(want), "%d", i);
        cr_assert_eq(pp_jitnames_add(401, 0x10000 + (uint64_t)s * 0x100, half ? 0x80 : 0x100, want),
                     0);
        (half ? last_half : last_full)[s] = i + 1;
        if (rand() % 3)
            continue;
        int q = rand() % SLOTS;
        for (int lowhigh = 0; lowhigh < 2; lowhigh++) {
            uint64_t ip = 0x10000 + (uint64_t)q * 0x100 + (lowhigh ? 0xc0 : 0x10);
            int exp = lowhigh ? last_full[q]
                              : (last_full[q] > last_half[q] ? last_full[q] : last_half[q]);
            bool f = pp_jitnames_find(401, ip, b, sizeof(b));
            cr_assert_eq(f, exp > 0, "slot %d at %llx", q, (unsigned long long)ip);
            if (exp) {
                snprintf(want, sizeof(want), "%d", exp - 1);
                cr_assert_str_eq(b, want, "slot %d at %llx", q, (unsigned long long)ip);
            }
        }
    }
    pp_jitnames_forget(401);
}
