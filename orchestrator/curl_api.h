/* libcurl, loaded the first time polyprof needs it (an upload, the Docker API) rather than at
 * start-up: linking it pulls in ~28 libraries (TLS, Kerberos, LDAP, IDN…) whose loading and
 * constructors cost every run a few milliseconds, though most `-o` runs never speak HTTP. */
#ifndef PP_CURL_API_H
#define PP_CURL_API_H

#include <curl/curl.h>

typedef struct pp_curl_api {
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_reset)(CURL *);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} pp_curl_api;

/* Loads libcurl and runs curl_global_init, once per process (thread-safe). NULL when that
 * failed; pp_curl_error() then says why. */
const pp_curl_api *pp_curl(void);
const char *pp_curl_error(void);

#endif
