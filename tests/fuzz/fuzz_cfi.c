/* libFuzzer target for the CFI row builder (runtimes/unwind/cfi.c): the input is an ELF file
 * (seeds: small executables with .eh_frame and .eh_frame_hdr, with .debug_frame only, with a
 * PLT), handed to pp_cfi_build through a memfd as the cache would hand a mapped file. Truncated,
 * looping and hostile CFI must give rows or an error with a reason, never a crash or a hang; the
 * rows it gives must be sorted and found by pp_cfi_find. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"
#include "runtimes/unwind/cfipack.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pp_log_set_stderr_level(PP_LOG_CRITICAL);
    memfd = memfd_create("fuzz-cfi", MFD_CLOEXEC);
    if (memfd < 0)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
        abort();
    pp_cfi_table t;
    char err[256];
    /* a small work bound: an input with a costly FDE stays fast (the bound itself is tested) */
    pp_cfi_limits lim = {.max_work = 1 << 22};
    long n = pp_cfi_build_limited(memfd, &lim, &t, err, sizeof(err));
    if (n < 0) {
        if (!err[0] || t.rows || t.n)
            abort(); /* an error has a reason and leaves no rows */
        return 0;
    }
    if ((size_t)n != t.n || n == 0)
        abort();
    for (size_t i = 0; i < t.n; i++) {
        if (i && t.rows[i - 1].pc >= t.rows[i].pc)
            abort(); /* sorted, unique */
        if (t.rows[i].kind > PP_CFI_END)
            abort();
        if (pp_cfi_find(&t, t.rows[i].pc) != &t.rows[i])
            abort();
    }
    if (pp_cfi_find(&t, t.rows[0].pc - 1) != NULL && t.rows[0].pc > 0)
        abort();
    /* the per-file cache's packed form: every row exactly, or a reason */
    pp_cfi_packed p;
    if (pp_cfi_pack(&t, &p, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < t.n; i++) {
            pp_cfi_row r = pp_cfi_packed_row(&p, i), got;
            if (r.pc != t.rows[i].pc || r.kind != t.rows[i].kind ||
                r.cfa_off != t.rows[i].cfa_off || r.rbp_off != t.rows[i].rbp_off)
                abort();
            if (!pp_cfi_packed_find(&p, t.rows[i].pc, &got) || got.pc != r.pc)
                abort();
        }
        pp_cfi_packed_free(&p);
    } else if (!err[0]) {
        abort();
    }
    pp_cfi_free(&t);
    return 0;
}
