/* async-profiler's start/stop arguments as gProfiler builds them (its flags, the interval, the
 * cpu/itimer choice), less what upstream async-profiler 4.x does not know (docs/java.md has
 * the table), and the parser of async-profiler's collapsed output. */
#include <ctype.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtimes/java/asprof.h"
#include "runtimes/java/asprof_int.h"

static long opt_long(const pp_runtime_ctx *ctx, const char *name, long def, long lo, long hi)
{
    const char *v = pp_runtime_opt(ctx, name);
    if (!v || !*v)
        return def;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    return (errno || *end || n < lo || n > hi) ? def : n;
}

/* "2mb", "512k", "1048576" in binary units (humanfriendly's parse_size(binary=True)). */
static long parse_size(const char *s, long def)
{
    if (!s || !*s)
        return def;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0)
        return def;
    while (*end == ' ')
        end++;
    double mul = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k':
        mul = 1024.0;
        break;
    case 'm':
        mul = 1024.0 * 1024;
        break;
    case 'g':
        mul = 1024.0 * 1024 * 1024;
        break;
    case 'b':
    case '\0':
        break;
    default:
        return def;
    }
    double r = v * mul;
    return r >= 1 && r < 1e15 ? (long)r : def;
}

bool pp_asprof_perf_works(void)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof(a);
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 10000000;
    a.disabled = 1;
    a.exclude_kernel = 0;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

void pp_asprof_opts_init(pp_asprof_opts *o, const pp_runtime_ctx *ctx, int duration_s,
                         bool perf_works)
{
    memset(o, 0, sizeof(*o));
    int freq = ctx && ctx->frequency > 0 ? ctx->frequency : 11;
    o->interval_ns = (long)(1e9 / freq);
    o->alloc_bytes = parse_size(pp_runtime_opt(ctx, "alloc-interval"), 2L << 20);
    o->safemode = (int)opt_long(ctx, "java-async-profiler-safemode", 0, 0, 511);
    o->mcache = (int)opt_long(ctx, "java-async-profiler-mcache", 30, 0, 255);
    o->attach_timeout = (int)opt_long(ctx, "java-jattach-timeout", 30, 1, 3600);
    o->timeout_s = (duration_s > 0 ? duration_s : 1) + 30;
    const char *f = pp_runtime_opt(ctx, "java-async-profiler-features");
    char list[96];
    snprintf(list, sizeof(list), "%s", f && *f ? f : "probesp,vtable");
    size_t at = 0; /* the list '+'-separated, without probesp (gone in 4.x) */
    char *save = NULL;
    for (char *t = strtok_r(list, ",+", &save); t; t = strtok_r(NULL, ",+", &save))
        if (strcmp(t, "probesp") != 0 && at + strlen(t) + 2 < sizeof(o->features))
            at += (size_t)snprintf(o->features + at, sizeof(o->features) - at, "%s%s",
                                   at ? "+" : "", t);
    const char *mode = pp_runtime_opt(ctx, "java-async-profiler-mode");
    if (ctx && ctx->profiling_mode && strcmp(ctx->profiling_mode, "allocation") == 0)
        mode = "alloc";
    if (!mode || !*mode || strcmp(mode, "auto") == 0)
        mode = perf_works ? "cpu" : "itimer";
    if (strcmp(mode, "cpu") && strcmp(mode, "itimer") && strcmp(mode, "alloc"))
        mode = perf_works ? "cpu" : "itimer";
    snprintf(o->event, sizeof(o->event), "%s", mode);
    o->threads = pp_runtime_opt(ctx, "java-collect-thread-names") != NULL;
    o->includemm = pp_runtime_opt(ctx, "java-include-method-modifiers") != NULL;
    const char *ln = pp_runtime_opt(ctx, "java-line-numbers");
    o->includeln = ln && strcmp(ln, "line-of-function") == 0;
    o->lib = ctx && ctx->insert_dso_name;
    o->meminfolog = pp_runtime_opt(ctx, "java-async-profiler-no-report-meminfo") == NULL;
    const char *extra = pp_runtime_opt(ctx, "java-async-profiler-args");
    snprintf(o->extra, sizeof(o->extra), "%s", extra ? extra : "");
}

static int put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    if (*at >= len)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len - *at) {
        *at = len;
        return -1;
    }
    *at += (size_t)n;
    return 0;
}

/* ",file=<out>,collapsed,ann,sig" (gProfiler's includemm and includeln have no upstream
 * equivalent) */
static void output_args(const char *out, char *buf, size_t len, size_t *at)
{
    put(buf, len, at, ",file=%s,collapsed,ann,sig", out);
}

int pp_asprof_start_arg(const pp_asprof_opts *o, const char *out, const char *log, char *buf,
                        size_t len)
{
    size_t at = 0;
    /* threads always: each stack's thread id serves the per-thread merge (its root frame is
     * dropped again unless --java-collect-thread-names asked for it) */
    put(buf, len, &at, "start,event=%s,threads", o->event);
    output_args(out, buf, len, &at);
    if (strcmp(o->event, "alloc") == 0)
        put(buf, len, &at, ",alloc=%ld", o->alloc_bytes);
    else
        put(buf, len, &at, ",interval=%ld", o->interval_ns);
    put(buf, len, &at, ",log=%s", log);
    if (o->features[0])
        put(buf, len, &at, ",features=%s", o->features);
    put(buf, len, &at, ",timeout=%d%s", o->timeout_s, o->lib ? ",lib" : "");
    if (o->extra[0])
        put(buf, len, &at, ",%s", o->extra);
    return at < len ? 0 : -1;
}

int pp_asprof_stop_arg(const pp_asprof_opts *o, const char *out, const char *log, bool with_output,
                       char *buf, size_t len)
{
    size_t at = 0;
    put(buf, len, &at, "stop,log=%s,mcache=%d", log, o->mcache);
    if (with_output) {
        put(buf, len, &at, ",threads");
        output_args(out, buf, len, &at);
    }
    put(buf, len, &at, "%s", o->lib ? ",lib" : "");
    if (o->extra[0])
        put(buf, len, &at, ",%s", o->extra);
    return at < len ? 0 : -1;
}

/* The thread id of a "[<name> tid=N]" root frame (async-profiler's `threads`), else 0. */
static long thread_frame_tid(const char *f)
{
    size_t l = strlen(f);
    const char *t = l > 7 && f[0] == '[' && f[l - 1] == ']' ? strstr(f, " tid=") : NULL;
    while (t && strstr(t + 1, " tid="))
        t = strstr(t + 1, " tid="); /* the last one: a thread name may hold " tid=" */
    if (!t)
        return 0;
    char *end;
    long v = strtol(t + 5, &end, 10);
    return end != t + 5 && *end == ']' && end == f + l - 1 && v > 0 ? v : 0;
}

/* One "frame;...;leaf count" line (without the newline): 1 added, 0 malformed, -1 OOM. */
static int parse_line(const char *s, size_t n, pp_profile *prof, pp_pid_profile *pp,
                      const pp_asprof_parse_opts *po, uint32_t **frames, size_t *cap, char **tmp,
                      size_t *tmpcap)
{
    const char *sp = memrchr(s, ' ', n);
    if (!sp || sp == s || sp + 1 == s + n)
        return 0;
    uint64_t count = 0;
    for (const char *p = sp + 1; p < s + n; p++) {
        if (*p < '0' || *p > '9' || count > (UINT64_MAX - 9) / 10)
            return 0;
        count = count * 10 + (uint64_t)(*p - '0');
    }
    if (count == 0)
        return 0;
    size_t slen = (size_t)(sp - s), nf = 0;
    if (memchr(s, '\0', slen))
        return 0;
    if (slen + 1 > *tmpcap) {
        char *t = realloc(*tmp, slen + 1);
        if (!t)
            return -1;
        *tmp = t;
        *tmpcap = slen + 1;
    }
    memcpy(*tmp, s, slen);
    (*tmp)[slen] = '\0';
    uint32_t tid = 0;
    for (char *f = *tmp;;) {
        char *semi = strchr(f, ';');
        if (semi)
            *semi = '\0';
        if (!*f)
            return 0; /* empty frame */
        long t = po && nf == 0 && f == *tmp ? thread_frame_tid(f) : 0;
        if (t > 0) {
            tid = po->sampler_tid ? po->sampler_tid(po->arg, t) : (uint32_t)t;
            if (!po->thread_frames) {
                if (!semi)
                    return 0; /* a thread frame alone */
                f = semi + 1;
                continue;
            }
        }
        if (nf == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            uint32_t *q = realloc(*frames, nc * sizeof(uint32_t));
            if (!q)
                return -1;
            *frames = q;
            *cap = nc;
        }
        (*frames)[nf++] = pp_profile_intern(prof, f);
        if (!semi)
            break;
        f = semi + 1;
    }
    return pp_pid_add_tid(pp, tid, *frames, nf, count) < 0 ? -1 : 1;
}

long pp_asprof_parse_collapsed(const char *text, size_t len, pp_profile *prof, pp_pid_profile *pp,
                               size_t *bad_lines)
{
    return pp_asprof_parse_threads(text, len, prof, pp, NULL, bad_lines);
}

long pp_asprof_parse_threads(const char *text, size_t len, pp_profile *prof, pp_pid_profile *pp,
                             const pp_asprof_parse_opts *opts, size_t *bad_lines)
{
    long added = 0;
    size_t bad = 0, cap = 0, tmpcap = 0;
    uint32_t *frames = NULL;
    char *tmp = NULL;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        size_t m = n;
        if (m && text[i + m - 1] == '\r')
            m--;
        if (m) {
            int r = parse_line(text + i, m, prof, pp, opts, &frames, &cap, &tmp, &tmpcap);
            if (r > 0)
                added++;
            else
                bad++;
        }
        i += n + 1;
    }
    free(frames);
    free(tmp);
    if (bad_lines)
        *bad_lines = bad;
    return added;
}

size_t pp_asprof_ignored(const pp_asprof_opts *o, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    if (o->includemm)
        put(buf, len, &at, "%s--java-include-method-modifiers", at ? ", " : "");
    if (o->includeln)
        put(buf, len, &at, "%s--java-line-numbers line-of-function", at ? ", " : "");
    if (o->safemode)
        put(buf, len, &at, "%s--java-async-profiler-safemode %d", at ? ", " : "", o->safemode);
    if (!o->meminfolog)
        put(buf, len, &at, "%s--java-async-profiler-no-report-meminfo", at ? ", " : "");
    return at;
}
