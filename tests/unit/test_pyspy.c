/* py-spy raw output parsing (runtimes/python/pyspy.c). */
#include "runtimes/python/pkgversions.h"
#include "runtimes/python/python_int.h"
#include "testutil.h"

Test(pyspy, parses_raw_lines_and_skips_garbage)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 42, true);
    char text[] = "<module> (/app/m.py:3)_[p];hot (/app/m.py:9)_[p] 30\r\n"
                  "\n"
                  "no count here\n"
                  "neg (/app/m.py:1)_[p] -5\n"
                  "zero (/app/m.py:1)_[p] 0\n"
                  " 7\n"
                  "huge (/app/m.py:1)_[p] 99999999999999999999999\n"
                  "<module> (/app/m.py:3)_[p];;cold (/app/m.py:12)_[p] 10\n"
                  "f (/usr/lib/python3.11/json/encoder.py:200)_[p] 2";
    cr_assert_eq(pp_pyspy_parse(text, p, pp, NULL, NULL), 3);
    cr_assert_eq(pp_pid_nstacks(pp), 3);
    uint64_t c;
    cr_assert_str_eq(pp_test_stack_text(p, pp, 0, &c),
                     "<module> (/app/m.py:3)_[p];hot (/app/m.py:9)_[p]");
    cr_assert_eq(c, 30);
    cr_assert_str_eq(pp_test_stack_text(p, pp, 1, &c),
                     "<module> (/app/m.py:3)_[p];cold (/app/m.py:12)_[p]");
    cr_assert_eq(c, 10);
    cr_assert_str_eq(pp_test_stack_text(p, pp, 2, &c),
                     "f (/usr/lib/python3.11/json/encoder.py:200)_[p]");
    pp_profile_free(p);
}

Test(pyspy, annotates_standard_library_frames)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 42, true);
    char text[] = "run (/usr/lib/python3.11/threading.py:975)_[p];w (/app/w.py:4)_[p] 5\n";
    cr_assert_eq(pp_pyspy_parse(text, p, pp, "/", "3.11.2"), 1);
    uint64_t c;
    cr_assert_str_eq(pp_test_stack_text(p, pp, 0, &c),
                     "run (/usr/lib/python3.11/threading.py:975 [standard-library==3.11.2])_[p];"
                     "w (/app/w.py:4)_[p]");
    pp_profile_free(p);
    pp_pkgver_clear_cache();
}

/* py-spy as released on PyPI writes frames without gProfiler's "_[p]": polyprof adds it. */
Test(pyspy, frames_of_upstream_pyspy_get_the_suffix)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 42, true);
    char text[] = "<module> (/app/m.py:3);Worker.hot (/app/m.py:9) 4\n"
                  "<module> (/app/m.py:3)_[p];Worker.hot (/app/m.py:9)_[p] 1\n"
                  "run (/usr/lib/python3.11/threading.py:975) 2";
    cr_assert_eq(pp_pyspy_parse(text, p, pp, "/", "3.11.2"), 3);
    uint64_t c;
    cr_assert_eq(pp_pid_nstacks(pp), 2, "with and without the suffix: the same stack");
    cr_assert_str_eq(pp_test_stack_text(p, pp, 0, &c),
                     "<module> (/app/m.py:3)_[p];Worker.hot (/app/m.py:9)_[p]");
    cr_assert_eq(c, 5);
    cr_assert_str_eq(pp_test_stack_text(p, pp, 1, &c),
                     "run (/usr/lib/python3.11/threading.py:975 [standard-library==3.11.2])_[p]");
    pp_profile_free(p);
}
