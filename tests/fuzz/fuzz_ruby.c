/* libFuzzer target for the Ruby reader's parsers of target-controlled bytes: an iseq (its body,
 * label and path strings, line entries and succinct bitvector), the line of a pc, and a Ruby
 * String, all over memory made of the input (the reader's test hook maps it at a fixed
 * address), plus the succinct-bitvector rank over the input as a table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtimes/ruby/ruby_int.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    uint32_t arg;
    memcpy(&arg, data + 1, 4);
    const uint8_t *t = data + 5;
    size_t n = size - 5;
    if (data[0] % 2 == 0) {
        uint64_t tab[64] = {0};
        memcpy(tab, t, n < sizeof(tab) ? n : sizeof(tab));
        pp_rb_succ_rank(tab, n / 8 < 64 ? n / 8 : 64, arg & 0xffff);
        return 0;
    }
    pp_rb_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return 0;
    pp_fuzz_mem_set(t, n);
    p->pid = getpid();
    p->L = *pp_rb_layout_for(3, 1);
    pp_rmem_init(&p->mem, p->pid);
    p->mem.hook = pp_fuzz_mem_hook;
    PP_HTAB_INIT(&p->iseqs, pp_rb_iseq *, 50);
    pp_rb_iseq *q = pp_rb_iseq_get(p, PP_FUZZ_BASE, 1);
    if (q)
        pp_rb_iseq_line(q, q->encoded + (uint64_t)(arg % 4096) * 8);
    q = pp_rb_iseq_get(p, PP_FUZZ_BASE, 2); /* validated again */
    char s[256];
    pp_rb_read_string(&p->mem, &p->L, PP_FUZZ_BASE + (arg % 64) * 8, s, sizeof(s));
    pp_rb_close(p);
    return 0;
}
