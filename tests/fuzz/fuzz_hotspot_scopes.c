/* libFuzzer target for the reader of a compiled Java frame's inlined methods
 * (runtimes/java/hotspot_scopes.c): the input is the JVM's memory at PP_FUZZ_BASE, an nmethod at
 * PP_FUZZ_BASE in a fixed synthetic layout (hotspot_fake.h's; JDK 25's sections, or JDK 17's when
 * the first byte is odd), so its sections' bounds, the PcDescs, the scopes stream and the metadata
 * all come from fuzzed bytes; then the frame's texts (its method and what it inlined) are made as
 * the walker's naming makes them (the layout: tests/unit/hotspot_fake.h's). Bytes 1..4 are the pc
 * (an offset from the nmethod). Also the stream's value decoder on the raw input. Seeds: a
 * well-formed nmethod of three scopes for each layout (tests/fuzz/corpus/fuzz_hotspot_scopes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/java/hotspot.h"
#include "runtimes/java/walker.h"
#include "tests/unit/hotspot_fake.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    if (size < 5)
        return 0;
    uint32_t pc;
    memcpy(&pc, data + 1, 4);
    const uint8_t *mem = data + 5;
    size_t len = size - 5;
    pp_fuzz_mem_set(mem, len);
    for (size_t pos = 0; pos < len;) { /* the decoder alone, both encodings */
        uint32_t v;
        size_t at = pos;
        if (pp_hs_u5_read(mem, len, &pos, data[0] & 2 ? 1 : 0, &v) != 0)
            pos = at + 1;
        else if (pos <= at || pos > len || v > INT32_MAX)
            abort();
    }
    pp_hs_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return 0;
    pp_rmem_init(&p->mem, 1);
    p->mem.hook = pp_fuzz_mem_hook;
    pp_hs_methods_init(p);
    p->L = PP_TEST_HS_METHOD_LAYOUT;
    pp_test_hs_scopes_layout(&p->L, data[0] & 1 ? 17 : 25);
    uint64_t m = 0, out[PP_HS_MAX_INLINE];
    const char *why;
    pp_rmem_ptr(&p->mem, PP_FUZZ_BASE + p->L.nm_method, &m);
    int n = pp_hs_inlined(p, PP_FUZZ_BASE, m, pc, out, PP_HS_MAX_INLINE, &why);
    if (n == 0 || n > PP_HS_MAX_INLINE || (n > 0 && (out[n - 1] != m || why)) || (n < 0 && !why))
        abort();
    /* named as the walker names it, the check the one of the method there */
    pp_hs_method_id id;
    if (m && pp_hs_method_identity(p, m, &id) == 0) {
        static char texts[PP_HS_MAX_INLINE][PP_JAVA_FRAME_TEXT];
        unsigned check = pp_hsw_check(id.cm, id.kname, id.idx);
        /* the nmethod at PP_FUZZ_BASE: segment 1 of 128-byte segments past a 16-byte block header
         */
        static const struct pp_hotspot_info in = {
            .code_lo = PP_FUZZ_BASE - 16 - 128, .log2seg = 7, .heapblock_size = 16};
        size_t k = pp_java_frame_texts(p, &in, PP_HSW_W0_PC(m, pc, 1u),
                                       PP_HSW_WORD_SEG('j', check, m, pc, 1u), texts,
                                       PP_HS_MAX_INLINE, &why);
        if (k > PP_HS_MAX_INLINE)
            abort();
        for (size_t i = 0; i < k; i++)
            if (strlen(texts[i]) >= PP_JAVA_FRAME_TEXT)
                abort();
    }
    pp_hs_close(p);
    free(p);
    return 0;
}
