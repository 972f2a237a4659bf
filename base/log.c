#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/loggroup.h"
#include "base/logrepeat.h"
#include "base/safefile.h"
#include "base/utf8.h"

#define PP_LOG_MSG_MAX 4096

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pp_log_level stderr_level = PP_LOG_INFO;
/* The log file: its descriptor, the directory holding it (for rotation, by name relative to
 * it), its name there, the bytes it holds, and the rotation settings. */
static int log_fd = -1, log_dfd = -1;
static char log_name[NAME_MAX + 1], log_path[PATH_MAX];
static unsigned long long log_size, log_max;
static int log_backups;
/* Per-process messages already logged (pp_log_proc); under log_lock. */
static pp_logrep repeats;
/* Per-process messages held to be grouped by cause (pp_log_proc), and the thread that logs each
 * group when its window closes (started with the first group, stopped by pp_log_close); under
 * log_lock. groups_cond wakes it (CLOCK_MONOTONIC). */
static pp_loggrp groups;
static pthread_cond_t groups_cond;
static bool groups_cond_ready, flusher_on, flusher_stop;
static pthread_t flusher;
static void emit_locked(pp_log_level level, const char *raw);
static void take_groups(double now, bool all);

static const char *const level_names[] = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"};

static void close_file(void)
{
    if (log_fd >= 0)
        close(log_fd);
    if (log_dfd >= 0)
        close(log_dfd);
    log_fd = log_dfd = -1;
}

/* Opens log_name in log_dfd as a file polyprof owns (see pp_open_owned_append). */
static int open_log(char *err, size_t errlen)
{
    int fd = pp_open_owned_append(log_dfd, log_name, 0644, err, errlen);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0)
        log_size = (unsigned long long)st.st_size;
    return fd;
}

int pp_log_init(int verbose, const char *path, const pp_log_rotation *rot, char *err, size_t errlen)
{
    stderr_level = verbose ? PP_LOG_DEBUG : PP_LOG_INFO;
    if (!path || !*path)
        return 0;
    /* Create the log file's directory (one level, like /var/log/polyprof). */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = path;
    if (slash) {
        base = path + (slash - dir) + 1;
        if (slash != dir) {
            *slash = '\0';
            mkdir(dir, 0755);
        } else {
            slash[1] = '\0';
        }
    } else {
        snprintf(dir, sizeof(dir), ".");
    }
    if (!*base || strlen(base) > NAME_MAX) {
        snprintf(err, errlen, "not a file name");
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "cannot open its directory %s: %s", dir, strerror(errno));
        return -1;
    }
    pthread_mutex_lock(&log_lock);
    close_file();
    log_dfd = dfd;
    snprintf(log_name, sizeof(log_name), "%s", base);
    snprintf(log_path, sizeof(log_path), "%s", path);
    log_max = rot ? rot->max_bytes : 0;
    log_backups = rot ? rot->backups : 0;
    log_fd = open_log(err, errlen);
    int rc = log_fd >= 0 ? 0 : -1;
    if (rc < 0)
        close_file();
    pthread_mutex_unlock(&log_lock);
    return rc;
}

void pp_log_close(void)
{
    pthread_mutex_lock(&log_lock);
    take_groups(0, true);
    bool joining = flusher_on;
    pthread_t thread = flusher;
    flusher_stop = true; /* until it is joined, messages are not held (start_flusher) */
    flusher_on = false;
    if (joining)
        pthread_cond_signal(&groups_cond);
    pthread_mutex_unlock(&log_lock);
    if (joining)
        pthread_join(thread, NULL);
    pthread_mutex_lock(&log_lock);
    flusher_stop = false;
    unsigned long long held = pp_logrep_held(&repeats, NULL);
    pp_logrep_clear_held(&repeats);
    pthread_mutex_unlock(&log_lock);
    if (held)
        pp_log(PP_LOG_INFO,
               "%llu repeated per-process messages were counted and not logged (each is logged "
               "once per process and hour)",
               held);
    pthread_mutex_lock(&log_lock);
    close_file();
    pthread_mutex_unlock(&log_lock);
}

void pp_log_set_stderr_level(pp_log_level level)
{
    stderr_level = level;
}

/* Rotation as Python's RotatingFileHandler (what gProfiler uses): NAME.(k) -> NAME.(k+1) for k
 * from backups-1 down to 1, NAME -> NAME.1, then a new NAME. Called with log_lock held. */
static void rotate(void)
{
    char from[NAME_MAX + 16], to[NAME_MAX + 16];
    for (int k = log_backups - 1; k >= 1; k--) {
        snprintf(from, sizeof(from), "%s.%d", log_name, k);
        snprintf(to, sizeof(to), "%s.%d", log_name, k + 1);
        renameat(log_dfd, from, log_dfd, to); /* a missing one is fine */
    }
    snprintf(to, sizeof(to), "%s.1", log_name);
    int rc = renameat(log_dfd, log_name, log_dfd, to);
    char err[256];
    int fd = rc == 0 ? open_log(err, sizeof(err)) : -1;
    if (fd < 0) {
        /* keep writing the old file rather than lose messages; say so once per attempt */
        if (rc < 0)
            snprintf(err, sizeof(err), "%s", strerror(errno));
        fprintf(stderr, "polyprof: warning: cannot rotate the log file %s: %s\n", log_path, err);
        if (rc == 0) { /* renamed but not re-created: the old descriptor still writes NAME.1 */
            log_size = 0;
            log_max = 0;
        }
        return;
    }
    close(log_fd);
    log_fd = fd;
}

static void write_file(const char *line, size_t len)
{
    if (log_max && log_backups > 0 && log_size > 0 && log_size + len >= log_max)
        rotate();
    const char *p = line;
    size_t left = len;
    while (left) {
        ssize_t w = write(log_fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
    log_size += len - left;
}

/* Writes one line with msg; the caller holds log_lock. The time is read under the lock, so that
 * the lines of a file are in time order whichever thread wrote them. */
static void emit_locked(pp_log_level level, const char *raw)
{
    /* Messages quote text of other processes (comm, command lines, paths): the line is UTF-8
     * whatever they hold, invalid bytes as U+FFFD (a cut message may also end mid-character) */
    char msg[PP_LOG_MSG_MAX];
    pp_utf8_copy(msg, sizeof(msg), raw, strlen(raw));
    char line[PP_LOG_MSG_MAX + 128];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
    int n = snprintf(line, sizeof(line), "[%s,%03ld] %s: polyprof: %s\n", ts,
                     (long)tv.tv_usec / 1000, level_names[level], msg);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
    if (len && level >= stderr_level)
        fwrite(line, 1, len, stderr);
    if (len && log_fd >= 0)
        write_file(line, len);
}

static void emit(pp_log_level level, const char *raw)
{
    pthread_mutex_lock(&log_lock);
    emit_locked(level, raw);
    pthread_mutex_unlock(&log_lock);
}

void pp_log(pp_log_level level, const char *fmt, ...)
{
    if (level < stderr_level && log_fd < 0)
        return;
    char msg[PP_LOG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    emit(level, msg);
}

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Logs the held groups whose window has closed at now (every one with all); log_lock held. */
static void take_groups(double now, bool all)
{
    char line[PP_LOG_MSG_MAX];
    int level;
    while (pp_loggrp_take(&groups, now, all, line, sizeof(line), &level))
        emit_locked((pp_log_level)level, line);
}

/* The flusher: sleeps until the first held group's window closes, logs it, until stopped. */
static void *flusher_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&log_lock);
    while (!flusher_stop) {
        double due = pp_loggrp_due(&groups);
        if (due < 0) {
            pthread_cond_wait(&groups_cond, &log_lock);
        } else {
            struct timespec ts = {.tv_sec = (time_t)due};
            ts.tv_nsec = (long)((due - (double)ts.tv_sec) * 1e9);
            if (ts.tv_nsec >= 1000000000L)
                ts.tv_nsec = 999999999L;
            pthread_cond_timedwait(&groups_cond, &log_lock, &ts);
        }
        take_groups(mono_seconds(), false);
    }
    pthread_mutex_unlock(&log_lock);
    return NULL;
}

/* Starts the flusher if it is not running; log_lock held. False when it cannot be started (the
 * caller does not hold messages then). Its signals are blocked: the session loop reads them
 * through a signalfd, which needs them blocked in every thread. */
static bool start_flusher(void)
{
    if (flusher_on)
        return true;
    if (flusher_stop) /* pp_log_close is stopping it */
        return false;
    if (!groups_cond_ready) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        groups_cond_ready = pthread_cond_init(&groups_cond, &ca) == 0;
        pthread_condattr_destroy(&ca);
        if (!groups_cond_ready)
            return false;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    flusher_on = pthread_create(&flusher, NULL, flusher_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return flusher_on;
}

void pp_log_proc(pp_log_level level, int pid, unsigned long long start_ticks, const char *fmt, ...)
{
    uint64_t key = pp_hash_bytes(
        fmt, strlen(fmt), pp_hash_u64((uint64_t)(unsigned)pid << 32 ^ pp_hash_u64(start_ticks)));
    unsigned long long held;
    double since, now = mono_seconds();
    pthread_mutex_lock(&log_lock);
    bool log = pp_logrep_check(&repeats, key, now, &held, &since);
    pthread_mutex_unlock(&log_lock);
    if (!log || (level < stderr_level && log_fd < 0))
        return;
    char msg[PP_LOG_MSG_MAX], extra[128] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (held)
        snprintf(extra, sizeof(extra), " (%llu repeats in the last %.0f min were not logged)", held,
                 since / 60);
    /* held to be grouped with the other processes' messages of the same cause (loggroup.h) */
    pthread_mutex_lock(&log_lock);
    bool grouped =
        pid > 0 && start_flusher() && pp_loggrp_add(&groups, (int)level, fmt, pid, msg, extra, now);
    if (grouped)
        pthread_cond_signal(&groups_cond); /* it may be sleeping with nothing held */
    pthread_mutex_unlock(&log_lock);
    if (grouped)
        return;
    size_t n = strlen(msg), e = strlen(extra); /* appended when it fits whole */
    if (n + e < sizeof(msg))
        memcpy(msg + n, extra, e + 1);
    emit(level, msg);
}

unsigned long long pp_log_repeats_counted(void)
{
    pthread_mutex_lock(&log_lock);
    unsigned long long n = repeats.suppressed;
    pthread_mutex_unlock(&log_lock);
    return n;
}
