/* The HotSpot in-sampler walker's user-space naming (runtimes/java/walker.h): a recorded frame
 * (Method*, type and the check of its identity: ConstMethod*, holder's name, indexes) is named
 * with its type's suffix only when that identity was read at the Method* (cached, or now); a
 * Method whose memory was reused by another method before it was read gives a lost-symbol
 * frame, never the other method's name. Synthetic memory. */
#include "hotspot_fake_mem.h"
#include "runtimes/java/walker.h"

static void method(uint64_t m, uint64_t cm, uint64_t ksym, const char *klass, const char *name,
                   const char *sig)
{
    pp_test_hs_method(put, m, cm, ksym, klass, name, sig);
}

static void open_fake(pp_hs_proc *p)
{
    fake_open(p);
}

/* The text of a frame recorded for Method* m when its ConstMethod was at cm and its holder's
 * name at ksym. */
static const char *text(pp_hs_proc *p, uint64_t m, char type, uint64_t cm, uint64_t ksym,
                        size_t *named)
{
    static char buf[PP_HS_TEXT_MAX + 8];
    pp_rmem_begin_sample(&p->mem); /* a drain */
    *named = pp_java_frame_text(p, m, PP_HSW_WORD(type, pp_hsw_check(cm, ksym, PP_TEST_HS_IDX)),
                                buf, sizeof(buf));
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
    fake_close(&p);
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
    fake_close(&p);
}

/* --java-mode builtin is served by the walker's backend, and so is auto (which hands what the
 * walker cannot take to async-profiler or JFR: builtin.c). */
Test(hotspot_walker, builtin_is_a_mode_and_auto_picks_it)
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
    cr_expect_str_eq(a->name, "builtin");
}
