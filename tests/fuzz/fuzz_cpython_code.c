/* libFuzzer target for the CPython reader's parsers of target-controlled bytes: the three
 * line-table decoders, the 3.13 _Py_DebugOffsets reader, and a whole pp_py_sample over memory
 * made of the input (the reader's test hook maps the input at a fixed address, so every pointer
 * chain, string and line table comes from fuzzed bytes). The first byte selects the target. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtimes/python/cpython_int.h"
#include "tests/fuzz/fuzz_common.h"

static int on_stack(void *arg, const pp_py_stack *st)
{
    size_t *total = arg;
    for (size_t i = 0; i < st->n; i++)
        *total += strlen(st->frames[i].name) + strlen(st->frames[i].file);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    uint8_t sel = data[0] % 5;
    int32_t arg;
    memcpy(&arg, data + 1, 4);
    const uint8_t *t = data + 5;
    size_t n = size - 5;
    switch (sel) {
    case 0:
        pp_py_line_lnotab(t, n, arg & 0xffff, arg >> 8);
        break;
    case 1:
        pp_py_line_310(t, n, arg & 0xffff, arg >> 8);
        break;
    case 2:
        pp_py_line_locations(t, n, arg & 0xffff, arg >> 8);
        break;
    case 3: {
        pp_py_layout L;
        char err[128];
        pp_py_layout_from_debug(t, n, &L, err, sizeof(err));
        break;
    }
    default: {
        /* The input is the target's memory at PP_FUZZ_BASE; _PyRuntime at PP_FUZZ_BASE. */
        const pp_py_layout *lay = pp_py_layout_for(8 + (int)((unsigned)arg % 5));
        pp_py_proc *p = calloc(1, sizeof(*p));
        if (!p || !lay) {
            free(p);
            return 0;
        }
        pp_fuzz_mem_set(t, n);
        p->pid = getpid();
        pp_rmem_init(&p->mem, p->pid);
        p->mem.hook = pp_fuzz_mem_hook;
        p->L = *lay;
        p->runtime = PP_FUZZ_BASE;
        p->pthread_tid = 0x2d0;
        char err[256];
        size_t total = 0;
        pp_py_sample(p, on_stack, &total, err, sizeof(err));
        pp_py_sample(p, on_stack, &total, err, sizeof(err)); /* cache hits */
        pp_py_close(p);
        break;
    }
    }
    return 0;
}
