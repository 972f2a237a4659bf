/* UTF-8 validation and repair (see utf8.h). */
#include "base/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t pp_utf8_next(const char *str, size_t len, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xe0) == 0xc0) {
        n = 2, v = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, v = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xfffd;
        return 1;
    }
    if (n > len) {
        *cp = 0xfffd;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            *cp = 0xfffd;
            return 1;
        }
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        *cp = 0xfffd;
        return 1;
    }
    *cp = v;
    return n;
}

/* Whether the sequence just decoded (n bytes, code point cp) was an invalid byte. */
static bool invalid(size_t n, uint32_t cp)
{
    return n == 1 && cp >= 0x80;
}

bool pp_utf8_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = pp_utf8_next(s + i, len - i, &cp);
        if (invalid(n, cp))
            return false;
        i += n;
    }
    return true;
}

char *pp_utf8_sanitized(const char *s, size_t len, size_t *out_len)
{
    size_t bad = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = pp_utf8_next(s + i, len - i, &cp);
        bad += invalid(n, cp);
        i += n;
    }
    char *out = malloc(len + bad * (PP_UTF8_REPLACEMENT_LEN - 1) + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = pp_utf8_next(s + i, len - i, &cp);
        if (invalid(n, cp)) {
            memcpy(out + o, PP_UTF8_REPLACEMENT, PP_UTF8_REPLACEMENT_LEN);
            o += PP_UTF8_REPLACEMENT_LEN;
        } else {
            memcpy(out + o, s + i, n);
            o += n;
        }
        i += n;
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}

size_t pp_utf8_copy(char *out, size_t cap, const char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = pp_utf8_next(s + i, len - i, &cp);
        bool bad = invalid(n, cp);
        size_t w = bad ? PP_UTF8_REPLACEMENT_LEN : n;
        if (o + w >= cap)
            break;
        memcpy(out + o, bad ? PP_UTF8_REPLACEMENT : s + i, w);
        o += w;
        i += n;
    }
    out[o] = '\0';
    return o;
}

size_t pp_utf8_cut(const char *s, size_t len, size_t max)
{
    if (max >= len)
        return len;
    size_t n = max; /* s[n] starts what is cut off: step back over continuation bytes */
    for (int k = 0; k < 3 && n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80; k++)
        n--;
    return ((unsigned char)s[n] & 0xc0) == 0x80 ? max : n;
}
