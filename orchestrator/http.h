/* A thin libcurl wrapper for the uploaders: one request, a bounded reply, an outcome class.
 * Proxy variables are honoured (libcurl's default), TLS is verified unless --no-verify,
 * CURLOPT_NOSIGNAL is set, and nothing here ever logs a URL or a credential. */
#ifndef PP_HTTP_H
#define PP_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct pp_http pp_http;

typedef struct pp_http_opts {
    bool verify;                 /* false with --no-verify */
    const char *ca_bundle;       /* CURLOPT_CAINFO, or NULL */
    long connect_timeout_s;      /* 5 */
    long timeout_s;              /* no byte for this long (connect excluded) aborts */
    const char *user, *password; /* HTTP basic auth, or NULL */
    const atomic_int *abort;     /* non-zero aborts the transfer in progress, or NULL */
} pp_http_opts;

typedef enum {
    PP_HTTP_OK = 0,    /* 2xx */
    PP_HTTP_RETRY,     /* no reply (connection error, timeout), 5xx, 408, 429 */
    PP_HTTP_TOO_LARGE, /* 413 */
    PP_HTTP_REJECTED,  /* other 4xx (and 1xx/3xx): retrying would not help */
    PP_HTTP_ABORTED,   /* the abort flag was raised */
} pp_http_outcome;

typedef struct pp_http_resp {
    long status; /* HTTP status, 0 when no reply arrived */
    char *body;  /* NUL-terminated reply body (at most 1 MiB kept), or NULL */
    size_t len;
    bool timed_out;  /* the request timed out */
    char error[256]; /* libcurl's description when no reply arrived */
    double seconds;  /* total time */
} pp_http_resp;

/* curl_global_init, once per process. Returns 0 or -1. */
int pp_http_global_init(void);

pp_http *pp_http_new(const pp_http_opts *o);
void pp_http_free(pp_http *h);
/* Sets the timeout of the next requests; returns the previous one. */
long pp_http_set_timeout(pp_http *h, long timeout_s);

/* One request. method "GET" or "POST" (body sent with a Content-Length, never chunked).
 * headers: NULL-terminated "Name: value" strings, may be NULL. Fills *r (free with
 * pp_http_resp_free) and returns the outcome. */
pp_http_outcome pp_http_request(pp_http *h, const char *method, const char *url,
                                const char *const *headers, const void *body, size_t len,
                                pp_http_resp *r);
void pp_http_resp_free(pp_http_resp *r);

/* Ends at once the transfers in progress of every pp_http whose opts.abort is abort (its
 * connections are shut down); call it after raising the flag. Thread-safe. */
void pp_http_abort(const atomic_int *abort);

/* Classifies a status code (0 = no reply). */
pp_http_outcome pp_http_classify(long status);

/* Percent-encodes s for a query string (RFC 3986 unreserved characters kept). malloc'd. */
char *pp_url_escape(const char *s);

/* Copies url into out with the value of every "key=" query parameter replaced by "***". */
void pp_redact_url(const char *url, char *out, size_t outlen);

/* Replaces every occurrence of secret (if non-empty) in s by "***", in place. */
void pp_redact_secret(char *s, const char *secret);

/* For log lines: copies a server reply into out, at most outlen-1 bytes, control characters
 * replaced by spaces, trimmed. */
void pp_http_excerpt(const char *body, size_t len, char *out, size_t outlen);

#endif
