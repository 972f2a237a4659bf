/* The methods a compiled Java frame inlined (runtimes/java/hotspot_scopes.c): a synthetic
 * nmethod in the test's own memory (JDK 25's layout: PcDescs and scopes data in its immutable
 * data, the metadata in its mutable data; JDK 17's: all three in the nmethod), read through the
 * real reader. Three scopes (outer inlined mid, mid inlined inner) at a call's return address,
 * HotSpot's approximate lookup (the first PcDesc at or after the pc), the stream's two
 * encodings, and malformed debug information giving no chain, never a crash or another chain. */
#include "hotspot_fake_mem.h"
#include "runtimes/java/walker.h"

/* HotSpot's writer (UNSIGNED5::write_uint; CompressedWriteStream::write_int before JDK 20 with
 * x = 0): v into b, returns the bytes written. */
static size_t u5_write(uint8_t *b, uint32_t v, unsigned x)
{
    const uint32_t low = 256 - 64 - x;
    for (size_t i = 0;; i++) {
        if (v < low || i == 4) {
            b[i] = (uint8_t)(v + x);
            return i + 1;
        }
        v -= low;
        b[i] = (uint8_t)(x + low + (v & 63));
        v >>= 6;
    }
}

#define NM (FAKE_BASE + 0x100) /* the synthetic nmethod (hotspot_fake.h's fields) */
#define NM_SIZE 0x1000
#define CODE_OFF 0x100
#define IMM (FAKE_BASE + 0x2000) /* 25 */
#define MUT (FAKE_BASE + 0x3000)
#define RELOC 0x20
#define M_OUT (FAKE_BASE + 0x4000)
#define M_MID (FAKE_BASE + 0x5000)
#define M_IN (FAKE_BASE + 0x6000)

/* PcDescs (pc offsets from code_begin): the lower sentinel, a safepoint in outer only, the call
 * in inner (a return address), a poll in mid, the upper sentinel */
#define NPCS 5
static const int32_t pcs_pc[NPCS] = {-1, 0x10, 0x40, 0x80, INT32_MAX};

typedef struct built {
    uint64_t pcs, data, meta; /* where each section starts */
    uint32_t data_len;
    uint32_t off_out, off_mid, off_in; /* the scopes' decode offsets */
} built;

static void pcdesc(const built *b, int i, int32_t pc, int32_t scope)
{
    put32(b->pcs + (uint64_t)i * 16, pc);
    put32(b->pcs + (uint64_t)i * 16 + 4, scope);
}

/* Appends a scope (sender, metadata index, bci) at *at: its decode offset. */
static uint32_t scope(const built *b, uint32_t *at, uint32_t sender, uint32_t idx, unsigned x)
{
    uint8_t buf[32];
    size_t n = u5_write(buf, sender, x);
    n += u5_write(buf + n, idx, x);
    n += u5_write(buf + n, 7 + 1, x); /* bci 7 (InvocationEntryBci is -1) */
    n += u5_write(buf + n, 0, x);     /* locals, expressions, monitors: none */
    n += u5_write(buf + n, 0, x);
    n += u5_write(buf + n, 0, x);
    uint32_t off = *at;
    put(b->data + off, buf, n);
    *at += (uint32_t)n;
    return off;
}

/* Lays out the nmethod in the layout of p (JDK 25 or 17); returns where things went. */
static built build(pp_hs_proc *p)
{
    bool j25 = p->L.major >= 25;
    unsigned x = p->L.major >= 20;
    built b = {0};
    uint32_t pcs_bytes = NPCS * 16, data_len = 0x400;
    put32(NM + PP_TEST_NM_SIZE, NM_SIZE);
    put64(NM + PP_TEST_NM_METHOD, M_OUT);
    put32(NM + PP_TEST_NM_LEVEL, 4); /* C2 */
    if (j25) {
        b.pcs = IMM + 0x10;
        b.data = b.pcs + pcs_bytes;
        b.meta = MUT + RELOC;
        put32(NM + PP_TEST_NM_CODE_OFF, CODE_OFF);
        put64(NM + PP_TEST_NM_IMM, IMM);
        put32(NM + PP_TEST_NM_PCS, 0x10);
        put32(NM + PP_TEST_NM_SD_OFF, (int32_t)(0x10 + pcs_bytes));
        put32(NM + PP_TEST_NM_IMM_SIZE, (int32_t)(0x10 + pcs_bytes + data_len));
        put64(NM + PP_TEST_NM_MUT, MUT);
        put32(NM + PP_TEST_NM_RELOC, RELOC);
        put32(NM + PP_TEST_NM_MUT_SIZE, RELOC + 3 * 8);
    } else {
        b.meta = NM + 0x400;
        b.data = b.meta + 3 * 8;
        b.pcs = b.data + data_len;
        put64(NM + PP_TEST_NM_CODE_BEGIN, NM + CODE_OFF);
        put32(NM + PP_TEST_NM_META_OFF, 0x400);
        put64(NM + PP_TEST_NM_SD_BEGIN, b.data);
        put32(NM + PP_TEST_NM_PCS, (int32_t)(b.pcs - NM));
        put32(NM + PP_TEST_NM_DEPS, (int32_t)(b.pcs - NM + pcs_bytes));
    }
    b.data_len = data_len;
    put64(b.meta, M_OUT);
    put64(b.meta + 8, M_MID);
    put64(b.meta + 16, M_IN);
    uint32_t at = 1; /* offset 0 is the serialized null */
    b.off_out = scope(&b, &at, 0, 1, x);
    b.off_mid = scope(&b, &at, b.off_out, 2, x);
    b.off_in = scope(&b, &at, b.off_mid, 3, x);
    const int32_t sc[NPCS] = {0, (int32_t)b.off_out, (int32_t)b.off_in, (int32_t)b.off_mid, 0};
    for (int i = 0; i < NPCS; i++)
        pcdesc(&b, i, pcs_pc[i], sc[i]);
    return b;
}

static void open_fake(pp_hs_proc *p, int major)
{
    fake_open(p);
    pp_test_hs_scopes_layout(&p->L, major);
}

/* The chain at pc (from code_begin) of the nmethod whose method is m: its length, or -1. */
static int chain(pp_hs_proc *p, uint32_t pc, uint64_t m, uint64_t *out)
{
    const char *why = "unset";
    pp_rmem_begin_sample(&p->mem);
    int n = pp_hs_inlined(p, NM, m, CODE_OFF + pc, out, PP_HS_MAX_INLINE, &why);
    cr_expect((n < 0) == (why != NULL), "n %d, why %s", n, why ? why : "NULL");
    return n;
}

Test(hotspot_scopes, unsigned5_values_round_trip_in_both_encodings)
{
    static const uint32_t vals[] = {0,    1,     190,   191,      192,      255,       256,
                                    4000, 12287, 12288, 1u << 20, 1u << 26, 0x7fffffff};
    for (unsigned x = 0; x <= 1; x++)
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
            uint8_t b[8];
            size_t n = u5_write(b, vals[i], x), pos = 0;
            uint32_t v = 0;
            cr_expect_eq(pp_hs_u5_read(b, n, &pos, x, &v), 0, "x %u, %u", x, vals[i]);
            cr_expect_eq(v, vals[i], "x %u: %u read as %u", x, vals[i], v);
            cr_expect_eq(pos, n);
            pos = 0; /* cut short: never read past the end */
            if (n > 1)
                cr_expect_eq(pp_hs_u5_read(b, n - 1, &pos, x, &v), -1);
        }
    /* the encodings differ: 0 is the byte 0 (JDK 17) or 1 (20+: 0 is excluded, a null) */
    uint8_t z = 0, one = 1;
    size_t pos = 0;
    uint32_t v = 9;
    cr_expect_eq(pp_hs_u5_read(&z, 1, &pos, 0, &v), 0);
    cr_expect_eq(v, 0);
    pos = 0;
    cr_expect_eq(pp_hs_u5_read(&z, 1, &pos, 1, &v), -1);
    pos = 0;
    cr_expect_eq(pp_hs_u5_read(&one, 1, &pos, 1, &v), 0);
    cr_expect_eq(v, 0);
}

static void check_chains(int major)
{
    pp_hs_proc p;
    open_fake(&p, major);
    build(&p);
    uint64_t out[PP_HS_MAX_INLINE];
    /* at the call in inner (its return address): inner, mid, outer */
    cr_assert_eq(chain(&p, 0x40, M_OUT, out), 3, "JDK %d", major);
    cr_expect(out[0] == M_IN && out[1] == M_MID && out[2] == M_OUT);
    /* approximate: the next debug point's scopes */
    cr_expect_eq(chain(&p, 0x11, M_OUT, out), 3);
    cr_expect_eq(out[0], M_IN);
    cr_expect_eq(chain(&p, 0x41, M_OUT, out), 2);
    cr_expect(out[0] == M_MID && out[1] == M_OUT);
    cr_expect_eq(chain(&p, 0x80, M_OUT, out), 2);
    cr_expect_eq(chain(&p, 0x5, M_OUT, out), 1);
    cr_expect_eq(out[0], M_OUT);
    /* past the last debug point: the upper sentinel, no scopes: the method alone */
    cr_expect_eq(chain(&p, 0x81, M_OUT, out), 1);
    cr_expect_eq(out[0], M_OUT);
    /* a pc before the code (in the nmethod's header) */
    const char *why;
    cr_expect_eq(pp_hs_inlined(&p, NM, M_OUT, CODE_OFF - 1, out, PP_HS_MAX_INLINE, &why), -1);
    fake_close(&p);
}

Test(hotspot_scopes, three_levels_at_a_call_and_the_next_debug_point_elsewhere_jdk25)
{
    check_chains(25);
}

Test(hotspot_scopes, three_levels_at_a_call_and_the_next_debug_point_elsewhere_jdk17)
{
    check_chains(17);
}

Test(hotspot_scopes, a_version_of_unknown_layout_gives_no_chain)
{
    pp_hs_proc p;
    open_fake(&p, 25);
    build(&p);
    p.L.major = 23; /* the sections moved in steps in 23 and 24 */
    uint64_t out[PP_HS_MAX_INLINE];
    cr_expect_eq(pp_hs_scopes_layout(&p.L), PP_HS_SCOPES_NONE);
    cr_expect_eq(chain(&p, 0x40, M_OUT, out), -1);
    fake_close(&p);
}

/* One malformation of the built nmethod, then the lookup at the call in inner. */
typedef void (*breaker)(pp_hs_proc *p, const built *b);

static void pcs_after_data(pp_hs_proc *p, const built *b)
{
    (void)b;
    put32(NM + p->L.nm_scopes_pcs, 0x400); /* past the scopes data's start (its end in 17) */
}
static void sections_past_the_blob(pp_hs_proc *p, const built *b)
{
    (void)b;
    if (p->L.major >= 25)
        put32(NM + PP_TEST_NM_IMM_SIZE, 64 << 20);
    else
        put32(NM + PP_TEST_NM_DEPS, NM_SIZE + 16);
}
static void pcs_not_whole(pp_hs_proc *p, const built *b)
{
    (void)b;
    put32(NM + PP_TEST_NM_PCS, 0x14 + (p->L.major >= 25 ? 0 : (int32_t)(b->pcs - NM) - 0x10));
}
static void scope_outside(pp_hs_proc *p, const built *b)
{
    (void)p;
    pcdesc(b, 2, 0x40, (int32_t)b->data_len + 3);
}
static void scope_negative(pp_hs_proc *p, const built *b)
{
    (void)p;
    pcdesc(b, 2, 0x40, -5);
}
static void sender_loop(pp_hs_proc *p, const built *b)
{
    uint8_t buf[8];
    size_t n = u5_write(buf, b->off_in, p->L.major >= 20); /* inner's sender: itself */
    cr_assert_eq(n, 1);
    put(b->data + b->off_in, buf, n);
}
static void sender_later(pp_hs_proc *p, const built *b)
{
    unsigned x = p->L.major >= 20;
    uint32_t at = 100, later = scope(b, &at, 0, 1, x); /* outer's scope again, after inner's */
    uint8_t buf[16];
    size_t n = u5_write(buf, later, x); /* mid's sender: that one */
    n += u5_write(buf + n, 2, x);
    cr_assert(later > b->off_in && n <= 6);
    put(b->data + b->off_mid, buf, n);
}
static void method_index_zero(pp_hs_proc *p, const built *b)
{
    uint8_t v = p->L.major >= 20;
    put(b->data + b->off_in + 1, &v, 1);
}
static void method_index_past(pp_hs_proc *p, const built *b)
{
    uint8_t v = (uint8_t)(4 + (p->L.major >= 20));
    put(b->data + b->off_in + 1, &v, 1);
}
static void truncated(pp_hs_proc *p, const built *b)
{
    (void)p;
    uint8_t cont = 0xff; /* a value that goes on past the data's end */
    put(b->data + b->data_len - 1, &cont, 1);
    pcdesc(b, 2, 0x40, (int32_t)b->data_len - 1);
}
static void null_method(pp_hs_proc *p, const built *b)
{
    (void)p;
    put64(b->meta + 8, 0);
}
static void not_the_nmethods_method(pp_hs_proc *p, const built *b)
{
    (void)p;
    put64(b->meta, M_MID); /* the outermost scope's method */
}
static void no_nmethod(pp_hs_proc *p, const built *b)
{
    (void)b;
    put32(NM + p->L.blob_size, 0);
}

Test(hotspot_scopes, malformed_debug_information_gives_no_chain)
{
    static const struct {
        const char *name;
        breaker f;
    } cases[] = {
        {"PcDescs after the scopes data", pcs_after_data},
        {"a section past its bounds", sections_past_the_blob},
        {"PcDescs not a whole number", pcs_not_whole},
        {"a decode offset outside the data", scope_outside},
        {"a negative decode offset", scope_negative},
        {"a scope its own sender", sender_loop},
        {"a sender after its scope", sender_later},
        {"metadata index 0 (null)", method_index_zero},
        {"metadata index past the metadata", method_index_past},
        {"a stream cut short", truncated},
        {"a null method in the metadata", null_method},
        {"outermost scope not the nmethod's method", not_the_nmethods_method},
        {"no nmethod (size 0)", no_nmethod},
    };
    for (int major = 17; major <= 25; major += 8)
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            pp_hs_proc p;
            open_fake(&p, major);
            built b = build(&p);
            uint64_t out[PP_HS_MAX_INLINE];
            cr_assert_eq(chain(&p, 0x40, M_OUT, out), 3, "JDK %d: intact before: %s", major,
                         cases[i].name);
            cases[i].f(&p, &b);
            cr_expect_eq(chain(&p, 0x40, M_OUT, out), -1, "JDK %d: %s", major, cases[i].name);
            fake_close(&p);
        }
}

/* A chain of n scopes (each inlining the next, all outer's method): PP_HS_MAX_INLINE are read,
 * one more is not (nor its first PP_HS_MAX_INLINE). */
static int deep(int n)
{
    pp_hs_proc p;
    open_fake(&p, 25);
    built b = build(&p);
    uint32_t at = 1, off = b.off_out = scope(&b, &at, 0, 1, 1);
    for (int i = 1; i < n; i++)
        off = scope(&b, &at, off, 1, 1);
    cr_assert(at < b.data_len);
    pcdesc(&b, 2, 0x40, (int32_t)off);
    uint64_t out[PP_HS_MAX_INLINE];
    int got = chain(&p, 0x40, M_OUT, out);
    fake_close(&p);
    return got;
}

Test(hotspot_scopes, at_most_max_inline_scopes)
{
    cr_expect_eq(deep(PP_HS_MAX_INLINE), PP_HS_MAX_INLINE);
    cr_expect_eq(deep(PP_HS_MAX_INLINE + 1), -1);
}

static void lay_methods(void)
{
    pp_test_hs_method(put, M_OUT, M_OUT + 0x100, FAKE_BASE + 0x9000, "pkg/Outer", "outer", "()V");
    pp_test_hs_method(put, M_MID, M_MID + 0x100, FAKE_BASE + 0x9100, "pkg/Mid", "mid", "(I)V");
    pp_test_hs_method(put, M_IN, M_IN + 0x100, FAKE_BASE + 0x9200, "pkg/In", "inner", "(J)J");
}

/* The walker's data for the synthetic nmethod: its segment index 3 */
#define HEAPBLOCK 16
#define SEG 3
static const struct pp_hotspot_info nm_in = {
    .code_lo = NM - HEAPBLOCK - (SEG << 7), .log2seg = 7, .heapblock_size = HEAPBLOCK};

/* The texts of the compiled frame of Method* M_OUT recorded at pc (from code_begin) with check,
 * its nmethod's segment index seg. */
static size_t texts(pp_hs_proc *p, uint32_t pc, unsigned check, unsigned seg,
                    char (*out)[PP_JAVA_FRAME_TEXT], const char **why)
{
    pp_rmem_begin_sample(&p->mem);
    pc += CODE_OFF;
    return pp_java_frame_texts(p, &nm_in, PP_HSW_W0_PC(M_OUT, pc, seg),
                               PP_HSW_WORD_SEG('j', check, M_OUT, pc, seg), out, PP_HS_MAX_INLINE,
                               why);
}

Test(hotspot_scopes, a_compiled_frame_is_named_with_its_inlined_methods_root_first)
{
    pp_hs_proc p;
    open_fake(&p, 25);
    build(&p);
    lay_methods();
    unsigned check = pp_hsw_check(M_OUT + 0x100, FAKE_BASE + 0x9000, PP_TEST_HS_IDX);
    static char out[PP_HS_MAX_INLINE][PP_JAVA_FRAME_TEXT];
    const char *why;
    cr_assert_eq(texts(&p, 0x40, check, SEG, out, &why), 3);
    cr_expect_str_eq(out[0], "pkg/Outer.outer()V_[j]");
    cr_expect_str_eq(out[1], "pkg/Mid.mid(I)V_[i]");
    cr_expect_str_eq(out[2], "pkg/In.inner(J)J_[i]");
    cr_expect_null(why);
    cr_expect_eq(texts(&p, 0x41, check, SEG, out, &why), 2);
    cr_expect_str_eq(out[1], "pkg/Mid.mid(I)V_[i]");
    /* the pc unknown (it did not fit the words): the frame alone */
    pp_rmem_begin_sample(&p.mem);
    cr_expect_eq(pp_java_frame_texts(&p, &nm_in, M_OUT, PP_HSW_WORD('j', check), out, 8, &why), 1);
    /* the nmethod there now is another method's (flushed and reused since the sample): the
     * frame alone, named by its Method* */
    cr_expect_eq(texts(&p, 0x40, check, SEG + 1, out, &why), 1);
    cr_expect_str_eq(out[0], "pkg/Outer.outer()V_[j]");
    cr_expect_not_null(why);
    /* the nmethod there now is a compilation of another tier (C1): the frame alone */
    put32(NM + PP_TEST_NM_LEVEL, 3);
    cr_expect_eq(texts(&p, 0x40, check, SEG, out, &why), 1);
    cr_expect_not_null(why);
    put32(NM + PP_TEST_NM_LEVEL, 4);
    /* the Method* is not the method recorded (its class unloaded, reused): nothing named */
    cr_expect_eq(texts(&p, 0x40, check ^ 2, SEG, out, &why), 0);
    /* an inlined method that is no method now: the frame alone, and why */
    memset(mem + (M_MID + 0x100 - FAKE_BASE), 0, 64);
    pp_hs_methods_free(&p);
    pp_hs_methods_init(&p);
    cr_expect_eq(texts(&p, 0x40, check, SEG, out, &why), 1);
    cr_expect_str_eq(out[0], "pkg/Outer.outer()V_[j]");
    cr_expect_not_null(why);
    fake_close(&p);
}
