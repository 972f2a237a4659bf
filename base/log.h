/* Logging: one line per message, "[UTC time] LEVEL: polyprof: message", to stderr and, when
 * configured, to a log file (always at DEBUG level there), rotated by size like gProfiler's
 * (Python's RotatingFileHandler). Thread-safe. */
#ifndef PP_LOG_H
#define PP_LOG_H

typedef enum {
    PP_LOG_DEBUG = 0,
    PP_LOG_INFO,
    PP_LOG_WARNING,
    PP_LOG_ERROR,
    PP_LOG_CRITICAL,
} pp_log_level;

#include <stddef.h>

/* Log file rotation: when a line would take the file to max_bytes or more, the file is renamed
 * to NAME.1 (NAME.1 to NAME.2 ... up to NAME.<backups>, the oldest dropped) and a new one is
 * started. max_bytes 0 or backups 0: no rotation. */
typedef struct pp_log_rotation {
    unsigned long long max_bytes;
    int backups;
} pp_log_rotation;

/* verbose: stderr shows DEBUG too. log_file may be NULL (no file); rot may be NULL (no
 * rotation). The file is opened for appending without following a symlink, and refused unless
 * it is a regular file owned by polyprof's user with no other hard link. Returns 0, or -1 with
 * a message in err when the log file cannot be used (logging to stderr still works). */
int pp_log_init(int verbose, const char *log_file, const pp_log_rotation *rot, char *err,
                size_t errlen);
/* Logs the grouped per-process messages still held (pp_log_proc), then the repeats of
 * per-process messages that were counted and not logged, if any, in one INFO line; stops the
 * thread that logs grouped messages; then closes the log file. */
void pp_log_close(void);
/* Minimum level written to stderr (tests quiet the logger with PP_LOG_CRITICAL). */
void pp_log_set_stderr_level(pp_log_level level);

void pp_log(pp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A message about one process that may come back every session (a process that cannot be
 * profiled, a runtime profiler's error): the format fmt and the process (pid and start_ticks,
 * field 22 of /proc/<pid>/stat, so that a reused pid is another process; 0 when unknown) are its
 * key. The first occurrence of a key is logged; repeats are counted, not logged, until an hour
 * after it was last logged, when it is logged again with "(N repeats in the last M min were not
 * logged)". Give each message its own format (not a bare "%s"): two messages with the same
 * format about one process share a key. The table is bounded (base/logrepeat.h).
 * A message logged is then grouped with those of other processes with the same cause (its level,
 * its format, and its text without the pid and the "(comm)" right after it; the rest of the text
 * compared whole): it is held PP_LOGGRP_WINDOW (1 s) from the first of its cause, and the group
 * logged as one line, "<first message> (and N more processes: pids ...)", by a thread of the
 * logger, or at pp_log_close (base/loggroup.h). */
void pp_log_proc(pp_log_level level, int pid, unsigned long long start_ticks, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Repeats of per-process messages counted instead of logged since the start. */
unsigned long long pp_log_repeats_counted(void);

#define pp_debug(...) pp_log(PP_LOG_DEBUG, __VA_ARGS__)
#define pp_info(...) pp_log(PP_LOG_INFO, __VA_ARGS__)
#define pp_warn(...) pp_log(PP_LOG_WARNING, __VA_ARGS__)
#define pp_error(...) pp_log(PP_LOG_ERROR, __VA_ARGS__)
#define pp_critical(...) pp_log(PP_LOG_CRITICAL, __VA_ARGS__)
#define pp_info_proc(pid, start, ...) pp_log_proc(PP_LOG_INFO, pid, start, __VA_ARGS__)
#define pp_warn_proc(pid, start, ...) pp_log_proc(PP_LOG_WARNING, pid, start, __VA_ARGS__)

#endif
