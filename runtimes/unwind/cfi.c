/* Stub: the row builder lands in the "unwind: cfi rows" commit. */
#include "runtimes/unwind/cfi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long pp_cfi_build(int fd, pp_cfi_table *t, char *err, size_t errsz)
{
    (void)fd;
    memset(t, 0, sizeof(*t));
    snprintf(err, errsz, "CFI rows are not implemented yet");
    return -1;
}

const pp_cfi_row *pp_cfi_find(const pp_cfi_table *t, uint64_t pc)
{
    (void)t;
    (void)pc;
    return NULL;
}

void pp_cfi_free(pp_cfi_table *t)
{
    free(t->rows);
    memset(t, 0, sizeof(*t));
}
