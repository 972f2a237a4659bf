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
#include "base/log.h"
#include "base/safefile.h"
#include "base/utf8.h"

struct pp_pyroscope {
    char *server, *app, *tenant, *user, *password;
    char hostname[256];
    pp_http *http;
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
    len = pp_utf8_cut(v, len, 256);
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

/* Where one stack of a .col line starts, once the prefix frames the header announces are
 * skipped: cont and contl the container frame ("" when none or not in a container), comm and
 * comml the comm frame. False for a line with nothing after the prefix. */
static bool split_prefix(const char *s, const char *se, bool app_idx, bool container,
                         const char **cont, size_t *contl, const char **comm, size_t *comml)
{
    *cont = "";
    *contl = 0;
    int skip = (app_idx ? 1 : 0) + (container ? 1 : 0);
    for (int k = 0; k < skip && s < se; k++) {
        const char *semi = memchr(s, ';', (size_t)(se - s));
        if (!semi)
            return false;
        if (container && k == skip - 1) {
            *cont = s;
            *contl = (size_t)(semi - s);
        }
        s = semi + 1;
    }
    if (s >= se)
        return false;
    const char *semi = memchr(s, ';', (size_t)(se - s));
    *comm = s;
    *comml = semi ? (size_t)(semi - s) : (size_t)(se - s);
    return true;
}

/* Tracks whether every stack has the same value of a label: v and len the first value seen
 * (set once one was), many once another differs. */
typedef struct same_value {
    const char *v;
    size_t len;
    bool set, many;
} same_value;

static void same_add(same_value *sv, const char *v, size_t len)
{
    if (!sv->set) {
        sv->v = v;
        sv->len = len;
        sv->set = true;
    } else if (len != sv->len || memcmp(v, sv->v, len) != 0) {
        sv->many = true;
    }
}

/* Adds one stack (container and comm frames first), cut below Pyroscope's line limit. */
static int add_stack(pp_linecount *lc, const char *stack, size_t len, unsigned long long count,
                     char **cutbuf)
{
    if (len > PP_PYRO_MAX_LINE) {
        const char *last = stack + PP_PYRO_MAX_LINE;
        while (last > stack && *last != ';')
            last--;
        size_t keep =
            last > stack ? (size_t)(last - stack) : pp_utf8_cut(stack, len, PP_PYRO_MAX_LINE);
        if (!*cutbuf && !(*cutbuf = malloc(PP_PYRO_MAX_LINE + 16)))
            return -1;
        memcpy(*cutbuf, stack, keep);
        memcpy(*cutbuf + keep, ";[truncated]", 12);
        stack = *cutbuf;
        len = keep + 12;
    }
    return pp_linecount_add(lc, stack, len, count);
}

/* The body text from the distinct stacks ("stack N\n" each, first-seen order). */
static int write_body(pp_pyro_body *b, const pp_linecount *lc)
{
    size_t total = 0, n = pp_linecount_size(lc);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        uint64_t count;
        pp_linecount_get(lc, i, &len, &count);
        total += len + 22; /* " <count>\n": at most 22 bytes */
    }
    if (!(b->text = malloc(total + 1)))
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        uint64_t count;
        const char *st = pp_linecount_get(lc, i, &len, &count);
        memcpy(b->text + b->len, st, len);
        b->len += len;
        b->len += (size_t)snprintf(b->text + b->len, total + 1 - b->len, " %llu\n",
                                   (unsigned long long)count);
    }
    b->lines = n;
    return 0;
}

int pp_pyroscope_body(const char *col, size_t len, pp_pyro_body *b)
{
    memset(b, 0, sizeof(*b));
    /* polyprof's own .col is UTF-8 already; an upload-file's may hold any bytes */
    char *fixed = NULL;
    if (!pp_utf8_valid(col, len)) {
        if (!(fixed = pp_utf8_sanitized(col, len, &len)))
            return -1;
        col = fixed;
    }
    const char *p = col, *e = col + len;
    pp_col_prefix pf;
    pp_col_prefix_read(col, len, &pf);
    bool app_idx = pf.app_idx, container = pf.container;
    p += pf.body;
    pp_linecount *lc = pp_linecount_new();
    char *cutbuf = NULL;
    same_value comms = {0}, conts = {0};
    int rc = lc ? 0 : -1;
    while (rc == 0 && p < e) {
        const char *q = memchr(p, '\n', (size_t)(e - p));
        size_t ll = q ? (size_t)(q - p) : (size_t)(e - p);
        const char *line = p;
        p = q ? q + 1 : e;
        size_t sl, contl, comml;
        unsigned long long count;
        const char *cont, *comm;
        if (!ll || pp_col_split_count(line, ll, &sl, &count) < 0 || !count ||
            !split_prefix(line, line + sl, app_idx, container, &cont, &contl, &comm, &comml))
            continue;
        const char *stack = contl ? cont : comm; /* "container;comm;..." or "comm;..." */
        rc = add_stack(lc, stack, (size_t)(line + sl - stack), count, &cutbuf);
        b->samples += count;
        same_add(&comms, comm, comml);
        same_add(&conts, cont, contl);
    }
    if (rc == 0 && pp_linecount_size(lc))
        rc = write_body(b, lc);
    if (rc == 0 && comms.set && !comms.many && !(b->comm = strndup(comms.v, comms.len)))
        rc = -1;
    if (rc == 0 && conts.set && !conts.many && conts.len &&
        !(b->container = strndup(conts.v, conts.len)))
        rc = -1;
    free(cutbuf);
    free(fixed);
    pp_linecount_free(lc);
    if (rc < 0)
        pp_pyroscope_body_free(b);
    return rc;
}

void pp_pyroscope_body_free(pp_pyro_body *b)
{
    free(b->text);
    free(b->comm);
    free(b->container);
    memset(b, 0, sizeof(*b));
}

char *pp_pyroscope_url(const char *server, const char *app, const char *hostname,
                       const pp_pyro_body *b, time_t from, time_t until, int rate)
{
    char *h = pp_pyroscope_label_value(hostname, strlen(hostname));
    char *c = b->comm ? pp_pyroscope_label_value(b->comm, strlen(b->comm)) : strdup("");
    char *ct =
        b->container ? pp_pyroscope_label_value(b->container, strlen(b->container)) : strdup("");
    char *name = NULL, *ename = NULL, *url = NULL;
    if (h && c && ct &&
        asprintf(&name, "%s{hostname=%s%s%s%s%s}", app, h, *c ? ",comm=" : "", c,
                 *ct ? ",container=" : "", ct) >= 0 &&
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
    pp_pyro_body b;
    if (pp_pyroscope_body(it->text, it->len, &b) < 0) {
        pp_error("Pyroscope: out of memory building the request for the session of %s; will "
                 "retry",
                 st);
        return PP_SEND_RETRY;
    }
    if (!b.len) {
        pp_debug("Pyroscope: the session of %s has no stacks; nothing to send", st);
        return PP_SEND_OK;
    }
    char *url =
        pp_pyroscope_url(p->server, p->app, p->hostname, &b, it->start, it->end, it->frequency);
    if (!url) {
        pp_pyroscope_body_free(&b);
        pp_error("Pyroscope: out of memory building the request for the session of %s; will "
                 "retry",
                 st);
        return PP_SEND_RETRY;
    }
    char tenant[512] = "";
    if (p->tenant)
        snprintf(tenant, sizeof(tenant), "X-Scope-OrgID: %s", p->tenant);
    const char *hdrs[] = {"Content-Type: text/plain", p->tenant ? tenant : NULL, NULL};
    pp_http_resp r;
    pp_http_outcome oc = pp_http_request(p->http, "POST", url, hdrs, b.text, b.len, &r);
    free(url);
    pp_send_result res = PP_SEND_OK;
    char msg[512];
    if (oc == PP_HTTP_OK) {
        pp_info("Pyroscope: uploaded the session of %s (%llu samples, %zu stacks, %zu KiB, %.0f "
                "ms)",
                st, b.samples, b.lines, b.len >> 10, r.seconds * 1000);
    } else if (oc == PP_HTTP_TOO_LARGE || oc == PP_HTTP_REJECTED) {
        reply_message(&r, msg, sizeof(msg));
        pp_error("Pyroscope refused the session of %s (HTTP %ld: %s)%s; dropped", st, r.status, msg,
                 oc == PP_HTTP_TOO_LARGE ? ": too large, lower -d or -f, or use --pids" : "");
        res = PP_SEND_DROP;
    } else if (oc == PP_HTTP_ABORTED) {
        res = PP_SEND_ABORTED;
    } else {
        reply_message(&r, msg, sizeof(msg));
        pp_error("Pyroscope upload of the session of %s failed: %s%s (kept in the spool)", st,
                 r.timed_out ? "timed out: " : "", msg);
        res = PP_SEND_RETRY;
    }
    pp_http_resp_free(&r);
    pp_pyroscope_body_free(&b);
    return res;
}
