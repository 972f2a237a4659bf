/* JFR strings (the five encodings) and the growable arrays of the JFR parser. */
#include <stdlib.h>
#include <string.h>

#include "runtimes/java/jfr_int.h"

static uint32_t read_char(jfr_rd *r)
{
    return (uint32_t)(uint64_t)jfr_short(r);
}

int jfr_read_str(jfr_rd *r, jfr_str *s)
{
    memset(s, 0, sizeof(*s));
    s->enc = jfr_u8(r);
    switch (s->enc) {
    case JFR_STR_NULL:
    case JFR_STR_EMPTY:
        break;
    case JFR_STR_POOL:
        s->ref = jfr_long(r);
        break;
    case JFR_STR_UTF8:
    case JFR_STR_LATIN1:
    case JFR_STR_CHARS: {
        int32_t n = jfr_int(r);
        if (r->err || n < 0 || (size_t)n > r->end - r->pos) {
            r->err = 1;
            return -1;
        }
        s->len = (uint32_t)n;
        s->pos = r->pos;
        if (s->enc != JFR_STR_CHARS) {
            jfr_skip(r, (uint64_t)n);
        } else {
            for (int32_t i = 0; i < n && !r->err; i++)
                read_char(r);
        }
        break;
    }
    default:
        r->err = 1;
    }
    return r->err ? -1 : 0;
}

/* Appends code point c as UTF-8 if it fits entirely. */
static int put_utf8(char *out, size_t cap, size_t *o, uint32_t c)
{
    char b[4];
    size_t n;
    if (c < 0x80) {
        b[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | c >> 6);
        b[1] = (char)(0x80 | (c & 0x3f));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xe0 | c >> 12);
        b[1] = (char)(0x80 | (c >> 6 & 0x3f));
        b[2] = (char)(0x80 | (c & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | c >> 18);
        b[1] = (char)(0x80 | (c >> 12 & 0x3f));
        b[2] = (char)(0x80 | (c >> 6 & 0x3f));
        b[3] = (char)(0x80 | (c & 0x3f));
        n = 4;
    }
    if (*o + n >= cap)
        return -1;
    memcpy(out + *o, b, n);
    *o += n;
    return 0;
}

int jfr_str_utf8(const jfr_rd *chunk, const jfr_str *s, char *out, size_t cap)
{
    if (cap == 0)
        return -1;
    out[0] = '\0';
    size_t o = 0;
    if (s->enc == JFR_STR_NULL || s->enc == JFR_STR_EMPTY)
        return 0;
    if (s->enc == JFR_STR_POOL || s->enc > JFR_STR_LATIN1 || s->pos > chunk->end)
        return -1;
    jfr_rd r = *chunk;
    r.pos = s->pos;
    r.err = 0;
    if (s->enc == JFR_STR_UTF8) {
        if (s->len > r.end - r.pos)
            return -1;
        size_t n = s->len < cap - 1 ? s->len : cap - 1;
        /* cut at a character boundary */
        if (n < s->len)
            while (n > 0 && (r.p[r.pos + n] & 0xc0) == 0x80)
                n--;
        memcpy(out, r.p + r.pos, n);
        out[n] = '\0';
        return (int)n;
    }
    for (uint32_t i = 0; i < s->len; i++) {
        uint32_t c;
        if (s->enc == JFR_STR_LATIN1) {
            c = jfr_u8(&r);
        } else {
            c = read_char(&r) & 0xffff;
            /* a surrogate pair becomes one code point; a lone surrogate becomes '?' */
            if (c >= 0xd800 && c < 0xdc00 && i + 1 < s->len) {
                jfr_rd save = r;
                uint32_t lo = read_char(&r) & 0xffff;
                if (lo >= 0xdc00 && lo < 0xe000) {
                    c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                    i++;
                } else {
                    r = save;
                    c = '?';
                }
            } else if (c >= 0xd800 && c < 0xe000) {
                c = '?';
            }
        }
        if (r.err)
            return -1;
        if (put_utf8(out, cap, &o, c) < 0)
            break;
    }
    out[o] = '\0';
    return (int)o;
}

int jfr_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}
