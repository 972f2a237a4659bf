/* Building a line piece by piece in a fixed buffer. */
#ifndef PP_TEXTBUF_H
#define PP_TEXTBUF_H

#include <stddef.h>

/* Appends what fmt gives to out (len bytes) at *o, as far as it fits (out stays
 * NUL-terminated), and advances *o; once the buffer is full *o is len and later calls do
 * nothing. Start with *o = 0. */
void pp_textbuf_add(char *out, size_t len, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
