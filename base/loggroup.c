#include "base/loggroup.h"

#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "base/utf8.h"

/* A comm is at most 15 bytes (TASK_COMM_LEN - 1). */
#define COMM_MAX 15

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

size_t pp_loggrp_cause(const char *msg, int pid, char *out, size_t outlen)
{
    char num[16];
    size_t nl = (size_t)snprintf(num, sizeof(num), "%d", pid);
    size_t n = 0, len = strlen(msg);
    if (len >= outlen)
        return outlen;
    for (size_t i = 0; i < len;) {
        if (pid > 0 && (i == 0 || !is_digit(msg[i - 1])) && len - i >= nl &&
            memcmp(msg + i, num, nl) == 0 && !is_digit(msg[i + nl])) {
            out[n++] = '\0';
            i += nl;
            if (msg[i] == ' ' && msg[i + 1] == '(') { /* "pid N (comm)": the comm goes too */
                size_t span = len - (i + 2) < COMM_MAX + 1 ? len - (i + 2) : COMM_MAX + 1;
                const char *close = memchr(msg + i + 2, ')', span);
                if (close) {
                    memcpy(out + n, " ()", 3);
                    n += 3;
                    i = (size_t)(close - msg) + 1;
                }
            }
            continue;
        }
        out[n++] = msg[i++];
    }
    out[n] = '\0';
    return n;
}

bool pp_loggrp_add(pp_loggrp *g, int level, const char *fmt, int pid, const char *msg,
                   const char *extra, double now)
{
    if (pid <= 0)
        return false;
    char cause[PP_LOGGRP_TEXT];
    size_t clen = pp_loggrp_cause(msg, pid, cause, sizeof(cause));
    if (clen >= sizeof(cause) || strlen(msg) + strlen(extra) >= PP_LOGGRP_TEXT)
        return false;
    uint64_t fh = pp_hash_bytes(fmt, strlen(fmt), 0);
    pp_loggrp_ent *free_ent = NULL;
    for (size_t i = 0; i < PP_LOGGRP_MAX; i++) {
        pp_loggrp_ent *e = &g->e[i];
        if (!e->open) {
            if (!free_ent)
                free_ent = e;
            continue;
        }
        if (e->level == level && e->fmt == fh && e->cause_len == clen &&
            memcmp(e->cause, cause, clen) == 0) {
            if (e->more < PP_LOGGRP_PIDS)
                e->pids[e->more] = pid;
            e->more++;
            return true;
        }
    }
    if (!free_ent)
        return false;
    free_ent->open = true;
    free_ent->level = level;
    free_ent->fmt = fh;
    free_ent->opened = now;
    free_ent->more = 0;
    free_ent->cause_len = clen;
    memcpy(free_ent->cause, cause, clen + 1);
    snprintf(free_ent->msg, sizeof(free_ent->msg), "%s%s", msg, extra);
    g->nopen++;
    return true;
}

double pp_loggrp_due(const pp_loggrp *g)
{
    double due = -1;
    for (size_t i = 0; g->nopen && i < PP_LOGGRP_MAX; i++)
        if (g->e[i].open && (due < 0 || g->e[i].opened + PP_LOGGRP_WINDOW < due))
            due = g->e[i].opened + PP_LOGGRP_WINDOW;
    return due;
}

bool pp_loggrp_take(pp_loggrp *g, double now, bool all, char *out, size_t outlen, int *level)
{
    char tail[256] = "";
    if (outlen < sizeof(tail))
        return false;
    pp_loggrp_ent *oldest = NULL;
    for (size_t i = 0; g->nopen && i < PP_LOGGRP_MAX; i++) {
        pp_loggrp_ent *e = &g->e[i];
        if (e->open && (all || now >= e->opened + PP_LOGGRP_WINDOW) &&
            (!oldest || e->opened < oldest->opened))
            oldest = e;
    }
    if (!oldest)
        return false;
    /* the count first, so that a long first message is cut to make room for it */
    if (oldest->more) {
        size_t shown = oldest->more < PP_LOGGRP_PIDS ? oldest->more : PP_LOGGRP_PIDS;
        size_t t =
            (size_t)snprintf(tail, sizeof(tail), " (and %llu more process%s: pid%s ", oldest->more,
                             oldest->more == 1 ? "" : "es", oldest->more == 1 ? "" : "s");
        for (size_t k = 0; k < shown; k++) /* 10 pids of 13 bytes at most: it fits */
            t += (size_t)snprintf(tail + t, sizeof(tail) - t, "%s%d", k ? ", " : "",
                                  oldest->pids[k]);
        snprintf(tail + t, sizeof(tail) - t, "%s)", oldest->more > shown ? ", ..." : "");
    }
    size_t tl = strlen(tail); /* < sizeof(tail) <= outlen */
    size_t cut = pp_utf8_cut(oldest->msg, strlen(oldest->msg), outlen - tl - 1);
    memcpy(out, oldest->msg, cut);
    memcpy(out + cut, tail, tl + 1);
    *level = oldest->level;
    oldest->open = false;
    g->nopen--;
    return true;
}
