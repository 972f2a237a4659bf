/* --java-safemode and --java-collect-jvm-flags: see javaopts.h. */
#include "runtimes/java/javaopts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/java/jvminfo.h"

#define SAFEMODE_DEFAULT                                                                           \
    (PP_SAFEMODE_PROFILED_OOM | PP_SAFEMODE_PROFILED_SIGNALED | PP_SAFEMODE_HSERR)
/* options polyprof accepts but does not act on (docs/java.md) */
#define SAFEMODE_UNIMPLEMENTED                                                                     \
    (PP_SAFEMODE_GENERAL_OOM | PP_SAFEMODE_GENERAL_SIGNALED | PP_SAFEMODE_PID_IN_KERNEL_MESSAGES | \
     PP_SAFEMODE_EXTENDED_VERSION_CHECKS | PP_SAFEMODE_AP_LOADED_CHECK)

static const char *const safemode_names[] = {"profiled-oom",
                                             "profiled-signaled",
                                             "hserr",
                                             "general-oom",
                                             "general-signaled",
                                             "pid-in-kernel-messages",
                                             "java-extended-version-checks",
                                             "ap-loaded-check"};
#define NSAFEMODE (sizeof(safemode_names) / sizeof(safemode_names[0]))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned safemode = SAFEMODE_DEFAULT;
static char jvm_flags[1024] = "default";
/* who may be attached to (pp_java_no_attach) */
static enum { ATTACH_ALL, ATTACH_NONE, ATTACH_HANDED } attach = ATTACH_ALL;
static struct handed {
    int pid;
    unsigned long long start;
} handed[PP_JAVA_HANDED_MAX];
static size_t nhanded, handed_next; /* entries used; the next one replaced when full */

int pp_java_safemode_parse(const char *v, unsigned *mask, char *bad, size_t badlen)
{
    if (!v) {
        *mask = SAFEMODE_DEFAULT;
        return 0;
    }
    if (!*v || strcmp(v, "all") == 0) {
        *mask = (1u << NSAFEMODE) - 1;
        return 0;
    }
    unsigned m = 0;
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        size_t k = 0;
        for (; k < NSAFEMODE; k++)
            if (strlen(safemode_names[k]) == len && strncmp(p, safemode_names[k], len) == 0)
                break;
        if (k < NSAFEMODE)
            m |= 1u << k;
        else if (len && !(len == 4 && strncmp(p, "none", 4) == 0)) {
            snprintf(bad, badlen, "%.*s", (int)(len < 64 ? len : 64), p);
            return -1;
        }
        p += len + (p[len] == ',');
    }
    *mask = m;
    return 0;
}

void pp_java_options_set(const pp_runtime_ctx *ctx)
{
    const char *sm = pp_runtime_opt(ctx, "java-safemode");
    const char *fl = pp_runtime_opt(ctx, "java-collect-jvm-flags");
    unsigned mask;
    char bad[80];
    if (pp_java_safemode_parse(sm, &mask, bad, sizeof(bad)) < 0) {
        pp_log_proc(PP_LOG_WARNING, 0, 0,
                    "--java-safemode: unknown option '%s' (known: profiled-oom, "
                    "profiled-signaled, hserr, general-oom, general-signaled, "
                    "pid-in-kernel-messages, java-extended-version-checks, ap-loaded-check); "
                    "using the default",
                    bad);
        mask = SAFEMODE_DEFAULT;
    }
    if (mask & SAFEMODE_UNIMPLEMENTED)
        pp_log_proc(PP_LOG_INFO, 0, 0,
                    "--java-safemode: general-oom, general-signaled, pid-in-kernel-messages, "
                    "java-extended-version-checks and ap-loaded-check are accepted but not acted "
                    "on (docs/java.md)");
    pthread_mutex_lock(&lock);
    if (ctx && ctx->mode && strcmp(ctx->mode, "builtin") == 0)
        attach = ATTACH_NONE;
    else if (ctx && ctx->mode && strcmp(ctx->mode, "auto") == 0 && pp_inwalk_possible(ctx))
        attach = ATTACH_HANDED;
    else
        attach = ATTACH_ALL;
    safemode = mask;
    /* "" (the bare flag) is gProfiler's const: default */
    snprintf(jvm_flags, sizeof(jvm_flags), "%s", fl && *fl ? fl : "default");
    pthread_mutex_unlock(&lock);
}

bool pp_java_safemode_on(const char *reason)
{
    for (size_t k = 0; k < 3; k++) {
        if (strcmp(reason, safemode_names[k]) == 0) {
            pthread_mutex_lock(&lock);
            bool on = (safemode & 1u << k) != 0;
            pthread_mutex_unlock(&lock);
            return on;
        }
    }
    return true; /* unknown triggers stay on */
}

json_t *pp_java_jvm_flags_for(const char *vmflags, const char *option)
{
    if (!option || !*option || strcmp(option, "default") == 0)
        return pp_jvm_flags_parse(vmflags, PP_JVM_FLAGS_DEFAULT);
    if (strcmp(option, "none") == 0)
        return json_array();
    json_t *all = pp_jvm_flags_parse(vmflags, PP_JVM_FLAGS_ALL);
    if (!all || strcmp(option, "all") == 0)
        return all;
    json_t *out = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(all, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        size_t nl = name ? strlen(name) : 0;
        for (const char *p = option; name && *p;) {
            size_t len = strcspn(p, ",");
            if (len == nl && strncmp(p, name, len) == 0) {
                json_array_append(out, f);
                break;
            }
            p += len + (p[len] == ',');
        }
    }
    json_decref(all);
    return out;
}

json_t *pp_java_jvm_flags(const char *vmflags)
{
    char opt[sizeof(jvm_flags)];
    pthread_mutex_lock(&lock);
    memcpy(opt, jvm_flags, sizeof(opt));
    pthread_mutex_unlock(&lock);
    return pp_java_jvm_flags_for(vmflags, opt);
}

bool pp_java_jvm_flags_none(void)
{
    pthread_mutex_lock(&lock);
    bool none = strcmp(jvm_flags, "none") == 0;
    pthread_mutex_unlock(&lock);
    return none;
}

/* The entry of pid in handed[], or -1. Under lock. */
static long handed_find(int pid)
{
    for (size_t i = 0; i < nhanded; i++)
        if (handed[i].pid == pid)
            return (long)i;
    return -1;
}

void pp_java_set_handed(int pid, unsigned long long start_ticks, bool on)
{
    pthread_mutex_lock(&lock);
    long i = handed_find(pid);
    if (!on) {
        if (i >= 0)
            handed[i] = handed[--nhanded];
    } else if (i < 0 && nhanded < PP_JAVA_HANDED_MAX) {
        handed[nhanded++] = (struct handed){pid, start_ticks};
    } else if (i < 0) { /* full: an entry of a JVM that is gone, else the oldest replaced */
        size_t k = 0;
        while (k < nhanded && pp_proc_start_ticks(handed[k].pid) == handed[k].start)
            k++;
        handed[k < nhanded ? k : handed_next++ % PP_JAVA_HANDED_MAX] =
            (struct handed){pid, start_ticks};
    } else {
        handed[i].start = start_ticks;
    }
    pthread_mutex_unlock(&lock);
}

bool pp_java_is_handed(int pid, unsigned long long start_ticks)
{
    pthread_mutex_lock(&lock);
    long i = handed_find(pid);
    bool b = i >= 0 && handed[i].start == start_ticks;
    pthread_mutex_unlock(&lock);
    return b;
}

bool pp_java_no_attach(int pid)
{
    pthread_mutex_lock(&lock);
    bool none = attach == ATTACH_NONE, all = attach == ATTACH_ALL;
    pthread_mutex_unlock(&lock);
    if (none || all)
        return none;
    /* a pid reused by another JVM since is not the one handed over */
    return !pp_java_is_handed(pid, pp_proc_start_ticks(pid));
}
