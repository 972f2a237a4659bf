/* Interned strings: each distinct string is stored once and named by a small id. Id 0 is always
 * the empty string. */
#ifndef PP_STRTAB_H
#define PP_STRTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_strtab pp_strtab;

pp_strtab *pp_strtab_new(void);
void pp_strtab_free(pp_strtab *t);
/* Returns the id of s[0..len), adding it if new. Returns UINT32_MAX on OOM. */
uint32_t pp_strtab_intern(pp_strtab *t, const char *s, size_t len);
uint32_t pp_strtab_intern_cstr(pp_strtab *t, const char *s);
/* The NUL-terminated string of id (valid until the table is freed). */
const char *pp_strtab_get(const pp_strtab *t, uint32_t id);
size_t pp_strtab_len(const pp_strtab *t, uint32_t id);
size_t pp_strtab_count(const pp_strtab *t);
/* Bytes held by the table (for memory accounting). */
size_t pp_strtab_bytes(const pp_strtab *t);

#endif
