/* Packed unwind rows (runtimes/unwind/cfipack.c): what the per-file cache keeps is exactly what
 * pp_cfi_build compiled, in 8 bytes a row. */
#include <fcntl.h>
#include <unistd.h>

#include "runtimes/unwind/cfipack.h"
#include "testutil.h"

static bool same(pp_cfi_row a, pp_cfi_row b)
{
    return a.pc == b.pc && a.kind == b.kind && a.cfa_off == b.cfa_off && a.rbp_off == b.rbp_off;
}

/* Every row of t decodes to itself, and a lookup anywhere gives pp_cfi_find's row. */
static void check_exact(const pp_cfi_table *t, const pp_cfi_packed *p)
{
    cr_assert_eq(p->n, t->n);
    for (size_t i = 0; i < t->n; i++) {
        pp_cfi_row r = pp_cfi_packed_row(p, i);
        cr_assert(same(r, t->rows[i]),
                  "row %zu (pc %#lx kind %d cfa %d rbp %d) decoded as pc %#lx "
                  "kind %d cfa %d rbp %d",
                  i, (unsigned long)t->rows[i].pc, t->rows[i].kind, t->rows[i].cfa_off,
                  t->rows[i].rbp_off, (unsigned long)r.pc, r.kind, r.cfa_off, r.rbp_off);
        uint64_t probes[] = {t->rows[i].pc, t->rows[i].pc + 1, t->rows[i].pc - 1};
        for (size_t k = 0; k < 3; k++) {
            const pp_cfi_row *want = pp_cfi_find(t, probes[k]);
            pp_cfi_row got;
            bool found = pp_cfi_packed_find(p, probes[k], &got);
            cr_assert_eq(found, want != NULL, "pc %#lx", (unsigned long)probes[k]);
            if (want)
                cr_assert(same(got, *want), "lookup of pc %#lx", (unsigned long)probes[k]);
            else
                cr_assert_eq(got.kind, PP_CFI_NONE);
        }
    }
}

Test(cfipack, libc_rows_round_trip_in_8_bytes_each)
{
    int fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0);
    pp_cfi_table t;
    char err[200];
    cr_assert(pp_cfi_build(fd, &t, err, sizeof(err)) > 1000, "%s", err);
    close(fd);
    pp_cfi_packed p;
    cr_assert_eq(pp_cfi_pack(&t, &p, err, sizeof(err)), 0, "%s", err);
    check_exact(&t, &p);
    cr_assert_lt(p.nwide, t.n / 100, "libc's rules fit the packed form (%zu wide)", p.nwide);
    cr_assert_leq(pp_cfi_packed_bytes(&p), t.n * 8 + p.nwide * sizeof(pp_cfi_row));
    cr_assert_eq(p.text_lo, t.text_lo);
    cr_assert_eq(p.text_hi, t.text_hi);
    pp_cfi_packed_free(&p);
    pp_cfi_free(&t);
}

/* Rules beyond the packed fields keep their exact values (a function with a 64 KiB frame). */
Test(cfipack, rows_that_do_not_fit_stay_exact)
{
    pp_cfi_row rows[] = {
        {0x1000, PP_CFI_RSP, 8, 0},          {0x1004, PP_CFI_RSP, 65544, -16}, /* a 64 KiB frame */
        {0x1010, PP_CFI_RBP, 16, -12},       /* rbp not at a multiple of 8 */
        {0x1020, PP_CFI_RBP, -40000, -2048}, /* both beyond */
        {0x1030, PP_CFI_RSP, 32767, 1016},   /* the largest that fit */
        {0x1034, PP_CFI_RSP, -32768, -1024}, {0x1040, PP_CFI_PLT, 0, 0},
        {0x1050, PP_CFI_UNSUPPORTED, 7, 0}, /* an offset on a kind without one */
        {0x1060, PP_CFI_SIGRETURN, 0, 0},    {0x1069, PP_CFI_NONE, 0, 0},
        {0x2000, PP_CFI_END, 0, 0},
    };
    pp_cfi_table t = {
        .rows = rows, .n = sizeof(rows) / sizeof(rows[0]), .text_lo = 0x1000, .text_hi = 0x3000};
    pp_cfi_packed p;
    char err[200];
    cr_assert_eq(pp_cfi_pack(&t, &p, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(p.nwide, 4);
    check_exact(&t, &p);
    pp_cfi_row r;
    cr_assert(pp_cfi_packed_find(&p, 0x1fff, &r) && r.kind == PP_CFI_NONE && r.pc == 0x1069);
    cr_assert(pp_cfi_packed_find(&p, 0x7fffffff, &r) && r.kind == PP_CFI_END);
    cr_assert(!pp_cfi_packed_find(&p, 0xfff, &r) && r.kind == PP_CFI_NONE);
    pp_cfi_packed_free(&p);
}

Test(cfipack, code_spanning_more_than_4_gib_is_refused)
{
    pp_cfi_row rows[] = {{0x1000, PP_CFI_RSP, 8, 0}, {0x100001000ull, PP_CFI_NONE, 0, 0}};
    pp_cfi_table t = {.rows = rows, .n = 2};
    pp_cfi_packed p;
    char err[200] = "";
    cr_assert_eq(pp_cfi_pack(&t, &p, err, sizeof(err)), -1);
    cr_assert(strstr(err, "4 GiB"), "%s", err);
    cr_assert_null(p.rows);
    pp_cfi_table empty = {0};
    cr_assert_eq(pp_cfi_pack(&empty, &p, err, sizeof(err)), 0);
    cr_assert(!pp_cfi_packed_find(&p, 0x1000, &rows[0]));
    pp_cfi_packed_free(&p);
}
