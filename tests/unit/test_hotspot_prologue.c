/* The HotSpot walker's top frame caught in a prologue or an epilogue (runtimes/java/walker_info.h,
 * used by the sampler's walker): where the caller's return address and fp are at each
 * instruction. The code bytes are real: copied from the code cache of OpenJDK 17.0.15 and
 * Temurin 25.0.3 running tests/integration/apps/Hot.java (C2 hotA, C1 nextInt), with the
 * frame sizes and _frame_complete_offset of their CodeBlobs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/java/walker_info.h"

/* The state at each offset of a prologue of n bytes (code: n + 11 bytes) of a frame of fs words,
 * scanned as the sampler does: position by position until the frame-making instructions. */
static unsigned int at(const char *hex, int n, int fs, int off)
{
    unsigned char buf[4 + 256] = {0};
    size_t len = strlen(hex) / 2;
    cr_assert(len <= sizeof(buf) - 4 - 16);
    for (size_t i = 0; i < len; i++)
        cr_assert(sscanf(hex + 2 * i, "%2hhx", &buf[4 + i]) == 1);
    struct pp_hsw_prologue p;
    pp_hsw_prologue_init(&p, n, fs);
    for (int j = 0; j < 128; j++)
        if (pp_hsw_prologue_at(&p, buf + 4 + j, j))
            break;
    return pp_hsw_prologue_state(&p, off);
}

#define RET PP_HSW_AT_RET
#define RBP PP_HSW_AT_RBP
#define FPREG PP_HSW_AT_FPREG
#define BODY PP_HSW_AT_BODY
#define UNKNOWN PP_HSW_AT_UNKNOWN

Test(hotspot_prologue, jdk17_c2_bang_push_sub)
{
    /* mov [rsp-0x14000], eax; push rbp; sub rsp, 0x10 | the body: frame size 4, complete at 12 */
    const char *c = "89842400c0feff554883ec10666690e86c260000";
    cr_expect_eq(at(c, 12, 4, 0), RET); /* the stack bang */
    cr_expect_eq(at(c, 12, 4, 7), RET); /* at the push: where the samples landed */
    cr_expect_eq(at(c, 12, 4, 8), RBP); /* at the sub */
    cr_expect_eq(at(c, 12, 4, 12), BODY);
    cr_expect_eq(at(c, 12, 5, 8), UNKNOWN, "a sub of another size is not this frame's");
}

Test(hotspot_prologue, jdk17_c1_made_not_entrant)
{
    /* C1 nextInt, its entry patched to a jump when it was made not entrant (frame size 8) */
    const char *c = "e93ba05607feff554883ec3048be30d90417ee7f";
    cr_expect_eq(at(c, 12, 8, 0), RET);
    cr_expect_eq(at(c, 12, 8, 7), RET);
    cr_expect_eq(at(c, 12, 8, 8), RBP);
}

Test(hotspot_prologue, jdk25_c1_inline_cache_check_and_entry_barrier)
{
    /* nops; the inline cache check; bang; push rbp; sub rsp, 0x60; cmp [r15+0x20], 1; je; call
     * the barrier's stub | frame size 14, complete at 59 */
    const char *c = "660f1f840000000000660f1f840000000000448b5608443b50080f8540ff5707"
                    "89842400c0feff554883ec6041817f20010000007405e8a57a560748bf10f304ac877f";
    cr_expect_eq(at(c, 59, 14, 0), RET);
    cr_expect_eq(at(c, 59, 14, 0x12), RET);  /* the inline cache check */
    cr_expect_eq(at(c, 59, 14, 0x27), RET);  /* at the push */
    cr_expect_eq(at(c, 59, 14, 0x28), RBP);  /* at the sub */
    cr_expect_eq(at(c, 59, 14, 0x2c), BODY); /* the entry barrier, the frame made */
    cr_expect_eq(at(c, 59, 14, 0x36), BODY);
}

Test(hotspot_prologue, jdk25_c2_sub_then_mov)
{
    /* call; nops; sub rsp, imm32 0x18; mov [rsp+0x10], rbp; the entry barrier | frame size 4,
     * complete at 42 */
    const char *c = "e86b1b3b186666660f1f8400000000004881ec1800000048896c241041817f2001"
                    "0000000f85610100008b1e448b6e08488b";
    cr_expect_eq(at(c, 42, 4, 0), RET);
    cr_expect_eq(at(c, 42, 4, 0x10), RET);   /* at the sub */
    cr_expect_eq(at(c, 42, 4, 0x17), FPREG); /* at the mov: the frame made, fp not saved yet */
    cr_expect_eq(at(c, 42, 4, 0x1c), BODY);
    cr_expect_eq(at(c, 42, 4, 0x24), BODY);
}

Test(hotspot_prologue, jdk25_c2_bang_push_sub_then_barrier)
{
    const char *c = "89842400c0feff554883ec1041817f20010000000f858b0100004d8b97680400";
    cr_expect_eq(at(c, 26, 4, 7), RET);
    cr_expect_eq(at(c, 26, 4, 8), RBP);
    cr_expect_eq(at(c, 26, 4, 12), BODY);
}

Test(hotspot_prologue, two_word_frames_and_a_frame_pointer_kept)
{
    /* push rbp alone, then the prologue ends or the entry barrier follows */
    cr_expect_eq(at("89842400c0feff55", 8, 2, 7), RET);
    cr_expect_eq(at("89842400c0feff5541817f2001000000", 8, 2, 7), RET);
    cr_expect_eq(at("89842400c0feff5541817f2001000000", 18, 2, 8), BODY);
    /* -XX:+PreserveFramePointer: push rbp; mov rbp, rsp; sub rsp, 0x10 */
    const char *c = "89842400c0feff554889e54883ec1090";
    cr_expect_eq(at(c, 15, 4, 7), RET);
    cr_expect_eq(at(c, 15, 4, 8), RBP);
    cr_expect_eq(at(c, 15, 4, 11), RBP);
    cr_expect_eq(at(c, 15, 4, 15), BODY);
    /* sub rsp, imm32 8; mov [rsp], rbp */
    cr_expect_eq(at("4881ec0800000048892c24", 11, 2, 7), FPREG);
}

Test(hotspot_prologue, unknown_shapes_and_bounds)
{
    cr_expect_eq(at("909090909090", 6, 4, 2), UNKNOWN);
    /* a sub with no push before it, and one past the prologue's end */
    cr_expect_eq(at("909090904883ec10", 8, 4, 2), UNKNOWN);
    cr_expect_eq(at("89842400c0feff554883ec10", 10, 4, 8), UNKNOWN);
}

Test(hotspot_prologue, epilogue_after_the_frame_is_taken_down)
{
    /* JDK 17 C2: add rsp, 0x10; pop rbp; cmp rsp, [r15+0x340]; ja stub; ret */
    static const unsigned char e17[] = {0x48, 0x83, 0xc4, 0x10, 0x5d, 0x49, 0x3b, 0xa7, 0x40,
                                        0x03, 0x00, 0x00, 0x0f, 0x87, 0x20, 0x00, 0x00, 0x00,
                                        0xc3, 0xbe, 0,    0,    0,    0,    0,    0};
    cr_expect_eq(pp_hsw_epilogue(e17), BODY);
    cr_expect_eq(pp_hsw_epilogue(e17 + 4), RBP);
    cr_expect_eq(pp_hsw_epilogue(e17 + 5), RET);
    cr_expect_eq(pp_hsw_epilogue(e17 + 12), RET);
    cr_expect_eq(pp_hsw_epilogue(e17 + 18), RET);
    /* Temurin 25 C2: the poll with an 8-bit displacement (cmp rsp, [r15+0x28]) */
    static const unsigned char e25[] = {0x5d, 0x49, 0x3b, 0x67, 0x28, 0x0f, 0x87, 0x01, 0x00,
                                        0x00, 0x00, 0xc3, 0x49, 0xba, 0,    0,    0,    0};
    cr_expect_eq(pp_hsw_epilogue(e25), RBP);
    cr_expect_eq(pp_hsw_epilogue(e25 + 1), RET);
    cr_expect_eq(pp_hsw_epilogue(e25 + 5), RET);
    cr_expect_eq(pp_hsw_epilogue(e25 + 11), RET);
    /* a ja in the body (no ret after it) */
    static const unsigned char body[] = {0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0x48, 0x8b};
    cr_expect_eq(pp_hsw_epilogue(body), BODY);
}
