/* Per-process messages grouped by cause (issue 28), behind pp_log_proc (log.h): a burst of new
 * processes that fail the same way gives one line, "<the first message> (and N more processes:
 * pids a, b, ...)", not a line per process. A cause is the message's level, its format and its
 * text with the process taken out: the pid where it stands as a number, and the "(comm)" right
 * after it (15 bytes at most, up to the first ')'). Texts are compared whole, never by a hash:
 * two messages that differ in anything else are two causes, two lines. The first message of a
 * cause opens a group, held PP_LOGGRP_WINDOW seconds; the messages of the same cause that come
 * meanwhile join it; then it is taken as one line. Bounded: PP_LOGGRP_MAX groups open at once (a
 * message that finds none free, or is too long to be compared whole, is not grouped: the caller
 * logs it at once), PP_LOGGRP_PIDS pids named per line (the count is exact). Not thread-safe:
 * log.c holds its lock around every call. */
#ifndef PP_LOGGROUP_H
#define PP_LOGGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PP_LOGGRP_MAX 16
#define PP_LOGGRP_PIDS 10
#define PP_LOGGRP_WINDOW 1.0
#define PP_LOGGRP_TEXT 4096 /* a message, and its cause, NUL included */

typedef struct pp_loggrp_ent {
    bool open;
    int level;
    uint64_t fmt;             /* hash of the format */
    double opened;            /* the caller's clock, seconds */
    unsigned long long more;  /* messages of other processes that joined */
    int pids[PP_LOGGRP_PIDS]; /* the first of them */
    size_t cause_len;
    char cause[PP_LOGGRP_TEXT]; /* the first message without its process (pp_loggrp_cause) */
    char msg[PP_LOGGRP_TEXT];   /* the first message, as it would be logged alone */
} pp_loggrp_ent;

typedef struct pp_loggrp {
    pp_loggrp_ent e[PP_LOGGRP_MAX];
    size_t nopen;
} pp_loggrp;

/* The text of msg without the process pid, in out (outlen bytes): every occurrence of the pid as
 * a whole number becomes a NUL byte (no message holds one, so nothing else reads the same), and
 * a "(comm)" right after it becomes "()". Returns its length; outlen when msg does not fit
 * whole (the cause would be cut: not comparable). */
size_t pp_loggrp_cause(const char *msg, int pid, char *out, size_t outlen);

/* One message at now about process pid (> 0): msg is compared for the cause, msg and extra
 * (appended, may be "") are what is logged. Joins the open group of its cause, or opens one.
 * False when it cannot be held (every group taken, or msg too long): the caller logs it at
 * once. A zeroed pp_loggrp is empty. */
bool pp_loggrp_add(pp_loggrp *g, int level, const char *fmt, int pid, const char *msg,
                   const char *extra, double now);

/* When the first open group's window closes (the caller's clock); a negative value when none is
 * open. */
double pp_loggrp_due(const pp_loggrp *g);

/* Takes one group whose window has closed at now (any open one with all), the oldest first: its
 * line in out (outlen >= 256, else none is taken; the first message cut at a character boundary so
 * that the count always fits) and its level. False when there is none. */
bool pp_loggrp_take(pp_loggrp *g, double now, bool all, char *out, size_t outlen, int *level);

#endif
