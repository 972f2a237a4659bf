/* A minimal Chrome DevTools Protocol client for Node's inspector, on libwebsockets (Debian's
 * libwebsockets-dev): GET /json/list over HTTP, then Runtime.evaluate calls over the target's
 * WebSocket, one at a time. It runs in a thread of its own that first enters the target's
 * network namespace (setns(CLONE_NEWNET) affects the calling thread only, and sockets keep the
 * namespace they were created in), so an inspector bound to 127.0.0.1 in a container is reached
 * without touching polyprof's other threads. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "runtimes/node/node.h"

#define MAX_BODY (1u << 20) /* a /json/list body or one reply */

typedef struct cdp {
    /* inputs */
    int netns_pid;
    const char *addr;
    int port;
    const char *const *exprs;
    size_t n;
    char **results;
    double deadline;
    /* state */
    struct lws_context *ctx;
    lws_sorted_usec_list_t tick;
    char path[256]; /* the WebSocket's path, once /json/list was read */
    char *buf;      /* the body or message being received */
    size_t len;
    bool overflow;
    size_t next;   /* the next expression to send */
    size_t got;    /* replies received */
    bool sent;     /* exprs[next - 1] is waiting for its reply */
    int phase;     /* 0 HTTP, 1 WebSocket, 2 finished */
    bool finished; /* the loop may end */
    char err[256];
    int rc;
} cdp;

static void fail(cdp *c, const char *fmt, const char *detail)
{
    if (!c->err[0])
        snprintf(c->err, sizeof(c->err), fmt, detail ? detail : "");
    c->finished = true;
}

static int append(cdp *c, const void *in, size_t len)
{
    if (c->overflow || c->len + len > MAX_BODY) {
        c->overflow = true;
        return -1;
    }
    char *nb = realloc(c->buf, c->len + len + 1);
    if (!nb)
        return -1;
    memcpy(nb + c->len, in, len);
    c->buf = nb;
    c->len += len;
    c->buf[c->len] = '\0';
    return 0;
}

int pp_cdp_ws_path(const char *body, size_t len, char *out, size_t outlen)
{
    json_error_t je;
    json_t *a = json_loadb(body, len, 0, &je);
    json_t *t = json_is_array(a) ? json_array_get(a, 0) : NULL;
    const char *url = json_string_value(json_object_get(t, "webSocketDebuggerUrl"));
    int rc = -1;
    if (url && !strncmp(url, "ws://", 5)) {
        const char *p = strchr(url + 5, '/');
        if (p && strlen(p) < outlen && !strpbrk(p, " \r\n")) {
            snprintf(out, outlen, "%s", p);
            rc = 0;
        }
    }
    json_decref(a);
    return rc;
}

/* The reply to the expression in flight: its value as JSON text; when it threw,
 * {"exception":"<description>"}. */
char *pp_cdp_reply_value(const char *msg, size_t len, long want_id, bool *match)
{
    json_error_t je;
    json_t *o = json_loadb(msg, len, 0, &je);
    *match = o && json_integer_value(json_object_get(o, "id")) == want_id;
    char *out = NULL;
    json_t *r = json_object_get(o, "result");
    json_t *res = json_object_get(r, "result"), *exc = json_object_get(r, "exceptionDetails");
    if (*match && exc) {
        const char *d =
            json_string_value(json_object_get(json_object_get(exc, "exception"), "description"));
        if (!d)
            d = json_string_value(json_object_get(exc, "text"));
        json_t *e = json_pack("{s:s}", "exception", d ? d : "?");
        out = e ? json_dumps(e, JSON_COMPACT) : NULL;
        json_decref(e);
    } else if (*match && res) {
        json_t *v = json_object_get(res, "value");
        out = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : strdup("null");
    }
    json_decref(o);
    return out;
}

static const struct lws_protocols protocols[];

static int connect_to(cdp *c, const char *path, const char *method)
{
    char host[96];
    snprintf(host, sizeof(host), strchr(c->addr, ':') ? "[%s]:%d" : "%s:%d", c->addr, c->port);
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof(ci));
    ci.context = c->ctx;
    ci.address = c->addr;
    ci.port = c->port;
    ci.path = path;
    ci.host = host;
    ci.origin = host;
    ci.method = method; /* NULL: a WebSocket */
    ci.local_protocol_name = protocols[0].name;
    ci.userdata = c;
    return lws_client_connect_via_info(&ci) ? 0 : -1;
}

static int send_next(cdp *c, struct lws *wsi)
{
    char msg[LWS_PRE + 65536];
    json_t *req = json_pack("{s:I,s:s,s:{s:s,s:b,s:b}}", "id", (json_int_t)(c->next + 1), "method",
                            "Runtime.evaluate", "params", "expression", c->exprs[c->next],
                            "returnByValue", 1, "awaitPromise", 1);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    size_t l = text ? strlen(text) : 0;
    if (!text || l > sizeof(msg) - LWS_PRE) {
        free(text);
        fail(c, "expression too long%s", NULL);
        return -1;
    }
    memcpy(msg + LWS_PRE, text, l);
    free(text);
    if (lws_write(wsi, (unsigned char *)msg + LWS_PRE, l, LWS_WRITE_TEXT) < (int)l) {
        fail(c, "cannot send to the inspector%s", NULL);
        return -1;
    }
    c->next++;
    c->sent = true;
    return 0;
}

/* A whole WebSocket message arrived: the reply to the expression in flight, or an event. */
static int on_message(cdp *c, struct lws *wsi)
{
    bool match;
    char *v = pp_cdp_reply_value(c->buf, c->len, (long)c->next, &match);
    c->len = 0;
    if (!match || !c->sent)
        return 0; /* an event (Runtime.executionContextCreated...) */
    c->sent = false;
    c->results[c->next - 1] = v;
    c->got++;
    if (c->next == c->n) {
        c->finished = true;
        return -1; /* close */
    }
    lws_callback_on_writable(wsi);
    return 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    cdp *c = user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        fail(c, "cannot connect to the inspector: %s", in ? (const char *)in : "refused");
        return -1;
    case LWS_CALLBACK_RECEIVE_CLIENT_HTTP: {
        char buf[LWS_PRE + 4096], *px = buf + LWS_PRE;
        int lenx = (int)sizeof(buf) - LWS_PRE;
        return lws_http_client_read(wsi, &px, &lenx) < 0 ? -1 : 0;
    }
    case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
        return append(c, in, len);
    case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
        if (lws_http_client_http_response(wsi) != 200 || !c->buf ||
            pp_cdp_ws_path(c->buf, c->len, c->path, sizeof(c->path)) < 0) {
            fail(c, "the inspector's /json/list has no WebSocket URL%s", NULL);
            return -1;
        }
        c->len = 0;
        c->phase = 1;
        if (connect_to(c, c->path, NULL) < 0)
            fail(c, "cannot open the inspector's WebSocket%s", NULL);
        return -1; /* done with this HTTP connection */
    case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
        if (c->phase == 0)
            fail(c, "the inspector closed the connection before answering /json/list%s", NULL);
        break;
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        lws_callback_on_writable(wsi);
        break;
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (!c->sent && c->next < c->n && !c->finished)
            return send_next(c, wsi);
        break;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (append(c, in, len) < 0) {
            fail(c, "the inspector's reply is too large%s", NULL);
            return -1;
        }
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi))
            return on_message(c, wsi);
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
        /* process._debugEnd() closes the inspector, and this connection, before it replies */
        c->finished = true;
        break;
    default:
        break;
    }
    return 0;
}

static void on_tick(lws_sorted_usec_list_t *sul)
{
    cdp *c = lws_container_of(sul, cdp, tick);
    if (pp_mono_now() >= c->deadline)
        fail(c, "the inspector did not answer in time%s", NULL);
    else
        lws_sul_schedule(c->ctx, 0, &c->tick, on_tick, 100 * LWS_US_PER_MS);
}

/* Enters netns_pid's network namespace (this thread only) unless it is already ours. */
static int enter_netns(cdp *c)
{
    if (!c->netns_pid)
        return 0;
    char path[64];
    struct stat a, b;
    snprintf(path, sizeof(path), "/proc/%d/ns/net", c->netns_pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &a) < 0) {
        snprintf(c->err, sizeof(c->err), "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = 0;
    if (stat("/proc/thread-self/ns/net", &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
        rc = setns(fd, CLONE_NEWNET);
    if (rc < 0)
        snprintf(c->err, sizeof(c->err), "cannot enter the network namespace of pid %d: %s",
                 c->netns_pid, strerror(errno));
    close(fd);
    return rc;
}

static const struct lws_protocols protocols[] = {
    {"polyprof-cdp", callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void lws_log(int level, const char *line)
{
    pp_debug("libwebsockets (%d): %.*s", level, (int)strcspn(line, "\n"), line);
}

static void *run(void *arg)
{
    cdp *c = arg;
    if (enter_netns(c) < 0) {
        c->rc = -1;
        return NULL;
    }
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_log);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    info.fd_limit_per_thread = 8; /* else sized from RLIMIT_NOFILE */
    info.timeout_secs = 5;
    info.connect_timeout_secs = 5;
    info.gid = (gid_t)-1;
    info.uid = (uid_t)-1;
    c->ctx = lws_create_context(&info);
    if (!c->ctx) {
        snprintf(c->err, sizeof(c->err), "cannot create a libwebsockets context");
        c->rc = -1;
        return NULL;
    }
    lws_sul_schedule(c->ctx, 0, &c->tick, on_tick, 100 * LWS_US_PER_MS);
    if (connect_to(c, "/json/list", "GET") < 0)
        fail(c, "cannot connect to the inspector%s", NULL);
    while (!c->finished && lws_service(c->ctx, 0) >= 0)
        ;
    lws_sul_cancel(&c->tick);
    lws_context_destroy(c->ctx);
    c->rc = c->got ? (int)c->got : c->err[0] ? -1 : 0;
    return NULL;
}

int pp_cdp_evaluate(int netns_pid, const char *addr, int port, const char *const *exprs, size_t n,
                    char **results, double deadline, char *err, size_t errlen)
{
    cdp c = {.netns_pid = netns_pid,
             .addr = addr,
             .port = port,
             .exprs = exprs,
             .n = n,
             .results = results,
             .deadline = deadline};
    for (size_t i = 0; i < n; i++)
        results[i] = NULL;
    pthread_t t;
    if (pthread_create(&t, NULL, run, &c) != 0) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        return -1;
    }
    pthread_join(t, NULL);
    free(c.buf);
    if (c.rc < 0 || (c.got < n && c.err[0]))
        snprintf(err, errlen, "%s", c.err);
    return c.rc;
}
