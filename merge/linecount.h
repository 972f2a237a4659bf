/* Distinct lines with summed counts, in first-seen order: what a .col file or an upload body
 * holds, where a stack may appear only once. */
#ifndef PP_LINECOUNT_H
#define PP_LINECOUNT_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_linecount pp_linecount;

pp_linecount *pp_linecount_new(void);
void pp_linecount_free(pp_linecount *lc);
/* Adds count to the line s[0..len) (no NUL inside), adding the line if new. 0, or -1 on OOM. */
int pp_linecount_add(pp_linecount *lc, const char *s, size_t len, uint64_t count);
size_t pp_linecount_size(const pp_linecount *lc);
/* The i-th distinct line (first-seen order), NUL-terminated; its length and summed count. */
const char *pp_linecount_get(const pp_linecount *lc, size_t i, size_t *len, uint64_t *count);

#endif
