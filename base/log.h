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
void pp_log_close(void);
/* Minimum level written to stderr (tests quiet the logger with PP_LOG_CRITICAL). */
void pp_log_set_stderr_level(pp_log_level level);

void pp_log(pp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pp_debug(...) pp_log(PP_LOG_DEBUG, __VA_ARGS__)
#define pp_info(...) pp_log(PP_LOG_INFO, __VA_ARGS__)
#define pp_warn(...) pp_log(PP_LOG_WARNING, __VA_ARGS__)
#define pp_error(...) pp_log(PP_LOG_ERROR, __VA_ARGS__)
#define pp_critical(...) pp_log(PP_LOG_CRITICAL, __VA_ARGS__)

#endif
