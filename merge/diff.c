#include "merge/diff.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/safefile.h"
#include "base/utf8.h"
#include "merge/collapsed.h"
#include "merge/html.h"
#include "merge/linecount.h"
#include "merge/strtab.h"

struct pp_stackset {
    pp_linecount *lines;
    uint64_t total;
    char *header;
    char *buf; /* a cleaned line */
    size_t cap;
};

pp_stackset *pp_stackset_new(void)
{
    pp_stackset *s = calloc(1, sizeof(*s));
    if (!s || !(s->lines = pp_linecount_new()) || !(s->header = strdup(""))) {
        pp_stackset_free(s);
        return NULL;
    }
    return s;
}

void pp_stackset_free(pp_stackset *s)
{
    if (!s)
        return;
    pp_linecount_free(s->lines);
    free(s->header);
    free(s->buf);
    free(s);
}

/* Length of the run of printable ASCII at the start of s[0..len). */
static size_t printable_run(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f)
        i++;
    return i;
}

/* s->buf = stack[0..len) with invalid UTF-8 as U+FFFD and control characters as '?'. Returns
 * the cleaned length, or (size_t)-1 on OOM. */
static size_t clean(pp_stackset *s, const char *stack, size_t len)
{
    size_t need = len * PP_UTF8_REPLACEMENT_LEN + 1; /* each byte may become U+FFFD */
    if (need > s->cap) {
        char *b = realloc(s->buf, need);
        if (!b)
            return (size_t)-1;
        s->buf = b;
        s->cap = need;
    }
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t run = printable_run(stack + i, len - i);
        memcpy(s->buf + o, stack + i, run);
        o += run;
        i += run;
        if (i == len)
            break;
        uint32_t cp;
        size_t n = pp_utf8_next(stack + i, len - i, &cp);
        if (n == 1 && cp >= 0x80) {
            memcpy(s->buf + o, PP_UTF8_REPLACEMENT, PP_UTF8_REPLACEMENT_LEN);
            o += PP_UTF8_REPLACEMENT_LEN;
        } else if (cp < 0x20 || cp == 0x7f) {
            s->buf[o++] = '?';
        } else {
            memcpy(s->buf + o, stack + i, n);
            o += n;
        }
        i += n;
    }
    s->buf[o] = '\0';
    return o;
}

int pp_stackset_add(pp_stackset *s, const char *stack, size_t len, uint64_t count)
{
    if (count == 0)
        return 0;
    if (count > PP_DIFF_MAX_TOTAL || s->total > PP_DIFF_MAX_TOTAL - count)
        return -2;
    if (printable_run(stack, len) == len) { /* nothing to clean */
        if (pp_linecount_add(s->lines, stack, len, count) < 0)
            return -1;
    } else {
        size_t n = clean(s, stack, len);
        if (n == (size_t)-1 || pp_linecount_add(s->lines, s->buf, n, count) < 0)
            return -1;
    }
    s->total += count;
    return 0;
}

int pp_stackset_set_header(pp_stackset *s, const char *json, size_t len)
{
    char *h = strndup(json, len);
    if (!h)
        return -1;
    free(s->header);
    s->header = h;
    return 0;
}

uint64_t pp_stackset_total(const pp_stackset *s)
{
    return s->total;
}

size_t pp_stackset_size(const pp_stackset *s)
{
    return pp_linecount_size(s->lines);
}

const char *pp_stackset_get(const pp_stackset *s, size_t i, size_t *len, uint64_t *count)
{
    return pp_linecount_get(s->lines, i, len, count);
}

const char *pp_stackset_header(const pp_stackset *s)
{
    return s->header;
}

/* err = "line N ("<start of the line>"): <what>", the line's bytes escaped. Returns -2. */
static int bad_line(char *err, size_t errlen, size_t lineno, const char *line, size_t ll,
                    const char *fmt, ...)
{
    char head[48], esc[200];
    size_t hl = ll < sizeof(head) - 1 ? ll : sizeof(head) - 1;
    memcpy(head, line, hl);
    head[hl] = '\0';
    for (size_t i = 0; i < hl; i++)
        if (!head[i])
            head[i] = ' '; /* a NUL would end the quote early */
    pp_escape_text(head, esc, sizeof(esc));
    int w = snprintf(err, errlen, "line %zu (\"%s%s\"): ", lineno, esc, ll > hl ? "..." : "");
    if (w >= 0 && (size_t)w < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + w, errlen - (size_t)w, fmt, ap);
        va_end(ap);
    }
    return -2;
}

/* A growing buffer for a line without a container field, written as ";" + the line. */
typedef struct plainbuf {
    char *data;
    size_t cap;
} plainbuf;

/* Adds one stack line line[0..ll) (line number lineno, not empty). 0, -1 (OOM) or -2 (err
 * set). */
static int parse_line(pp_stackset *s, const char *line, size_t ll, size_t lineno,
                      const pp_col_prefix *pf, plainbuf *pb, char *err, size_t errlen)
{
    size_t sl;
    unsigned long long count;
    if (pp_col_split_count(line, ll, &sl, &count) < 0)
        return bad_line(err, errlen, lineno, line, ll,
                        "no sample count at its end: a stack line is \"<frames> <count>\"");
    const char *stack = line;
    if (pf->app_idx) {
        size_t d = 0;
        while (d < sl && d < 20 && line[d] >= '0' && line[d] <= '9')
            d++;
        if (d == 0 || d >= sl || line[d] != ';')
            return bad_line(err, errlen, lineno, line, ll,
                            "no app-metadata index (a number and ';') at its start, which "
                            "the header's application_metadata_enabled says every line has");
        stack = line + d + 1;
    }
    size_t stl = (size_t)(line + sl - stack);
    if (pf->container && !memchr(stack, ';', stl))
        return bad_line(err, errlen, lineno, line, ll,
                        "no ';' after the container field: a line is "
                        "\"%scontainer;comm;frames <count>\"",
                        pf->app_idx ? "index;" : "");
    if (!pf->container) {
        if (stl + 1 > pb->cap) {
            char *p = realloc(pb->data, stl + 1);
            if (!p)
                return -1;
            pb->data = p;
            pb->cap = stl + 1;
        }
        pb->data[0] = ';';
        memcpy(pb->data + 1, stack, stl);
        stack = pb->data;
        stl++;
    }
    int rc = pp_stackset_add(s, stack, stl, count);
    if (rc == -2)
        return bad_line(err, errlen, lineno, line, ll,
                        "the samples add up to more than %llu: not a profile",
                        (unsigned long long)PP_DIFF_MAX_TOTAL);
    return rc;
}

int pp_stackset_parse_col(pp_stackset *s, const char *col, size_t len, char *err, size_t errlen)
{
    pp_col_prefix pf;
    pp_col_prefix_read(col, len, &pf);
    if (pf.header && !pf.parsed)
        return bad_line(err, errlen, 1, col, pf.body ? pf.body - 1 : 0,
                        "the header line is not '# ' and a JSON object; is this a .col file "
                        "written by polyprof or gProfiler?");
    if (pf.header &&
        pp_stackset_set_header(s, col + 1, pf.body - 1 - (col[pf.body - 1] == '\n')) < 0)
        return -1;
    if (!pf.header) /* plain collapsed text: "comm;frames count" */
        pf.app_idx = pf.container = false;
    plainbuf pb = {0};
    size_t lineno = pf.header ? 1 : 0;
    int rc = 0;
    for (size_t at = pf.body; rc == 0 && at < len;) {
        const char *line = col + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - line) : len - at;
        at += ll + 1;
        lineno++;
        if (ll > 0 && !(ll == 1 && line[0] == '\r'))
            rc = parse_line(s, line, ll, lineno, &pf, &pb, err, errlen);
    }
    free(pb.data);
    return rc;
}

struct pp_diff {
    pp_strtab *names;
    uint64_t base_total, target_total;
    pp_diff_row *grew, *shrank;
    size_t ngrew, nshrank;
};

/* Per-name sums while computing. */
typedef struct tally {
    uint64_t *base, *target;
    size_t *seen; /* the last stack (numbered from 1) that counted the name */
    size_t cap;
    size_t stack; /* the current stack's number */
} tally;

static int tally_grow(tally *t, size_t id)
{
    if (id < t->cap)
        return 0;
    size_t nc = t->cap ? t->cap * 2 : 256;
    while (nc <= id)
        nc *= 2;
    uint64_t *b = realloc(t->base, nc * sizeof(*b));
    if (b)
        t->base = b;
    uint64_t *g = realloc(t->target, nc * sizeof(*g));
    if (g)
        t->target = g;
    size_t *s = realloc(t->seen, nc * sizeof(*s));
    if (s)
        t->seen = s;
    if (!b || !g || !s)
        return -1;
    memset(t->base + t->cap, 0, (nc - t->cap) * sizeof(*b));
    memset(t->target + t->cap, 0, (nc - t->cap) * sizeof(*g));
    memset(t->seen + t->cap, 0, (nc - t->cap) * sizeof(*s));
    t->cap = nc;
    return 0;
}

/* Adds every stack of side to the sums of the names below its container and comm, once per
 * stack. */
static int tally_side(tally *t, pp_strtab *names, const pp_stackset *side, bool is_target)
{
    for (size_t i = 0; i < pp_stackset_size(side); i++) {
        size_t len;
        uint64_t count;
        const char *st = pp_stackset_get(side, i, &len, &count);
        t->stack++;
        size_t field = 0, start = 0;
        for (size_t k = 0; k <= len; k++) {
            if (k < len && st[k] != ';')
                continue;
            if (field++ >= 2) {
                uint32_t id = pp_strtab_intern(names, st + start, k - start);
                if (id == UINT32_MAX || tally_grow(t, id) < 0)
                    return -1;
                if (t->seen[id] != t->stack) {
                    t->seen[id] = t->stack;
                    (is_target ? t->target : t->base)[id] += count;
                }
            }
            start = k + 1;
        }
    }
    return 0;
}

static int by_growth(const void *a, const void *b)
{
    const pp_diff_row *x = a, *y = b;
    if (x->delta != y->delta)
        return x->delta > y->delta ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_fall(const void *a, const void *b)
{
    const pp_diff_row *x = a, *y = b;
    if (x->delta != y->delta)
        return x->delta < y->delta ? -1 : 1;
    return strcmp(x->name, y->name);
}

static double share(uint64_t v, uint64_t total)
{
    return total ? (double)v / (double)total : 0.0;
}

pp_diff *pp_diff_compute(const pp_stackset *base, const pp_stackset *target)
{
    pp_diff *d = calloc(1, sizeof(*d));
    tally t = {0};
    if (!d || !(d->names = pp_strtab_new()) || tally_side(&t, d->names, base, false) < 0 ||
        tally_side(&t, d->names, target, true) < 0)
        goto oom;
    d->base_total = base->total;
    d->target_total = target->total;
    size_t n = pp_strtab_count(d->names);
    d->grew = calloc(n ? n : 1, sizeof(*d->grew));
    d->shrank = calloc(n ? n : 1, sizeof(*d->shrank));
    if (!d->grew || !d->shrank)
        goto oom;
    for (uint32_t id = 0; id < n && id < t.cap; id++) {
        if (!t.seen[id])
            continue; /* the strtab's own empty string, never a frame */
        pp_diff_row r = {.name = pp_strtab_get(d->names, id),
                         .base = t.base[id],
                         .target = t.target[id],
                         .base_share = share(t.base[id], d->base_total),
                         .target_share = share(t.target[id], d->target_total)};
        r.delta = r.target_share - r.base_share;
        if (r.delta > 0)
            d->grew[d->ngrew++] = r;
        else if (r.delta < 0)
            d->shrank[d->nshrank++] = r;
    }
    qsort(d->grew, d->ngrew, sizeof(*d->grew), by_growth);
    qsort(d->shrank, d->nshrank, sizeof(*d->shrank), by_fall);
    free(t.base);
    free(t.target);
    free(t.seen);
    return d;
oom:
    free(t.base);
    free(t.target);
    free(t.seen);
    pp_diff_free(d);
    return NULL;
}

void pp_diff_free(pp_diff *d)
{
    if (!d)
        return;
    pp_strtab_free(d->names);
    free(d->grew);
    free(d->shrank);
    free(d);
}

uint64_t pp_diff_base_total(const pp_diff *d)
{
    return d->base_total;
}

uint64_t pp_diff_target_total(const pp_diff *d)
{
    return d->target_total;
}

const pp_diff_row *pp_diff_grew(const pp_diff *d, size_t n, size_t *count)
{
    *count = d->ngrew < n ? d->ngrew : n;
    return d->grew;
}

const pp_diff_row *pp_diff_shrank(const pp_diff *d, size_t n, size_t *count)
{
    *count = d->nshrank < n ? d->nshrank : n;
    return d->shrank;
}

static void write_rows(const pp_diff_row *rows, size_t n, FILE *f)
{
    fprintf(f, "  %8s  %8s  %8s  %s\n", "base", "target", "change", "function");
    if (n == 0)
        fputs("  (none)\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %7.2f%%  %7.2f%%  %+8.2f  %s\n", 100 * rows[i].base_share,
                100 * rows[i].target_share, 100 * rows[i].delta, rows[i].name);
}

void pp_diff_write_table(const pp_diff *d, size_t n, FILE *f)
{
    size_t ng, ns;
    const pp_diff_row *g = pp_diff_grew(d, n, &ng), *s = pp_diff_shrank(d, n, &ns);
    fprintf(f,
            "Share of samples by function (inclusive), base %llu samples, target %llu samples;"
            " change in points:\n",
            (unsigned long long)d->base_total, (unsigned long long)d->target_total);
    fprintf(f, "Grew (top %zu):\n", n);
    write_rows(g, ng, f);
    fprintf(f, "Shrank (top %zu):\n", n);
    write_rows(s, ns, f);
}

/* The side as .col text for the page: its header line, then "container;comm;... count" lines
 * (one prefix frame, the container). NULL on OOM. */
static char *side_col(const pp_stackset *s, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        return NULL;
    if (*s->header)
        fprintf(f, "# %s\n", s->header);
    for (size_t i = 0; i < pp_stackset_size(s); i++) {
        size_t ll;
        uint64_t count;
        const char *st = pp_stackset_get(s, i, &ll, &count);
        fwrite(st, 1, ll, f);
        fprintf(f, " %llu\n", (unsigned long long)count);
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* [[name, base samples, target samples], ...] */
static json_t *rows_json(const pp_diff_row *rows, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_pack("[s,I,I]", rows[i].name, (json_int_t)rows[i].base,
                                               (json_int_t)rows[i].target)) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

char *pp_diff_render_html(const pp_stackset *base, const pp_stackset *target, const pp_diff *d,
                          size_t n, size_t *out_len)
{
    size_t ng, ns, bl = 0, tl = 0;
    const pp_diff_row *g = pp_diff_grew(d, n, &ng), *s = pp_diff_shrank(d, n, &ns);
    json_t *j = json_pack("{s:I,s:I,s:I,s:o*,s:o*}", "top", (json_int_t)n, "base_total",
                          (json_int_t)d->base_total, "target_total", (json_int_t)d->target_total,
                          "grew", rows_json(g, ng), "shrank", rows_json(s, ns));
    bool whole = json_object_get(j, "grew") && json_object_get(j, "shrank");
    char *dj = whole ? json_dumps(j, JSON_ENSURE_ASCII | JSON_COMPACT) : NULL;
    char *bc = side_col(base, &bl), *tc = side_col(target, &tl), *page = NULL;
    if (dj && bc && tc) {
        pp_html_profile b = {bc, bl, 1}, t = {tc, tl, 1};
        page = pp_html_render_diff(&b, &t, dj, out_len);
    }
    json_decref(j);
    free(dj);
    free(bc);
    free(tc);
    return page;
}
