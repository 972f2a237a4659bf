#include "merge/collapsed.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "merge/linecount.h"

/* A growing byte buffer; a failed allocation sets oom and drops what follows. */
typedef struct linebuf {
    char *data;
    size_t len, cap;
    bool oom;
} linebuf;

static void lb_put(linebuf *b, const char *s, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + n)
            nc *= 2;
        char *d = realloc(b->data, nc);
        if (!d) {
            b->oom = true;
            return;
        }
        b->data = d;
        b->cap = nc;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

/* Appends frame s[0..len) with every ';' as '|', every control character (newline included) as
 * '?' and every byte that is not valid UTF-8 as U+FFFD, so that a frame never breaks the line
 * format and the text is always UTF-8 (comm and frames are any bytes a process chose). */
static void lb_frame(linebuf *b, const char *s, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        size_t n = c < 0x80 ? 1 : pp_utf8_next(s + i, len - i, &cp);
        if (c == ';' || c < 0x20 || c == 0x7f || (c >= 0x80 && n == 1)) {
            lb_put(b, s + start, i - start);
            if (c >= 0x80)
                lb_put(b, PP_UTF8_REPLACEMENT, PP_UTF8_REPLACEMENT_LEN);
            else
                lb_put(b, c == ';' ? "|" : "?", 1);
            start = i + 1;
        }
        i += n;
    }
    lb_put(b, s + start, len - start);
}

char *pp_header_dump(const json_t *header)
{
    return json_dumps(header, JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
}

/* Index of md in list (by equality), appending it when absent. NULL metadata is index 0. */
static size_t app_index(json_t *list, json_t *md)
{
    if (!md || json_is_null(md))
        return 0;
    for (size_t i = 1; i < json_array_size(list); i++)
        if (json_equal(json_array_get(list, i), md))
            return i;
    json_array_append(list, md);
    return json_array_size(list) - 1;
}

char *pp_col_render(const pp_profile *p, json_t *header, const pp_render_opts *o, size_t *len)
{
    json_t *apps = json_array();
    json_t *containers = json_array();
    size_t n = pp_profile_npids(p);
    size_t *idx = calloc(n ? n : 1, sizeof(*idx));
    if (!apps || !containers || !idx)
        goto oom;
    json_array_append_new(apps, json_null());
    for (size_t i = 0; i < n; i++) {
        pp_pid_profile *pp = pp_profile_at(p, i);
        idx[i] = app_index(apps, pp->app_metadata);
        /* As its frame: valid UTF-8 (jansson refuses any other string) */
        char *c = pp_utf8_sanitized(pp_profile_str(p, pp->container),
                                    strlen(pp_profile_str(p, pp->container)), NULL);
        if (!c)
            goto oom;
        if (*c) {
            bool seen = false;
            for (size_t k = 0; k < json_array_size(containers) && !seen; k++)
                seen = strcmp(json_string_value(json_array_get(containers, k)), c) == 0;
            if (!seen)
                json_array_append_new(containers, json_string(c));
        }
        free(c);
    }
    if (!o->plain) {
        json_object_set(header, "application_metadata", apps);
        json_object_set(header, "containers", containers);
    }

    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (!f)
        goto oom;
    if (!o->plain) {
        char *hdr = pp_header_dump(header);
        if (!hdr) {
            fclose(f);
            free(text);
            goto oom;
        }
        fputs("# ", f);
        fputs(hdr, f);
        free(hdr);
    }

    /* Several pids can render the same line (workers of one program share comm, metadata and
     * container; escaping can make two frames alike): each line is written once, with the sum of
     * its counts, where it first appeared, as gProfiler's Counter of stack strings does. */
    pp_linecount *lines = pp_linecount_new();
    linebuf b = {0};
    bool oom = !lines;
    for (size_t i = 0; i < n && !oom; i++) {
        pp_pid_profile *pp = pp_profile_at(p, i);
        const char *comm = pp_profile_str(p, pp->comm);
        const char *cont = pp_profile_str(p, pp->container);
        const char *appid = pp_profile_str(p, pp->appid);
        for (size_t s = 0; s < pp_pid_nstacks(pp) && !oom; s++) {
            size_t nf;
            uint64_t count;
            const uint32_t *fr = pp_pid_stack(pp, s, &nf, &count);
            if (count == 0)
                continue;
            b.len = 0;
            if (!o->v1 && !o->plain) {
                if (o->app_metadata_enabled) {
                    char num[24];
                    lb_put(&b, num, (size_t)snprintf(num, sizeof(num), "%zu;", idx[i]));
                }
                lb_frame(&b, cont, strlen(cont));
                lb_put(&b, ";", 1);
            }
            lb_frame(&b, comm, strlen(comm));
            if (o->appids_enabled && *appid) {
                lb_put(&b, ";appid: ", 8);
                lb_frame(&b, appid, strlen(appid));
            }
            for (size_t k = 0; k < nf; k++) {
                lb_put(&b, ";", 1);
                lb_frame(&b, pp_profile_str(p, fr[k]),
                         pp_strtab_len(pp_profile_strings((pp_profile *)p), fr[k]));
            }
            oom = b.oom || pp_linecount_add(lines, b.data ? b.data : "", b.len, count) < 0;
        }
    }
    for (size_t i = 0; !oom && i < pp_linecount_size(lines); i++) {
        size_t ll;
        uint64_t count;
        const char *line = pp_linecount_get(lines, i, &ll, &count);
        if (!o->plain)
            fputc('\n', f);
        fwrite(line, 1, ll, f);
        fprintf(f, o->plain ? " %llu\n" : " %llu", (unsigned long long)count);
    }
    free(b.data);
    pp_linecount_free(lines);
    if (oom) {
        fclose(f);
        free(text);
        goto oom;
    }
    if (fclose(f) != 0) {
        free(text);
        goto oom;
    }
    free(idx);
    json_decref(apps);
    json_decref(containers);
    *len = tlen;
    return text;
oom:
    free(idx);
    json_decref(apps);
    json_decref(containers);
    return NULL;
}

int pp_col_split_count(const char *line, size_t len, size_t *stack_len, unsigned long long *count)
{
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    size_t sp = len;
    while (sp > 0 && line[sp - 1] != ' ')
        sp--;
    if (sp == 0 || sp == len)
        return -1;
    unsigned long long v = 0;
    for (size_t i = sp; i < len; i++) {
        if (!isdigit((unsigned char)line[i]))
            return -1;
        unsigned d = (unsigned)(line[i] - '0');
        if (v > (~0ULL - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *stack_len = sp - 1;
    *count = v;
    return 0;
}

void pp_col_prefix_read(const char *col, size_t len, pp_col_prefix *out)
{
    *out = (pp_col_prefix){.app_idx = true, .container = true};
    if (len == 0 || col[0] != '#')
        return;
    out->header = true;
    const char *nl = memchr(col, '\n', len);
    size_t hl = nl ? (size_t)(nl - col) : len;
    out->body = nl ? hl + 1 : len;
    json_t *h = json_loadb(col + 1, hl - 1, 0, NULL);
    if (json_is_object(h)) {
        out->parsed = true;
        out->app_idx = json_is_true(json_object_get(h, "application_metadata_enabled"));
        const char *v = json_string_value(
            json_object_get(json_object_get(json_object_get(h, "metadata"), "run_arguments"),
                            "profile_api_version"));
        out->container = !(v && strcmp(v, "v1") == 0);
        out->app_idx = out->app_idx && out->container;
    }
    json_decref(h);
}
