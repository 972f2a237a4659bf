/* Logging: one line per message, "[UTC time] LEVEL: polyprof: message", to stderr and, when
 * configured, to a log file (always at DEBUG level there). Thread-safe. */
#ifndef PP_LOG_H
#define PP_LOG_H

typedef enum {
    PP_LOG_DEBUG = 0,
    PP_LOG_INFO,
    PP_LOG_WARNING,
    PP_LOG_ERROR,
    PP_LOG_CRITICAL,
} pp_log_level;

/* verbose: stderr shows DEBUG too. log_file may be NULL (no file). Returns 0, or -1 with errno
 * when the log file cannot be opened (logging to stderr still works). */
int pp_log_init(int verbose, const char *log_file);
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
