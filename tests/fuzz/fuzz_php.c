/* libFuzzer target for the PHP runtime: gProfiler's phpspy output parser, and the zend_function
 * reader fed the input as the target's memory (every address reads the input, cyclically from
 * an offset the address picks: pointers lead anywhere, strings have any length). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "merge/profile.h"
#include "runtimes/php/php_int.h"
#include "tests/fuzz/fuzz_common.h"

static const uint8_t *mem_data;
static size_t mem_size;

static int hook(void *arg, uint64_t addr, void *buf, size_t len)
{
    (void)arg;
    if (!mem_size || (addr >> 40)) {
        errno = EFAULT;
        return -1;
    }
    uint8_t *out = buf;
    for (size_t i = 0, off = addr % mem_size; i < len;) {
        size_t n = mem_size - off < len - i ? mem_size - off : len - i;
        memcpy(out + i, mem_data + off, n);
        i += n;
        off = 0;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    pp_profile *p = pp_profile_new();
    long corrupt;
    pp_phpspy_parse((const char *)data, size, p, &corrupt);
    pp_profile_free(p);

    mem_data = data;
    mem_size = size;
    pp_rmem m;
    pp_rmem_init(&m, 1);
    m.hook = hook;
    for (unsigned minor = 0; minor <= 4; minor++) {
        const pp_php_layout *L = pp_php_layout_for(8, minor);
        pp_php_func f;
        uint32_t check = 0;
        int have_check = pp_php_func_check(&m, L, 0x10000 + (size % 64) * 8, &check);
        if (size >= 8 && pp_php_func_read(&m, L, 0x10000 + (size % 64) * 8, &f) == 0) {
            /* the cheap check, when it could read the function, agrees with the full read's */
            if (have_check == 0 && check != f.check)
                __builtin_trap();
            char text[256];
            pp_php_func_plausible(&f);
            pp_php_frame_text(&f, pp_php_func_line(&m, L, &f, (uint32_t)size % 7), text,
                              sizeof(text));
            pp_php_func_clear(&f);
        }
        pp_php_layout_selfcheck(&m, L, 0x20000);
        pp_rmem_begin_sample(&m);
    }
    pp_rmem_free(&m);
    return 0;
}
