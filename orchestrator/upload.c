/* Upload dispatch: one background thread takes each finished session from an in-memory queue,
 * writes it into every backend's spool, and sends the spools oldest first, retrying with
 * exponential backoff. The session loop never waits on the network. */
#include "orchestrator/upload.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "merge/header.h"
#include "orchestrator/hostinfo.h"
#include "base/child.h"
#include "orchestrator/curl_api.h"
#include "orchestrator/http.h"
#include "base/log.h"
#include "orchestrator/pyroscope.h"
#include "base/safefile.h"
#include "base/textbuf.h"
#include "orchestrator/spool.h"
#include "orchestrator/studio.h"
#include "orchestrator/upload_item.h"

#define DEFAULT_BACKOFF_MS 1000
#define DEFAULT_BACKOFF_CAP_MS (5 * 60 * 1000)
#define DEFAULT_STOP_MS 5000

typedef struct backend {
    const char *label;
    pp_spool *spool;
    pp_studio *studio;
    pp_pyroscope *pyro;
    long long next_try_ms; /* monotonic; retry not before */
    long long backoff_ms;
    bool failing;
    /* For pp_uploader_status, under the uploader's mu: sessions accepted and dropped since the
     * start, entries in the spool, and whether the last attempt must be retried. */
    unsigned long long st_sent, st_dropped;
    size_t st_spooled;
    bool st_failing;
} backend;

typedef struct qitem {
    struct qitem *next;
    pp_upload_item it;
    char *text;
} qitem;

struct pp_uploader {
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    qitem *head, *tail;
    size_t queued; /* submitted, not yet in the spools */
    bool stopping;
    long long stop_deadline_ms;
    atomic_int abort;
    backend b[2];
    int nb;
    time_t spawn;
    long long backoff_ms, backoff_cap_ms, stop_ms;
};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- spool meta ---- */

json_t *pp_upload_item_meta(const pp_upload_item *it)
{
    return json_pack("{s:I,s:I,s:I,s:o,s:o,s:i}", "start", (json_int_t)it->start, "end",
                     (json_int_t)it->end, "spawn", (json_int_t)it->spawn, "cpu_avg",
                     isnan(it->cpu_avg) ? json_null() : json_real(it->cpu_avg), "mem_avg",
                     isnan(it->mem_avg) ? json_null() : json_real(it->mem_avg), "frequency",
                     it->frequency);
}

int pp_upload_item_from_meta(const json_t *m, pp_upload_item *it)
{
    json_t *s = json_object_get(m, "start"), *e = json_object_get(m, "end");
    json_t *f = json_object_get(m, "frequency");
    if (!json_is_integer(s) || !json_is_integer(e) || !json_is_integer(f))
        return -1;
    it->start = (time_t)json_integer_value(s);
    it->end = (time_t)json_integer_value(e);
    it->spawn = (time_t)json_integer_value(json_object_get(m, "spawn"));
    if (!it->spawn)
        it->spawn = it->start;
    json_t *c = json_object_get(m, "cpu_avg"), *mm = json_object_get(m, "mem_avg");
    it->cpu_avg = json_is_number(c) ? json_number_value(c) : NAN;
    it->mem_avg = json_is_number(mm) ? json_number_value(mm) : NAN;
    it->frequency = (int)json_integer_value(f);
    return 0;
}

/* ---- settings for tests ---- */

static long long env_ms(const char *name, long long def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long long x = strtoll(v, &end, 10);
    return x > 0 ? x : def;
}

static void backoff_settings(pp_uploader *u)
{
    u->backoff_ms = DEFAULT_BACKOFF_MS;
    u->backoff_cap_ms = DEFAULT_BACKOFF_CAP_MS;
    /* POLYPROF_UPLOAD_BACKOFF_MS=FIRST[,CAP]: for tests */
    const char *v = getenv("POLYPROF_UPLOAD_BACKOFF_MS");
    if (v && *v) {
        char *end;
        long long first = strtoll(v, &end, 10);
        if (first > 0) {
            u->backoff_ms = first;
            u->backoff_cap_ms = first * 8;
            if (*end == ',') {
                long long cap = strtoll(end + 1, NULL, 10);
                if (cap >= first)
                    u->backoff_cap_ms = cap;
            }
        }
    }
    u->stop_ms = env_ms("POLYPROF_UPLOAD_STOP_MS", DEFAULT_STOP_MS);
}

/* ---- the token on the command line ---- */

/* Finds a --token value in a NUL-separated argument list; returns its offset and sets *len,
 * or returns -1. */
static long token_value_at(const char *args, size_t n, size_t *len)
{
    for (size_t i = 0; i < n;) {
        const char *s = args + i;
        size_t l = strnlen(s, n - i);
        if (strcmp(s, "--") == 0)
            break;
        if (strcmp(s, "--token") == 0 && i + l + 1 < n) {
            *len = strnlen(s + l + 1, n - i - l - 1);
            return (long)(i + l + 1);
        }
        if (strncmp(s, "--token=", 8) == 0) {
            *len = l - 8;
            return (long)(i + 8);
        }
        i += l + 1;
    }
    return -1;
}

/* Warns when --token was given on the command line, and overwrites its value in the process's
 * argument area so that /proc/<pid>/cmdline (ps) no longer shows it. The area is touched only
 * when its content is exactly what /proc/self/cmdline shows. */
static void token_cmdline_check(void)
{
    static char cmd[1 << 16];
    FILE *f = fopen("/proc/self/cmdline", "re");
    size_t n = f ? fread(cmd, 1, sizeof(cmd), f) : 0;
    if (f)
        fclose(f);
    size_t vlen = 0;
    long off = token_value_at(cmd, n, &vlen);
    if (off < 0)
        return;
    pp_warn("--token on the command line is visible to other users in the process list "
            "until polyprof hides it; use --token-file PATH or the POLYPROF_TOKEN "
            "environment variable instead");
    char buf[4096];
    f = fopen("/proc/self/stat", "re");
    size_t sn = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[sn] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long long arg_start = 0, arg_end = 0;
    if (p) {
        /* fields after "(comm)": 3 = state ... 48 = arg_start, 49 = arg_end */
        int field = 2;
        char *save, *tok = strtok_r(p + 1, " ", &save);
        while (tok && field < 49) {
            field++;
            if (field == 48)
                arg_start = strtoull(tok, NULL, 10);
            else if (field == 49)
                arg_end = strtoull(tok, NULL, 10);
            tok = strtok_r(NULL, " ", &save);
        }
    }
    if (!arg_start || arg_end - arg_start != n || n >= sizeof(cmd))
        return;
    char *area = (char *)(uintptr_t)arg_start;
    if (memcmp(area, cmd, n) == 0)
        memset(area + off, 'x', vlen);
    memset(cmd, 0, n);
}

/* ---- the background thread ---- */

static void free_qitem(qitem *q)
{
    free(q->text);
    free(q);
}

static pp_send_result send_to(backend *b, const pp_upload_item *it)
{
    return b->studio ? pp_studio_send(b->studio, it) : pp_pyroscope_send(b->pyro, it);
}

/* Records a send's result for pp_uploader_status; spooled: the entries left in b's spool, or -1
 * when unchanged. */
static void note_result(pp_uploader *u, backend *b, pp_send_result r, long spooled)
{
    pthread_mutex_lock(&u->mu);
    b->st_sent += r == PP_SEND_OK;
    b->st_dropped += r == PP_SEND_DROP;
    if (r != PP_SEND_ABORTED)
        b->st_failing = r == PP_SEND_RETRY;
    if (spooled >= 0)
        b->st_spooled = (size_t)spooled;
    pthread_mutex_unlock(&u->mu);
}

/* Moves the queued sessions into the spools. Called by the thread only. */
static void spool_pending(pp_uploader *u)
{
    pthread_mutex_lock(&u->mu);
    qitem *q = u->head;
    u->head = u->tail = NULL;
    pthread_mutex_unlock(&u->mu);
    while (q) {
        qitem *next = q->next;
        json_t *meta = pp_upload_item_meta(&q->it);
        bool spooled[2] = {false, false};
        for (int i = 0; i < u->nb; i++) {
            char err[512];
            spooled[i] =
                pp_spool_put(u->b[i].spool, meta, q->text, q->it.len, err, sizeof(err)) == 0;
            if (!spooled[i]) {
                pp_error("%s: %s; sending the profile without keeping a copy", u->b[i].label, err);
                note_result(u, &u->b[i], send_to(&u->b[i], &q->it), -1);
            }
        }
        pthread_mutex_lock(&u->mu);
        u->queued--;
        for (int i = 0; i < u->nb; i++)
            u->b[i].st_spooled += spooled[i];
        pthread_mutex_unlock(&u->mu);
        json_decref(meta);
        free_qitem(q);
        q = next;
    }
}

/* Sends b's spool oldest first until it is empty, a send must be retried later, or the thread
 * must stop. */
static void drain(pp_uploader *u, backend *b)
{
    while (!atomic_load(&u->abort) && mono_ms() >= b->next_try_ms) {
        spool_pending(u);
        char **names;
        size_t n = pp_spool_list(b->spool, &names);
        if (!n) {
            free(names);
            return;
        }
        json_t *meta;
        char *text;
        pp_upload_item it = {0};
        if (pp_spool_read(b->spool, names[0], &meta, &text, &it.len) < 0 ||
            pp_upload_item_from_meta(meta, &it) < 0) {
            pp_warn("%s upload spool: %s/%s is unreadable or corrupt; removing it", b->label,
                    pp_spool_path(b->spool), names[0]);
            pp_spool_remove(b->spool, names[0]);
            json_decref(meta);
            free(text);
            pp_spool_names_free(names, n);
            continue;
        }
        it.text = text;
        it.id = names[0];
        pp_send_result r = send_to(b, &it);
        note_result(u, b, r, (long)(r == PP_SEND_OK || r == PP_SEND_DROP ? n - 1 : n));
        if (r == PP_SEND_OK || r == PP_SEND_DROP) {
            pp_spool_remove(b->spool, names[0]);
            if (b->failing && r == PP_SEND_OK) {
                pp_info("%s is reachable again; %zu pending profiles left to send", b->label,
                        n - 1);
                b->failing = false;
            }
            b->backoff_ms = u->backoff_ms;
        } else if (r == PP_SEND_RETRY) {
            b->failing = true;
            b->next_try_ms = mono_ms() + b->backoff_ms;
            pp_warn("%s: %zu profiles waiting in the spool %s; next attempt in %.1f s", b->label, n,
                    pp_spool_path(b->spool), (double)b->backoff_ms / 1000);
            b->backoff_ms =
                b->backoff_ms * 2 > u->backoff_cap_ms ? u->backoff_cap_ms : b->backoff_ms * 2;
        }
        json_decref(meta);
        free(text);
        pp_spool_names_free(names, n);
        if (r == PP_SEND_RETRY || r == PP_SEND_ABORTED)
            return;
    }
}

static void *thread_main(void *arg)
{
    pp_uploader *u = arg;
    for (;;) {
        spool_pending(u);
        for (int i = 0; i < u->nb; i++)
            drain(u, &u->b[i]);
        pthread_mutex_lock(&u->mu);
        if (u->head) {
            pthread_mutex_unlock(&u->mu);
            continue;
        }
        long long now = mono_ms(), wake = now + 60000;
        bool pending = false;
        for (int i = 0; i < u->nb; i++) {
            if (pp_spool_count(u->b[i].spool, NULL) == 0)
                continue;
            pending = true;
            if (u->b[i].next_try_ms < wake)
                wake = u->b[i].next_try_ms;
        }
        if (u->stopping) {
            /* leave when all is sent, or when the next retry would come too late */
            if (!pending || wake > u->stop_deadline_ms || now >= u->stop_deadline_ms ||
                atomic_load(&u->abort)) {
                pthread_mutex_unlock(&u->mu);
                break;
            }
        }
        if (wake > now) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ms = wake - now;
            ts.tv_sec += ms / 1000;
            ts.tv_nsec += (ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&u->cv, &u->mu, &ts);
        }
        pthread_mutex_unlock(&u->mu);
    }
    spool_pending(u);
    return NULL;
}

/* ---- start / submit / stop ---- */

static bool has_control(const char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

static pp_spool *open_spool(const pp_config *cfg, const char *sub, const char *label)
{
    char dir[4096], err[512];
    snprintf(dir, sizeof(dir), "%s/%s", cfg->spool_dir ? cfg->spool_dir : "/var/lib/polyprof/spool",
             sub);
    pp_spool *sp = pp_spool_open(dir, label, NULL, err, sizeof(err));
    if (sp) {
        unsigned long long bytes;
        size_t n = pp_spool_count(sp, &bytes);
        if (n)
            pp_info("%s: %zu profiles (%llu KiB) pending in the spool %s from an earlier run; "
                    "sending them first",
                    label, n, bytes >> 10, dir);
        return sp;
    }
    /* the private scratch space (root-owned /run/polyprof): never a predictable name in a
     * directory others can write */
    char why[512];
    if (pp_tmp_ensure_base(why, sizeof(why)) < 0) {
        pp_error("%s; %s", err, why);
        return NULL;
    }
    snprintf(dir, sizeof(dir), "%s/spool-%s", pp_tmp_base(), sub);
    pp_warn("%s; keeping pending uploads in %s instead (they are lost at reboot); set "
            "--spool-dir to a writable directory",
            err, dir);
    return pp_spool_open(dir, label, NULL, err, sizeof(err));
}

static void uploader_free(pp_uploader *u)
{
    for (int i = 0; i < u->nb; i++) {
        pp_studio_free(u->b[i].studio);
        pp_pyroscope_free(u->b[i].pyro);
        pp_spool_close(u->b[i].spool);
    }
    while (u->head) {
        qitem *n = u->head->next;
        free_qitem(u->head);
        u->head = n;
    }
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u);
}

int pp_uploader_start(const pp_config *cfg, pp_uploader **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!cfg->upload && !cfg->pyroscope_server)
        return 0;
    if (cfg->upload) {
        token_cmdline_check();
        if (has_control(cfg->token) || has_control(cfg->service_name)) {
            snprintf(err, errlen,
                     "the token or --service-name contains control characters "
                     "(a stray newline in --token-file?); it cannot be sent in an "
                     "HTTP header");
            return -1;
        }
    }
    if (pp_http_global_init() < 0) {
        snprintf(err, errlen, "%s", pp_curl_error());
        return -1;
    }
    if (cfg->no_verify)
        pp_warn("--no-verify: server certificates are not checked; anyone on the network path "
                "can read the profiles%s",
                cfg->upload ? " and the token" : "");
    pp_uploader *u = calloc(1, sizeof(*u));
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->spawn = time(NULL);
    backoff_settings(u);
    if (cfg->upload) {
        backend *b = &u->b[u->nb++];
        b->label = "Performance Studio";
        b->studio = pp_studio_new(cfg, &u->abort);
        if (!b->studio) {
            snprintf(err, errlen, "out of memory");
            uploader_free(u);
            return -1;
        }
        if (pp_studio_health_check(b->studio, err, errlen) < 0) {
            uploader_free(u);
            return -1;
        }
    }
    if (cfg->pyroscope_server) {
        backend *b = &u->b[u->nb++];
        b->label = "Pyroscope";
        b->pyro = pp_pyroscope_new(cfg, &u->abort, err, errlen);
        if (!b->pyro) {
            uploader_free(u);
            return -1;
        }
    }
    for (int i = 0; i < u->nb; i++) {
        backend *b = &u->b[i];
        b->backoff_ms = u->backoff_ms;
        b->spool = open_spool(cfg, b->studio ? "studio" : "pyroscope", b->label);
        if (!b->spool) {
            snprintf(err, errlen, "cannot create any upload spool directory");
            uploader_free(u);
            return -1;
        }
        b->st_spooled = pp_spool_count(b->spool, NULL);
    }
    if (pthread_create(&u->thread, NULL, thread_main, u) != 0) {
        snprintf(err, errlen, "cannot start the upload thread: %s", strerror(errno));
        uploader_free(u);
        return -1;
    }
    u->thread_started = true;
    *out = u;
    return 0;
}

void pp_uploader_submit(pp_uploader *u, const pp_session_result *r)
{
    if (!u || !r || !r->col_text)
        return;
    qitem *q = calloc(1, sizeof(*q));
    char *text = q ? malloc(r->len + 1) : NULL;
    if (!text) {
        free(q);
        pp_error("out of memory: the profile of this session is not uploaded");
        return;
    }
    memcpy(text, r->col_text, r->len);
    text[r->len] = '\0';
    q->text = text;
    q->it = (pp_upload_item){
        .start = r->start,
        .end = r->end,
        .spawn = u->spawn,
        .cpu_avg = r->cpu_avg,
        .mem_avg = r->mem_avg,
        .frequency = r->frequency,
        .text = text,
        .len = r->len,
    };
    pthread_mutex_lock(&u->mu);
    if (u->tail)
        u->tail->next = q;
    else
        u->head = q;
    u->tail = q;
    u->queued++;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->mu);
}

void pp_uploader_stop_window(pp_uploader *u)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->mu);
    if (!u->stop_deadline_ms)
        u->stop_deadline_ms = mono_ms() + u->stop_ms;
    pthread_mutex_unlock(&u->mu);
}

void pp_uploader_stop(pp_uploader *u)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->mu);
    u->stopping = true;
    if (!u->stop_deadline_ms) /* else the window that began with the stop signal */
        u->stop_deadline_ms = mono_ms() + u->stop_ms;
    long long deadline = u->stop_deadline_ms;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->mu);
    if (u->thread_started) {
        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000),
                              .tv_nsec = (long)(deadline % 1000) * 1000000};
        if (pthread_clockjoin_np(u->thread, NULL, CLOCK_MONOTONIC, &ts) != 0) {
            /* an upload is still in flight: abort it now (its connection is shut down) */
            atomic_store(&u->abort, 1);
            pp_http_abort(&u->abort);
            pthread_join(u->thread, NULL);
        }
    }
    for (int i = 0; i < u->nb; i++) {
        size_t n = pp_spool_count(u->b[i].spool, NULL);
        if (n)
            pp_warn("%s: %zu profiles not sent yet; they stay in %s and are sent by the next "
                    "run",
                    u->b[i].label, n, pp_spool_path(u->b[i].spool));
    }
    uploader_free(u);
}

void pp_uploader_status(pp_uploader *u, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    if (!u) {
        pp_textbuf_add(out, len, &o, "off");
        return;
    }
    pthread_mutex_lock(&u->mu);
    for (int i = 0; i < u->nb; i++) {
        const backend *b = &u->b[i];
        pp_textbuf_add(out, len, &o, "%s%s %llu sent, %zu waiting", i ? "; " : "", b->label,
                       b->st_sent, b->st_spooled + u->queued);
        if (b->st_dropped)
            pp_textbuf_add(out, len, &o, ", %llu dropped", b->st_dropped);
        if (b->st_failing)
            pp_textbuf_add(out, len, &o, " (failing)");
    }
    pthread_mutex_unlock(&u->mu);
}

/* ---- upload-file ---- */

int pp_upload_file(const pp_config *cfg)
{
    size_t len = 0;
    char why[1024];
    bool bad_kind;
    char *raw = pp_read_input_file(cfg->file_path, PP_UPLOAD_MAX_FILE, "--file-path", &len,
                                   &bad_kind, why, sizeof(why));
    if (!raw) {
        pp_critical("%s", why);
        return bad_kind ? 2 : 1;
    }
    time_t now = time(NULL), start = now, end = now;
    json_t *md = pp_host_metadata(cfg, now);
    char ts[32];
    pp_iso_time(now, ts, sizeof(ts));
    if (!cfg->disable_metadata_collection)
        json_object_set_new(md, "current_time", json_string(ts));
    char err[1024];
    size_t tlen = 0;
    char *text = pp_studio_merge_file(raw, len, md, &start, &end, &tlen, err, sizeof(err));
    json_decref(md);
    free(raw);
    if (!text) {
        pp_critical("cannot upload %s: %s", cfg->file_path, err);
        return 1;
    }
    pp_uploader tmp = {0};
    backoff_settings(&tmp);
    if (cfg->upload)
        token_cmdline_check();
    if (pp_http_global_init() < 0) {
        free(text);
        pp_critical("%s", pp_curl_error());
        return 1;
    }
    pp_upload_item it = {
        .start = start,
        .end = end,
        .spawn = now,
        .cpu_avg = NAN,
        .mem_avg = NAN,
        .frequency = cfg->frequency,
        .text = text,
        .len = tlen,
    };
    int rc = 0;
    pp_studio *s = pp_studio_new(cfg, NULL);
    if (!s || pp_studio_health_check(s, err, sizeof(err)) < 0) {
        pp_error("%s", s ? err : "out of memory");
        pp_studio_free(s);
        free(text);
        return 1;
    }
    pp_send_result r = PP_SEND_RETRY;
    long long delay = tmp.backoff_ms;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt) {
            pp_info("retrying the upload in %.1f s", (double)delay / 1000);
            usleep((useconds_t)(delay * 1000));
            delay *= 2;
        }
        r = pp_studio_send(s, &it);
        if (r != PP_SEND_RETRY)
            break;
    }
    pp_studio_free(s);
    if (r != PP_SEND_OK)
        rc = 1;
    if (cfg->pyroscope_server) {
        pp_pyroscope *p = pp_pyroscope_new(cfg, NULL, err, sizeof(err));
        if (!p) {
            pp_error("%s", err);
            rc = 1;
        } else {
            if (pp_pyroscope_send(p, &it) != PP_SEND_OK)
                rc = 1;
            pp_pyroscope_free(p);
        }
    }
    free(text);
    return rc;
}
