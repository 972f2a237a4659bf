#include "base/textbuf.h"

#include <stdarg.h>
#include <stdio.h>

void pp_textbuf_add(char *out, size_t len, size_t *o, const char *fmt, ...)
{
    if (!len || *o >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *o, len - *o, fmt, ap);
    va_end(ap);
    if (n < 0)
        out[*o] = '\0';
    else
        *o = *o + (size_t)n < len ? *o + (size_t)n : len;
}
