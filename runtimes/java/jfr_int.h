/* Private to the JFR parser (jfr.c, jfr_read.c, jfr_meta.c): a bounds-checked byte reader with
 * JFR's compressed integers and string encodings, and the metadata model (classes with typed
 * fields) used to decode any value generically.
 *
 * Reader errors are sticky: a read past the end sets r->err and returns 0, so callers check
 * r->err once after a group of reads. All positions are offsets from the chunk start. */
#ifndef PP_JFR_INT_H
#define PP_JFR_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/hashtab.h"

#define JFR_HEADER_SIZE 68
#define JFR_MAX_DEPTH 16  /* nesting of inline structs / metadata elements */
#define JFR_MAX_STR 16384 /* longest string decoded (longer ones are cut) */

typedef struct jfr_rd {
    const uint8_t *p; /* chunk start */
    size_t pos, end;  /* current offset and limit, from p */
    int compressed;   /* integers are LEB128-style varints (header feature bit 0) */
    int err;          /* sticky: set by any read past end or malformed value */
} jfr_rd;

static inline uint8_t jfr_u8(jfr_rd *r)
{
    if (r->pos >= r->end) {
        r->err = 1;
        return 0;
    }
    return r->p[r->pos++];
}

/* n (<= 8) raw bytes, big-endian. */
static inline uint64_t jfr_fixed(jfr_rd *r, int n)
{
    uint64_t v = 0;
    if (r->pos > r->end || r->end - r->pos < (size_t)n) {
        r->err = 1;
        r->pos = r->end;
        return 0;
    }
    for (int i = 0; i < n; i++)
        v = v << 8 | r->p[r->pos++];
    return v;
}

/* A compressed long: 7 bits per byte, low group first, high bit = more; the 9th byte holds
 * 8 bits. Uncompressed chunks use big-endian 8 bytes. */
static inline int64_t jfr_long(jfr_rd *r)
{
    if (!r->compressed)
        return (int64_t)jfr_fixed(r, 8);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        if (r->pos >= r->end) {
            r->err = 1;
            return 0;
        }
        uint8_t b = r->p[r->pos++];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            return (int64_t)v;
    }
    return (int64_t)(v | (uint64_t)jfr_u8(r) << 56);
}

/* Compressed ints use the same encoding; uncompressed ones are big-endian 4 bytes. */
static inline int32_t jfr_int(jfr_rd *r)
{
    return r->compressed ? (int32_t)jfr_long(r) : (int32_t)(uint32_t)jfr_fixed(r, 4);
}

/* A char or short: compressed, or big-endian 2 bytes. */
static inline int64_t jfr_short(jfr_rd *r)
{
    return r->compressed ? jfr_long(r) : (int64_t)jfr_fixed(r, 2);
}

/* Skips n raw bytes. */
static inline void jfr_skip(jfr_rd *r, uint64_t n)
{
    if (r->pos > r->end || n > r->end - r->pos) {
        r->err = 1;
        r->pos = r->end;
        return;
    }
    r->pos += (size_t)n;
}

/* String encodings (first byte of every java.lang.String value). */
enum { JFR_STR_NULL = 0, JFR_STR_EMPTY, JFR_STR_POOL, JFR_STR_UTF8, JFR_STR_CHARS, JFR_STR_LATIN1 };

/* A string value as it sits in the chunk: enc, then for UTF8/LATIN1/CHARS the payload at pos
 * with len bytes or chars, for POOL the key in the java.lang.String pool. */
typedef struct jfr_str {
    uint8_t enc;
    uint32_t len;
    size_t pos;
    int64_t ref;
} jfr_str;

/* Reads (skips) one string value. 0 or -1 (r->err set). */
int jfr_read_str(jfr_rd *r, jfr_str *s);
/* Decodes an inline string (not POOL) to NUL-terminated UTF-8 in out (cut to cap-1 bytes at
 * a character boundary). Returns the length, or -1 when malformed. */
int jfr_str_utf8(const jfr_rd *chunk, const jfr_str *s, char *out, size_t cap);

/* Grows the array *p of elem-byte items to hold need items (capacity doubles from 64).
 * 0, or -1 on OOM (the array is unchanged). */
int jfr_grow(void **p, size_t *cap, size_t need, size_t elem);

/* ---- metadata ---- */
enum jfr_kind {
    JK_BOOL,
    JK_BYTE,
    JK_CHAR,
    JK_SHORT,
    JK_INT,
    JK_LONG,
    JK_FLOAT,
    JK_DOUBLE,
    JK_STRING,
    JK_STRUCT, /* inline value of another class */
    JK_POOLREF /* constantPool="true": a long key into that class's pool */
};

typedef struct jfr_field {
    char *name;
    int64_t type;  /* class id */
    int cls;       /* index of the type in jfr_meta.classes, -1 until resolved */
    uint8_t kind;  /* enum jfr_kind */
    uint8_t array; /* dimension 1: int count, then the elements */
    uint8_t pool;  /* constantPool="true" */
} jfr_field;

typedef struct jfr_class {
    int64_t id;
    char *name;
    jfr_field *fields;
    uint32_t nfields;
    size_t capfields;
    int role; /* index into the parser's pools (enum in jfr.c), -1 when not needed */
} jfr_class;

typedef struct jfr_meta {
    jfr_class *classes;
    uint32_t nclasses;
    size_t capclasses;
    pp_u64map by_id; /* class id -> index */
    int string_cls;  /* index of java.lang.String, -1 */
} jfr_meta;

/* Parses the metadata event at offset off of the chunk r (r->end = chunk size). 0, or -1 with
 * a message in err. On success every field's kind and cls are resolved. */
int jfr_meta_parse(jfr_rd *chunk, size_t off, jfr_meta *m, char *err, size_t errlen);
void jfr_meta_free(jfr_meta *m);
/* Class index by name, or -1. */
int jfr_meta_find(const jfr_meta *m, const char *name);
/* Field index by name in class ci, or -1. */
int jfr_meta_field(const jfr_meta *m, int ci, const char *name);

/* Skips one value of field f (array-aware). budget is decremented per value visited; when it
 * reaches zero, or the nesting passes JFR_MAX_DEPTH, r->err is set. */
void jfr_skip_field(const jfr_meta *m, jfr_rd *r, const jfr_field *f, int depth, int64_t *budget);
/* Reads one struct of class ci, recording the start offset of the fields listed in want[0..n)
 * (field indices) in pos[0..n) (left 0 for absent indices). 0 or -1 (r->err set). */
int jfr_read_struct(const jfr_meta *m, jfr_rd *r, int ci, const int *want, size_t *pos, int n,
                    int depth, int64_t *budget);
/* Decodes an integer-like scalar (bool, byte, char, short, int, long, pool ref) of field f at
 * offset pos. Returns the value, setting *ok to 0 when it cannot be read. */
int64_t jfr_field_long(const jfr_rd *chunk, const jfr_field *f, size_t pos, int *ok);

#endif
