/* libFuzzer target for `polyprof diff`'s input (merge/diff.c): any bytes parse as a collapsed
 * profile or are refused with a printable message; two that parse compare, and their table is
 * valid UTF-8 and their page keeps every name inside its data element. The first two bytes are
 * the base profile's length (little-endian, cut to what there is); the target follows it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "merge/diff.h"

static size_t count_of(const char *s, size_t len, const char *needle)
{
    size_t n = 0, nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        n += memcmp(s + i, needle, nl) == 0;
    return n;
}

/* Parses data[0..len) into a new set; NULL when refused (the message checked) or out of
 * memory. */
static pp_stackset *parse(const char *data, size_t len)
{
    pp_stackset *s = pp_stackset_new();
    char err[512] = "";
    if (!s)
        return NULL;
    int rc = pp_stackset_parse_col(s, data, len, err, sizeof(err));
    if (rc == -2)
        for (const char *p = err; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                abort(); /* a message with raw bytes for the terminal */
    if (rc < 0 || (rc == -2 && !*err)) {
        pp_stackset_free(s);
        return NULL;
    }
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static size_t ends[2] = {(size_t)-1, 0}; /* "</script" and "<!--" on a page without data */
    if (ends[0] == (size_t)-1) {
        pp_stackset *none = pp_stackset_new();
        pp_diff *nd = none ? pp_diff_compute(none, none) : NULL;
        size_t elen;
        char *empty = nd ? pp_diff_render_html(none, none, nd, 5, &elen) : NULL;
        if (!empty)
            abort();
        ends[0] = count_of(empty, elen, "</script");
        ends[1] = count_of(empty, elen, "<!--");
        free(empty);
        pp_diff_free(nd);
        pp_stackset_free(none);
    }
    if (size < 2)
        return 0;
    size_t blen = (size_t)data[0] | (size_t)data[1] << 8;
    if (blen > size - 2)
        blen = size - 2;
    const char *text = (const char *)data + 2;
    pp_stackset *b = parse(text, blen), *t = parse(text + blen, size - 2 - blen);
    pp_diff *d = b && t ? pp_diff_compute(b, t) : NULL;
    if (d) {
        char *table = NULL, *page = NULL;
        size_t tlen = 0, plen = 0;
        FILE *f = open_memstream(&table, &tlen);
        if (f) {
            pp_diff_write_table(d, 5, f);
            if (fclose(f) == 0 && !pp_utf8_valid(table, tlen))
                abort(); /* the table is not UTF-8 */
        }
        page = pp_diff_render_html(b, t, d, 5, &plen);
        if (page && (count_of(page, plen, "</script") != ends[0] ||
                     count_of(page, plen, "<!--") != ends[1]))
            abort(); /* a name escaped the data element */
        free(table);
        free(page);
        pp_diff_free(d);
    }
    pp_stackset_free(b);
    pp_stackset_free(t);
    return 0;
}
