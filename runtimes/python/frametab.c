/* Interned Python frame texts by (name, file, line) (frametab.h). */
#include "runtimes/python/frametab.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/python/pkgversions.h"

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static size_t slot_of(const char *name, const char *file, int line, size_t cap)
{
    return hash64((uintptr_t)name ^ ((uintptr_t)file << 7) ^ (uint64_t)line) & (cap - 1);
}

static int grow(pp_pyframes *t)
{
    size_t ncap = t->cap ? t->cap * 2 : 256;
    pp_pyframe_ent *n = calloc(ncap, sizeof(*n));
    if (!n)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        const pp_pyframe_ent *e = &t->v[i];
        if (!e->name)
            continue;
        size_t j = slot_of(e->name, e->file, e->line, ncap);
        while (n[j].name)
            j = (j + 1) & (ncap - 1);
        n[j] = *e;
    }
    free(t->v);
    t->v = n;
    t->cap = ncap;
    return 0;
}

uint32_t pp_pyframes_id(pp_pyframes *t, pp_profile *prof, const char *name, const char *file,
                        int line)
{
    name = name ? name : "[unknown]";
    file = file ? file : "";
    if ((t->n + 1) * 2 > t->cap && grow(t) < 0)
        return UINT32_MAX;
    size_t j = slot_of(name, file, line, t->cap);
    for (; t->v[j].name; j = (j + 1) & (t->cap - 1)) {
        const pp_pyframe_ent *e = &t->v[j];
        if (e->name == name && e->file == file && e->line == line)
            return e->id;
    }
    char ann[320] = "", text[PATH_MAX + 600];
    if (t->annotate && line > 0)
        pp_pkgver_annotation(t->root, file, t->pyver, ann, sizeof(ann));
    pp_py_frame_text(text, sizeof(text), name, file, line, ann);
    uint32_t id = pp_profile_intern(prof, text);
    if (id == UINT32_MAX)
        return id;
    t->v[j] = (pp_pyframe_ent){name, file, line, id};
    t->n++;
    return id;
}

void pp_pyframes_reset(pp_pyframes *t)
{
    if (t->v)
        memset(t->v, 0, t->cap * sizeof(*t->v));
    t->n = 0;
}

void pp_pyframes_free(pp_pyframes *t)
{
    free(t->v);
    t->v = NULL;
    t->cap = t->n = 0;
}
