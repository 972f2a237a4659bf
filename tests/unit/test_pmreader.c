/* Unit tests: reading a perf map in bounded parts (perfmap.c pp_perfmap_update_some) and the
 * background reader (pmreader.c): a large map is read on the worker, in chunks, pausable and
 * stoppable between them, never by the caller; a small remainder is read by the caller. */
#include "tests/unit/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "base/child.h"
#include "runtimes/symbols/pmreader.h"
#include "runtimes/symbols/symbols_internal.h"

TestSuite(pmreader, .init = pp_test_quiet_log);

/* A perf map of `lines` lines at 0x100000 + 16 i, named f<i>; returns its open fd. */
static int big_map(const char *dir, long lines, char *path, size_t pathsz)
{
    snprintf(path, pathsz, "%s/perf-1.map", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    for (long i = 0; i < lines; i++)
        fprintf(f, "%lx 10 f%ld_with_a_name_long_enough_for_a_real_jit\n", 0x100000 + i * 16, i);
    cr_assert(fclose(f) == 0);
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0);
    return fd;
}

/* ~5 MiB of lines, read 1 MiB (about) at a time: each call stops at a line boundary, goes on
 * from there, and the parts make up the whole file, as one read would. */
Test(pmreader, update_some_reads_in_bounded_parts)
{
    char *dir = pp_test_mkdtemp(), path[512];
    int fd = big_map(dir, 100000, path, sizeof(path));
    off_t size = lseek(fd, 0, SEEK_END);
    pp_perfmap m = {.max_bytes = 64u << 20};
    long total = 0;
    int calls = 0;
    uint64_t before = 0;
    while (!m.complete) {
        total += pp_perfmap_update_some(&m, fd, 1u << 20);
        calls++;
        cr_assert_leq(m.parsed - before, 2u << 20, "one call read %llu bytes",
                      (unsigned long long)(m.parsed - before));
        before = m.parsed;
        cr_assert_leq(calls, 50);
    }
    cr_assert_geq(calls, 3, "%d calls for %lld bytes", calls, (long long)size);
    cr_assert_eq(total, 100000);
    cr_assert_eq(m.parsed, (uint64_t)size);
    cr_assert_eq(pp_perfmap_update_some(&m, fd, 1u << 20), 0, "read to its end: nothing new");
    cr_assert_str_eq(pp_perfmap_find(&m, 0x100000 + 99999 * 16 + 3),
                     "f99999_with_a_name_long_enough_for_a_real_jit");
    cr_assert_str_eq(pp_perfmap_find(&m, 0x100000 + 5),
                     "f0_with_a_name_long_enough_for_a_real_jit");
    cr_assert_eq(pp_perfmap_unread(&m, fd), 0);
    pp_perfmap_free(&m);
    close(fd);
    pp_test_rmtree(dir);
}

/* A file rewritten while it was read in part is read again from its start. */
Test(pmreader, update_some_starts_again_when_rewritten)
{
    char *dir = pp_test_mkdtemp(), path[512];
    int fd = big_map(dir, 100000, path, sizeof(path));
    pp_perfmap m = {.max_bytes = 64u << 20};
    pp_perfmap_update_some(&m, fd, 1u << 20);
    cr_assert(!m.complete);
    cr_assert_gt(pp_perfmap_unread(&m, fd), 0);
    FILE *f = fopen(path, "r+");
    cr_assert(f);
    fputs("1000 10 rewritten", f); /* the first line changed in place */
    fclose(f);
    while (!m.complete)
        pp_perfmap_update_some(&m, fd, 1u << 20);
    cr_assert_str_eq(pp_perfmap_find(&m, 0x1004), "rewritten_a_name_long_enough_for_a_real_jit");
    cr_assert_null(pp_perfmap_find(&m, 0x100004), "the old first line is still there");
    pp_perfmap_free(&m);
    close(fd);
    pp_test_rmtree(dir);
}

/* A remainder larger than the caller's per-pass allowance goes to the worker: the caller's
 * refresh returns without reading it (0 added), the names come when the worker is done. */
Test(pmreader, large_remainder_is_read_by_the_worker)
{
    char *dir = pp_test_mkdtemp(), path[512];
    int fd = big_map(dir, 200000, path, sizeof(path));
    pp_pmreader *r = pp_pmreader_new();
    pp_pmsrc *src = pp_pmsrc_new(r);
    uint64_t left = PP_PMREAD_INLINE_PER_PASS;
    char name[256];
    cr_assert_eq(pp_pmsrc_refresh(src, fd, false, &left), 0);
    cr_assert_eq(left, PP_PMREAD_INLINE_PER_PASS, "the caller read it");
    cr_assert(pp_pmreader_wait_idle(r, pp_mono_now() + 20));
    cr_assert(pp_pmsrc_find(src, 0x100000 + 199999 * 16, name, sizeof(name)));
    cr_assert_str_eq(name, "f199999_with_a_name_long_enough_for_a_real_jit");
    pp_pmsrc_stats st;
    pp_pmsrc_get_stats(src, &st);
    cr_assert(st.complete && !st.reading);
    /* a small remainder (appended lines) is read by the caller at once */
    FILE *f = fopen(path, "a");
    fputs("9000000 10 appended\n", f);
    fclose(f);
    fd = open(path, O_RDONLY);
    cr_assert_eq(pp_pmsrc_refresh(src, fd, false, &left), 1);
    cr_assert(pp_pmsrc_find(src, 0x9000004, name, sizeof(name)));
    cr_assert_str_eq(name, "appended");
    cr_assert_lt(left, PP_PMREAD_INLINE_PER_PASS);
    pp_pmsrc_put(src);
    pp_pmreader_free(r, 5);
    pp_test_rmtree(dir);
}

/* Paused (a drain), the worker reads no further chunk, and lookups do not wait for it; a stop
 * ends the read at its next chunk, the file left in part. */
Test(pmreader, pause_and_stop_between_chunks)
{
    char *dir = pp_test_mkdtemp(), path[512];
    int fd = big_map(dir, 400000, path, sizeof(path)); /* ~24 MiB: 6 chunks */
    pp_pmreader *r = pp_pmreader_new();
    pp_pmsrc *src = pp_pmsrc_new(r);
    uint64_t left = 0;
    char name[256];
    pp_pmreader_pause(r, true);
    cr_assert_eq(pp_pmsrc_refresh(src, fd, false, &left), 0);
    cr_assert_not(pp_pmreader_wait_idle(r, pp_mono_now() + 0.3), "a paused read went on");
    double t0 = pp_mono_now();
    cr_assert_not(pp_pmsrc_find(src, 0x100000 + 399999 * 16, name, sizeof(name)));
    cr_assert_lt(pp_mono_now() - t0, 0.2, "a lookup waited for the paused worker");
    pp_pmsrc_stats st;
    pp_pmsrc_get_stats(src, &st);
    cr_assert(st.reading && !st.complete);
    pp_pmreader_stop(r); /* stopped while paused: ends without reading on */
    cr_assert(pp_pmreader_wait_idle(r, pp_mono_now() + 5), "the stopped read did not end");
    pp_pmsrc_get_stats(src, &st);
    cr_assert(!st.reading && !st.complete, "the stopped read went on to the end");
    pp_pmsrc_put(src);
    pp_pmreader_free(r, 5);
    pp_test_rmtree(dir);
}

/* Once the session's budget is spent, the read stops with the file left in part; the next
 * session's budget lets it go on where it stopped. */
Test(pmreader, budget_per_session)
{
    char *dir = pp_test_mkdtemp(), path[512];
    int fd = big_map(dir, 400000, path, sizeof(path));
    pp_pmreader *r = pp_pmreader_new();
    pp_pmsrc *src = pp_pmsrc_new(r);
    uint64_t left = 0;
    pp_pmreader_set_budget(r, 1e-9); /* spent by the first chunk */
    cr_assert_eq(pp_pmsrc_refresh(src, fd, false, &left), 0);
    cr_assert(pp_pmreader_wait_idle(r, pp_mono_now() + 20));
    pp_pmsrc_stats st;
    pp_pmsrc_get_stats(src, &st);
    cr_assert(!st.complete, "read past its budget");
    cr_assert_gt(st.entries, 0, "not even one chunk read");
    cr_assert_gt(pp_pmreader_spent(r), 0);
    /* The next session: budget again, a quarter of the session's length: a session long
     * enough that any host (valgrind included) reads the rest within it. */
    pp_pmreader_begin_session(r, 1e6);
    cr_assert_eq(pp_pmreader_spent(r), 0);
    fd = open(path, O_RDONLY);
    cr_assert_eq(pp_pmsrc_refresh(src, fd, false, &left), 0);
    cr_assert(pp_pmreader_wait_idle(r, pp_mono_now() + 120));
    pp_pmsrc_get_stats(src, &st);
    char name[256];
    cr_assert(st.complete);
    cr_assert(pp_pmsrc_find(src, 0x100000 + 399999 * 16, name, sizeof(name)));
    pp_pmsrc_put(src);
    pp_pmreader_free(r, 5);
    pp_test_rmtree(dir);
}

/* The source and the reader may go (the process is dropped, the symbolizer freed) while the
 * worker reads: the read holds its own references, ends at the stop and frees both (ASan and
 * valgrind see no leak, no use after free). */
Test(pmreader, source_dropped_while_read)
{
    char *dir = pp_test_mkdtemp(), path[512];
    int fd = big_map(dir, 200000, path, sizeof(path));
    pp_pmreader *r = pp_pmreader_new();
    pp_pmsrc *src = pp_pmsrc_new(r);
    uint64_t left = 0;
    cr_assert_eq(pp_pmsrc_refresh(src, fd, false, &left), 0);
    pp_pmsrc_put(src);
    pp_pmreader_free(r, 5);
    pp_test_rmtree(dir);
}
