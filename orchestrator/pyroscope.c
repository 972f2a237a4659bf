#include "orchestrator/pyroscope.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "merge/collapsed.h"
#include "merge/header.h"
#include "merge/linecount.h"
#include "orchestrator/http.h"
#include "base/hashtab.h"
#include "base/log.h"
#include "base/safefile.h"
#include "runtimes/runtime.h"

struct pp_pyroscope {
    char *server, *app, *tenant, *user, *password;
    char hostname[256];
    pp_http *http;
    char resume_id[128]; /* spool entry whose first resume_next groups were accepted */
    size_t resume_next;
};

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

pp_pyroscope *pp_pyroscope_new(const pp_config *cfg, const atomic_int *abort, char *err,
                               size_t errlen)
{
    pp_pyroscope *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (cfg->pyroscope_auth_file && *cfg->pyroscope_auth_file) {
        char why[1024];
        bool bad_kind;
        size_t n = 0;
        char *buf =
            pp_read_input_file(cfg->pyroscope_auth_file, PP_CLI_MAX_SECRET_FILE,
                               "--pyroscope-basic-auth-file", &n, &bad_kind, why, sizeof(why));
        char *t = buf ? trim(buf) : NULL, *colon = t ? strchr(t, ':') : NULL;
        if (!colon) {
            snprintf(err, errlen, "%s; it must hold \"user:password\" on one line",
                     buf ? "--pyroscope-basic-auth-file has no ':' in it" : why);
            if (buf)
                memset(buf, 0, n);
            free(buf);
            free(p);
            return NULL;
        }
        *colon = '\0';
        p->user = strdup(t);
        p->password = strdup(colon + 1);
        memset(buf, 0, n);
        free(buf);
    }
    size_t sl = strlen(cfg->pyroscope_server);
    while (sl && cfg->pyroscope_server[sl - 1] == '/')
        sl--;
    p->server = strndup(cfg->pyroscope_server, sl);
    p->app = pp_pyroscope_app_name(cfg->service_name);
    if (cfg->pyroscope_tenant_id && *cfg->pyroscope_tenant_id)
        p->tenant = strdup(cfg->pyroscope_tenant_id);
    gethostname(p->hostname, sizeof(p->hostname) - 1);
    pp_http_opts o = {
        .verify = !cfg->no_verify,
        .ca_bundle = cfg->ca_bundle,
        .connect_timeout_s = 5,
        .timeout_s = cfg->server_upload_timeout > 0 ? cfg->server_upload_timeout : 120,
        .user = p->user,
        .password = p->password,
        .abort = abort,
    };
    p->http = pp_http_new(&o);
    if (!p->server || !p->app || !p->http) {
        pp_pyroscope_free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return p;
}

void pp_pyroscope_free(pp_pyroscope *p)
{
    if (!p)
        return;
    if (p->password)
        memset(p->password, 0, strlen(p->password));
    free(p->server);
    free(p->app);
    free(p->tenant);
    free(p->user);
    free(p->password);
    pp_http_free(p->http);
    free(p);
}

char *pp_pyroscope_app_name(const char *service)
{
    const char *s = service && *service ? service : "polyprof";
    size_t n = strlen(s);
    char *out = malloc(n + 5);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-' ? (char)c : '_';
    }
    memcpy(out + n, ".cpu", 5);
    return out;
}

char *pp_pyroscope_label_value(const char *v, size_t len)
{
    while (len && isspace((unsigned char)*v))
        v++, len--;
    while (len && isspace((unsigned char)v[len - 1]))
        len--;
    if (len > 256)
        len = 256;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        out[i] = c < 0x20 || c == 0x7f || c == ',' || c == '{' || c == '}' || c == '=' || c == '"'
                     ? '_'
                     : (char)c;
    }
    out[len] = '\0';
    return out;
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

static bool starts_with(const char *s, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && memcmp(s, pre, k) == 0;
}

/* The kind whose frame suffixes (then, in a second pass, prefixes) frame f carries, as the
 * runtimes' descriptors list them; native if none. */
static pp_proc_kind frame_kind(const char *f, size_t n)
{
    for (int k = 1; n > 4 && f[n - 1] == ']' && k < PP_KIND_COUNT; k++)
        for (const char *const *x = pp_runtime_get((pp_proc_kind)k)->suffixes; x && *x; x++)
            if (ends_with(f, n, *x))
                return (pp_proc_kind)k;
    for (int k = 1; k < PP_KIND_COUNT; k++)
        for (const char *const *x = pp_runtime_get((pp_proc_kind)k)->frame_prefixes; x && *x; x++)
            if (starts_with(f, n, *x))
                return (pp_proc_kind)k;
    return PP_KIND_NATIVE;
}

static pp_proc_kind stack_kind(const char *s, size_t len)
{
    const char *p = s, *e = s + len;
    while (p < e) {
        const char *q = memchr(p, ';', (size_t)(e - p));
        size_t n = q ? (size_t)(q - p) : (size_t)(e - p);
        pp_proc_kind k = frame_kind(p, n);
        if (k != PP_KIND_NATIVE)
            return k;
        p = q ? q + 1 : e;
    }
    return PP_KIND_NATIVE;
}

static const char *kind_label(pp_proc_kind k)
{
    return k == PP_KIND_NATIVE ? "native" : pp_runtime_get(k)->label;
}

const char *pp_pyroscope_runtime(const char *stack, size_t len)
{
    return kind_label(stack_kind(stack, len));
}

/* ---- grouping ---- */

typedef struct gtab {
    pp_pyro_group *g;
    size_t n, cap;
    pp_htab idx; /* of uint32_t indexes into g */
} gtab;

static pp_pyro_group *gtab_get(gtab *t, const char *comm, size_t cl, const char *cont, size_t ctl)
{
    uint64_t h = pp_hash_bytes(cont, ctl, pp_hash_bytes(comm, cl, 0));
    pp_htab_probe p;
    for (uint32_t *i = pp_htab_first(&t->idx, h, &p); i; i = pp_htab_next(&t->idx, &p)) {
        pp_pyro_group *g = &t->g[*i];
        if (strlen(g->comm) == cl && memcmp(g->comm, comm, cl) == 0 &&
            strlen(g->container) == ctl && memcmp(g->container, cont, ctl) == 0)
            return g;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 16;
        pp_pyro_group *ng = realloc(t->g, nc * sizeof(*ng));
        if (!ng)
            return NULL;
        t->g = ng;
        t->cap = nc;
    }
    pp_pyro_group *g = &t->g[t->n];
    memset(g, 0, sizeof(*g));
    g->comm = strndup(comm, cl);
    g->container = strndup(cont, ctl);
    uint32_t *slot = g->comm && g->container ? pp_htab_add(&t->idx, h) : NULL;
    if (!slot) {
        free(g->comm);
        free(g->container);
        return NULL;
    }
    *slot = (uint32_t)t->n++;
    return g;
}

static int append(pp_pyro_group *g, size_t *cap, const char *s, size_t n)
{
    if (g->len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < g->len + n + 1)
            nc *= 2;
        char *nb = realloc(g->body, nc);
        if (!nb)
            return -1;
        g->body = nb;
        *cap = nc;
    }
    memcpy(g->body + g->len, s, n);
    g->len += n;
    g->body[g->len] = '\0';
    return 0;
}

/* The group's body from its distinct stacks ("stack N\n" each, first-seen order). */
static int write_body(pp_pyro_group *g, const pp_linecount *lc)
{
    size_t cap = 0;
    for (size_t i = 0; i < pp_linecount_size(lc); i++) {
        size_t n;
        uint64_t count;
        const char *st = pp_linecount_get(lc, i, &n, &count);
        char num[32];
        int nl = snprintf(num, sizeof(num), " %llu\n", (unsigned long long)count);
        if (append(g, &cap, st, n) < 0 || append(g, &cap, num, (size_t)nl) < 0)
            return -1;
    }
    return 0;
}

size_t pp_pyroscope_groups(const char *col, size_t len, pp_pyro_group **out)
{
    *out = NULL;
    const char *p = col, *e = col + len;
    bool app_idx = true, container = true;
    if (p < e && *p == '#') {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t hl = nl ? (size_t)(nl - p) : (size_t)(e - p);
        json_t *h = json_loadb(p + 1, hl - 1, 0, NULL);
        if (json_is_object(h)) {
            app_idx = json_is_true(json_object_get(h, "application_metadata_enabled"));
            const char *v = json_string_value(
                json_object_get(json_object_get(json_object_get(h, "metadata"), "run_arguments"),
                                "profile_api_version"));
            container = !(v && strcmp(v, "v1") == 0);
            app_idx = app_idx && container;
        }
        json_decref(h);
        p = nl ? nl + 1 : e;
    }
    gtab t = {0};
    PP_HTAB_INIT(&t.idx, uint32_t, 50);
    pp_linecount **sets = NULL; /* per group: its distinct stacks (several .col lines can differ
                                 * only in the stripped prefix) */
    size_t nsets = 0;
    char *cutbuf = NULL;
    while (p < e) {
        const char *q = memchr(p, '\n', (size_t)(e - p));
        size_t ll = q ? (size_t)(q - p) : (size_t)(e - p);
        const char *line = p;
        p = q ? q + 1 : e;
        size_t sl;
        unsigned long long count;
        if (!ll || pp_col_split_count(line, ll, &sl, &count) < 0 || !count)
            continue;
        const char *s = line, *se = line + sl;
        const char *cont = "";
        size_t contl = 0;
        int skip = (app_idx ? 1 : 0) + (container ? 1 : 0);
        for (int k = 0; k < skip && s < se; k++) {
            const char *semi = memchr(s, ';', (size_t)(se - s));
            if (!semi) {
                s = se;
                break;
            }
            if (container && k == skip - 1) {
                cont = s;
                contl = (size_t)(semi - s);
            }
            s = semi + 1;
        }
        if (s >= se)
            continue;
        const char *semi = memchr(s, ';', (size_t)(se - s));
        size_t cl = semi ? (size_t)(semi - s) : (size_t)(se - s);
        pp_pyro_group *g = gtab_get(&t, s, cl, cont, contl);
        if (!g)
            break;
        size_t gi = (size_t)(g - t.g);
        if (gi >= nsets) {
            pp_linecount **ns = realloc(sets, t.cap * sizeof(*ns));
            if (!ns)
                break;
            memset(ns + nsets, 0, (t.cap - nsets) * sizeof(*ns));
            sets = ns;
            nsets = t.cap;
        }
        if (!sets[gi] && !(sets[gi] = pp_linecount_new()))
            break;
        size_t stack_len = (size_t)(se - s);
        const char *stack = s;
        if (stack_len > PP_PYRO_MAX_LINE) {
            const char *last = s + PP_PYRO_MAX_LINE;
            while (last > s && *last != ';')
                last--;
            stack_len = last > s ? (size_t)(last - s) : PP_PYRO_MAX_LINE;
            if (!cutbuf && !(cutbuf = malloc(PP_PYRO_MAX_LINE + 16)))
                break;
            memcpy(cutbuf, s, stack_len);
            memcpy(cutbuf + stack_len, ";[truncated]", 12);
            stack_len += 12;
            stack = cutbuf;
        }
        if (pp_linecount_add(sets[gi], stack, stack_len, count) < 0)
            break;
        g->samples += count;
        g->rt_samples[stack_kind(s, (size_t)(se - s))] += count;
    }
    free(cutbuf);
    pp_htab_free(&t.idx);
    for (size_t i = 0; i < t.n; i++) {
        pp_pyro_group *g = &t.g[i];
        if (i < nsets && sets[i] && write_body(g, sets[i]) < 0) {
            free(g->body); /* out of memory: an empty group, which is not sent */
            g->body = NULL;
            g->len = 0;
        }
        pp_linecount_free(i < nsets ? sets[i] : NULL);
        int best = PP_KIND_NATIVE;
        for (int r = 1; r < PP_KIND_COUNT; r++)
            if (g->rt_samples[r] > (best == PP_KIND_NATIVE ? 0 : g->rt_samples[best]))
                best = r;
        g->runtime = kind_label((pp_proc_kind)best);
    }
    free(sets);
    if (!t.n) {
        free(t.g);
        return 0;
    }
    *out = t.g;
    return t.n;
}

void pp_pyroscope_groups_free(pp_pyro_group *g, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(g[i].comm);
        free(g[i].container);
        free(g[i].body);
    }
    free(g);
}

char *pp_pyroscope_url(const char *server, const char *app, const char *hostname,
                       const pp_pyro_group *g, time_t from, time_t until, int rate)
{
    char *h = pp_pyroscope_label_value(hostname, strlen(hostname));
    char *c = pp_pyroscope_label_value(g->comm, strlen(g->comm));
    char *ct = pp_pyroscope_label_value(g->container, strlen(g->container));
    char *name = NULL, *ename = NULL, *url = NULL;
    if (h && c && ct &&
        asprintf(&name, "%s{hostname=%s%s%s%s%s,runtime=%s}", app, h, *c ? ",comm=" : "", c,
                 *ct ? ",container=" : "", ct, g->runtime) >= 0 &&
        (ename = pp_url_escape(name)) &&
        asprintf(&url,
                 "%s/ingest?name=%s&from=%lld&until=%lld&sampleRate=%d&spyName=polyprof"
                 "&format=folded",
                 server, ename, (long long)from, (long long)until, rate) < 0)
        url = NULL;
    free(h);
    free(c);
    free(ct);
    free(name);
    free(ename);
    return url;
}

static void reply_message(const pp_http_resp *r, char *out, size_t len)
{
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(j, "message"));
    if (m)
        pp_http_excerpt(m, strlen(m), out, len);
    else if (r->body && r->len)
        pp_http_excerpt(r->body, r->len, out, len);
    else if (r->status)
        snprintf(out, len, "(empty reply)");
    else
        snprintf(out, len, "%s", r->error);
    json_decref(j);
}

pp_send_result pp_pyroscope_send(pp_pyroscope *p, const pp_upload_item *it)
{
    char st[32];
    pp_iso_time(it->start, st, sizeof(st));
    pp_pyro_group *g;
    size_t n = pp_pyroscope_groups(it->text, it->len, &g);
    size_t first = 0;
    if (it->id && strcmp(it->id, p->resume_id) == 0)
        first = p->resume_next;
    p->resume_id[0] = '\0';
    p->resume_next = 0;
    char tenant[512] = "";
    if (p->tenant)
        snprintf(tenant, sizeof(tenant), "X-Scope-OrgID: %s", p->tenant);
    const char *hdrs[] = {"Content-Type: text/plain", p->tenant ? tenant : NULL, NULL};
    size_t sent = 0, dropped = 0;
    double secs = 0;
    pp_send_result res = PP_SEND_OK;
    for (size_t i = first; i < n; i++) {
        if (!g[i].len)
            continue; /* its body could not be built (out of memory): nothing to send */
        char *url = pp_pyroscope_url(p->server, p->app, p->hostname, &g[i], it->start, it->end,
                                     it->frequency);
        if (!url) {
            res = PP_SEND_RETRY;
            pp_error("Pyroscope: out of memory building a request; will retry");
        } else {
            pp_http_resp r;
            pp_http_outcome oc =
                pp_http_request(p->http, "POST", url, hdrs, g[i].body, g[i].len, &r);
            free(url);
            secs += r.seconds;
            char msg[512];
            if (oc == PP_HTTP_OK) {
                sent++;
            } else if (oc == PP_HTTP_TOO_LARGE || oc == PP_HTTP_REJECTED) {
                reply_message(&r, msg, sizeof(msg));
                pp_error("Pyroscope refused the stacks of %s%s%s from the session of %s (HTTP "
                         "%ld: %s)%s; dropped",
                         g[i].comm, g[i].container[0] ? " in container " : "", g[i].container, st,
                         r.status, msg,
                         oc == PP_HTTP_TOO_LARGE ? ": too large, lower -d or -f, or use --pids"
                                                 : "");
                dropped++;
            } else if (oc == PP_HTTP_ABORTED) {
                res = PP_SEND_ABORTED;
            } else {
                reply_message(&r, msg, sizeof(msg));
                pp_error("Pyroscope upload of the session of %s failed: %s%s (%zu of %zu "
                         "groups left, kept in the spool)",
                         st, r.timed_out ? "timed out: " : "", msg, n - i, n);
                res = PP_SEND_RETRY;
            }
            pp_http_resp_free(&r);
        }
        if (res != PP_SEND_OK) {
            if (it->id) {
                snprintf(p->resume_id, sizeof(p->resume_id), "%s", it->id);
                p->resume_next = i;
            }
            break;
        }
    }
    if (res == PP_SEND_OK && !n)
        pp_debug("Pyroscope: the session of %s has no stacks; nothing to send", st);
    else if (res == PP_SEND_OK)
        pp_info("Pyroscope: uploaded the session of %s (%zu requests%s, %.0f ms)", st, sent,
                dropped ? ", some dropped" : "", secs * 1000);
    pp_pyroscope_groups_free(g, n);
    return res;
}
