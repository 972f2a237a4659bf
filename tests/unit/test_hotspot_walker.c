/* The HotSpot in-sampler walker's user-space naming (runtimes/java/walker.h): a recorded frame
 * (Method*, type and the check of its identity: ConstMethod*, holder's name, indexes) is named
 * with its type's suffix only when that identity was read at the Method* (cached, or now); a
 * Method whose memory was reused by another method before it was read gives a lost-symbol
 * frame, never the other method's name. Synthetic memory. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hotspot_fake.h"
#include "runtimes/java/walker.h"

#define FAKE_BASE 0x200000ull
#define FAKE_SIZE (64u << 10)

static uint8_t *mem;

static int fake_read(void *arg, uint64_t addr, void *buf, size_t len)
{
    (void)arg;
    if (addr < FAKE_BASE || addr + len > FAKE_BASE + FAKE_SIZE) {
        errno = EFAULT;
        return -1;
    }
    memcpy(buf, mem + (addr - FAKE_BASE), len);
    return 0;
}

static void put(uint64_t addr, const void *v, size_t n)
{
    cr_assert(addr >= FAKE_BASE && addr + n <= FAKE_BASE + FAKE_SIZE);
    memcpy(mem + (addr - FAKE_BASE), v, n);
}

static void put64(uint64_t addr, uint64_t v)
{
    put(addr, &v, 8);
}

static void symbol(uint64_t at, const char *s)
{
    uint16_t n = (uint16_t)strlen(s);
    put(at + 4, &n, 2);
    put(at + 6, s, n);
}

/* A method "klass.name sig" whose ConstMethod is at cm (its pool, holder and the name and
 * signature symbols laid out in the 4 KiB at cm), the Method at m pointing to it, its holder's
 * name the Symbol at ksym (symbols live apart from a class's metaspace). */
static void method(uint64_t m, uint64_t cm, uint64_t ksym, const char *klass, const char *name,
                   const char *sig)
{
    uint64_t cp = cm + 0x100, k = cm + 0x300, sy = cm + 0x400;
    put64(m + 8, cm);
    put64(cm + 8, cp);
    uint16_t ni = 1, si = 2;
    put(cm + 34, &ni, 2);
    put(cm + 36, &si, 2);
    put64(cp + 24, k);
    int32_t cplen = 3;
    put(cp + 60, &cplen, 4);
    symbol(ksym, klass);
    symbol(sy + 0x100, name);
    symbol(sy + 0x200, sig);
    put64(k + 24, ksym);
    put64(cp + 72 + 8, sy + 0x100);
    put64(cp + 72 + 16, sy + 0x200);
}

static void open_fake(pp_hs_proc *p)
{
    mem = calloc(1, FAKE_SIZE);
    cr_assert(mem);
    memset(p, 0, sizeof(*p));
    pp_rmem_init(&p->mem, 1);
    p->mem.hook = fake_read;
    pp_hs_methods_init(p);
    p->L = PP_TEST_HS_METHOD_LAYOUT;
}

static void close_fake(pp_hs_proc *p)
{
    pp_hs_close(p);
    free(mem);
}

#define IDX (1u | 2u << 16) /* the name and signature indexes method() lays out */

/* The text of a frame recorded for Method* m when its ConstMethod was at cm and its holder's
 * name at ksym. */
static const char *text(pp_hs_proc *p, uint64_t m, char type, uint64_t cm, uint64_t ksym,
                        size_t *named)
{
    static char buf[PP_HS_TEXT_MAX + 8];
    pp_rmem_begin_sample(&p->mem); /* a drain */
    *named =
        pp_java_frame_text(p, m, PP_HSW_WORD(type, pp_hsw_check(cm, ksym, IDX)), buf, sizeof(buf));
    return buf;
}

Test(hotspot_walker, frames_named_with_their_types_suffix)
{
    pp_hs_proc p;
    open_fake(&p);
    const uint64_t M = FAKE_BASE + 0x100, CM = FAKE_BASE + 0x1000, KA = FAKE_BASE + 0x8000;
    method(M, CM, KA, "pkg/A", "run", "(Ljava/lang/String;I)V");
    size_t named;
    static const struct {
        char type;
        const char *want;
    } cases[] = {{'0', "pkg/A.run(Ljava/lang/String|I)V_[0]"},
                 {'1', "pkg/A.run(Ljava/lang/String|I)V_[1]"},
                 {'j', "pkg/A.run(Ljava/lang/String|I)V_[j]"},
                 {'n', "pkg/A.run(Ljava/lang/String|I)V_[j]"}}; /* a native method's wrapper */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_expect_str_eq(text(&p, M, cases[i].type, CM, KA, &named), cases[i].want);
        cr_expect_eq(named, 1);
    }
    cr_expect_eq(pp_htab_count(&p.methods), 1); /* read once */
    close_fake(&p);
}

/* A class unloaded and its Method's memory reused by another method: a frame recorded while
 * the Method held a method is named as it, also after the reuse (its identity was seen); a frame
 * whose method was never read there is a lost symbol, never the method there now: whether the
 * ConstMethod's memory was reused too (loaders alike loading classes alike reuse both addresses:
 * only the holder's name tells) or not. An address that holds no method is a lost symbol too. */
Test(hotspot_walker, a_reused_method_is_never_named_as_the_other)
{
    pp_hs_proc p;
    open_fake(&p);
    const uint64_t M = FAKE_BASE + 0x100, M2 = FAKE_BASE + 0x200, CM1 = FAKE_BASE + 0x1000,
                   CM2 = FAKE_BASE + 0x3000, CM3 = FAKE_BASE + 0x5000, KA = FAKE_BASE + 0x8000,
                   KB = FAKE_BASE + 0x8100, KC = FAKE_BASE + 0x8200;
    method(M, CM1, KA, "pkg/A", "run", "()V");
    size_t named;
    cr_expect_str_eq(text(&p, M, 'j', CM1, KA, &named), "pkg/A.run()V_[j]");
    /* unloaded; the same memory now holds pkg/B.other, with another ConstMethod */
    method(M, CM2, KB, "pkg/B", "other", "(J)J");
    cr_expect_str_eq(text(&p, M, 'j', CM2, KB, &named), "pkg/B.other(J)J_[j]");
    cr_expect_eq(named, 1);
    cr_expect_str_eq(text(&p, M, '0', CM1, KA, &named), "pkg/A.run()V_[0]"); /* seen before */
    /* never read at M2 while there: pkg/A.run (ConstMethod CM3) sampled, then M2 and CM3 reused
     * by pkg/C.run()V before the drain */
    method(M2, CM3, KC, "pkg/C", "run", "()V");
    cr_expect_str_eq(text(&p, M2, 'j', CM3, KA, &named), "[lost symbol]_[j]");
    cr_expect_eq(named, 0);
    /* ... or by a method with another ConstMethod */
    cr_expect_str_eq(text(&p, M2, '1', CM1, KA, &named), "[lost symbol]_[1]");
    cr_expect_eq(named, 0);
    cr_expect_str_eq(text(&p, M2, 'j', CM3, KC, &named), "pkg/C.run()V_[j]");
    /* no method there (freed, zeroed) */
    put64(M + 0x48, 0);
    cr_expect_str_eq(text(&p, M + 0x40, '1', CM1, KA, &named), "[lost symbol]_[1]");
    cr_expect_eq(named, 0);
    cr_expect_eq(pp_htab_count(&p.methods), 3); /* A and B at M, C at M2 */
    close_fake(&p);
}

/* --java-mode builtin is served by the walker's backend; auto does not pick it (yet). */
Test(hotspot_walker, builtin_is_a_mode_auto_does_not_pick)
{
    const pp_runtime *rt = pp_runtime_get(PP_KIND_JAVA);
    cr_assert_not_null(rt);
    char why[256] = "";
    const pp_backend *b = pp_runtime_backend(rt, "builtin", why, sizeof(why));
    cr_assert_not_null(b, "%s", why);
    cr_expect_str_eq(b->name, "builtin");
    cr_expect(b->walks_new_processes);
    cr_expect(rt->walker == &pp_java_inwalker);
    const pp_backend *a = pp_runtime_backend(rt, "auto", why, sizeof(why));
    cr_assert_not_null(a, "%s", why);
    cr_expect_str_neq(a->name, "builtin");
}
