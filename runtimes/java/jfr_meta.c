/* JFR metadata (the type-0 event: a string table and an element tree of classes and fields)
 * and the generic value decoder driven by it, so no field offset is hard-coded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/java/jfr_int.h"

typedef struct meta_parse {
    jfr_rd *r;
    jfr_meta *m;
    char **strs;
    uint32_t nstrs;
    int64_t budget;
    size_t base; /* offset of the event, for messages */
    char *err;
    size_t errlen;
} meta_parse;

static int fail(meta_parse *mp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mp->err, mp->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *str_at(meta_parse *mp, int32_t i)
{
    if (i < 0 || (uint32_t)i >= mp->nstrs)
        return NULL;
    return mp->strs[i] ? mp->strs[i] : "";
}

static int add_class(jfr_meta *m, int64_t id, const char *name)
{
    if (jfr_grow((void **)&m->classes, &m->capclasses, m->nclasses + 1, sizeof(jfr_class)) < 0)
        return -1;
    jfr_class *c = &m->classes[m->nclasses];
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->role = -1;
    c->name = strdup(name);
    if (!c->name)
        return -1;
    return (int)m->nclasses++;
}

static int add_field(jfr_class *c, const char *name, int64_t type, int pool, int array)
{
    if (jfr_grow((void **)&c->fields, &c->capfields, c->nfields + 1, sizeof(jfr_field)) < 0)
        return -1;
    jfr_field *f = &c->fields[c->nfields];
    memset(f, 0, sizeof(*f));
    f->name = strdup(name);
    if (!f->name)
        return -1;
    f->type = type;
    f->cls = -1;
    f->pool = (uint8_t)pool;
    f->array = (uint8_t)array;
    c->nfields++;
    return 0;
}

static int parse_id(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return -1;
    *out = v;
    return 0;
}

/* One element and its children. cls: index of the enclosing class element, -1 if none. */
static int parse_element(meta_parse *mp, int depth, int cls)
{
    jfr_rd *r = mp->r;
    if (depth > JFR_MAX_DEPTH || --mp->budget <= 0)
        return fail(mp, "metadata at offset %zu nests too deep", mp->base);
    const char *ename = str_at(mp, jfr_int(r));
    int32_t nattr = jfr_int(r);
    if (r->err || !ename || nattr < 0 || (size_t)nattr > r->end - r->pos)
        return fail(mp, "malformed metadata element at offset %zu", mp->base);
    const char *name = NULL, *id = NULL, *type = NULL, *pool = NULL, *dim = NULL;
    for (int32_t i = 0; i < nattr; i++) {
        const char *k = str_at(mp, jfr_int(r)), *v = str_at(mp, jfr_int(r));
        if (r->err || !k || !v)
            return fail(mp, "malformed metadata attribute at offset %zu", mp->base);
        if (!strcmp(k, "name"))
            name = v;
        else if (!strcmp(k, "id"))
            id = v;
        else if (!strcmp(k, "class"))
            type = v;
        else if (!strcmp(k, "constantPool"))
            pool = v;
        else if (!strcmp(k, "dimension"))
            dim = v;
    }
    int child_cls = -1;
    if (!strcmp(ename, "class")) {
        int64_t cid;
        if (!name || parse_id(id, &cid) < 0)
            return fail(mp, "metadata class without name or id at offset %zu", mp->base);
        child_cls = add_class(mp->m, cid, name);
        if (child_cls < 0)
            return fail(mp, "out of memory reading JFR metadata");
    } else if (!strcmp(ename, "field") && cls >= 0) {
        int64_t tid, d = 0;
        if (!name || parse_id(type, &tid) < 0 || (dim && (parse_id(dim, &d) < 0 || d < 0 || d > 1)))
            return fail(mp, "metadata field '%s' has a bad type or dimension (offset %zu)",
                        name ? name : "?", mp->base);
        if (add_field(&mp->m->classes[cls], name, tid, pool && !strcmp(pool, "true"), d == 1) < 0)
            return fail(mp, "out of memory reading JFR metadata");
    }
    int32_t nchild = jfr_int(r);
    if (r->err || nchild < 0 || (size_t)nchild > r->end - r->pos)
        return fail(mp, "malformed metadata element at offset %zu", mp->base);
    for (int32_t i = 0; i < nchild; i++)
        if (parse_element(mp, depth + 1, child_cls) < 0)
            return -1;
    return 0;
}

static const struct {
    const char *name;
    uint8_t kind;
} prims[] = {{"boolean", JK_BOOL}, {"byte", JK_BYTE},     {"char", JK_CHAR},
             {"short", JK_SHORT},  {"int", JK_INT},       {"long", JK_LONG},
             {"float", JK_FLOAT},  {"double", JK_DOUBLE}, {"java.lang.String", JK_STRING}};

static int resolve(meta_parse *mp)
{
    jfr_meta *m = mp->m;
    for (uint32_t i = 0; i < m->nclasses; i++)
        if (pp_u64map_put(&m->by_id, (uint64_t)m->classes[i].id, i) < 0)
            return fail(mp, "out of memory reading JFR metadata");
    m->string_cls = jfr_meta_find(m, "java.lang.String");
    for (uint32_t i = 0; i < m->nclasses; i++) {
        jfr_class *c = &m->classes[i];
        for (uint32_t j = 0; j < c->nfields; j++) {
            jfr_field *f = &c->fields[j];
            uint64_t *ci = pp_u64map_get(&m->by_id, (uint64_t)f->type);
            if (!ci)
                return fail(mp, "metadata field %s.%s has unknown type id %lld", c->name, f->name,
                            (long long)f->type);
            f->cls = (int)*ci;
            f->kind = JK_STRUCT;
            for (size_t k = 0; k < sizeof(prims) / sizeof(prims[0]); k++)
                if (!strcmp(m->classes[*ci].name, prims[k].name))
                    f->kind = prims[k].kind;
            if (f->pool)
                f->kind = JK_POOLREF;
        }
    }
    return 0;
}

int jfr_meta_parse(jfr_rd *chunk, size_t off, jfr_meta *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->string_cls = -1;
    jfr_rd r = *chunk;
    r.pos = off;
    r.err = 0;
    meta_parse mp = {.r = &r, .m = m, .base = off, .err = err, .errlen = errlen};
    int32_t size = jfr_int(&r);
    if (r.err || size <= 0 || off > chunk->end || (size_t)size > chunk->end - off)
        return fail(&mp, "truncated metadata event at offset %zu", off);
    r.end = off + (size_t)size;
    int64_t type = jfr_long(&r);
    jfr_long(&r); /* start time */
    jfr_long(&r); /* duration */
    jfr_long(&r); /* metadata id */
    int32_t n = jfr_int(&r);
    if (r.err || type != 0 || n < 0 || (size_t)n > r.end - r.pos)
        return fail(&mp, "malformed metadata event at offset %zu", off);
    mp.budget = (int64_t)size + 1024;
    mp.strs = calloc((size_t)n + 1, sizeof(char *));
    if (!mp.strs)
        return fail(&mp, "out of memory reading JFR metadata");
    int rc = 0;
    char *tmp = malloc(JFR_MAX_STR);
    if (!tmp)
        rc = fail(&mp, "out of memory reading JFR metadata");
    for (int32_t i = 0; rc == 0 && i < n; i++, mp.nstrs++) {
        jfr_str s;
        if (jfr_read_str(&r, &s) < 0 || s.enc == JFR_STR_POOL ||
            jfr_str_utf8(&r, &s, tmp, JFR_MAX_STR) < 0)
            rc = fail(&mp, "malformed metadata string at offset %zu", r.pos);
        else if (s.enc != JFR_STR_NULL && !(mp.strs[i] = strdup(tmp)))
            rc = fail(&mp, "out of memory reading JFR metadata");
    }
    free(tmp);
    if (rc == 0)
        rc = parse_element(&mp, 0, -1);
    if (rc == 0)
        rc = resolve(&mp);
    for (uint32_t i = 0; i < mp.nstrs; i++)
        free(mp.strs[i]);
    free(mp.strs);
    if (rc < 0)
        jfr_meta_free(m);
    return rc;
}

void jfr_meta_free(jfr_meta *m)
{
    for (uint32_t i = 0; i < m->nclasses; i++) {
        for (uint32_t j = 0; j < m->classes[i].nfields; j++)
            free(m->classes[i].fields[j].name);
        free(m->classes[i].fields);
        free(m->classes[i].name);
    }
    free(m->classes);
    pp_u64map_free(&m->by_id);
    memset(m, 0, sizeof(*m));
    m->string_cls = -1;
}

int jfr_meta_find(const jfr_meta *m, const char *name)
{
    for (uint32_t i = 0; i < m->nclasses; i++)
        if (!strcmp(m->classes[i].name, name))
            return (int)i;
    return -1;
}

int jfr_meta_field(const jfr_meta *m, int ci, const char *name)
{
    if (ci < 0 || (uint32_t)ci >= m->nclasses)
        return -1;
    const jfr_class *c = &m->classes[ci];
    for (uint32_t j = 0; j < c->nfields; j++)
        if (!strcmp(c->fields[j].name, name))
            return (int)j;
    return -1;
}

/* ---- generic values ---- */

static void skip_struct(const jfr_meta *m, jfr_rd *r, int ci, int depth, int64_t *budget)
{
    if (depth > JFR_MAX_DEPTH || ci < 0 || (uint32_t)ci >= m->nclasses) {
        r->err = 1;
        return;
    }
    const jfr_class *c = &m->classes[ci];
    for (uint32_t j = 0; j < c->nfields && !r->err; j++)
        jfr_skip_field(m, r, &c->fields[j], depth, budget);
}

static void skip_one(const jfr_meta *m, jfr_rd *r, const jfr_field *f, int depth, int64_t *budget)
{
    if (--*budget <= 0) {
        r->err = 1;
        return;
    }
    jfr_str s;
    switch (f->kind) {
    case JK_BOOL:
    case JK_BYTE:
        jfr_u8(r);
        break;
    case JK_CHAR:
    case JK_SHORT:
        jfr_short(r);
        break;
    case JK_INT:
        jfr_int(r);
        break;
    case JK_LONG:
    case JK_POOLREF:
        jfr_long(r);
        break;
    case JK_FLOAT:
        jfr_skip(r, 4);
        break;
    case JK_DOUBLE:
        jfr_skip(r, 8);
        break;
    case JK_STRING:
        jfr_read_str(r, &s);
        break;
    default:
        skip_struct(m, r, f->cls, depth + 1, budget);
    }
}

void jfr_skip_field(const jfr_meta *m, jfr_rd *r, const jfr_field *f, int depth, int64_t *budget)
{
    if (!f->array) {
        skip_one(m, r, f, depth, budget);
        return;
    }
    int32_t n = jfr_int(r);
    if (r->err || n < 0 || (size_t)n > r->end - r->pos) {
        r->err = 1;
        return;
    }
    for (int32_t i = 0; i < n && !r->err; i++)
        skip_one(m, r, f, depth, budget);
}

int jfr_read_struct(const jfr_meta *m, jfr_rd *r, int ci, const int *want, size_t *pos, int n,
                    int depth, int64_t *budget)
{
    if (depth > JFR_MAX_DEPTH || ci < 0 || (uint32_t)ci >= m->nclasses) {
        r->err = 1;
        return -1;
    }
    for (int k = 0; k < n; k++)
        pos[k] = 0;
    const jfr_class *c = &m->classes[ci];
    for (uint32_t j = 0; j < c->nfields && !r->err; j++) {
        for (int k = 0; k < n; k++)
            if (want[k] == (int)j)
                pos[k] = r->pos;
        jfr_skip_field(m, r, &c->fields[j], depth, budget);
    }
    return r->err ? -1 : 0;
}

int64_t jfr_field_long(const jfr_rd *chunk, const jfr_field *f, size_t pos, int *ok)
{
    jfr_rd r = *chunk;
    r.pos = pos;
    r.err = 0;
    int64_t v = 0;
    *ok = 0;
    if (pos == 0 || f->array)
        return 0;
    switch (f->kind) {
    case JK_BOOL:
    case JK_BYTE:
        v = jfr_u8(&r);
        break;
    case JK_CHAR:
    case JK_SHORT:
        v = jfr_short(&r);
        break;
    case JK_INT:
        v = jfr_int(&r);
        break;
    case JK_LONG:
    case JK_POOLREF:
        v = jfr_long(&r);
        break;
    default:
        return 0;
    }
    *ok = !r.err;
    return v;
}
