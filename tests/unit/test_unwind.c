/* Unit tests: the user-space native unwinder (runtimes/unwind/unwind.c) on synthetic rows and
 * stacks: CFI rules (rsp, rbp, saved rbp, PLT), the sigreturn frame, frame-pointer fallback
 * (counted), stops (end, unmapped return address, short stack copy, a CFA that does not move
 * up, the frame cap) and that it never reads outside the copied stack (ASan: the copy is an
 * exact-size allocation). */
#include "tests/unit/testutil.h"

#include "runtimes/unwind/cfipack.h"
#include "runtimes/unwind/unwind.h"

TestSuite(unwind, .init = pp_test_quiet_log);

/* Synthetic code: functions at fixed addresses, each with one row (or none). */
#define TEXT_LO 0x400000u
#define TEXT_HI 0x500000u
#define BASE 0x7ffd0000u /* the copied stack's address (= rsp at the sample) */

typedef struct fn {
    uint64_t lo, hi;
    pp_cfi_row row;
    int has_row;
} fn;

typedef struct code {
    fn f[8];
    size_t n;
    uint64_t lookups_outside; /* lookups of pcs in no executable mapping */
} code;

static int lookup(void *arg, uint64_t pc, pp_cfi_row *row)
{
    code *c = arg;
    *row = (pp_cfi_row){.kind = PP_CFI_NONE};
    if (pc < TEXT_LO || pc >= TEXT_HI) {
        c->lookups_outside++;
        return 0;
    }
    for (size_t i = 0; i < c->n; i++)
        if (pc >= c->f[i].lo && pc < c->f[i].hi && c->f[i].has_row)
            *row = c->f[i].row;
    return 1;
}

static void add_fn(code *c, uint64_t lo, uint64_t hi, int kind, int32_t cfa_off, int32_t rbp_off)
{
    c->f[c->n++] = (fn){lo, hi, {lo, (uint8_t)kind, cfa_off, rbp_off}, kind >= 0};
}

/* A stack image: 8-byte slots from BASE. */
typedef struct img {
    uint64_t *w;
    size_t nwords;
} img;

static img img_new(size_t nwords)
{
    img m = {calloc(nwords, 8), nwords};
    cr_assert_not_null(m.w);
    return m;
}
static void put(img *m, uint64_t addr, uint64_t v)
{
    cr_assert(addr >= BASE && (addr - BASE) / 8 < m->nwords);
    m->w[(addr - BASE) / 8] = v;
}
/* An exact-size copy, so that any read past its end is an ASan finding. */
static uint8_t *copy_of(const img *m, size_t len)
{
    uint8_t *b = malloc(len ? len : 1);
    cr_assert_not_null(b);
    memcpy(b, m->w, len);
    return b;
}

#define F_LEAF 0x401000u
#define F_MID 0x402000u
#define F_MAIN 0x403000u
#define F_START 0x404000u

/* leaf (rsp+16, leaf pushed one register) <- mid (rsp+32, saved rbp at CFA-16) <- main (rbp
 * based: CFA = rbp+16) <- _start (END). */
Test(unwind, follows_rsp_rbp_and_saved_rbp_rules_to_the_end)
{
    code c = {0};
    add_fn(&c, F_LEAF, F_LEAF + 0x100, PP_CFI_RSP, 16, 0);
    add_fn(&c, F_MID, F_MID + 0x100, PP_CFI_RSP, 32, -16);
    add_fn(&c, F_MAIN, F_MAIN + 0x100, PP_CFI_RBP, 16, -16);
    add_fn(&c, F_START, F_START + 0x100, PP_CFI_END, 0, 0);
    img m = img_new(64);
    /* leaf frame: CFA = BASE + 16, return address at BASE + 8 */
    put(&m, BASE + 8, F_MID + 0x20);
    /* mid frame: CFA = BASE + 48, rbp saved at BASE + 32, return address at BASE + 40 */
    uint64_t main_rbp = BASE + 0x100;
    put(&m, BASE + 32, main_rbp);
    put(&m, BASE + 40, F_MAIN + 0x30);
    /* main frame: CFA = rbp + 16, saved rbp at rbp, return address at rbp + 8 */
    put(&m, main_rbp, 0x1234);
    put(&m, main_rbp + 8, F_START + 0x10);
    uint8_t *stack = copy_of(&m, 64 * 8);
    pp_unwind_regs regs = {.ip = F_LEAF + 5, .sp = BASE, .bp = 0xdead /* clobbered */};
    uint64_t ips[PP_UNWIND_MAX_FRAMES];
    pp_unwind_result r = pp_unwind(&regs, stack, 64 * 8, lookup, &c, ips, PP_UNWIND_MAX_FRAMES);
    cr_assert_eq(r.n, 4);
    cr_assert_eq(ips[0], F_LEAF + 5, "the leaf is the sampled ip itself");
    cr_assert_eq(ips[1], F_MID + 0x1f, "a caller is named by its call: return address - 1");
    cr_assert_eq(ips[2], F_MAIN + 0x2f);
    cr_assert_eq(ips[3], F_START + 0xf);
    cr_assert_eq(r.stop, PP_UNWIND_END);
    cr_assert(pp_unwind_complete(&r));
    cr_assert_eq(r.cfi_steps, 3);
    cr_assert_eq(r.fp_steps, 0);
    free(stack);
    free(m.w);
}

/* A frame without a row (JIT code) is stepped by frame pointers and counted; CFI resumes. */
Test(unwind, falls_back_to_frame_pointers_for_a_frame_without_rows)
{
    code c = {0};
    add_fn(&c, F_LEAF, F_LEAF + 0x100, -1, 0, 0); /* no row */
    add_fn(&c, F_MID, F_MID + 0x100, PP_CFI_RSP, 24, 0);
    add_fn(&c, F_START, F_START + 0x100, PP_CFI_END, 0, 0);
    img m = img_new(64);
    uint64_t rbp = BASE + 0x40;
    put(&m, rbp, 0x5555);           /* the caller's rbp */
    put(&m, rbp + 8, F_MID + 0x10); /* return address */
    /* mid: sp = rbp + 16 = BASE + 0x50, CFA = sp + 24, return address at BASE + 0x60 */
    put(&m, BASE + 0x60, F_START + 4);
    uint8_t *stack = copy_of(&m, 64 * 8);
    pp_unwind_regs regs = {.ip = F_LEAF + 1, .sp = BASE, .bp = rbp};
    uint64_t ips[PP_UNWIND_MAX_FRAMES];
    pp_unwind_result r = pp_unwind(&regs, stack, 64 * 8, lookup, &c, ips, PP_UNWIND_MAX_FRAMES);
    cr_assert_eq(r.n, 3);
    cr_assert_eq(ips[1], F_MID + 0xf);
    cr_assert_eq(ips[2], F_START + 3);
    cr_assert_eq(r.fp_steps, 1, "the frame without a row is counted");
    cr_assert_eq(r.cfi_steps, 1);
    cr_assert_eq(r.stop, PP_UNWIND_END);
    free(stack);
    free(m.w);
}

/* The PLT rule: CFA = rsp + 8, plus 8 from the 11th byte of a 16-byte entry on (after the
 * entry's push). */
Test(unwind, follows_the_plt_rule)
{
    for (int late = 0; late < 2; late++) {
        code c = {0};
        add_fn(&c, 0x401000, 0x401100, PP_CFI_PLT, 0, 0);
        add_fn(&c, F_MAIN, F_MAIN + 0x100, PP_CFI_END, 0, 0);
        img m = img_new(8);
        put(&m, BASE + (late ? 8 : 0), F_MAIN + 0x40);
        put(&m, BASE + (late ? 0 : 8), 0x9999); /* the pushed GOT index, or garbage */
        uint8_t *stack = copy_of(&m, 64);
        pp_unwind_regs regs = {.ip = 0x401020 + (late ? 11 : 6), .sp = BASE, .bp = 0};
        uint64_t ips[4];
        pp_unwind_result r = pp_unwind(&regs, stack, 64, lookup, &c, ips, 4);
        cr_assert_eq(r.n, 2, "late=%d", late);
        cr_assert_eq(ips[1], F_MAIN + 0x3f, "late=%d", late);
        free(stack);
        free(m.w);
    }
}

/* A signal handler returns to __restore_rt's first byte: that frame (named by its own address,
 * not the byte before, which belongs to another function) takes rbp, rsp and rip from the
 * ucontext at rsp; the interrupted function is named by its exact ip. */
Test(unwind, reaches_the_interrupted_function_through_the_signal_frame)
{
    code c = {0};
    const uint64_t restore_rt = 0x405010;
    add_fn(&c, F_LEAF, F_LEAF + 0x100, PP_CFI_RSP, 8, 0);        /* the handler */
    add_fn(&c, restore_rt - 0x10, restore_rt, PP_CFI_RSP, 8, 0); /* the function before */
    add_fn(&c, restore_rt, restore_rt + 0x10, PP_CFI_SIGRETURN, 0, 0);
    add_fn(&c, F_MID, F_MID + 0x100, PP_CFI_RBP, 16, -16); /* the interrupted one */
    add_fn(&c, F_START, F_START + 0x100, PP_CFI_END, 0, 0);
    img m = img_new(128);
    put(&m, BASE, restore_rt); /* the handler's return address: rsp at __restore_rt = BASE + 8 */
    uint64_t uc = BASE + 8, irbp = BASE + 0x300, irsp = BASE + 0x2f0;
    put(&m, uc + PP_SIGFRAME_RBP, irbp);
    put(&m, uc + PP_SIGFRAME_RSP, irsp);
    put(&m, uc + PP_SIGFRAME_RIP, F_MID + 0x44);
    put(&m, irbp, 0);
    put(&m, irbp + 8, F_START + 8);
    uint8_t *stack = copy_of(&m, 128 * 8);
    pp_unwind_regs regs = {.ip = F_LEAF + 2, .sp = BASE, .bp = 7};
    uint64_t ips[PP_UNWIND_MAX_FRAMES];
    pp_unwind_result r = pp_unwind(&regs, stack, 128 * 8, lookup, &c, ips, PP_UNWIND_MAX_FRAMES);
    cr_assert_eq(r.n, 4, "n=%zu stop=%d", r.n, r.stop);
    cr_assert_eq(ips[1], restore_rt, "the trampoline frame is its own address");
    cr_assert_eq(ips[2], F_MID + 0x44, "the interrupted ip is exact, not a return address");
    cr_assert_eq(ips[3], F_START + 7);
    cr_assert_eq(r.stop, PP_UNWIND_END);
    free(stack);
    free(m.w);
}

/* A return address in no executable mapping is never a frame: the walk stops there. */
Test(unwind, never_names_a_frame_outside_an_executable_mapping)
{
    code c = {0};
    add_fn(&c, F_LEAF, F_LEAF + 0x100, PP_CFI_RSP, 8, 0);
    img m = img_new(8);
    put(&m, BASE, 0x7f0000001234); /* garbage: a stack address */
    uint8_t *stack = copy_of(&m, 64);
    pp_unwind_regs regs = {.ip = F_LEAF, .sp = BASE, .bp = 0};
    uint64_t ips[8];
    pp_unwind_result r = pp_unwind(&regs, stack, 64, lookup, &c, ips, 8);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.stop, PP_UNWIND_UNMAPPED);
    cr_assert_not(pp_unwind_complete(&r), "counted as truncated");
    /* nor the leaf itself */
    regs.ip = 0x1000;
    r = pp_unwind(&regs, stack, 64, lookup, &c, ips, 8);
    cr_assert_eq(r.n, 0);
    free(stack);
    free(m.w);
}

/* Reads stay inside the copied stack: a CFA, saved rbp or frame pointer beyond its end stops the
 * walk (the copy is exactly len bytes: ASan fails any read past it). */
Test(unwind, reads_only_inside_the_copied_stack)
{
    code c = {0};
    add_fn(&c, F_LEAF, F_LEAF + 0x100, PP_CFI_RSP, 64, 0);
    add_fn(&c, F_MID, F_MID + 0x100, -1, 0, 0);
    img m = img_new(16);
    put(&m, BASE + 56, F_MID + 1);
    uint8_t *stack = copy_of(&m, 60); /* the return address's slot is cut in the middle */
    pp_unwind_regs regs = {.ip = F_LEAF, .sp = BASE, .bp = BASE + 8};
    uint64_t ips[8];
    pp_unwind_result r = pp_unwind(&regs, stack, 60, lookup, &c, ips, 8);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.stop, PP_UNWIND_STACK_SHORT);
    free(stack);
    stack = copy_of(&m, 64); /* now whole; mid's frame pointer points past the copy */
    regs.bp = BASE + 4096;
    r = pp_unwind(&regs, stack, 64, lookup, &c, ips, 8);
    cr_assert_eq(r.n, 2);
    cr_assert_eq(r.stop, PP_UNWIND_STACK_SHORT);
    regs.bp = BASE - 64; /* below the copy */
    r = pp_unwind(&regs, stack, 64, lookup, &c, ips, 8);
    cr_assert_eq(r.stop, PP_UNWIND_STACK_SHORT);
    cr_assert_eq(pp_unwind(&regs, stack, 0, lookup, &c, ips, 8).stop, PP_UNWIND_STACK_SHORT);
    free(stack);
    free(m.w);
}

/* A CFA at or below the current rsp (a hostile or wrong row, a frame-pointer loop) stops. */
Test(unwind, stops_at_a_cfa_that_does_not_move_up)
{
    code c = {0};
    add_fn(&c, F_LEAF, F_LEAF + 0x100, PP_CFI_RBP, 16, 0);
    add_fn(&c, F_MID, F_MID + 0x100, -1, 0, 0);
    img m = img_new(16);
    uint8_t *stack = copy_of(&m, 128);
    pp_unwind_regs regs = {.ip = F_LEAF, .sp = BASE + 64, .bp = BASE};
    uint64_t ips[8];
    pp_unwind_result r = pp_unwind(&regs, stack + 64, 64, lookup, &c, ips, 8);
    cr_assert_eq(r.stop, PP_UNWIND_BAD_FRAME);
    cr_assert_eq(r.n, 1);
    free(stack);
    /* a frame-pointer chain that points at itself */
    img l = img_new(8);
    put(&l, BASE, BASE);
    put(&l, BASE + 8, F_MID + 1);
    stack = copy_of(&l, 64);
    regs = (pp_unwind_regs){.ip = F_MID, .sp = BASE, .bp = BASE};
    r = pp_unwind(&regs, stack, 64, lookup, &c, ips, 8);
    cr_assert_eq(r.stop, PP_UNWIND_BAD_FRAME);
    cr_assert_eq(r.n, 2);
    free(stack);
    free(m.w);
    free(l.w);
}

/* A deep recursion: at most PP_UNWIND_MAX_FRAMES frames, counted as truncated. */
Test(unwind, stops_at_the_frame_cap)
{
    code c = {0};
    add_fn(&c, F_MID, F_MID + 0x100, PP_CFI_RSP, 16, 0);
    size_t words = 2 * 300;
    img m = img_new(words);
    for (size_t i = 0; i < 300; i++)
        put(&m, BASE + 16 * i + 8, F_MID + 0x20);
    uint8_t *stack = copy_of(&m, words * 8);
    pp_unwind_regs regs = {.ip = F_MID, .sp = BASE, .bp = 0};
    uint64_t ips[PP_UNWIND_MAX_FRAMES + 10];
    pp_unwind_result r = pp_unwind(&regs, stack, words * 8, lookup, &c, ips, sizeof(ips) / 8);
    cr_assert_eq(r.n, PP_UNWIND_MAX_FRAMES);
    cr_assert_eq(r.stop, PP_UNWIND_MAX);
    free(stack);
    free(m.w);
}

/* ---- a real case: this test's own stack, with the rows pp_cfi_build compiles from the loaded
 * files (the test binary, libc, the sanitizer runtimes), against libgcc's unwinder
 * (backtrace(3)): the same callers. ---- */
#include <execinfo.h>
#include <link.h>
#include <pthread.h>

typedef struct real_obj {
    uint64_t lo, hi, bias; /* executable range, load bias */
    pp_cfi_packed t;       /* packed, as the per-file cache keeps them */
    int has_rows;
} real_obj;

typedef struct real_code {
    real_obj o[64];
    size_t n;
} real_code;

static int add_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    real_code *c = arg;
    for (int i = 0; i < info->dlpi_phnum && c->n < 64; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        real_obj *o = &c->o[c->n++];
        memset(o, 0, sizeof(*o));
        o->bias = info->dlpi_addr;
        o->lo = info->dlpi_addr + ph->p_vaddr;
        o->hi = o->lo + ph->p_memsz;
        const char *path = info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        char err[256];
        if (fd >= 0) {
            pp_cfi_table wide;
            if (pp_cfi_build(fd, &wide, err, sizeof(err)) >= 0) {
                o->has_rows = pp_cfi_pack(&wide, &o->t, err, sizeof(err)) == 0;
                pp_cfi_free(&wide);
            }
            close(fd);
        }
    }
    return 0;
}

static int real_lookup(void *arg, uint64_t pc, pp_cfi_row *row)
{
    real_code *c = arg;
    *row = (pp_cfi_row){.kind = PP_CFI_NONE};
    for (size_t i = 0; i < c->n; i++)
        if (pc >= c->o[i].lo && pc < c->o[i].hi) {
            if (c->o[i].has_rows)
                pp_cfi_packed_find(&c->o[i].t, pc - c->o[i].bias, row);
            return 1;
        }
    return 0;
}

typedef struct snap {
    pp_unwind_regs regs;
    uint8_t stack[8192];
    size_t len;
    void *bt[64];
    int nbt;
} snap;

/* Copies the raw stack, redzones included (as the kernel does for a sample). */
__attribute__((no_sanitize_address, noinline)) static void raw_copy(uint8_t *dst, uint64_t src,
                                                                    size_t n)
{
    const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
    for (size_t i = 0; i < n; i++)
        dst[i] = p[i];
}

__attribute__((noinline)) static void capture(snap *s)
{
    uint64_t sp, bp, ip;
    __asm__ volatile("mov %%rsp, %0\n\tmov %%rbp, %1\n\tlea 0(%%rip), %2"
                     : "=r"(sp), "=r"(bp), "=r"(ip));
    pthread_attr_t a;
    void *lo;
    size_t size;
    cr_assert_eq(pthread_getattr_np(pthread_self(), &a), 0);
    cr_assert_eq(pthread_attr_getstack(&a, &lo, &size), 0);
    pthread_attr_destroy(&a);
    uint64_t top = (uint64_t)(uintptr_t)lo + size;
    s->len = top - sp < sizeof(s->stack) ? (size_t)(top - sp) : sizeof(s->stack);
    raw_copy(s->stack, sp, s->len);
    s->regs = (pp_unwind_regs){.ip = ip, .sp = sp, .bp = bp};
    s->nbt = backtrace(s->bt, 64);
}

__attribute__((noinline)) static int depth_two(snap *s)
{
    capture(s);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return s->nbt;
}

__attribute__((noinline)) static int depth_one(snap *s)
{
    int n = depth_two(s);
    __asm__ volatile("" ::: "memory");
    return n + 1;
}

Test(unwind, real_stack_matches_libgcc_unwinder)
{
    static real_code c;
    c.n = 0;
    dl_iterate_phdr(add_obj, &c);
    snap *s = calloc(1, sizeof(*s));
    cr_assert_not_null(s);
    cr_assert_gt(depth_one(s), 4);
    uint64_t ips[PP_UNWIND_MAX_FRAMES];
    pp_unwind_result r =
        pp_unwind(&s->regs, s->stack, s->len, real_lookup, &c, ips, PP_UNWIND_MAX_FRAMES);
    /* ours: capture (the asm), then its callers: depth_two, depth_one, this test, Criterion...
     * backtrace()'s: possibly the sanitizer's interceptor, then capture (at the call to
     * backtrace), then the same callers: they must agree from there to libc's start. */
    for (size_t i = 0; getenv("PP_TEST_DEBUG") && i < r.n; i++)
        fprintf(stderr, "%zu ours %#lx bt %p\n", i, (unsigned long)ips[i],
                (int)i < s->nbt ? s->bt[i] : NULL);
    int j = 0;
    while (j < s->nbt && (uint64_t)(uintptr_t)s->bt[j] != ips[1] + 1)
        j++;
    size_t k = 1;
    for (; k < r.n && j < s->nbt && ips[k] + 1 == (uint64_t)(uintptr_t)s->bt[j]; k++, j++)
        ;
    cr_assert_eq(r.stop, PP_UNWIND_END, "stop %d", r.stop);
    cr_assert_eq(k, r.n, "only %zu of %zu frames agree with libgcc's (cfi %u fp %u)", k, r.n,
                 r.cfi_steps, r.fp_steps);
    cr_assert_eq(j, s->nbt, "libgcc found more frames");
    free(s);
    cr_assert_gt(r.cfi_steps, 3);
    for (size_t i = 0; i < c.n; i++)
        pp_cfi_packed_free(&c.o[i].t);
}
