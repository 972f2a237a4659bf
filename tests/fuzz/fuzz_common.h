/* What the fuzz targets share: quiet logs (a finding is the sanitizers' report, not polyprof's
 * messages about bad input), and the memory the readers' test hooks read (the input's bytes at
 * PP_FUZZ_BASE, nothing else mapped). */
#ifndef PP_FUZZ_COMMON_H
#define PP_FUZZ_COMMON_H

#include <stdint.h>
#include <string.h>

#include "base/log.h"

/* Logs only critical messages from the first input on. */
static inline void pp_fuzz_quiet(void)
{
    static int quiet;
    if (!quiet) {
        pp_log_set_stderr_level(PP_LOG_CRITICAL);
        quiet = 1;
    }
}

#define PP_FUZZ_BASE 0x200000ull

static const uint8_t *pp_fuzz_mem;
static size_t pp_fuzz_mem_len;

/* The readers' memory is now data[0..size) at PP_FUZZ_BASE. */
static inline void pp_fuzz_mem_set(const uint8_t *data, size_t size)
{
    pp_fuzz_mem = data;
    pp_fuzz_mem_len = size;
}

/* A reader's test hook (rmem, iseq or code-object reader): len bytes at addr, -1 outside. */
static inline int pp_fuzz_mem_hook(void *arg, uint64_t addr, void *buf, size_t len)
{
    (void)arg;
    if (addr < PP_FUZZ_BASE || addr - PP_FUZZ_BASE > pp_fuzz_mem_len ||
        len > pp_fuzz_mem_len - (addr - PP_FUZZ_BASE))
        return -1;
    memcpy(buf, pp_fuzz_mem + (addr - PP_FUZZ_BASE), len);
    return 0;
}

#endif
