/* Packed unwind rows (cfipack.h). */
#include "runtimes/unwind/cfipack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDE_MAX ((size_t)1 << 24)

static bool fits(const pp_cfi_row *r)
{
    if (r->kind == PP_CFI_RSP || r->kind == PP_CFI_RBP)
        return r->cfa_off >= -32768 && r->cfa_off <= 32767 && r->rbp_off % 8 == 0 &&
               r->rbp_off >= -1024 && r->rbp_off <= 1016;
    return r->kind < PP_CFIPACK_WIDE && r->cfa_off == 0 && r->rbp_off == 0;
}

static uint64_t word(uint32_t pc, unsigned kind, uint64_t high)
{
    return (uint64_t)pc | ((uint64_t)(kind & 0xff) << 32) | (high << 40);
}

int pp_cfi_pack(const pp_cfi_table *t, pp_cfi_packed *p, char *err, size_t errsz)
{
    memset(p, 0, sizeof(*p));
    p->text_lo = t->text_lo;
    p->text_hi = t->text_hi;
    if (!t->n)
        return 0;
    p->base = t->rows[0].pc;
    if (t->rows[t->n - 1].pc - p->base > UINT32_MAX) {
        snprintf(err, errsz, "its code spans more than 4 GiB");
        return -1;
    }
    size_t nwide = 0;
    for (size_t i = 0; i < t->n; i++)
        nwide += !fits(&t->rows[i]);
    if (nwide >= WIDE_MAX) {
        snprintf(err, errsz, "%zu rows with offsets beyond the packed form", nwide);
        return -1;
    }
    p->rows = malloc(t->n * sizeof(*p->rows));
    p->wide = nwide ? malloc(nwide * sizeof(*p->wide)) : NULL;
    if (!p->rows || (nwide && !p->wide)) {
        pp_cfi_packed_free(p);
        snprintf(err, errsz, "out of memory packing %zu rows", t->n);
        return -1;
    }
    for (size_t i = 0; i < t->n; i++) {
        const pp_cfi_row *r = &t->rows[i];
        uint32_t pc = (uint32_t)(r->pc - p->base);
        if (!fits(r)) {
            p->wide[p->nwide] = *r;
            p->rows[i] = word(pc, PP_CFIPACK_WIDE, p->nwide++);
        } else {
            uint64_t high = (uint64_t)(uint8_t)(int8_t)(r->rbp_off / 8) |
                            ((uint64_t)(uint16_t)(int16_t)r->cfa_off << 8);
            p->rows[i] = word(pc, r->kind, high);
        }
    }
    p->n = t->n;
    return 0;
}

pp_cfi_row pp_cfi_packed_row(const pp_cfi_packed *p, size_t i)
{
    uint64_t w = p->rows[i];
    unsigned kind = (unsigned)(w >> 32) & 0xff;
    if (kind == PP_CFIPACK_WIDE) {
        size_t k = (size_t)(w >> 40);
        if (k < p->nwide)
            return p->wide[k];
        return (pp_cfi_row){.pc = pp_cfi_packed_pc(p, i), .kind = PP_CFI_UNSUPPORTED};
    }
    return (pp_cfi_row){.pc = pp_cfi_packed_pc(p, i),
                        .kind = (uint8_t)kind,
                        .rbp_off = (int32_t)(int8_t)(uint8_t)(w >> 40) * 8,
                        .cfa_off = (int32_t)(int16_t)(uint16_t)(w >> 48)};
}

bool pp_cfi_packed_find(const pp_cfi_packed *p, uint64_t pc, pp_cfi_row *out)
{
    *out = (pp_cfi_row){.kind = PP_CFI_NONE};
    if (!p->n || pc < p->base)
        return false;
    uint64_t rel = pc - p->base; /* beyond 4 GiB: the last row, as pp_cfi_find */
    size_t lo = 0, hi = p->n;    /* the count of rows whose pc <= rel */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uint32_t)p->rows[mid] <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    *out = pp_cfi_packed_row(p, lo - 1); /* lo >= 1: the first row's rel is 0 */
    return true;
}

size_t pp_cfi_packed_bytes(const pp_cfi_packed *p)
{
    return p->n * sizeof(*p->rows) + p->nwide * sizeof(*p->wide);
}

void pp_cfi_packed_free(pp_cfi_packed *p)
{
    free(p->rows);
    free(p->wide);
    memset(p, 0, sizeof(*p));
}
