#include "merge/collapsed.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pp_write_frame(FILE *f, const char *s, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ';' || c < 0x20 || c == 0x7f) {
            if (i > start)
                fwrite(s + start, 1, i - start, f);
            fputc(c == ';' ? '|' : '?', f);
            start = i + 1;
        }
    }
    if (len > start)
        fwrite(s + start, 1, len - start, f);
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
        const char *c = pp_profile_str(p, pp->container);
        if (*c) {
            bool seen = false;
            for (size_t k = 0; k < json_array_size(containers) && !seen; k++)
                seen = strcmp(json_string_value(json_array_get(containers, k)), c) == 0;
            if (!seen)
                json_array_append_new(containers, json_string(c));
        }
    }
    json_object_set(header, "application_metadata", apps);
    json_object_set(header, "containers", containers);

    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (!f)
        goto oom;
    char *hdr = pp_header_dump(header);
    if (!hdr) {
        fclose(f);
        free(text);
        goto oom;
    }
    fputs("# ", f);
    fputs(hdr, f);
    free(hdr);

    for (size_t i = 0; i < n; i++) {
        pp_pid_profile *pp = pp_profile_at(p, i);
        const char *comm = pp_profile_str(p, pp->comm);
        const char *cont = pp_profile_str(p, pp->container);
        const char *appid = pp_profile_str(p, pp->appid);
        for (size_t s = 0; s < pp_pid_nstacks(pp); s++) {
            size_t nf;
            uint64_t count;
            const uint32_t *fr = pp_pid_stack(pp, s, &nf, &count);
            if (count == 0)
                continue;
            fputc('\n', f);
            if (!o->v1) {
                if (o->app_metadata_enabled)
                    fprintf(f, "%zu;", idx[i]);
                pp_write_frame(f, cont, strlen(cont));
                fputc(';', f);
            }
            pp_write_frame(f, comm, strlen(comm));
            if (o->appids_enabled && *appid) {
                fputs(";appid: ", f);
                pp_write_frame(f, appid, strlen(appid));
            }
            for (size_t k = 0; k < nf; k++) {
                fputc(';', f);
                pp_write_frame(f, pp_profile_str(p, fr[k]),
                               pp_strtab_len(pp_profile_strings((pp_profile *)p), fr[k]));
            }
            fprintf(f, " %llu", (unsigned long long)count);
        }
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
