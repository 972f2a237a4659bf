/* Python frames by (name, file, line) -> their interned text in one profile, with the package
 * annotation (pkgversions.h). The reader's strings are stable until pp_py_close, so the key
 * compares pointers. Shared by the user-space sampler and the in-sampler walker's naming. */
#ifndef PP_PY_FRAMETAB_H
#define PP_PY_FRAMETAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashtab.h"
#include "merge/profile.h"

typedef struct pp_pyframe_ent {
    const char *name, *file;
    int line;
    uint32_t id;
} pp_pyframe_ent;

typedef struct pp_pyframes { /* zero-initialised: empty */
    pp_htab tab;             /* of pp_pyframe_ent */
    bool annotate;           /* package annotations ([dist==version]) */
    const char *root;        /* /proc/<pid>/root, for the annotations */
    const char *pyver;       /* exact "X.Y.Z" */
} pp_pyframes;

/* The id in prof of the frame "name (file:line)_[p]" (annotated); UINT32_MAX without memory. */
uint32_t pp_pyframes_id(pp_pyframes *t, pp_profile *prof, const char *name, const char *file,
                        int line);
/* Forgets every id (a new profile). */
void pp_pyframes_reset(pp_pyframes *t);
void pp_pyframes_free(pp_pyframes *t);

#endif
