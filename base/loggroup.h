/* Per-process messages grouped by cause (issue 28), behind pp_log_proc (log.h): a burst of new
 * processes that fail the same way gives one line, "<the first message> (and N more processes:
 * pids a, b, ...)", not a line per process. A cause is the message's format and its text with
 * the process taken out (its pid, and the comm in parentheses right after it). The first
 * message of a cause opens a group, held PP_LOGGRP_WINDOW seconds; the messages of the same
 * cause that come meanwhile join it; then it is taken as one line. Bounded: PP_LOGGRP_MAX groups
 * open at once (a message that finds none free is logged at once), PP_LOGGRP_PIDS pids named
 * per line (the count is exact). Not thread-safe: log.c holds its lock around every call. */
#ifndef PP_LOGGROUP_H
#define PP_LOGGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PP_LOGGRP_MAX 32
#define PP_LOGGRP_PIDS 10
#define PP_LOGGRP_WINDOW 0.5
#define PP_LOGGRP_MSG 1024

typedef struct pp_loggrp_ent {
    uint64_t cause;
    bool open;
    int level;
    double opened;            /* the caller's clock, seconds */
    unsigned long long more;  /* messages of other processes that joined */
    int pids[PP_LOGGRP_PIDS]; /* the first of them */
    char msg[PP_LOGGRP_MSG];  /* the first message, as logged alone */
} pp_loggrp_ent;

typedef struct pp_loggrp {
    pp_loggrp_ent e[PP_LOGGRP_MAX];
    size_t nopen;
} pp_loggrp;

/* The cause of message msg (formatted from fmt) about process pid. */
uint64_t pp_loggrp_cause(const char *fmt, const char *msg, int pid, int level);

/* One message at now: joins the open group of its cause, or opens one. False when every group
 * is taken: the caller logs it at once. A zeroed pp_loggrp is empty. */
bool pp_loggrp_add(pp_loggrp *g, uint64_t cause, int level, int pid, const char *msg, double now);

/* Takes one group whose window has closed at now (any open one with all): its line in out
 * (cut to outlen) and its level. False when there is none. */
bool pp_loggrp_take(pp_loggrp *g, double now, bool all, char *out, size_t outlen, int *level);

#endif
