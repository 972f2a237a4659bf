/* Native JFR parser: chunks, constant pools, jdk.ExecutionSample events and their stacks.
 * See jfr.h for the contract, jfr_int.h for the reader and the metadata model, docs/java.md
 * for the design.
 *
 * Per chunk: the header gives the offsets of the metadata event (parsed into classes and
 * fields) and of the last constant-pool event (pools chained backwards by delta offsets). The
 * pools the parser needs (strings, symbols, classes, methods, stack traces, frame types,
 * threads) are indexed as key -> offset of the value; values are decoded lazily from the
 * metadata field lists. Then every event is visited; each execution sample costs one lookup of
 * its stack trace id (stack traces are decoded and their frames interned once per chunk, frame
 * texts once per (method, frame type)) and counts are added to the profile at the chunk end. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/java/jfr.h"
#include "runtimes/java/jfr_int.h"

enum { R_STRING, R_SYMBOL, R_CLASS, R_METHOD, R_STACK, R_FTYPE, R_THREAD, R_N };
static const char *const role_names[R_N] = {
    "java.lang.String",     "jdk.types.Symbol",    "java.lang.Class", "jdk.types.Method",
    "jdk.types.StackTrace", "jdk.types.FrameType", "java.lang.Thread"};

/* Frame-type suffixes (gProfiler's async-profiler `ann` style). */
enum { SFX_JIT, SFX_INLINED, SFX_INTERP, SFX_NONE, SFX_N };
static const char *const sfx_text[SFX_N] = {"_[j]", "_[i]", "_[0]", ""};

/* The sample events, in the order of the PP_JFR_* bits, and their thread fields. */
enum { PP_JFR_EV_EXECUTION, PP_JFR_EV_NATIVE, PP_JFR_EV_CPUTIME, PP_JFR_NEVENTS };
static const char *const event_names[PP_JFR_NEVENTS] = {
    "jdk.ExecutionSample", "jdk.NativeMethodSample", "jdk.CPUTimeSample"};
static const char *const thread_fields[PP_JFR_NEVENTS] = {"sampledThread", "sampledThread",
                                                          "eventThread"};

#define BAD_STACK UINT32_MAX

typedef struct stack_rec {
    size_t off;     /* first frame in c->frames */
    uint32_t n;     /* frames (root first), BAD_STACK when a reference did not resolve */
    uint32_t trunc; /* JFR cut the stack */
    uint64_t count; /* samples in this chunk */
} stack_rec;

typedef struct chunk {
    jfr_rd r; /* the whole chunk */
    size_t base;
    jfr_meta m;
    int64_t budget;
    int role_cls[R_N];
    pp_u64map pool[R_N]; /* key -> offset of the value */
    /* field indices, -1 when absent */
    int sym_string, cls_name, meth_type, meth_name, meth_desc, st_trunc, st_frames, frame_cls,
        fr_method, fr_type, ft_desc, th_tid, th_name;
    int es_cls[PP_JFR_NEVENTS], es_thread[PP_JFR_NEVENTS], es_stack[PP_JFR_NEVENTS];
    pp_u64map ftype_sfx;        /* frame type key -> suffix */
    pp_u64map frame_ids[SFX_N]; /* method key -> interned frame text */
    pp_u64map stack_idx;        /* stack trace key -> index in stacks */
    pp_u64map tids;             /* thread key -> OS tid */
    pp_u64map thread_idx;       /* thread key -> index in threads */
    struct jthread {
        uint32_t label; /* label frame id, 0 for none (thread_label) */
        uint32_t tid;   /* its thread id as the system sampler names it; 0: not kept */
    } * threads;
    size_t nthreads, capthreads;
    pp_u64map labeled_idx; /* thread index << 32 | stack index -> index in labeled */
    struct labeled {
        uint32_t thread, stack;
        uint64_t count;
    } * labeled; /* samples of labelled threads, and of every thread with opts->per_thread */
    size_t nlabeled, caplabeled;
    stack_rec *stacks;
    size_t nstacks, capstacks;
    uint32_t *frames;
    size_t nframes, capframes;
    uint32_t *tmp; /* one stack, leaf first */
    size_t captmp;
    char *text; /* frame text being built */
    uint32_t truncated_id;
    const pp_jfr_opts *opts;
    pp_profile *prof;
    pp_pid_profile *pp;
    pp_jfr_stats *st;
    char *err;
    size_t errlen;
} chunk;

#define TEXT_CAP (3 * JFR_MAX_STR + 16)

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const jfr_field *field(const chunk *c, int ci, int fi)
{
    if (ci < 0 || fi < 0)
        return NULL;
    return &c->m.classes[ci].fields[fi];
}

/* Reads the pooled value of role with key, recording where fields want[0..n) start. */
static int pool_struct(chunk *c, int role, int64_t key, const int *want, size_t *pos, int n)
{
    uint64_t *off = pp_u64map_get(&c->pool[role], (uint64_t)key);
    if (!off || c->role_cls[role] < 0)
        return -1;
    jfr_rd r = c->r;
    r.pos = (size_t)*off;
    r.err = 0;
    return jfr_read_struct(&c->m, &r, c->role_cls[role], want, pos, n, 0, &c->budget);
}

static int64_t field_long(chunk *c, int ci, int fi, size_t pos, int *ok)
{
    const jfr_field *f = field(c, ci, fi);
    *ok = 0;
    return f ? jfr_field_long(&c->r, f, pos, ok) : 0;
}

/* Text of a string value at pos (following a java.lang.String pool reference once). */
static int string_at(chunk *c, size_t pos, char *out, size_t cap)
{
    jfr_rd r = c->r;
    r.pos = pos;
    r.err = 0;
    jfr_str s;
    if (pos == 0 || jfr_read_str(&r, &s) < 0)
        return -1;
    if (s.enc == JFR_STR_POOL) {
        uint64_t *off = pp_u64map_get(&c->pool[R_STRING], (uint64_t)s.ref);
        if (!off)
            return -1;
        r.pos = (size_t)*off;
        if (jfr_read_str(&r, &s) < 0 || s.enc == JFR_STR_POOL)
            return -1;
    }
    return jfr_str_utf8(&c->r, &s, out, cap);
}

/* Text of field fi of class ci at pos: an inline string, or a reference to a symbol or to a
 * pooled string. */
static int field_text(chunk *c, int ci, int fi, size_t pos, char *out, size_t cap)
{
    const jfr_field *f = field(c, ci, fi);
    if (!f || f->array)
        return -1;
    if (f->kind == JK_STRING)
        return string_at(c, pos, out, cap);
    int ok;
    int64_t key = jfr_field_long(&c->r, f, pos, &ok);
    if (!ok || f->kind != JK_POOLREF)
        return -1;
    if (f->cls == c->role_cls[R_STRING]) {
        uint64_t *off = pp_u64map_get(&c->pool[R_STRING], (uint64_t)key);
        return off ? string_at(c, (size_t)*off, out, cap) : -1;
    }
    /* a symbol holds its text inline (no further references, so no recursion) */
    const jfr_field *sf = field(c, c->role_cls[R_SYMBOL], c->sym_string);
    size_t spos;
    if (f->cls != c->role_cls[R_SYMBOL] || !sf || sf->array || sf->kind != JK_STRING ||
        pool_struct(c, R_SYMBOL, key, &c->sym_string, &spos, 1) < 0)
        return -1;
    return string_at(c, spos, out, cap);
}

static int frame_suffix(chunk *c, int64_t key)
{
    uint64_t *v = pp_u64map_get(&c->ftype_sfx, (uint64_t)key);
    if (v)
        return (int)*v;
    int sfx = SFX_NONE;
    size_t pos;
    char d[32];
    if (pool_struct(c, R_FTYPE, key, &c->ft_desc, &pos, 1) == 0 &&
        field_text(c, c->role_cls[R_FTYPE], c->ft_desc, pos, d, sizeof(d)) >= 0) {
        if (!strcmp(d, "JIT compiled"))
            sfx = SFX_JIT;
        else if (!strcmp(d, "Inlined"))
            sfx = SFX_INLINED;
        else if (!strcmp(d, "Interpreted"))
            sfx = SFX_INTERP;
    }
    pp_u64map_put(&c->ftype_sfx, (uint64_t)key, (uint64_t)sfx);
    return sfx;
}

/* Interned text of a method frame, or -1 when the method does not resolve. */
static int64_t frame_id(chunk *c, int64_t method, int sfx)
{
    uint64_t *v = pp_u64map_get(&c->frame_ids[sfx], (uint64_t)method);
    if (v)
        return (int64_t)*v;
    int mc = c->role_cls[R_METHOD], cc = c->role_cls[R_CLASS];
    int want[3] = {c->meth_type, c->meth_name, c->meth_desc};
    size_t pos[3], cpos;
    int ok;
    if (pool_struct(c, R_METHOD, method, want, pos, 3) < 0)
        return -1;
    int64_t cls = field_long(c, mc, c->meth_type, pos[0], &ok);
    if (!ok || pool_struct(c, R_CLASS, cls, &c->cls_name, &cpos, 1) < 0)
        return -1;
    char *t = c->text;
    int n1 = field_text(c, cc, c->cls_name, cpos, t, JFR_MAX_STR);
    if (n1 < 0)
        return -1;
    t[n1] = '.';
    int n2 = field_text(c, mc, c->meth_name, pos[1], t + n1 + 1, JFR_MAX_STR);
    if (n2 < 0)
        return -1;
    char *d = t + n1 + 1 + n2;
    int n3 = field_text(c, mc, c->meth_desc, pos[2], d, JFR_MAX_STR);
    if (n3 < 0)
        return -1;
    for (int i = 0; i < n3; i++)
        if (d[i] == ';')
            d[i] = '|';
    strcpy(d + n3, sfx_text[sfx]);
    uint32_t id = pp_profile_intern(c->prof, t);
    if (pp_u64map_put(&c->frame_ids[sfx], (uint64_t)method, id) < 0)
        return -1;
    return id;
}

/* Decodes stack trace key into rec (frames root first). -1 when it does not resolve. */
static int decode_stack(chunk *c, int64_t key, stack_rec *rec)
{
    int want[2] = {c->st_trunc, c->st_frames};
    size_t pos[2];
    int ok, sc = c->role_cls[R_STACK];
    const jfr_field *ff = field(c, sc, c->st_frames);
    if (!ff || !ff->array || ff->kind != JK_STRUCT || c->frame_cls < 0 ||
        pool_struct(c, R_STACK, key, want, pos, 2) < 0 || pos[1] == 0)
        return -1;
    int64_t trunc = field_long(c, sc, c->st_trunc, pos[0], &ok);
    rec->trunc = ok && trunc;
    jfr_rd r = c->r;
    r.pos = pos[1];
    int32_t n = jfr_int(&r);
    if (r.err || n < 0 || (size_t)n > r.end - r.pos)
        return -1;
    if (jfr_grow((void **)&c->tmp, &c->captmp, (size_t)n + 1, sizeof(uint32_t)) < 0)
        return -1;
    int fw[2] = {c->fr_method, c->fr_type};
    size_t fpos[2];
    for (int32_t i = 0; i < n; i++) {
        if (jfr_read_struct(&c->m, &r, c->frame_cls, fw, fpos, 2, 1, &c->budget) < 0)
            return -1;
        int64_t method = field_long(c, c->frame_cls, c->fr_method, fpos[0], &ok);
        if (!ok)
            return -1;
        int64_t ft = field_long(c, c->frame_cls, c->fr_type, fpos[1], &ok);
        int64_t id = frame_id(c, method, ok ? frame_suffix(c, ft) : SFX_NONE);
        if (id < 0)
            return -1;
        c->tmp[i] = (uint32_t)id;
    }
    size_t total = (size_t)n + (rec->trunc ? 1 : 0);
    if (total == 0)
        return -1; /* an empty stack says nothing: dropped as unresolved */
    if (jfr_grow((void **)&c->frames, &c->capframes, c->nframes + total, sizeof(uint32_t)) < 0)
        return -1;
    rec->off = c->nframes;
    rec->n = (uint32_t)total;
    if (rec->trunc) {
        if (!c->truncated_id)
            c->truncated_id = pp_profile_intern(c->prof, "[truncated]");
        c->frames[c->nframes++] = c->truncated_id;
    }
    for (int32_t i = n - 1; i >= 0; i--)
        c->frames[c->nframes++] = c->tmp[i];
    return 0;
}

/* The stack record of key (decoded on first use). NULL on OOM. */
static stack_rec *stack_of(chunk *c, int64_t key)
{
    uint64_t *v = pp_u64map_get(&c->stack_idx, (uint64_t)key);
    if (v)
        return &c->stacks[*v];
    if (jfr_grow((void **)&c->stacks, &c->capstacks, c->nstacks + 1, sizeof(stack_rec)) < 0)
        return NULL;
    stack_rec *rec = &c->stacks[c->nstacks];
    memset(rec, 0, sizeof(*rec));
    if (decode_stack(c, key, rec) < 0)
        rec->n = BAD_STACK;
    if (pp_u64map_put(&c->stack_idx, (uint64_t)key, c->nstacks) < 0)
        return NULL;
    return &c->stacks[c->nstacks++];
}

static long thread_tid(chunk *c, int64_t key)
{
    uint64_t *v = pp_u64map_get(&c->tids, (uint64_t)key);
    if (v)
        return (long)(int64_t)*v;
    size_t pos;
    int ok = 0;
    int64_t tid = -1;
    if (pool_struct(c, R_THREAD, key, &c->th_tid, &pos, 1) == 0)
        tid = field_long(c, c->role_cls[R_THREAD], c->th_tid, pos, &ok);
    if (!ok)
        tid = -1;
    pp_u64map_put(&c->tids, (uint64_t)key, (uint64_t)tid);
    return (long)tid;
}

/* The label frame of a JVM thread that runs JFR itself or the attach requests that start it
 * ("Attach Listener", "JFR ..."): its first JFR start loads and compiles JFR's classes there.
 * 0 for other threads. */
static uint32_t thread_label(chunk *c, int64_t key)
{
    size_t pos;
    char name[128], text[160];
    uint32_t label = 0;
    if (pool_struct(c, R_THREAD, key, &c->th_name, &pos, 1) == 0 &&
        field_text(c, c->role_cls[R_THREAD], c->th_name, pos, name, sizeof(name)) >= 0 &&
        (strcmp(name, "Attach Listener") == 0 || strncmp(name, "JFR ", 4) == 0)) {
        snprintf(text, sizeof(text), "[JVM thread: %s]", name);
        label = pp_profile_intern(c->prof, text);
    }
    return label;
}

/* The index in c->threads of JFR thread key (its label, and its thread id with
 * opts->per_thread), or -1 out of memory. */
static int64_t thread_index(chunk *c, int64_t key)
{
    uint64_t *v = pp_u64map_get(&c->thread_idx, (uint64_t)key);
    if (v)
        return (int64_t)*v;
    struct jthread t = {.label = thread_label(c, key)};
    if (c->opts && c->opts->per_thread) {
        long os = thread_tid(c, key);
        t.tid = os <= 0 || os > UINT32_MAX ? 0
                : c->opts->sampler_tid     ? c->opts->sampler_tid(c->opts->arg, os)
                                           : (uint32_t)os;
    }
    if (t.label == UINT32_MAX || c->nthreads >= UINT32_MAX ||
        jfr_grow((void **)&c->threads, &c->capthreads, c->nthreads + 1, sizeof(*c->threads)) < 0 ||
        pp_u64map_put(&c->thread_idx, (uint64_t)key, c->nthreads) < 0)
        return -1;
    c->threads[c->nthreads] = t;
    return (int64_t)c->nthreads++;
}

/* Counts a sample of stack index si on thread index ti. -1 on OOM. */
static int count_labeled(chunk *c, uint32_t ti, size_t si)
{
    uint64_t k = (uint64_t)ti << 32 | si;
    uint64_t *v = pp_u64map_get(&c->labeled_idx, k);
    if (v) {
        c->labeled[*v].count++;
        return 0;
    }
    if (jfr_grow((void **)&c->labeled, &c->caplabeled, c->nlabeled + 1, sizeof(*c->labeled)) < 0 ||
        pp_u64map_put(&c->labeled_idx, k, c->nlabeled) < 0)
        return -1;
    c->labeled[c->nlabeled++] = (struct labeled){ti, (uint32_t)si, 1};
    return 0;
}

/* Indexes every constant-pool event, following the delta chain back from off. */
static int read_pools(chunk *c, size_t off)
{
    for (;;) {
        jfr_rd r = c->r;
        r.pos = off;
        int32_t size = jfr_int(&r);
        if (r.err || size <= 0 || (size_t)size > c->r.end - off || --c->budget <= 0)
            return fail(c->err, c->errlen, "truncated constant pool event at offset %zu",
                        c->base + off);
        r.end = off + (size_t)size;
        int64_t type = jfr_long(&r);
        jfr_long(&r); /* start time */
        jfr_long(&r); /* duration */
        int64_t delta = jfr_long(&r);
        jfr_u8(&r); /* flush / checkpoint type */
        int32_t npools = jfr_int(&r);
        if (r.err || type != 1 || npools < 0)
            return fail(c->err, c->errlen, "malformed constant pool event at offset %zu",
                        c->base + off);
        for (int32_t p = 0; p < npools; p++) {
            int64_t cid = jfr_long(&r);
            int32_t count = jfr_int(&r);
            uint64_t *ci = pp_u64map_get(&c->m.by_id, (uint64_t)cid);
            if (r.err || !ci || count < 0 || (size_t)count > r.end - r.pos)
                return fail(c->err, c->errlen,
                            "malformed constant pool (class id %lld) at offset %zu", (long long)cid,
                            c->base + off);
            int role = c->m.classes[*ci].role;
            for (int32_t i = 0; i < count && !r.err; i++) {
                int64_t key = jfr_long(&r);
                size_t vpos = r.pos;
                jfr_str s;
                if ((int)*ci == c->m.string_cls)
                    jfr_read_str(&r, &s);
                else
                    jfr_read_struct(&c->m, &r, (int)*ci, NULL, NULL, 0, 0, &c->budget);
                if (!r.err && role >= 0 && pp_u64map_put(&c->pool[role], (uint64_t)key, vpos) < 0)
                    return fail(c->err, c->errlen, "out of memory reading JFR constant pools");
            }
            if (r.err)
                return fail(c->err, c->errlen,
                            "malformed constant pool entry (class %s) at offset %zu",
                            c->m.classes[*ci].name, c->base + off);
        }
        if (delta == 0)
            return 0;
        if (delta > 0 || delta < -(int64_t)(off - JFR_HEADER_SIZE))
            return fail(c->err, c->errlen, "bad constant pool link at offset %zu", c->base + off);
        off -= (size_t)-delta;
    }
}

static void find_fields(chunk *c)
{
    jfr_meta *m = &c->m;
    for (int i = 0; i < R_N; i++) {
        c->role_cls[i] = jfr_meta_find(m, role_names[i]);
        if (c->role_cls[i] >= 0)
            m->classes[c->role_cls[i]].role = i;
    }
    c->sym_string = jfr_meta_field(m, c->role_cls[R_SYMBOL], "string");
    c->cls_name = jfr_meta_field(m, c->role_cls[R_CLASS], "name");
    c->meth_type = jfr_meta_field(m, c->role_cls[R_METHOD], "type");
    c->meth_name = jfr_meta_field(m, c->role_cls[R_METHOD], "name");
    c->meth_desc = jfr_meta_field(m, c->role_cls[R_METHOD], "descriptor");
    c->st_trunc = jfr_meta_field(m, c->role_cls[R_STACK], "truncated");
    c->st_frames = jfr_meta_field(m, c->role_cls[R_STACK], "frames");
    const jfr_field *ff = field(c, c->role_cls[R_STACK], c->st_frames);
    c->frame_cls = ff ? ff->cls : -1;
    c->fr_method = jfr_meta_field(m, c->frame_cls, "method");
    c->fr_type = jfr_meta_field(m, c->frame_cls, "type");
    c->ft_desc = jfr_meta_field(m, c->role_cls[R_FTYPE], "description");
    c->th_tid = jfr_meta_field(m, c->role_cls[R_THREAD], "osThreadId");
    c->th_name = jfr_meta_field(m, c->role_cls[R_THREAD], "javaName");
    for (int e = 0; e < PP_JFR_NEVENTS; e++) {
        c->es_cls[e] = jfr_meta_find(m, event_names[e]);
        c->es_thread[e] = jfr_meta_field(m, c->es_cls[e], thread_fields[e]);
        c->es_stack[e] = jfr_meta_field(m, c->es_cls[e], "stackTrace");
    }
}

static int on_sample(chunk *c, jfr_rd *r, size_t at, int e)
{
    int cls = c->es_cls[e];
    int want[2] = {c->es_thread[e], c->es_stack[e]};
    size_t pos[2];
    int ok;
    if (jfr_read_struct(&c->m, r, cls, want, pos, 2, 0, &c->budget) < 0)
        return fail(c->err, c->errlen, "malformed %s event at offset %zu", event_names[e],
                    c->base + at);
    int64_t th = field_long(c, cls, c->es_thread[e], pos[0], &ok);
    if (!ok || th < 0)
        th = -1;
    int (*keep)(void *, long) = !c->opts ? NULL
                                : e == PP_JFR_EV_NATIVE && c->opts->keep_native_tid
                                    ? c->opts->keep_native_tid
                                    : c->opts->keep_tid;
    if (keep && !keep(c->opts->arg, th >= 0 ? thread_tid(c, th) : -1))
        return 0;
    int64_t key = field_long(c, cls, c->es_stack[e], pos[1], &ok);
    stack_rec *rec = ok ? stack_of(c, key) : NULL;
    if (ok && !rec)
        return fail(c->err, c->errlen, "out of memory decoding JFR stack traces");
    if (!rec || rec->n == BAD_STACK) {
        c->st->bad++;
        return 0;
    }
    int64_t ti = th >= 0 ? thread_index(c, th) : -2;
    if (ti == -1)
        return fail(c->err, c->errlen, "out of memory counting JFR samples");
    if (ti < 0 || (!c->threads[ti].label && !c->threads[ti].tid))
        rec->count++;
    else if (count_labeled(c, (uint32_t)ti, (size_t)(rec - c->stacks)) < 0)
        return fail(c->err, c->errlen, "out of memory counting JFR samples");
    c->st->samples++;
    c->st->truncated += rec->trunc;
    return 0;
}

static int read_events(chunk *c)
{
    unsigned mask = c->opts && c->opts->events ? c->opts->events : PP_JFR_EXECUTION;
    int64_t es_id[PP_JFR_NEVENTS];
    for (int e = 0; e < PP_JFR_NEVENTS; e++)
        es_id[e] = c->es_cls[e] >= 0 && (mask & 1u << e) ? c->m.classes[c->es_cls[e]].id : -1;
    size_t pos = JFR_HEADER_SIZE;
    while (pos < c->r.end) {
        jfr_rd r = c->r;
        r.pos = pos;
        int32_t size = jfr_int(&r);
        if (r.err || size <= 0 || (size_t)size > c->r.end - pos)
            return fail(c->err, c->errlen, "truncated event at offset %zu", c->base + pos);
        r.end = pos + (size_t)size;
        int64_t type = jfr_long(&r);
        if (r.err)
            return fail(c->err, c->errlen, "truncated event at offset %zu", c->base + pos);
        c->st->events++;
        for (int e = 0; e < PP_JFR_NEVENTS; e++)
            if (type == es_id[e] && on_sample(c, &r, pos, e) < 0)
                return -1;
        pos += (size_t)size;
    }
    return 0;
}

/* Adds the chunk's counts to the profile. */
static int flush_counts(chunk *c)
{
    for (size_t i = 0; i < c->nstacks; i++) {
        stack_rec *s = &c->stacks[i];
        if (s->n != BAD_STACK && s->count &&
            pp_pid_add(c->pp, c->frames + s->off, s->n, s->count) < 0)
            return fail(c->err, c->errlen, "out of memory adding JFR samples");
        s->count = 0;
    }
    uint32_t buf[1 + 1024];
    for (size_t i = 0; i < c->nlabeled; i++) {
        const struct labeled *l = &c->labeled[i];
        const stack_rec *s = &c->stacks[l->stack];
        const struct jthread *t = &c->threads[l->thread];
        uint32_t n = s->n < 1024 ? s->n : 1024, lab = t->label ? 1 : 0;
        buf[0] = t->label;
        memcpy(buf + lab, c->frames + s->off, n * sizeof(uint32_t));
        if (l->count && pp_pid_add_tid(c->pp, t->tid, buf, n + lab, l->count) < 0)
            return fail(c->err, c->errlen, "out of memory adding JFR samples");
    }
    c->nlabeled = 0;
    return 0;
}

static void chunk_free(chunk *c)
{
    jfr_meta_free(&c->m);
    for (int i = 0; i < R_N; i++)
        pp_u64map_free(&c->pool[i]);
    for (int i = 0; i < SFX_N; i++)
        pp_u64map_free(&c->frame_ids[i]);
    pp_u64map_free(&c->ftype_sfx);
    pp_u64map_free(&c->stack_idx);
    pp_u64map_free(&c->tids);
    pp_u64map_free(&c->labeled_idx);
    pp_u64map_free(&c->thread_idx);
    free(c->threads);
    free(c->labeled);
    free(c->stacks);
    free(c->frames);
    free(c->tmp);
    free(c->text);
}

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Parses one chunk at buf (len bytes left in the file); its size in *size. */
static int parse_chunk(chunk *c, const uint8_t *buf, size_t len, size_t base, uint64_t *size)
{
    if (len < JFR_HEADER_SIZE)
        return fail(c->err, c->errlen, "truncated chunk at offset %zu", base);
    if (memcmp(buf, "FLR\0", 4) != 0)
        return fail(c->err, c->errlen, "not a JFR file (bad chunk magic at offset %zu)", base);
    unsigned major = (unsigned)buf[4] << 8 | buf[5], minor = (unsigned)buf[6] << 8 | buf[7];
    if (major != 2)
        return fail(c->err, c->errlen, "unsupported JFR version %u.%u (polyprof reads 2.x)", major,
                    minor);
    *size = be64(buf + 8);
    uint64_t cp = be64(buf + 16), meta = be64(buf + 24);
    uint32_t features = (uint32_t)buf[64] << 24 | (uint32_t)buf[65] << 16 | (uint32_t)buf[66] << 8 |
                        buf[67]; /* bit 0: compressed integers */
    if (*size < JFR_HEADER_SIZE || *size > len)
        return fail(c->err, c->errlen,
                    "truncated chunk at offset %zu (header says %llu bytes, %zu present)", base,
                    (unsigned long long)*size, len);
    if (cp < JFR_HEADER_SIZE || cp >= *size || meta < JFR_HEADER_SIZE || meta >= *size)
        return fail(c->err, c->errlen, "corrupt chunk header at offset %zu", base);
    c->r = (jfr_rd){.p = buf, .pos = 0, .end = (size_t)*size, .compressed = features & 1};
    c->base = base;
    c->budget = (int64_t)(16 * *size) + 65536;
    c->text = malloc(TEXT_CAP);
    if (!c->text)
        return fail(c->err, c->errlen, "out of memory reading JFR chunk");
    if (jfr_meta_parse(&c->r, (size_t)meta, &c->m, c->err, c->errlen) < 0)
        return -1;
    find_fields(c);
    if (read_pools(c, (size_t)cp) < 0)
        return -1;
    c->st->chunks++;
    return read_events(c);
}

int pp_jfr_parse_buf(const uint8_t *buf, size_t len, const pp_jfr_opts *opts, pp_profile *prof,
                     pp_pid_profile *pp, pp_jfr_stats *st, char *err, size_t errlen)
{
    pp_jfr_stats dummy;
    char ebuf[256];
    if (!st)
        st = &dummy;
    if (!err || !errlen) {
        err = ebuf;
        errlen = sizeof(ebuf);
    }
    memset(st, 0, sizeof(*st));
    err[0] = '\0';
    if (!buf || len < 4 || memcmp(buf, "FLR\0", 4) != 0)
        return fail(err, errlen, "not a JFR file (no FLR magic)");
    size_t pos = 0;
    int rc = 0;
    while (rc == 0 && pos < len) {
        chunk c;
        memset(&c, 0, sizeof(c));
        c.opts = opts;
        c.prof = prof;
        c.pp = pp;
        c.st = st;
        c.err = err;
        c.errlen = errlen;
        uint64_t size = 0;
        rc = parse_chunk(&c, buf + pos, len - pos, pos, &size);
        if (flush_counts(&c) < 0)
            rc = -1;
        chunk_free(&c);
        pos += (size_t)size;
    }
    return rc;
}

int pp_jfr_parse_file(const char *path, const pp_jfr_opts *opts, pp_profile *prof,
                      pp_pid_profile *pp, pp_jfr_stats *st, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, "cannot open %s: %m", path);
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return fail(err, errlen, "%s is not a regular file", path);
    }
    if (sb.st_size == 0) {
        close(fd);
        return pp_jfr_parse_buf(NULL, 0, opts, prof, pp, st, err, errlen);
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return fail(err, errlen, "cannot map %s: %m", path);
    int rc = pp_jfr_parse_buf(map, (size_t)sb.st_size, opts, prof, pp, st, err, errlen);
    munmap(map, (size_t)sb.st_size);
    return rc;
}
