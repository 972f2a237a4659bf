/* UTF-8 validation and repair. Every text polyprof writes (.col files, flame graph pages,
 * Pyroscope and Studio bodies, log lines) is valid UTF-8: text taken from other processes
 * (comm, frame names, command lines, container names) can hold any bytes, and each byte that is
 * not part of a valid sequence becomes U+FFFD (docs/security.md, "Output encoding"). Valid
 * means RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. */
#ifndef PP_UTF8_H
#define PP_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* U+FFFD REPLACEMENT CHARACTER, encoded. */
#define PP_UTF8_REPLACEMENT "\xef\xbf\xbd"
#define PP_UTF8_REPLACEMENT_LEN 3

/* The code point starting s[0..len) (len >= 1): returns its length in bytes. An invalid or
 * truncated sequence counts one byte and sets *cp to U+FFFD; so a byte is invalid exactly when
 * the result is 1 and *cp is not ASCII. */
size_t pp_utf8_next(const char *s, size_t len, uint32_t *cp);

/* True when s[0..len) is valid UTF-8. */
bool pp_utf8_valid(const char *s, size_t len);

/* A malloc'd, NUL-terminated copy of s[0..len) with every invalid byte replaced by U+FFFD;
 * *out_len (may be NULL) gets its length. NULL on OOM. */
char *pp_utf8_sanitized(const char *s, size_t len, size_t *out_len);

/* Copies s[0..len) into out (cap >= 1 bytes, NUL-terminated) with every invalid byte replaced by
 * U+FFFD, cut before the first character that does not fit whole. Returns the length written. */
size_t pp_utf8_copy(char *out, size_t cap, const char *s, size_t len);

/* Where to cut the text s[0..len) to at most max bytes without splitting a character: max (or
 * len when shorter), moved back to the start of the multi-byte sequence it falls in. */
size_t pp_utf8_cut(const char *s, size_t len, size_t max);

#endif
