/* libFuzzer target for the HotSpot walker's reading of a sampled frame's prologue and epilogue
 * (runtimes/java/walker_info.h, run by the BPF walker on code bytes of the target): byte 0 the
 * frame size in words, byte 1 the prologue's length (the blob's _frame_complete_offset, up to
 * 255: longer than the 128 bytes scanned), byte 2 the pc's offset; the rest the code. The scan
 * runs as the sampler runs it (128 positions over a buffer with 4 bytes of slack before and 32
 * after, as in struct rt_walk), then the state at the pc and the epilogue's state of the bytes
 * around it. Every state is one of the enum's; the offsets found lie inside the prologue and in
 * order. Seeds: real C1 and C2 prologues of JDK 17 and 25 (tests/fuzz/corpus/). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/java/walker_info.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    if (size < 3)
        return 0;
    unsigned char buf[4 + 128 + 32] = {0};
    size_t len = size - 3 < 128 ? size - 3 : 128;
    memcpy(buf + 4, data + 3, len);
    int fs = data[0], n = data[1], off = data[2];
    struct pp_hsw_prologue p;
    pp_hsw_prologue_init(&p, n, fs);
    for (int j = 0; j < 128; j++)
        if (pp_hsw_prologue_at(&p, buf + 4 + j, j))
            break;
    unsigned int st = pp_hsw_prologue_state(&p, off);
    if (st > PP_HSW_AT_UNKNOWN)
        abort();
    if (p.made >= 0 && (p.made > p.fpsaved || p.fpsaved > n || p.push >= p.made))
        abort();
    unsigned char c[16] = {0};
    memcpy(c, buf + 4 + (off < 120 ? off : 120) - 4, 16);
    if (pp_hsw_epilogue(c) > PP_HSW_AT_UNKNOWN)
        abort();
    return 0;
}
