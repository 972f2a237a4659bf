/* Demangling (libiberty) and frame text sanitizing. */
#include "runtimes/symbols/symbols_internal.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

char *pp_demangle(const char *name)
{
    if (!name || name[0] != '_')
        return NULL;
    /* Itanium C++ / Rust legacy start with _Z (also __Z on some platforms); Rust v0 with _R */
    const char *m = name;
    if (m[1] == '_' && m[2] == 'Z')
        m++;
    if (m[1] != 'Z' && m[1] != 'R')
        return NULL;
    if (strlen(m) > PP_SYM_MAX_NAME)
        return NULL;
    char *d = cplus_demangle(m, DMGL_PARAMS | DMGL_ANSI);
    if (d && !*d) {
        free(d);
        return NULL;
    }
    return d;
}

static inline char clean_char(char c)
{
    if (c == ';')
        return '|';
    if ((unsigned char)c < 0x20 || c == 0x7f)
        return '?';
    return c;
}

void pp_frame_sanitize(char *s)
{
    for (; *s; s++)
        *s = clean_char(*s);
}

size_t pp_frame_write(char *buf, size_t bufsz, const char *src, const char *suffix)
{
    if (!buf || bufsz == 0)
        return 0;
    size_t n = 0;
    for (const char *p = src ? src : ""; *p && n + 1 < bufsz; p++)
        buf[n++] = clean_char(*p);
    for (const char *p = suffix ? suffix : ""; *p && n + 1 < bufsz; p++)
        buf[n++] = clean_char(*p);
    buf[n] = '\0';
    return n;
}
