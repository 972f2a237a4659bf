/* Interned Python frame texts by (name, file, line) (frametab.h). */
#include "runtimes/python/frametab.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "runtimes/python/pkgversions.h"

uint32_t pp_pyframes_id(pp_pyframes *t, pp_profile *prof, const char *name, const char *file,
                        int line)
{
    name = name ? name : "[unknown]";
    file = file ? file : "";
    if (!t->tab.esize)
        PP_HTAB_INIT(&t->tab, pp_pyframe_ent, 50);
    uint64_t h = pp_hash_u64((uintptr_t)name ^ ((uintptr_t)file << 7) ^ (uint64_t)line);
    pp_htab_probe pr;
    for (pp_pyframe_ent *e = pp_htab_first(&t->tab, h, &pr); e; e = pp_htab_next(&t->tab, &pr))
        if (e->name == name && e->file == file && e->line == line)
            return e->id;
    char ann[320] = "", text[PATH_MAX + 600];
    if (t->annotate && line > 0)
        pp_pkgver_annotation(t->root, file, t->pyver, ann, sizeof(ann));
    pp_py_frame_text(text, sizeof(text), name, file, line, ann);
    uint32_t id = pp_profile_intern(prof, text);
    if (id == UINT32_MAX)
        return id;
    pp_pyframe_ent *e = pp_htab_add(&t->tab, h);
    if (e)
        *e = (pp_pyframe_ent){name, file, line, id};
    return id;
}

void pp_pyframes_reset(pp_pyframes *t)
{
    pp_htab_clear(&t->tab);
}

void pp_pyframes_free(pp_pyframes *t)
{
    pp_htab_free(&t->tab);
}
