#include "orchestrator/http.h"

#include "orchestrator/cli.h"
#include "orchestrator/curl_api.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPLY (1 << 20)

struct pp_http {
    CURL *curl;
    pp_http_opts o;
};

/* libcurl's entry points, set by the first successful pp_http_global_init (every pp_http
 * exists only after one). */
static const pp_curl_api *cu;

int pp_http_global_init(void)
{
    const pp_curl_api *a = pp_curl();
    if (!a)
        return -1;
    __atomic_store_n(&cu, a, __ATOMIC_RELEASE);
    return 0;
}

pp_http *pp_http_new(const pp_http_opts *o)
{
    if (pp_http_global_init() < 0)
        return NULL;
    pp_http *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->o = *o;
    h->curl = cu->easy_init();
    if (!h->curl) {
        free(h);
        return NULL;
    }
    return h;
}

void pp_http_free(pp_http *h)
{
    if (!h)
        return;
    cu->easy_cleanup(h->curl);
    free(h);
}

long pp_http_set_timeout(pp_http *h, long timeout_s)
{
    long old = h->o.timeout_s;
    h->o.timeout_s = timeout_s;
    return old;
}

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    pp_http_resp *r = ud;
    size_t len = size * n, keep = len;
    if (r->len + keep > MAX_REPLY)
        keep = MAX_REPLY - r->len;
    if (keep) {
        char *nb = realloc(r->body, r->len + keep + 1);
        if (!nb)
            return 0;
        memcpy(nb + r->len, p, keep);
        r->len += keep;
        nb[r->len] = '\0';
        r->body = nb;
    }
    return len;
}

/* Per-request progress state: the abort flag, and requests' "read timeout": no byte moved in
 * either direction for timeout_ms. */
typedef struct progress {
    const atomic_int *abort;
    long long timeout_ms, last_change_ms;
    curl_off_t dl, ul;
    bool timed_out;
} progress;

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)ultotal;
    progress *p = ud;
    if (p->abort && atomic_load(p->abort))
        return 1;
    long long now = mono_ms();
    if (dlnow != p->dl || ulnow != p->ul) {
        p->dl = dlnow;
        p->ul = ulnow;
        p->last_change_ms = now;
    } else if (now - p->last_change_ms > p->timeout_ms) {
        p->timed_out = true;
        return 1;
    }
    return 0;
}

/* The sockets of requests that can be aborted, by abort flag, so that pp_http_abort ends their
 * transfers at once: libcurl calls the progress callback, which checks the flag, only about
 * once a second while nothing moves. A socket is registered when libcurl opens it and dropped
 * when libcurl closes it, both under the lock pp_http_abort holds, so a descriptor number
 * reused after the close is never shut down. Beyond MAX_SOCKS sockets the callback remains. */
#define MAX_SOCKS 16
static pthread_mutex_t socks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    curl_socket_t fd;
    const atomic_int *abort; /* NULL: free slot */
} socks[MAX_SOCKS];

static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    const pp_http *h = ud;
    (void)purpose;
    curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd < 0)
        return CURL_SOCKET_BAD;
    pthread_mutex_lock(&socks_lock);
    for (size_t i = 0; i < MAX_SOCKS; i++) {
        if (!socks[i].abort) {
            socks[i].fd = fd;
            socks[i].abort = h->o.abort;
            break;
        }
    }
    pthread_mutex_unlock(&socks_lock);
    return fd;
}

static int close_socket(void *ud, curl_socket_t fd)
{
    (void)ud;
    pthread_mutex_lock(&socks_lock);
    for (size_t i = 0; i < MAX_SOCKS; i++)
        if (socks[i].abort && socks[i].fd == fd)
            socks[i].abort = NULL;
    int rc = close(fd);
    pthread_mutex_unlock(&socks_lock);
    return rc;
}

void pp_http_abort(const atomic_int *abort)
{
    pthread_mutex_lock(&socks_lock);
    for (size_t i = 0; i < MAX_SOCKS; i++)
        if (abort && socks[i].abort == abort)
            shutdown(socks[i].fd, SHUT_RDWR);
    pthread_mutex_unlock(&socks_lock);
}

pp_http_outcome pp_http_classify(long status)
{
    if (status == 0 || status >= 500 || status == 408 || status == 429)
        return PP_HTTP_RETRY;
    if (status >= 200 && status < 300)
        return PP_HTTP_OK;
    if (status == 413)
        return PP_HTTP_TOO_LARGE;
    return PP_HTTP_REJECTED;
}

pp_http_outcome pp_http_request(pp_http *h, const char *method, const char *url,
                                const char *const *headers, const void *body, size_t len,
                                pp_http_resp *r)
{
    memset(r, 0, sizeof(*r));
    CURL *c = h->curl;
    cu->easy_reset(c);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        hl = cu->slist_append(hl, headers[i]);
    /* no "Expect: 100-continue" round trip (gProfiler's requests never sends it) */
    hl = cu->slist_append(hl, "Expect:");

    char errbuf[CURL_ERROR_SIZE] = "";
    cu->easy_setopt(c, CURLOPT_URL, url);
    cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    cu->easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    cu->easy_setopt(c, CURLOPT_WRITEDATA, r);
    cu->easy_setopt(c, CURLOPT_USERAGENT, "polyprof/" PP_VERSION);
    cu->easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT,
                    h->o.connect_timeout_s > 0 ? h->o.connect_timeout_s : 5L);
    /* like requests' read timeout: abort when nothing moves for timeout_s seconds (the
     * connect phase counts too; CONNECTTIMEOUT is shorter) */
    progress prog = {
        .abort = h->o.abort,
        .timeout_ms = (h->o.timeout_s > 0 ? h->o.timeout_s : 120L) * 1000,
        .last_change_ms = mono_ms(),
    };
    cu->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    cu->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu->easy_setopt(c, CURLOPT_XFERINFODATA, &prog);
    if (h->o.abort) {
        cu->easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        cu->easy_setopt(c, CURLOPT_OPENSOCKETDATA, h);
        cu->easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
        cu->easy_setopt(c, CURLOPT_CLOSESOCKETDATA, h);
    }
    cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    cu->easy_setopt(c, CURLOPT_SSL_VERIFYPEER, h->o.verify ? 1L : 0L);
    cu->easy_setopt(c, CURLOPT_SSL_VERIFYHOST, h->o.verify ? 2L : 0L);
    if (h->o.ca_bundle && *h->o.ca_bundle)
        cu->easy_setopt(c, CURLOPT_CAINFO, h->o.ca_bundle);
    if (h->o.user) {
        cu->easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        cu->easy_setopt(c, CURLOPT_USERNAME, h->o.user);
        cu->easy_setopt(c, CURLOPT_PASSWORD, h->o.password ? h->o.password : "");
    }
    if (strcmp(method, "POST") == 0) {
        cu->easy_setopt(c, CURLOPT_POST, 1L);
        cu->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        cu->easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    } else {
        cu->easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }

    CURLcode rc = cu->easy_perform(c);
    cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    cu->easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->seconds);
    cu->slist_free_all(hl);
    if (rc == CURLE_ABORTED_BY_CALLBACK && prog.timed_out) {
        r->timed_out = true;
        r->status = 0;
        snprintf(r->error, sizeof(r->error), "no reply within %ld s", h->o.timeout_s);
        return PP_HTTP_RETRY;
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK ||
        (rc != CURLE_OK && h->o.abort && atomic_load(h->o.abort))) {
        /* the callback, or pp_http_abort's shutdown of the socket */
        r->status = 0;
        snprintf(r->error, sizeof(r->error), "aborted (polyprof is stopping)");
        return PP_HTTP_ABORTED;
    }
    if (rc != CURLE_OK) {
        r->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
        snprintf(r->error, sizeof(r->error), "%s", errbuf[0] ? errbuf : cu->easy_strerror(rc));
        /* a server may answer (e.g. 413) before it read the whole body, then close: the
         * reply counts, not the broken send */
        if (r->status >= 400 && (rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR))
            return pp_http_classify(r->status);
        r->status = 0;
        return PP_HTTP_RETRY;
    }
    return pp_http_classify(r->status);
}

void pp_http_resp_free(pp_http_resp *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

char *pp_url_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1), *p = out;
    if (!out)
        return NULL;
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (isalnum(*q) || *q == '-' || *q == '.' || *q == '_' || *q == '~') {
            *p++ = (char)*q;
        } else {
            *p++ = '%';
            *p++ = hex[*q >> 4];
            *p++ = hex[*q & 15];
        }
    }
    *p = '\0';
    return out;
}

void pp_redact_url(const char *url, char *out, size_t outlen)
{
    if (!outlen)
        return;
    size_t o = 0;
    const char *p = url;
    const char *q = strchr(url, '?');
    while (*p && o + 1 < outlen) {
        if (q && p > q && (p[-1] == '?' || p[-1] == '&') && strncmp(p, "key=", 4) == 0) {
            const char *rep = "key=***";
            for (const char *r = rep; *r && o + 1 < outlen; r++)
                out[o++] = *r;
            p += 4;
            while (*p && *p != '&' && *p != '#')
                p++;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

void pp_redact_secret(char *s, const char *secret)
{
    size_t sl = secret ? strlen(secret) : 0;
    if (!sl || !s)
        return;
    char *hit;
    while ((hit = strstr(s, secret))) {
        size_t rest = strlen(hit + sl);
        if (sl >= 3) {
            memcpy(hit, "***", 3);
            memmove(hit + 3, hit + sl, rest + 1);
        } else {
            memset(hit, '*', sl);
        }
    }
}

void pp_http_excerpt(const char *body, size_t len, char *out, size_t outlen)
{
    size_t o = 0;
    if (!outlen)
        return;
    for (size_t i = 0; body && i < len && o + 1 < outlen; i++) {
        unsigned char ch = (unsigned char)body[i];
        out[o++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
    }
    out[o] = '\0';
    while (o && out[o - 1] == ' ')
        out[--o] = '\0';
    size_t lead = strspn(out, " ");
    if (lead)
        memmove(out, out + lead, o - lead + 1);
}
