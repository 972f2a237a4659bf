/* The EventPipe "nettrace" stream (the format the runtime's diagnostics server streams a
 * session in, NetTrace V4/V5: .NET Core 3.0 to .NET 9): "Nettrace", the "!FastSerialization.1"
 * header, then objects (a Trace object, then MetadataBlock, EventBlock, StackBlock and SPBlock
 * objects) until a null-reference tag. Only the method events are decoded: metadata events map
 * each metadata id to its provider and event id, and the event blocks' compressed headers are
 * walked to reach the payloads of the runtime's and the rundown provider's verbose method
 * events. Every length is checked against the bytes at hand; a block is at most
 * PP_NETTRACE_MAX_BLOCK bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/safefile.h"
#include "runtimes/dotnet/dotnet.h"

enum { ST_MAGIC, ST_OBJECT, ST_DONE, ST_ERROR };
enum { PROV_OTHER = 0, PROV_RUNTIME, PROV_RUNDOWN };

/* Metadata ids above this are not kept (a session of a few providers uses a few hundred): the
 * table is at most 64 Ki x 8 bytes = 512 KiB. */
#define MAX_META_ID (1u << 16)
/* The stream buffer starts at this and, after a larger object, shrinks back to it. */
#define BUF_BASE 65536
/* At most this many bytes of a push are appended at a time (the buffer then holds at most one
 * incomplete object of at most PP_NETTRACE_MAX_BLOCK bytes plus this). */
#define PUSH_STEP 65536

struct meta {
    uint8_t provider; /* PROV_* (0: not a provider of interest, or no metadata) */
    uint32_t event;
};

struct pp_nettrace {
    pp_net_method_fn fn;
    void *arg;
    int state;
    uint8_t *buf; /* unconsumed bytes */
    size_t len, cap;
    struct meta *meta;
    size_t nmeta;
    pp_nettrace_stats st;
    char err[256];
};

typedef struct cursor {
    const uint8_t *b;
    size_t n, i;
} cursor;

static bool get_bytes(cursor *c, void *out, size_t k)
{
    if (c->n - c->i < k)
        return false;
    if (out)
        memcpy(out, c->b + c->i, k);
    c->i += k;
    return true;
}

static bool get_u8(cursor *c, uint8_t *v)
{
    return get_bytes(c, v, 1);
}

static bool get_u16(cursor *c, uint16_t *v)
{
    uint8_t b[2];
    if (!get_bytes(c, b, 2))
        return false;
    *v = (uint16_t)(b[0] | b[1] << 8);
    return true;
}

static bool get_u32(cursor *c, uint32_t *v)
{
    uint8_t b[4];
    if (!get_bytes(c, b, 4))
        return false;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

static bool get_u64(cursor *c, uint64_t *v)
{
    uint32_t lo, hi;
    if (!get_u32(c, &lo) || !get_u32(c, &hi))
        return false;
    *v = (uint64_t)hi << 32 | lo;
    return true;
}

/* LEB128 of at most maxbytes bytes (5 for 32 bits, 10 for 64). */
static bool get_varint(cursor *c, int maxbytes, uint64_t *v)
{
    uint64_t r = 0;
    for (int k = 0; k < maxbytes; k++) {
        uint8_t b;
        if (!get_u8(c, &b))
            return false;
        r |= (uint64_t)(b & 0x7f) << (7 * k);
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* A UTF-16LE NUL-terminated string at the cursor: its bytes (without the NUL) in *s, *n. */
static bool get_utf16z(cursor *c, const uint8_t **s, size_t *n)
{
    for (size_t k = c->i; k + 1 < c->n; k += 2) {
        if (c->b[k] == 0 && c->b[k + 1] == 0) {
            *s = c->b + c->i;
            *n = k - c->i;
            c->i = k + 2;
            return true;
        }
    }
    return false;
}

static bool utf16_is(const uint8_t *s, size_t n, const char *ascii)
{
    size_t m = strlen(ascii);
    if (n != 2 * m)
        return false;
    for (size_t k = 0; k < m; k++)
        if (s[2 * k] != (uint8_t)ascii[k] || s[2 * k + 1] != 0)
            return false;
    return true;
}

size_t pp_net_utf16_to_utf8(const uint8_t *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    n &= ~(size_t)1;
    for (size_t k = 0; k < n;) {
        uint32_t u = (uint32_t)(s[k] | s[k + 1] << 8);
        k += 2;
        uint32_t cp = u;
        if (u >= 0xd800 && u <= 0xdbff && k + 1 < n) {
            uint32_t lo = (uint32_t)(s[k] | s[k + 1] << 8);
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                cp = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                k += 2;
            } else {
                cp = 0xfffd;
            }
        } else if (u >= 0xd800 && u <= 0xdfff) {
            cp = 0xfffd;
        }
        if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
            cp = '?';
        char e[4];
        size_t el;
        if (cp < 0x80) {
            e[0] = (char)cp;
            el = 1;
        } else if (cp < 0x800) {
            e[0] = (char)(0xc0 | cp >> 6);
            e[1] = (char)(0x80 | (cp & 0x3f));
            el = 2;
        } else if (cp < 0x10000) {
            e[0] = (char)(0xe0 | cp >> 12);
            e[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
            e[2] = (char)(0x80 | (cp & 0x3f));
            el = 3;
        } else {
            e[0] = (char)(0xf0 | cp >> 18);
            e[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
            e[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
            e[3] = (char)(0x80 | (cp & 0x3f));
            el = 4;
        }
        if (o + el + 1 > cap)
            break;
        memcpy(out + o, e, el);
        o += el;
    }
    if (cap)
        out[o] = '\0';
    return o;
}

static int fail(pp_nettrace *p, const char *fmt, const char *what, unsigned long long v)
{
    char m[200];
    snprintf(m, sizeof(m), fmt, what, v);
    snprintf(p->err, sizeof(p->err), "nettrace stream at byte %llu: %s",
             (unsigned long long)p->st.bytes, m);
    p->state = ST_ERROR;
    return -1;
}

/* A metadata event's payload: MetaDataId, ProviderName, EventId, EventName, Keywords, Version… */
static void on_metadata(pp_nettrace *p, const uint8_t *b, size_t n)
{
    cursor c = {b, n, 0};
    uint32_t id, event;
    const uint8_t *prov;
    size_t provlen;
    if (!get_u32(&c, &id) || !get_utf16z(&c, &prov, &provlen) || !get_u32(&c, &event) || id == 0 ||
        id >= MAX_META_ID) {
        p->st.malformed++;
        return;
    }
    uint8_t kind = utf16_is(prov, provlen, "Microsoft-Windows-DotNETRuntime") ? PROV_RUNTIME
                   : utf16_is(prov, provlen, "Microsoft-Windows-DotNETRuntimeRundown")
                       ? PROV_RUNDOWN
                       : PROV_OTHER;
    if (kind == PROV_OTHER || (event != 143 && event != 144))
        return; /* only the method events are looked up */
    if (id >= p->nmeta) {
        size_t nn = p->nmeta ? p->nmeta : 64;
        while (nn <= id)
            nn *= 2;
        struct meta *m = realloc(p->meta, nn * sizeof(*m));
        if (!m) {
            p->st.malformed++;
            return;
        }
        memset(m + p->nmeta, 0, (nn - p->nmeta) * sizeof(*m));
        p->meta = m;
        p->nmeta = nn;
    }
    p->meta[id].provider = kind;
    p->meta[id].event = event;
}

/* MethodID, ModuleID, MethodStartAddress, MethodSize, MethodToken, MethodFlags, MethodNamespace,
 * MethodName, MethodSignature (then ClrInstanceID, ReJITID: not read). */
static void on_method(pp_nettrace *p, const struct meta *m, const uint8_t *b, size_t n)
{
    cursor c = {b, n, 0};
    uint64_t start;
    uint32_t size;
    const uint8_t *s[3];
    size_t sl[3];
    if (!get_bytes(&c, NULL, 16) || !get_u64(&c, &start) || !get_u32(&c, &size) ||
        !get_bytes(&c, NULL, 8) || !get_utf16z(&c, &s[0], &sl[0]) ||
        !get_utf16z(&c, &s[1], &sl[1]) || !get_utf16z(&c, &s[2], &sl[2])) {
        p->st.malformed++;
        return;
    }
    char ns[PP_NET_NAME_MAX], name[PP_NET_NAME_MAX], sig[PP_NET_NAME_MAX];
    pp_net_utf16_to_utf8(s[0], sl[0], ns, sizeof(ns));
    pp_net_utf16_to_utf8(s[1], sl[1], name, sizeof(name));
    pp_net_utf16_to_utf8(s[2], sl[2], sig, sizeof(sig));
    pp_net_method mm = {
        .kind = m->provider == PROV_RUNDOWN ? PP_NET_METHOD_RUNDOWN
                : m->event == 143           ? PP_NET_METHOD_LOAD
                                            : PP_NET_METHOD_UNLOAD,
        .start = start,
        .size = size,
        .ns = ns,
        .name = name,
        .sig = sig,
    };
    p->st.methods++;
    if (p->fn)
        p->fn(p->arg, &mm);
}

/* The event blobs of an EventBlock or MetadataBlock's content, compressed headers (NetTrace V4+;
 * the header state starts from zero in each block). */
static int read_events(pp_nettrace *p, const uint8_t *b, size_t n, bool metadata)
{
    cursor c = {b, n, 0};
    uint16_t hsize = 0, flags = 0;
    if (!get_u16(&c, &hsize) || !get_u16(&c, &flags) || hsize < 4 || hsize > n)
        return fail(p, "%s block header size %llu is out of range", metadata ? "metadata" : "event",
                    hsize);
    if (!(flags & 1))
        return fail(p, "%s block with uncompressed event headers (flags %llu): not supported",
                    metadata ? "metadata" : "event", flags);
    c.i = hsize;
    uint64_t metaid = 0, payload = 0, v;
    while (c.i < c.n) {
        uint8_t f;
        get_u8(&c, &f);
        bool ok = true;
        if (f & 0x01)
            ok = ok && get_varint(&c, 5, &metaid);
        if (f & 0x02) /* sequence number delta, capture thread id, processor number */
            ok = ok && get_varint(&c, 5, &v) && get_varint(&c, 10, &v) && get_varint(&c, 5, &v);
        if (f & 0x04) /* thread id */
            ok = ok && get_varint(&c, 10, &v);
        if (f & 0x08) /* stack id */
            ok = ok && get_varint(&c, 5, &v);
        ok = ok && get_varint(&c, 10, &v); /* timestamp delta */
        if (f & 0x10)                      /* activity id */
            ok = ok && get_bytes(&c, NULL, 16);
        if (f & 0x20) /* related activity id */
            ok = ok && get_bytes(&c, NULL, 16);
        if (f & 0x80)
            ok = ok && get_varint(&c, 5, &payload);
        if (!ok || payload > c.n - c.i)
            return fail(p, "%s block: event header or payload (%llu bytes) runs past the block",
                        metadata ? "metadata" : "event", payload);
        const uint8_t *pl = c.b + c.i;
        c.i += payload;
        p->st.events++;
        if (metadata)
            on_metadata(p, pl, payload);
        else if (metaid < p->nmeta && p->meta[metaid].provider)
            on_method(p, &p->meta[metaid], pl, payload);
    }
    return 0;
}

/* One object at the start of the buffer: 1 parsed (its bytes consumed), 0 more bytes needed, -1
 * malformed. */
static int read_object(pp_nettrace *p, size_t *used)
{
    cursor c = {p->buf, p->len, 0};
    uint8_t tag, t2, t3, t4;
    if (!get_u8(&c, &tag))
        return 0;
    if (tag == 1) { /* NullReference: the end of the stream */
        *used = 1;
        p->state = ST_DONE;
        return 1;
    }
    if (tag != 5)
        return fail(p, "%sexpected an object (tag 5) or the end (tag 1), found tag %llu", "", tag);
    uint32_t version, minver, namelen;
    if (!get_u8(&c, &t2) || !get_u8(&c, &t3))
        return 0;
    if (t2 != 5 || t3 != 1)
        return fail(p, "%sobject's type: expected tags 5 1, found 5 %llu", "",
                    (unsigned)t2 << 8 | t3);
    if (!get_u32(&c, &version) || !get_u32(&c, &minver) || !get_u32(&c, &namelen))
        return 0;
    if (namelen == 0 || namelen > 64)
        return fail(p, "%sobject type name of %llu bytes", "", namelen);
    char name[4 * 64 + 1]; /* escaped: \xNN per byte at most */
    if (!get_bytes(&c, name, namelen) || !get_u8(&c, &t4))
        return 0;
    name[namelen] = '\0';
    char raw[65];
    memcpy(raw, name, namelen + 1);
    pp_escape_text(raw, name, sizeof(name)); /* the target's bytes: quoted escaped, cut */
    if (t4 != 6)
        return fail(p, "object type %s: expected its end tag 6, found %llu", name, t4);
    if (strcmp(name, "Trace") == 0) {
        if (version < 4 || minver > 5)
            return fail(p, "Trace object version %s%llu: only NetTrace V4 and V5 are read", "",
                        minver > 5 ? minver : version);
        uint8_t tr[48];
        if (!get_bytes(&c, tr, sizeof(tr)) || !get_u8(&c, &t4))
            return 0;
        if (t4 != 6)
            return fail(p, "%sTrace object: expected its end tag 6, found %llu", "", t4);
        cursor tc = {tr, sizeof(tr), 32};
        uint32_t ps, pid;
        get_u32(&tc, &ps);
        get_u32(&tc, &pid);
        if (ps != 4 && ps != 8)
            return fail(p, "%sTrace object: pointer size %llu", "", ps);
        p->st.pointer_size = (int)ps;
        p->st.pid = (int)pid;
        *used = c.i;
        return 1;
    }
    size_t nl = strlen(name);
    if (nl < 5 || strcmp(name + nl - 5, "Block") != 0)
        return fail(p, "object of unknown type %s%llu", name, 0);
    if (!p->st.pointer_size)
        return fail(p, "%s before the Trace object%llu", name, 0);
    uint32_t bsize;
    if (!get_u32(&c, &bsize))
        return 0;
    if (bsize > PP_NETTRACE_MAX_BLOCK)
        return fail(p, "%s of %llu bytes: larger than the limit", name, bsize);
    size_t pad = (size_t)((4 - (p->st.bytes + c.i) % 4) % 4);
    if (!get_bytes(&c, NULL, pad))
        return 0;
    size_t at = c.i;
    if (!get_bytes(&c, NULL, bsize) || !get_u8(&c, &t4))
        return 0;
    if (t4 != 6)
        return fail(p, "%s: expected its end tag 6, found %llu", name, t4);
    p->st.blocks++;
    int rc = 0;
    if (strcmp(name, "EventBlock") == 0)
        rc = read_events(p, p->buf + at, bsize, false);
    else if (strcmp(name, "MetadataBlock") == 0)
        rc = read_events(p, p->buf + at, bsize, true);
    /* StackBlock, SPBlock and others: not needed */
    if (rc < 0)
        return -1;
    *used = c.i;
    return 1;
}

static int read_magic(pp_nettrace *p, size_t *used)
{
    static const char magic[] = "Nettrace\x14\0\0\0!FastSerialization.1";
    size_t m = sizeof(magic) - 1;
    size_t k = p->len < m ? p->len : m;
    if (memcmp(p->buf, magic, k) != 0)
        return fail(
            p, "%snot a nettrace stream (expected \"Nettrace\" and \"!FastSerialization.1\")%.0llu",
            "", 0);
    if (p->len < m)
        return 0;
    *used = m;
    p->state = ST_OBJECT;
    return 1;
}

pp_nettrace *pp_nettrace_new(pp_net_method_fn fn, void *arg)
{
    pp_nettrace *p = calloc(1, sizeof(*p));
    if (p) {
        p->fn = fn;
        p->arg = arg;
    }
    return p;
}

void pp_nettrace_free(pp_nettrace *p)
{
    if (!p)
        return;
    free(p->buf);
    free(p->meta);
    free(p);
}

/* Appends n bytes (n <= PUSH_STEP) and parses the objects complete. */
static int push_step(pp_nettrace *p, const uint8_t *data, size_t n)
{
    if (n > p->cap - p->len) {
        /* what is kept is one incomplete object, its declared size checked (read_object) */
        size_t nc = p->cap ? p->cap : BUF_BASE;
        while (nc < p->len + n)
            nc *= 2;
        uint8_t *nb = realloc(p->buf, nc);
        if (!nb)
            return fail(p, "%sout of memory (%llu bytes)", "", nc);
        p->buf = nb;
        p->cap = nc;
        p->st.buffer = nc;
    }
    memcpy(p->buf + p->len, data, n);
    p->len += n;
    size_t off = 0;
    while (p->state == ST_MAGIC || p->state == ST_OBJECT) {
        size_t used = 0;
        uint8_t *save = p->buf;
        size_t savelen = p->len;
        p->buf += off; /* the readers see the unconsumed bytes */
        p->len -= off;
        int rc = p->state == ST_MAGIC ? read_magic(p, &used) : read_object(p, &used);
        p->buf = save;
        p->len = savelen;
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        off += used;
        p->st.bytes += used;
    }
    if (off) {
        memmove(p->buf, p->buf + off, p->len - off);
        p->len -= off;
    }
    if (p->cap > BUF_BASE && p->len <= BUF_BASE / 2) { /* a large object is done: shrink back */
        uint8_t *nb = realloc(p->buf, BUF_BASE);
        if (nb) {
            p->buf = nb;
            p->cap = BUF_BASE;
            p->st.buffer = BUF_BASE;
        }
    }
    return 0;
}

int pp_nettrace_push(pp_nettrace *p, const void *data, size_t n)
{
    const uint8_t *d = data;
    while (n) {
        if (p->state == ST_ERROR)
            return -1;
        if (p->state == ST_DONE)
            return 0; /* bytes after the end are ignored */
        size_t k = n < PUSH_STEP ? n : PUSH_STEP;
        if (push_step(p, d, k) < 0)
            return -1;
        d += k;
        n -= k;
    }
    return p->state == ST_ERROR ? -1 : 0;
}

bool pp_nettrace_done(const pp_nettrace *p)
{
    return p->state == ST_DONE;
}

const char *pp_nettrace_error(const pp_nettrace *p)
{
    return p->err;
}

const pp_nettrace_stats *pp_nettrace_get_stats(const pp_nettrace *p)
{
    return &p->st;
}
