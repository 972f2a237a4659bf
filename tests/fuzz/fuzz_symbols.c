/* libFuzzer target for the symbolizer's parsers: the first byte selects the parser, the rest is
 * its input: ELF symbol tables from memory (incl. .gnu_debugdata and .gopclntab), perf-map
 * files/lines, raw .gopclntab images, kallsyms lines and /proc/<pid>/maps lines. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/symbols/symbols_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pp_log_set_stderr_level(PP_LOG_CRITICAL);
    return 0;
}

static void probe(pp_symtab *t)
{
    /* exercise lookups over the whole table and the demangling cache */
    for (size_t i = 0; i < t->n && i < 64; i++) {
        const pp_sym *s = pp_symtab_find(t, t->syms[i].addr);
        if (s)
            (void)pp_symtab_display_name(t, s);
    }
    char buf[64];
    if (t->n)
        pp_frame_write(buf, sizeof(buf), pp_symtab_name(t, &t->syms[0]), "_[k]");
}

/* The semantic oracle for pp_perfmap_parse_line: the perf-map line grammar written again,
 * independently and as plainly as possible,
 *   line  := blank* hex blank+ hex blank name eol*      (eol* only at the very end)
 *   hex   := ("0x" | "0X")? hexdigit{1,16}              blank := ' ' | '\t'
 *   name  := byte+ (everything after the one blank that follows SIZE)   eol := '\n' | '\r'
 * and compared with the parser's verdict and fields on every input. */
static bool ref_blank(char c)
{
    return c == ' ' || c == '\t';
}

static int ref_digit(char c)
{
    static const char lower[] = "0123456789abcdef", upper[] = "0123456789ABCDEF";
    for (int d = 0; d < 16; d++)
        if (c == lower[d] || c == upper[d])
            return d;
    return -1;
}

static bool ref_hex(const char *s, size_t len, size_t *pos, uint64_t *out)
{
    size_t p = *pos;
    if (len - p >= 2 && s[p] == '0' && (s[p + 1] == 'x' || s[p + 1] == 'X'))
        p += 2;
    size_t first = p;
    uint64_t v = 0;
    while (p < len && ref_digit(s[p]) >= 0)
        v = v * 16 + (uint64_t)ref_digit(s[p++]);
    if (p == first || p - first > 16)
        return false;
    *pos = p;
    *out = v;
    return true;
}

static bool ref_perfmap_line(const char *s, size_t len, uint64_t *start, uint64_t *size,
                             size_t *name_off, size_t *namelen)
{
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    size_t p = 0;
    while (p < len && ref_blank(s[p]))
        p++;
    if (!ref_hex(s, len, &p, start))
        return false;
    if (p == len || !ref_blank(s[p])) /* START must be followed by a blank */
        return false;
    while (p < len && ref_blank(s[p]))
        p++;
    if (!ref_hex(s, len, &p, size))
        return false;
    if (p == len || !ref_blank(s[p])) /* so must SIZE ("1000 10g name" is malformed) */
        return false;
    p++;
    if (p == len) /* no name */
        return false;
    *name_off = p;
    *namelen = len - p;
    return true;
}

static void check_perfmap_line(const char *s, size_t len)
{
    uint64_t a = 0, sz = 0, ra = 0, rsz = 0;
    const char *name = NULL;
    size_t nl = 0, roff = 0, rnl = 0;
    bool got = pp_perfmap_parse_line(s, len, &a, &sz, &name, &nl) == 0;
    bool want = ref_perfmap_line(s, len, &ra, &rsz, &roff, &rnl);
    if (got != want || (got && (a != ra || sz != rsz || name != s + roff || nl != rnl)))
        abort(); /* the parser and the grammar disagree on this line */
}

static void lines(const uint8_t *d, size_t n, int kind, pp_symtab *t)
{
    size_t pos = 0;
    while (pos < n) {
        const uint8_t *nl = memchr(d + pos, '\n', n - pos);
        size_t ll = nl ? (size_t)(nl - (d + pos)) : n - pos;
        const char *line = (const char *)d + pos;
        if (kind == 0) {
            pp_ksyms_parse_line(line, ll, t);
        } else {
            pp_maps_line m;
            if (pp_maps_parse_line(line, ll, &m) == 0)
                (void)pp_maps_classify(m.path, m.pathlen);
        }
        pos += ll + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    data++;
    size--;
    pp_symtab t;
    pp_symtab_init(&t);
    switch (sel % 5) {
    case 0: {
        pp_elf_meta meta = {0};
        pp_elf_load_memory(data, size, &t, &meta);
        uint64_t va;
        pp_elf_offset_to_vaddr(&meta, size, &va);
        break;
    }
    case 1: {
        uint64_t a, s;
        const char *name;
        size_t nl;
        pp_perfmap_parse_line((const char *)data, size, &a, &s, &name, &nl);
        check_perfmap_line((const char *)data, size);
        for (size_t pos = 0; pos < size;) { /* and each line of it */
            const uint8_t *eol = memchr(data + pos, '\n', size - pos);
            size_t ll = eol ? (size_t)(eol - (data + pos)) + 1 : size - pos;
            check_perfmap_line((const char *)data + pos, ll);
            pos += ll;
        }
        pp_perfmap m = {.max_bytes = 4096}; /* small: evictions too */
        pp_perfmap_parse(&m, (const char *)data, size);
        for (size_t i = 0; i + 8 <= size; i += 8) {
            uint64_t addr;
            memcpy(&addr, data + i, 8);
            pp_perfmap_find(&m, addr);
        }
        pp_perfmap_free(&m);
        break;
    }
    case 2:
        pp_gopclntab_parse(data, size, 0x401000, &t);
        pp_symtab_finish(&t, 16);
        break;
    case 3:
        lines(data, size, 0, &t);
        pp_symtab_finish(&t, 4096);
        break;
    default:
        lines(data, size, 1, &t);
        break;
    }
    probe(&t);
    pp_symtab_free(&t);
    return 0;
}
