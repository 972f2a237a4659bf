#include "orchestrator/studio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "merge/collapsed.h"
#include "merge/header.h"
#include "orchestrator/http.h"
#include "base/log.h"
#include "base/utf8.h"

#define HEALTH_TIMEOUT_S 5
#define GZIP_LEVEL 6

struct pp_studio {
    char *server, *token, *service, *api_version;
    char hostname[256];
    pp_http *http;
    json_t *gpid; /* "" or the last reply's gpid */
};

pp_studio *pp_studio_new(const pp_config *cfg, const atomic_int *abort)
{
    pp_studio *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    pp_http_opts o = {
        .verify = !cfg->no_verify,
        .ca_bundle = cfg->ca_bundle,
        .connect_timeout_s = 5,
        .timeout_s = cfg->server_upload_timeout > 0 ? cfg->server_upload_timeout : 120,
        .abort = abort,
    };
    s->server = strdup(cfg->server_host ? cfg->server_host : "https://profiler.granulate.io");
    s->token = strdup(cfg->token ? cfg->token : "");
    s->service = strdup(cfg->service_name ? cfg->service_name : "");
    s->api_version = strdup(cfg->profile_api_version ? cfg->profile_api_version : "v2");
    s->http = pp_http_new(&o);
    s->gpid = json_string("");
    gethostname(s->hostname, sizeof(s->hostname) - 1);
    if (!s->server || !s->token || !s->service || !s->api_version || !s->http || !s->gpid) {
        pp_studio_free(s);
        return NULL;
    }
    return s;
}

void pp_studio_free(pp_studio *s)
{
    if (!s)
        return;
    if (s->token)
        memset(s->token, 0, strlen(s->token));
    free(s->server);
    free(s->token);
    free(s->service);
    free(s->api_version);
    pp_http_free(s->http);
    json_decref(s->gpid);
    free(s);
}

char *pp_studio_url(const char *server, const char *version, const char *path, const char *token,
                    const char *service, const char *hostname, time_t now, bool with_version)
{
    size_t sl = strlen(server);
    while (sl && server[sl - 1] == '/')
        sl--;
    char ts[32];
    pp_iso_time(now, ts, sizeof(ts));
    char *k = pp_url_escape(token), *sv = pp_url_escape(service), *h = pp_url_escape(hostname),
         *t = pp_url_escape(ts);
    char *url = NULL;
    if (k && sv && h && t &&
        asprintf(&url, "%.*s/api/%s%s?key=%s&service=%s&hostname=%s&timestamp=%s%s%s", (int)sl,
                 server, version, path, k, sv, h, t, with_version ? "&version=" : "",
                 with_version ? PP_GPROFILER_COMPAT_VERSION : "") < 0)
        url = NULL;
    if (k)
        memset(k, 0, strlen(k));
    free(k);
    free(sv);
    free(h);
    free(t);
    return url;
}

static json_t *num_or_null(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

char *pp_studio_body(const pp_upload_item *it, const char *hostname, const json_t *gpid,
                     size_t *len)
{
    char st[32], en[32], sp[32];
    pp_iso_time(it->start, st, sizeof(st));
    pp_iso_time(it->end, en, sizeof(en));
    pp_iso_time(it->spawn, sp, sizeof(sp));
    size_t tlen;
    char *text =
        pp_utf8_sanitized(it->text, it->len, &tlen); /* an upload-file may hold any bytes */
    if (!text)
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "start_time", json_string(st));
    json_object_set_new(o, "end_time", json_string(en));
    json_object_set_new(o, "hostname", json_string(hostname));
    json_object_set_new(o, "profile", json_stringn(text, tlen));
    json_object_set_new(o, "cpu_avg", num_or_null(it->cpu_avg));
    json_object_set_new(o, "mem_avg", num_or_null(it->mem_avg));
    json_object_set_new(o, "spawn_time", json_string(sp));
    json_object_set_new(o, "gpid", gpid ? json_deep_copy(gpid) : json_string(""));
    free(text);
    char *out = json_dumps(o, 0);
    json_decref(o);
    if (out && len)
        *len = strlen(out);
    return out;
}

unsigned char *pp_gzip(const void *data, size_t len, int level, size_t *outlen)
{
    z_stream z = {0};
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, (uLong)len) + 64;
    unsigned char *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return NULL;
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

/* "HTTPS_PROXY" as gProfiler reports it: repr() of the value, or none; credentials hidden. */
static void proxy_used(char *out, size_t len)
{
    const char *p = getenv("HTTPS_PROXY");
    if (!p || !*p)
        p = getenv("https_proxy");
    if (!p || !*p) {
        snprintf(out, len, "none");
        return;
    }
    const char *at = strrchr(p, '@'), *scheme = strstr(p, "://");
    if (at) {
        const char *host_start = scheme ? scheme + 3 : p;
        snprintf(out, len, "'%.*s***@%s'", (int)(host_start - p), p, at + 1);
    } else {
        snprintf(out, len, "'%s'", p);
    }
}

/* The reply's "message" (as gProfiler: resp.json().get("message", ...)), or the body text when
 * it is not JSON. */
static void reply_message(const pp_http_resp *r, char *out, size_t len)
{
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    if (json_is_object(j)) {
        const char *m = json_string_value(json_object_get(j, "message"));
        if (m)
            pp_http_excerpt(m, strlen(m), out, len);
        else
            snprintf(out, len, "(no message in response)");
    } else if (r->body && r->len) {
        pp_http_excerpt(r->body, r->len, out, len);
    } else {
        snprintf(out, len, "(empty response)");
    }
    json_decref(j);
}

int pp_studio_health_check(pp_studio *s, char *err, size_t errlen)
{
    char *url = pp_studio_url(s->server, "v1", "/health_check", s->token, s->service, s->hostname,
                              time(NULL), false);
    char key[1024], svc[1024];
    snprintf(key, sizeof(key), "GPROFILER-API-KEY: %s", s->token);
    snprintf(svc, sizeof(svc), "GPROFILER-SERVICE-NAME: %s", s->service);
    const char *hdrs[] = {key, svc, NULL};
    pp_http_resp r;
    long upload_timeout = pp_http_set_timeout(s->http, HEALTH_TIMEOUT_S);
    pp_http_outcome oc =
        url ? pp_http_request(s->http, "GET", url, hdrs, NULL, 0, &r) : PP_HTTP_RETRY;
    pp_http_set_timeout(s->http, upload_timeout);
    if (!url)
        memset(&r, 0, sizeof(r));
    memset(key, 0, sizeof(key));
    if (url)
        memset(url, 0, strlen(url));
    free(url);
    int rc = 0;
    char msg[512], proxy[256];
    proxy_used(proxy, sizeof(proxy));
    if (oc == PP_HTTP_OK) {
        json_t *j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
        if (!j) {
            pp_http_excerpt(r.body, r.len, msg, 120);
            snprintf(err, errlen,
                     "Failed to connect to server. It might be blocked by your security rules / "
                     "firewall, or you might require a proxy to access it from your environment? "
                     "Proxy used: %s. Error: the health check reply is not JSON: %s",
                     proxy, msg);
            rc = -1;
        }
        json_decref(j);
    } else if (r.status >= 400 && r.status < 500) {
        reply_message(&r, msg, sizeof(msg));
        snprintf(err, errlen, "Server error: %s", msg);
        rc = -1;
    } else {
        if (r.status)
            snprintf(msg, sizeof(msg), "%ld Server Error for the health check", r.status);
        else
            snprintf(msg, sizeof(msg), "%s", r.error);
        snprintf(err, errlen,
                 "Failed to connect to server. It might be blocked by your security rules / "
                 "firewall, or you might require a proxy to access it from your environment? "
                 "Proxy used: %s. Error: %s",
                 proxy, msg);
        rc = -1;
    }
    if (rc < 0)
        pp_redact_secret(err, s->token);
    pp_http_resp_free(&r);
    return rc;
}

static void set_gpid(pp_studio *s, json_t *g)
{
    json_decref(s->gpid);
    s->gpid = g ? g : json_string("");
}

pp_send_result pp_studio_send(pp_studio *s, const pp_upload_item *it)
{
    char st[32];
    pp_iso_time(it->start, st, sizeof(st));
    size_t jlen = 0, zlen = 0;
    char *json = pp_studio_body(it, s->hostname, s->gpid, &jlen);
    unsigned char *gz = json ? pp_gzip(json, jlen, GZIP_LEVEL, &zlen) : NULL;
    free(json);
    if (!gz) {
        pp_error("cannot build the upload of the profile from %s (out of memory); will retry", st);
        return PP_SEND_RETRY;
    }
    if (zlen > PP_STUDIO_MAX_BODY)
        pp_warn("the profile from %s is %zu bytes gzipped, over Performance Studio's default "
                "limit of %u bytes; the server will likely refuse it",
                st, zlen, PP_STUDIO_MAX_BODY);
    char path[32];
    snprintf(path, sizeof(path), "/profiles");
    char *url = pp_studio_url(s->server, s->api_version, path, s->token, s->service, s->hostname,
                              time(NULL), true);
    char key[1024], svc[1024];
    snprintf(key, sizeof(key), "GPROFILER-API-KEY: %s", s->token);
    snprintf(svc, sizeof(svc), "GPROFILER-SERVICE-NAME: %s", s->service);
    const char *hdrs[] = {key, svc, "Content-Encoding: gzip", "Content-type: application/json",
                          NULL};
    pp_http_resp r;
    pp_http_outcome oc;
    if (url) {
        oc = pp_http_request(s->http, "POST", url, hdrs, gz, zlen, &r);
        memset(url, 0, strlen(url));
    } else {
        memset(&r, 0, sizeof(r));
        snprintf(r.error, sizeof(r.error), "out of memory");
        oc = PP_HTTP_RETRY;
    }
    memset(key, 0, sizeof(key));
    free(url);
    free(gz);
    char msg[512];
    pp_send_result res;
    switch (oc) {
    case PP_HTTP_OK: {
        json_t *j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
        if (!json_is_object(j)) {
            pp_http_excerpt(r.body, r.len, msg, 120);
            pp_redact_secret(msg, s->token);
            pp_warn("Performance Studio accepted the profile from %s (HTTP %ld) but its reply is "
                    "not a JSON object (%s); not resending it, and the next upload asks for a "
                    "new gpid",
                    st, r.status, msg[0] ? msg : "empty");
            set_gpid(s, NULL);
        } else {
            json_t *g = json_object_get(j, "gpid");
            set_gpid(s, json_is_integer(g) || json_is_string(g) ? json_incref(g) : NULL);
            pp_info("Successfully uploaded profiling data to the server (session from %s, %zu "
                    "bytes gzipped, %.0f ms)",
                    st, zlen, r.seconds * 1000);
        }
        json_decref(j);
        res = PP_SEND_OK;
        break;
    }
    case PP_HTTP_TOO_LARGE:
        reply_message(&r, msg, sizeof(msg));
        pp_redact_secret(msg, s->token);
        pp_error("Performance Studio refused the profile from %s as too large (HTTP 413: %s): "
                 "%zu bytes gzipped, %zu bytes of text; the server's limit is 4 MiB by default "
                 "(1 MiB behind the stock nginx load balancer). The profile is dropped. Lower "
                 "-d/--profiling-duration or -f/--profiling-frequency, or limit the processes "
                 "with --pids, or raise the server's limit",
                 st, msg, zlen, it->len);
        res = PP_SEND_DROP;
        break;
    case PP_HTTP_REJECTED:
        reply_message(&r, msg, sizeof(msg));
        pp_redact_secret(msg, s->token);
        pp_error("Error occurred sending profile to server: %s (HTTP %ld; the profile from %s "
                 "is dropped, resending it would not help)",
                 msg, r.status, st);
        res = PP_SEND_DROP;
        break;
    case PP_HTTP_ABORTED:
        res = PP_SEND_ABORTED;
        break;
    default:
        if (r.timed_out) {
            pp_error("Upload of profile to server timed out (the profile from %s stays in the "
                     "spool)",
                     st);
        } else if (r.status) {
            reply_message(&r, msg, sizeof(msg));
            pp_redact_secret(msg, s->token);
            pp_error("Error occurred sending profile to server: HTTP %ld: %s (the profile from "
                     "%s stays in the spool)",
                     r.status, msg, st);
        } else {
            pp_redact_secret(r.error, s->token);
            pp_error("Error occurred sending profile to server: %s (the profile from %s stays "
                     "in the spool)",
                     r.error, st);
        }
        res = PP_SEND_RETRY;
        break;
    }
    if (res != PP_SEND_OK)
        set_gpid(s, NULL);
    pp_http_resp_free(&r);
    return res;
}

/* Python's merge_dicts(source, dest): deep, source wins. */
static void merge_into(json_t *dst, json_t *src)
{
    const char *k;
    json_t *v;
    json_object_foreach(src, k, v)
    {
        if (json_is_object(v)) {
            json_t *sub = json_object_get(dst, k);
            if (!json_is_object(sub)) {
                sub = json_object();
                json_object_set_new(dst, k, sub);
            }
            merge_into(sub, v);
        } else {
            json_object_set(dst, k, v);
        }
    }
}

static bool parse_iso(const char *s, time_t *out)
{
    struct tm tm = {0};
    const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!end) {
        if (!s || !(end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm)))
            return false;
    }
    *out = timegm(&tm);
    return true;
}

char *pp_studio_merge_file(const char *text, size_t len, const json_t *fresh_md, time_t *start,
                           time_t *end, size_t *outlen, char *err, size_t errlen)
{
    const char *nl = memchr(text, '\n', len);
    size_t l0 = nl ? (size_t)(nl - text) : len;
    if (!l0 || text[0] != '#') {
        snprintf(err, errlen,
                 "the first line of the file is not a gProfiler header "
                 "(\"# {json}\"); is it a .col file written by polyprof or gProfiler?");
        return NULL;
    }
    json_error_t je;
    json_t *hdr = json_loadb(text + 1, l0 - 1, 0, &je);
    if (!json_is_object(hdr)) {
        snprintf(err, errlen, "the header line of the file is not a JSON object: %s", je.text);
        json_decref(hdr);
        return NULL;
    }
    json_t *md = json_deep_copy(fresh_md);
    merge_into(md, hdr);
    json_decref(hdr);
    time_t st, en;
    if (parse_iso(json_string_value(json_object_get(md, "start_time")), &st) &&
        parse_iso(json_string_value(json_object_get(md, "end_time")), &en)) {
        *start = st;
        *end = en;
    }
    json_t *ra = json_object_get(md, "run_arguments");
    if (json_is_object(ra))
        json_object_del(ra, "func");
    char *h = pp_header_dump(md);
    json_decref(md);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t hl = strlen(h);
    char *out = malloc(2 + hl + len + 1);
    if (!out) {
        free(h);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t o = 0;
    memcpy(out, "# ", 2);
    memcpy(out + 2, h, hl);
    o = 2 + hl;
    free(h);
    const char *p = nl ? nl + 1 : text + len, *e = text + len;
    while (p < e) {
        const char *q = memchr(p, '\n', (size_t)(e - p));
        size_t ll = q ? (size_t)(q - p) : (size_t)(e - p);
        while (ll && (p[ll - 1] == ' ' || p[ll - 1] == '\t' || p[ll - 1] == '\r' ||
                      p[ll - 1] == '\v' || p[ll - 1] == '\f'))
            ll--;
        out[o++] = '\n';
        memcpy(out + o, p, ll);
        o += ll;
        p = q ? q + 1 : e;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}
