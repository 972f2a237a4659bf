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
