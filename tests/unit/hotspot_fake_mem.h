/* The HotSpot unit tests' fake target memory (test_hotspot_walker, test_hotspot_scopes): 64 KiB
 * of the test's own memory at FAKE_BASE behind the reader's test hook, a pp_hs_proc reading it
 * with the synthetic method layout (hotspot_fake.h). */
#ifndef PP_TEST_HOTSPOT_FAKE_MEM_H
#define PP_TEST_HOTSPOT_FAKE_MEM_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hotspot_fake.h"

#define FAKE_BASE 0x200000ull
#define FAKE_SIZE (64u << 10)

static uint8_t *mem;

static inline int fake_read(void *arg, uint64_t addr, void *buf, size_t len)
{
    (void)arg;
    if (addr < FAKE_BASE || addr + len > FAKE_BASE + FAKE_SIZE) {
        errno = EFAULT;
        return -1;
    }
    memcpy(buf, mem + (addr - FAKE_BASE), len);
    return 0;
}

static inline void put(uint64_t addr, const void *v, size_t n)
{
    cr_assert(addr >= FAKE_BASE && addr + n <= FAKE_BASE + FAKE_SIZE);
    memcpy(mem + (addr - FAKE_BASE), v, n);
}

static inline void put32(uint64_t addr, int32_t v)
{
    put(addr, &v, 4);
}

static inline void put64(uint64_t addr, uint64_t v)
{
    put(addr, &v, 8);
}

/* p reading the fake memory (zeroed), with the synthetic method layout. */
static inline void fake_open(pp_hs_proc *p)
{
    mem = calloc(1, FAKE_SIZE);
    cr_assert(mem);
    memset(p, 0, sizeof(*p));
    pp_rmem_init(&p->mem, 1);
    p->mem.hook = fake_read;
    pp_hs_methods_init(p);
    p->L = PP_TEST_HS_METHOD_LAYOUT;
}

static inline void fake_close(pp_hs_proc *p)
{
    pp_hs_close(p);
    free(mem);
}

#endif
