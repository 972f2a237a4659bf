/* The uploader (orchestrator/upload.c) against a tiny HTTP server on loopback, in-process: a
 * profile stays in the spool until the server has answered (the server looks at the spool
 * while it holds the request), a 5xx keeps it and is retried, a 2xx removes it, a stop with the
 * server still failing leaves it for the next run; and the status classes (http.c). */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "orchestrator/cli.h"
#include "orchestrator/http.h"
#include "orchestrator/upload.h"
#include "tests/unit/testutil.h"

#define MAX_POSTS 16

/* The server: answers every GET (the health check) 200 with a JSON object, and the n-th POST
 * with status[n] (the last one repeated); records, for each POST, how many entries the backend's
 * spool held while the request was in the server's hands. */
typedef struct server {
    int lfd, port;
    pthread_t thread;
    const char *spool; /* the backend's spool directory */
    int status[MAX_POSTS], nstatus;
    pthread_mutex_t mu;
    int posts;
    int spooled_at_post[MAX_POSTS];
    atomic_int stop;
} server;

static int count_spooled(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        n += l > 6 && strcmp(e->d_name + l - 6, ".spool") == 0;
    }
    closedir(d);
    return n;
}

/* Reads one request (headers, then Content-Length bytes of body); returns 1 for a POST, 0 for
 * anything else, -1 when the client went away. */
static int read_request(int fd)
{
    char buf[1 << 16];
    size_t got = 0;
    char *end = NULL;
    while (!end) {
        if (got == sizeof(buf) - 1)
            return -1;
        ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    long clen = 0;
    for (char *h = strstr(buf, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n"))
        if (strncasecmp(h + 2, "Content-Length:", 15) == 0)
            clen = strtol(h + 17, NULL, 10);
    long rest = clen - (long)(got - (size_t)(end + 4 - buf));
    while (rest > 0) {
        char sink[4096];
        ssize_t r = read(fd, sink, rest < (long)sizeof(sink) ? (size_t)rest : sizeof(sink));
        if (r <= 0)
            return -1;
        rest -= r;
    }
    return strncmp(buf, "POST ", 5) == 0;
}

static void *server_main(void *arg)
{
    server *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        int post = read_request(fd);
        int status = 200;
        if (post == 1) {
            pthread_mutex_lock(&s->mu);
            int n = s->posts;
            if (n < MAX_POSTS)
                s->spooled_at_post[n] = count_spooled(s->spool);
            status = s->status[n < s->nstatus ? n : s->nstatus - 1];
            s->posts++;
            pthread_mutex_unlock(&s->mu);
        }
        if (post >= 0) {
            const char *body = status / 100 == 2 ? "{\"message\": \"ok\", \"gpid\": 7}"
                                                 : "{\"message\": \"server trouble\"}";
            char reply[512];
            int len = snprintf(reply, sizeof(reply),
                               "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                               "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                               status, strlen(body), body);
            cr_assert(write(fd, reply, (size_t)len) == len);
        }
        close(fd);
    }
    return NULL;
}

static void server_start(server *s, const char *spool, const int *status, int nstatus)
{
    memset(s, 0, sizeof(*s));
    s->spool = spool;
    memcpy(s->status, status, sizeof(int) * (size_t)nstatus);
    s->nstatus = nstatus;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    cr_assert_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(s->lfd, 16), 0);
    cr_assert_eq(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void server_stop(server *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
}

static int posts(server *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->posts;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Polls cond(s, spool) every 10 ms for at most 10 s. */
static bool wait_until(bool (*cond)(server *, const char *), server *s, const char *spool)
{
    for (double end = now_s() + 10; now_s() < end;) {
        if (cond(s, spool))
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return cond(s, spool);
}

static bool three_posts_and_empty_spool(server *s, const char *spool)
{
    return posts(s) >= 3 && count_spooled(spool) == 0;
}

static bool two_posts(server *s, const char *spool)
{
    (void)spool;
    return posts(s) >= 2;
}

static const char COL[] = "# {\"application_metadata_enabled\": false, \"metadata\": "
                          "{\"run_arguments\": {}}}\n0;;bash;main;work 5\n";

/* Starts an uploader for backend ("studio" or "pyroscope") at the server, submits one session. */
static pp_uploader *start_and_submit(const char *backend, server *s, const char *root,
                                     pp_config *cfg)
{
    char url[64], spooldir[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
    snprintf(spooldir, sizeof(spooldir), "%s/spool", root);
    char *studio[] = {
        "polyprof",      "-o", "x",           "-u",     "--token", "t0k", "--service-name", "svc",
        "--server-host", url,  "--spool-dir", spooldir, NULL};
    char *pyro[] = {"polyprof", "-o",          "x",      "--pyroscope-server",
                    url,        "--spool-dir", spooldir, NULL};
    bool st = strcmp(backend, "studio") == 0;
    char err[512];
    cr_assert_eq(pp_cli_parse(st ? 12 : 7, st ? studio : pyro, NULL, stdout, cfg, err, sizeof(err)),
                 PP_CLI_OK, "%s", err);
    pp_uploader *u = NULL;
    cr_assert_eq(pp_uploader_start(cfg, &u, err, sizeof(err)), 0, "%s", err);
    cr_assert(u);
    pp_session_result r = {.col_text = COL,
                           .len = sizeof(COL) - 1,
                           .start = time(NULL) - 60,
                           .end = time(NULL),
                           .cpu_avg = 1,
                           .mem_avg = 2,
                           .frequency = 11};
    pp_uploader_submit(u, &r);
    return u;
}

static void quiet_and_fast(void)
{
    pp_test_quiet_log();
    setenv("POLYPROF_UPLOAD_BACKOFF_MS", "20,80", 1);
    setenv("POLYPROF_UPLOAD_STOP_MS", "2000", 1);
    const char *proxies[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
                             "HTTPS_PROXY", "all_proxy",  "ALL_PROXY"};
    for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
        unsetenv(proxies[i]);
}

TestSuite(upload_http, .init = quiet_and_fast);

/* 500, 503, then 200: the profile is in the spool during every attempt (never removed before
 * the answer), kept and resent after each 5xx, removed after the 200. */
static void kept_until_answered_and_5xx_retried(const char *backend)
{
    char *root = pp_test_mkdtemp();
    char spool[512];
    snprintf(spool, sizeof(spool), "%s/spool/%s", root, backend);
    server s;
    const int status[] = {500, 503, 200};
    server_start(&s, spool, status, 3);
    pp_config cfg;
    pp_uploader *u = start_and_submit(backend, &s, root, &cfg);
    bool done = wait_until(three_posts_and_empty_spool, &s, spool);
    int n = posts(&s), left = count_spooled(spool);
    pp_uploader_stop(u);
    server_stop(&s);
    for (int i = 0; i < n && i < MAX_POSTS; i++)
        cr_assert_eq(s.spooled_at_post[i], 1,
                     "%s: attempt %d: the spool held %d entries while the server had not "
                     "answered yet (removed before the answer)",
                     backend, i + 1, s.spooled_at_post[i]);
    cr_assert(done,
              "%s: %d attempts (a 5xx must be retried until the 200) and %d entries left in the "
              "spool (the 200 must remove it)",
              backend, n, left);
    cr_assert_eq(n, 3, "%s: resent after the 200", backend);
    pp_config_free(&cfg);
    pp_test_rmtree(root);
}

Test(upload_http, studio_kept_until_answered_and_5xx_retried, .timeout = 30)
{
    kept_until_answered_and_5xx_retried("studio");
}

Test(upload_http, pyroscope_kept_until_answered_and_5xx_retried, .timeout = 30)
{
    kept_until_answered_and_5xx_retried("pyroscope");
}

/* A server that only fails: after several attempts, a stop leaves the profile in the spool for
 * the next run (a 5xx is never a drop). */
Test(upload_http, stop_while_failing_keeps_the_spool, .timeout = 30)
{
    char *root = pp_test_mkdtemp();
    char spool[512];
    snprintf(spool, sizeof(spool), "%s/spool/studio", root);
    server s;
    const int status[] = {502};
    server_start(&s, spool, status, 1);
    pp_config cfg;
    pp_uploader *u = start_and_submit("studio", &s, root, &cfg);
    bool retried = wait_until(two_posts, &s, spool);
    pp_uploader_stop(u);
    server_stop(&s);
    cr_assert(retried, "one attempt only: a 502 must be retried");
    cr_assert_eq(count_spooled(spool), 1, "the profile left the spool although never accepted");
    pp_config_free(&cfg);
    pp_test_rmtree(root);
}

Test(upload_http, status_classes)
{
    const long retry[] = {0, 408, 429, 500, 502, 503, 504, 599};
    for (size_t i = 0; i < sizeof(retry) / sizeof(retry[0]); i++)
        cr_assert_eq(pp_http_classify(retry[i]), PP_HTTP_RETRY, "HTTP %ld", retry[i]);
    const long ok[] = {200, 201, 204};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        cr_assert_eq(pp_http_classify(ok[i]), PP_HTTP_OK, "HTTP %ld", ok[i]);
    const long rejected[] = {400, 401, 403, 404, 422, 301};
    for (size_t i = 0; i < sizeof(rejected) / sizeof(rejected[0]); i++)
        cr_assert_eq(pp_http_classify(rejected[i]), PP_HTTP_REJECTED, "HTTP %ld", rejected[i]);
    cr_assert_eq(pp_http_classify(413), PP_HTTP_TOO_LARGE);
}
