/* libcurl loaded on first use (see curl_api.h). */
#include "orchestrator/curl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pp_curl_api api;
static const pp_curl_api *loaded;
static char error[256] = "libcurl was not loaded";

/* libcurl4 (OpenSSL) first, as polyprof is built against; the GnuTLS flavour has the same ABI. */
static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};

static void load(void)
{
    void *h = NULL;
    char first[200] = "";
    for (size_t i = 0; !h && i < sizeof(names) / sizeof(names[0]); i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h && !first[0]) /* the preferred library's reason, e.g. a missing dependency */
            snprintf(first, sizeof(first), "%s", dlerror());
    }
    if (!h) {
        snprintf(error, sizeof(error), "cannot load libcurl (%s); install the libcurl4 package",
                 first);
        return;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&api.easy_init, "curl_easy_init"},
        {(void **)&api.easy_setopt, "curl_easy_setopt"},
        {(void **)&api.easy_perform, "curl_easy_perform"},
        {(void **)&api.easy_getinfo, "curl_easy_getinfo"},
        {(void **)&api.easy_reset, "curl_easy_reset"},
        {(void **)&api.easy_cleanup, "curl_easy_cleanup"},
        {(void **)&api.easy_strerror, "curl_easy_strerror"},
        {(void **)&api.slist_append, "curl_slist_append"},
        {(void **)&api.slist_free_all, "curl_slist_free_all"},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(error, sizeof(error), "libcurl has no %s; install a libcurl4 of 7.x or later",
                     syms[i].name);
            dlclose(h);
            return;
        }
    }
    CURLcode (*global_init)(long) = (CURLcode(*)(long))dlsym(h, "curl_global_init");
    CURLcode rc = global_init ? global_init(CURL_GLOBAL_DEFAULT) : CURLE_FAILED_INIT;
    if (rc != CURLE_OK) {
        snprintf(error, sizeof(error),
                 "libcurl failed to initialize (%s); check that its TLS library is installed",
                 api.easy_strerror(rc));
        dlclose(h);
        return;
    }
    loaded = &api; /* kept loaded until exit */
}

const pp_curl_api *pp_curl(void)
{
    pthread_once(&once, load);
    return loaded;
}

const char *pp_curl_error(void)
{
    pthread_once(&once, load);
    return loaded ? "" : error;
}
