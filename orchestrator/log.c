#include "orchestrator/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pp_log_level stderr_level = PP_LOG_INFO;
static FILE *log_file;

static const char *const level_names[] = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"};

int pp_log_init(int verbose, const char *path)
{
    stderr_level = verbose ? PP_LOG_DEBUG : PP_LOG_INFO;
    if (!path || !*path)
        return 0;
    /* Create the log file's directory (one level, like /var/log/polyprof). */
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0755);
    }
    FILE *f = fopen(path, "ae");
    if (!f)
        return -1;
    setvbuf(f, NULL, _IOLBF, 0);
    pthread_mutex_lock(&log_lock);
    if (log_file)
        fclose(log_file);
    log_file = f;
    pthread_mutex_unlock(&log_lock);
    return 0;
}

void pp_log_close(void)
{
    pthread_mutex_lock(&log_lock);
    if (log_file)
        fclose(log_file);
    log_file = NULL;
    pthread_mutex_unlock(&log_lock);
}

void pp_log_set_stderr_level(pp_log_level level)
{
    stderr_level = level;
}

void pp_log(pp_log_level level, const char *fmt, ...)
{
    if (level < stderr_level && !log_file)
        return;
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);

    pthread_mutex_lock(&log_lock);
    if (level >= stderr_level)
        fprintf(stderr, "[%s,%03ld] %s: polyprof: %s\n", ts, (long)tv.tv_usec / 1000,
                level_names[level], msg);
    if (log_file)
        fprintf(log_file, "[%s,%03ld] %s: polyprof: %s\n", ts, (long)tv.tv_usec / 1000,
                level_names[level], msg);
    pthread_mutex_unlock(&log_lock);
}
