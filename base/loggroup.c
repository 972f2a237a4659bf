#include "base/loggroup.h"

#include <stdio.h>
#include <string.h>

#include "base/hash.h"

/* The comm is at most 15 bytes: its closing parenthesis is at most this far after the opening
 * one. */
#define COMM_SPAN 17

uint64_t pp_loggrp_cause(const char *fmt, const char *msg, int pid, int level)
{
    char norm[PP_LOGGRP_MSG * 4], num[16];
    int nl = snprintf(num, sizeof(num), "%d", pid);
    size_t n = 0, len = strlen(msg);
    for (size_t i = 0; i < len && n < sizeof(norm);) {
        bool starts = (i == 0 || msg[i - 1] < '0' || msg[i - 1] > '9');
        if (pid > 0 && starts && strncmp(msg + i, num, (size_t)nl) == 0 &&
            (msg[i + nl] < '0' || msg[i + nl] > '9')) {
            norm[n++] = '#';
            i += (size_t)nl;
            if (msg[i] == ' ' && msg[i + 1] == '(') { /* "pid N (comm)": the comm goes too */
                const char *close = NULL;
                for (size_t k = i + 2; k < len && k <= i + 2 + COMM_SPAN; k++)
                    if (msg[k] == ')')
                        close = msg + k;
                if (close)
                    i = (size_t)(close - msg) + 1;
            }
            continue;
        }
        norm[n++] = msg[i++];
    }
    return pp_hash_bytes(norm, n, pp_hash_bytes(fmt, strlen(fmt), (uint64_t)level + 1));
}

bool pp_loggrp_add(pp_loggrp *g, uint64_t cause, int level, int pid, const char *msg, double now)
{
    pp_loggrp_ent *free_ent = NULL;
    for (size_t i = 0; i < PP_LOGGRP_MAX; i++) {
        pp_loggrp_ent *e = &g->e[i];
        if (!e->open) {
            if (!free_ent)
                free_ent = e;
            continue;
        }
        if (e->cause == cause && e->level == level) {
            if (e->more < PP_LOGGRP_PIDS)
                e->pids[e->more] = pid;
            e->more++;
            return true;
        }
    }
    if (!free_ent)
        return false;
    *free_ent = (pp_loggrp_ent){.cause = cause, .open = true, .level = level, .opened = now};
    snprintf(free_ent->msg, sizeof(free_ent->msg), "%s", msg);
    g->nopen++;
    return true;
}

bool pp_loggrp_take(pp_loggrp *g, double now, bool all, char *out, size_t outlen, int *level)
{
    if (!g->nopen)
        return false;
    pp_loggrp_ent *oldest = NULL;
    for (size_t i = 0; i < PP_LOGGRP_MAX; i++) {
        pp_loggrp_ent *e = &g->e[i];
        if (e->open && (all || now - e->opened >= PP_LOGGRP_WINDOW) &&
            (!oldest || e->opened < oldest->opened))
            oldest = e;
    }
    if (!oldest)
        return false;
    size_t n = (size_t)snprintf(out, outlen, "%s", oldest->msg);
    if (oldest->more && n < outlen) {
        n +=
            (size_t)snprintf(out + n, outlen - n, " (and %llu more process%s: pid%s ", oldest->more,
                             oldest->more == 1 ? "" : "es", oldest->more == 1 ? "" : "s");
        size_t shown = oldest->more < PP_LOGGRP_PIDS ? oldest->more : PP_LOGGRP_PIDS;
        for (size_t k = 0; k < shown && n < outlen; k++)
            n += (size_t)snprintf(out + n, outlen - n, "%s%d", k ? ", " : "", oldest->pids[k]);
        if (n < outlen)
            snprintf(out + n, outlen - n, "%s)", oldest->more > shown ? ", ..." : "");
    }
    *level = oldest->level;
    oldest->open = false;
    g->nopen--;
    return true;
}
