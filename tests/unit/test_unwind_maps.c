/* Unit tests: the packing of unwind rows for the BPF unwinder (runtimes/system/unwind_maps.c,
 * bpf/unwind.h): the rules that fit keep their offsets, those that do not become unsupported
 * (the unwinder then uses frame pointers there) rather than wrong. */
#include "tests/unit/testutil.h"

#include "bpf/unwind.h"
#include "runtimes/system/unwind_maps.h"

static uint64_t pack(uint64_t pc, int kind, int cfa, int rbp)
{
    pp_cfi_row r = {.pc = pc, .kind = (uint8_t)kind, .cfa_off = cfa, .rbp_off = rbp};
    return pp_unwind_pack_row(&r);
}

Test(unwind_pack, rsp_and_rbp_rules_keep_their_offsets)
{
    uint64_t r = pack(0x1234, PP_CFI_RSP, 56, -16);
    cr_assert_eq(PP_UNW_ROW_PC(r), 0x1234);
    cr_assert_eq(PP_UNW_ROW_KIND(r), PP_UNW_RSP);
    cr_assert_eq(PP_UNW_ROW_CFA(r), 56);
    cr_assert_eq(PP_UNW_ROW_RBP(r), -16);
    r = pack(0xfffffff0u, PP_CFI_RBP, 16, -1024);
    cr_assert_eq(PP_UNW_ROW_PC(r), 0xfffffff0u);
    cr_assert_eq(PP_UNW_ROW_KIND(r), PP_UNW_RBP);
    cr_assert_eq(PP_UNW_ROW_CFA(r), 16);
    cr_assert_eq(PP_UNW_ROW_RBP(r), -1024);
    r = pack(0x10, PP_CFI_RSP, -32768, 1016);
    cr_assert_eq(PP_UNW_ROW_CFA(r), -32768);
    cr_assert_eq(PP_UNW_ROW_RBP(r), 1016);
}

Test(unwind_pack, rules_that_do_not_fit_become_unsupported)
{
    cr_assert_eq(PP_UNW_ROW_KIND(pack(0x10, PP_CFI_RSP, 40000, 0)), PP_UNW_UNSUPPORTED);
    cr_assert_eq(PP_UNW_ROW_KIND(pack(0x10, PP_CFI_RSP, 16, -12)), PP_UNW_UNSUPPORTED);
    cr_assert_eq(PP_UNW_ROW_KIND(pack(0x10, PP_CFI_RBP, 16, -2048)), PP_UNW_UNSUPPORTED);
    cr_assert_eq(PP_UNW_ROW_KIND(pack(0x10, 42, 16, 0)), PP_UNW_UNSUPPORTED);
    cr_assert_eq(PP_UNW_ROW_PC(pack(0x10, 42, 16, 0)), 0x10);
}

Test(unwind_pack, other_kinds_pass_through)
{
    int kinds[] = {PP_CFI_NONE, PP_CFI_PLT, PP_CFI_SIGRETURN, PP_CFI_UNSUPPORTED, PP_CFI_END};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        uint64_t r = pack(0x400, kinds[i], 0, 0);
        cr_assert_eq(PP_UNW_ROW_KIND(r), (unsigned)kinds[i]);
        cr_assert_eq(PP_UNW_ROW_PC(r), 0x400);
    }
}
