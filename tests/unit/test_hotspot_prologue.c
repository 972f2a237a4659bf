/* The HotSpot walker's top frame caught in a prologue or an epilogue (runtimes/java/walker_info.h,
 * used by the sampler's walker): where the caller's return address and fp are at each
 * instruction. The code bytes are real unless marked synthetic: copied from the code cache of
 * OpenJDK 17.0.15 and Temurin 25.0.3 running tests/integration/apps/Hot.java (C2 hotA, C1
 * nextInt) and CallHot.java with -XX:+PreserveFramePointer (C2 and C1 tiny), with the frame
 * sizes and _frame_complete_offset of their CodeBlobs. */
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

Test(hotspot_prologue, frame_pointer_kept)
{
    /* -XX:+PreserveFramePointer: push rbp; mov rbp, rsp (48 8b ec); sub rsp, 0x30 (C1, JDK 17:
     * its entry patched to a jump when made not entrant; frame size 8, complete at 15) */
    const char *c1 = "e95b3c5707feff55488bec4883ec3048b86808409fe47f0000";
    cr_expect_eq(at(c1, 15, 8, 7), RET);
    cr_expect_eq(at(c1, 15, 8, 8), RBP);
    cr_expect_eq(at(c1, 15, 8, 11), RBP);
    cr_expect_eq(at(c1, 15, 8, 15), BODY);
    /* JDK 25 C1: the same, then a nop aligning the entry barrier (complete at 31) */
    const char *c1b = "e9dbc15307feff55488bec4883ec309041817f20010000007405e8c1ae560748b8";
    cr_expect_eq(at(c1b, 31, 8, 7), RET);
    cr_expect_eq(at(c1b, 31, 8, 11), RBP);
    cr_expect_eq(at(c1b, 31, 8, 15), BODY);
    cr_expect_eq(at(c1b, 31, 8, 16), BODY);
    /* C2 without a bang (JDK 17): sub rsp, 0x18; mov [rsp+0x10], rbp; mov rbp, rsp;
     * add rbp, 0x10 (complete at 19); JDK 25 adds a nop and the barrier (at 34) */
    const char *c2 = "4881ec1800000048896c2410488bec4883c510488bc648c1e005";
    cr_expect_eq(at(c2, 19, 4, 0), RET);
    cr_expect_eq(at(c2, 19, 4, 7), FPREG);
    cr_expect_eq(at(c2, 19, 4, 12), BODY);
    const char *c2b = "4881ec1800000048896c2410488bec4883c5109041817f20010000000f8534000000";
    cr_expect_eq(at(c2b, 34, 4, 7), FPREG);
    cr_expect_eq(at(c2b, 34, 4, 20), BODY);
}

Test(hotspot_prologue, two_word_frames)
{
    /* synthetic: push rbp alone, then the prologue ends or the entry barrier follows (after
     * mov rbp, rsp and a nop aligning it) */
    cr_expect_eq(at("89842400c0feff55", 8, 2, 7), RET);
    cr_expect_eq(at("89842400c0feff5541817f2001000000", 8, 2, 7), RET);
    cr_expect_eq(at("89842400c0feff5541817f2001000000", 18, 2, 8), BODY);
    const char *c = "89842400c0feff55488bec9041817f20010000000f8500000000";
    cr_expect_eq(at(c, 26, 2, 7), RET);
    cr_expect_eq(at(c, 26, 2, 8), RBP);
    cr_expect_eq(at(c, 26, 2, 11), BODY);
    /* synthetic: sub rsp, imm32 8; mov [rsp], rbp */
    cr_expect_eq(at("4881ec0800000048892c24", 11, 2, 7), FPREG);
}

Test(hotspot_prologue, unknown_shapes_and_bounds)
{
    cr_expect_eq(at("909090909090", 6, 4, 2), UNKNOWN);
    /* a sub with no push before it, and one past the prologue's end */
    cr_expect_eq(at("909090904883ec10", 8, 4, 2), UNKNOWN);
    cr_expect_eq(at("89842400c0feff554883ec10", 10, 4, 8), UNKNOWN);
}

/* The epilogue state of the instruction at code + off (the 8 bytes before it read as the
 * sampler does; zeros before the code). */
static unsigned int epi(const unsigned char *code, size_t len, size_t off)
{
    unsigned char c[16] = {0};
    for (int i = 0; i < 16; i++)
        if (off + i >= 8 && off + i - 8 < len)
            c[i] = code[off + i - 8];
    return pp_hsw_epilogue(c);
}

Test(hotspot_prologue, epilogue_after_the_frame_is_taken_down)
{
    /* JDK 17 C2: ...; add rsp, 0x10; pop rbp; cmp rsp, [r15+0x340]; ja stub; ret */
    static const unsigned char e17[] = {0x3b, 0xc2, 0x7c, 0xe4, 0x48, 0x83, 0xc4, 0x10,
                                        0x5d, 0x49, 0x3b, 0xa7, 0x40, 0x03, 0x00, 0x00,
                                        0x0f, 0x87, 0x20, 0x00, 0x00, 0x00, 0xc3, 0xbe};
    cr_expect_eq(epi(e17, sizeof(e17), 4), BODY);
    cr_expect_eq(epi(e17, sizeof(e17), 8), RBP);
    cr_expect_eq(epi(e17, sizeof(e17), 9), RET);
    cr_expect_eq(epi(e17, sizeof(e17), 16), RET);
    cr_expect_eq(epi(e17, sizeof(e17), 22), RET);
    /* Temurin 25 C2: the poll with an 8-bit displacement (cmp rsp, [r15+0x28]) */
    static const unsigned char e25[] = {0x57, 0x78, 0xeb, 0xe3, 0x48, 0x83, 0xc4, 0x10,
                                        0x5d, 0x49, 0x3b, 0x67, 0x28, 0x0f, 0x87, 0x01,
                                        0x00, 0x00, 0x00, 0xc3, 0x49, 0xba, 0x6a, 0xe7};
    cr_expect_eq(epi(e25, sizeof(e25), 8), RBP);
    cr_expect_eq(epi(e25, sizeof(e25), 9), RET);
    cr_expect_eq(epi(e25, sizeof(e25), 13), RET);
    cr_expect_eq(epi(e25, sizeof(e25), 19), RET);
    cr_expect_eq(epi(e25, sizeof(e25), 20), BODY);
    /* synthetic, @ReservedStackAccess: pop rbp; cmp rsp, [r15+0x388]; jb over the call that
     * enables the zone */
    static const unsigned char rsa[] = {0x5d, 0x49, 0x3b, 0xa7, 0x88, 0x03, 0x00,
                                        0x00, 0x0f, 0x82, 0x20, 0x00, 0x00, 0x00};
    cr_expect_eq(epi(rsa, sizeof(rsa), 8), RET);
    /* a ja in the body (no poll's cmp before it) */
    static const unsigned char body[] = {0x48, 0x3b, 0xc2, 0x0f, 0x87, 0x10, 0x00, 0x00, 0x00};
    cr_expect_eq(epi(body, sizeof(body), 3), BODY);
}
