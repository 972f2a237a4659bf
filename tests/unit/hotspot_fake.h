/* The HotSpot unit tests' synthetic method layout (test_hotspot_layout, test_hotspot_walker): the
 * offsets of Method, ConstMethod, ConstantPool, Klass and Symbol fields the method namer reads,
 * for methods laid out in fake memory (not a real JVM's offsets). */
#ifndef PP_TEST_HOTSPOT_FAKE_H
#define PP_TEST_HOTSPOT_FAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtimes/java/hotspot.h"

#define PP_TEST_HS_METHOD_LAYOUT                                                                   \
    ((pp_hs_layout){.method_const = 8,                                                             \
                    .cm_constants = 8,                                                             \
                    .cm_name_index = 34,                                                           \
                    .cm_sig_index = 36,                                                            \
                    .cp_holder = 24,                                                               \
                    .cp_length = 60,                                                               \
                    .cp_size = 72,                                                                 \
                    .klass_name = 24,                                                              \
                    .sym_length = 4,                                                               \
                    .sym_body = 6})

/* The synthetic nmethod's fields the reader of inlined frames reads (test_hotspot_scopes,
 * fuzz_hotspot_scopes), offsets into it: JDK 25's (its sections apart) or JDK 17's (all in it). */
#define PP_TEST_NM_SIZE 8
#define PP_TEST_NM_CODE_OFF 12 /* 25: _code_offset */
#define PP_TEST_NM_IMM 16      /* 25: _immutable_data */
#define PP_TEST_NM_IMM_SIZE 24
#define PP_TEST_NM_PCS 28
#define PP_TEST_NM_SD_OFF 32 /* 25: _scopes_data_offset */
#define PP_TEST_NM_MUT 40
#define PP_TEST_NM_MUT_SIZE 48
#define PP_TEST_NM_RELOC 52
#define PP_TEST_NM_METHOD 56
#define PP_TEST_NM_CODE_BEGIN 64 /* 17: _code_begin */
#define PP_TEST_NM_SD_BEGIN 72   /* 17: _scopes_data_begin */
#define PP_TEST_NM_META_OFF 80   /* 17: _metadata_offset */
#define PP_TEST_NM_DEPS 84       /* 17: _dependencies_offset */
#define PP_TEST_NM_LEVEL 88      /* _comp_level */

/* L's version and nmethod and PcDesc fields for that nmethod (the method's left as they are). */
static inline void pp_test_hs_scopes_layout(pp_hs_layout *L, int major)
{
    bool j25 = major >= 25;
#define PICK(a, b) (j25 ? (a) : (b))
    L->major = major;
    L->blob_size = PP_TEST_NM_SIZE;
    L->nm_method = PP_TEST_NM_METHOD;
    L->nm_comp_level = PP_TEST_NM_LEVEL;
    L->nm_scopes_pcs = PP_TEST_NM_PCS;
    L->pcd_pc = 0;
    L->pcd_scope = 4;
    L->pcd_size = 16;
    L->blob_code_offset = PICK(PP_TEST_NM_CODE_OFF, PP_HS_NONE);
    L->nm_immutable_data = PICK(PP_TEST_NM_IMM, PP_HS_NONE);
    L->nm_imm_size = PICK(PP_TEST_NM_IMM_SIZE, PP_HS_NONE);
    L->nm_sd_offset = PICK(PP_TEST_NM_SD_OFF, PP_HS_NONE);
    L->blob_mutable = PICK(PP_TEST_NM_MUT, PP_HS_NONE);
    L->blob_mutable_size = PICK(PP_TEST_NM_MUT_SIZE, PP_HS_NONE);
    L->blob_reloc_size = PICK(PP_TEST_NM_RELOC, PP_HS_NONE);
    L->blob_code_begin = PICK(PP_HS_NONE, PP_TEST_NM_CODE_BEGIN);
    L->nm_sd_begin = PICK(PP_HS_NONE, PP_TEST_NM_SD_BEGIN);
    L->nm_metadata = PICK(PP_HS_NONE, PP_TEST_NM_META_OFF);
    L->nm_deps = PICK(PP_HS_NONE, PP_TEST_NM_DEPS);
#undef PICK
}

/* Writes n bytes at a fake address (the test's own memory behind an rmem hook). */
typedef void (*pp_test_put)(uint64_t addr, const void *v, size_t n);

static inline void pp_test_hs_symbol(pp_test_put put, uint64_t at, const char *s)
{
    uint16_t n = (uint16_t)strlen(s);
    put(at + 4, &n, 2);
    put(at + 6, s, n);
}

/* A method "klass.name sig" whose ConstMethod is at cm (its pool, holder and the name and
 * signature symbols laid out in the 4 KiB at cm), the Method at m pointing to it, its holder's
 * name the Symbol at ksym (symbols live apart from a class's metaspace). Its name and signature
 * indexes are 1 and 2 (PP_TEST_HS_IDX). */
#define PP_TEST_HS_IDX (1u | 2u << 16)
static inline void pp_test_hs_method(pp_test_put put, uint64_t m, uint64_t cm, uint64_t ksym,
                                     const char *klass, const char *name, const char *sig)
{
    uint64_t cp = cm + 0x100, k = cm + 0x300, sy = cm + 0x400, sn = sy + 0x100, ss = sy + 0x200;
    put(m + 8, &cm, 8);
    put(cm + 8, &cp, 8);
    uint16_t ni = 1, si = 2;
    put(cm + 34, &ni, 2);
    put(cm + 36, &si, 2);
    put(cp + 24, &k, 8);
    int32_t cplen = 3;
    put(cp + 60, &cplen, 4);
    pp_test_hs_symbol(put, ksym, klass);
    pp_test_hs_symbol(put, sn, name);
    pp_test_hs_symbol(put, ss, sig);
    put(k + 24, &ksym, 8);
    put(cp + 72 + 8, &sn, 8);
    put(cp + 72 + 16, &ss, 8);
}

#endif
