/* The values of the history options (history_time.h). */
#include "orchestrator/history_time.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/cli.h"

/* Digits at s (at least one, no sign) as a number below 2^62; *end after them. -1 if none or
 * too large. */
static int number(const char *s, const char **end, int64_t *v)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    int64_t r = 0;
    for (; isdigit((unsigned char)*s); s++) {
        if (r > ((INT64_C(1) << 62) - 9) / 10)
            return -1;
        r = r * 10 + (*s - '0');
    }
    *end = s;
    *v = r;
    return 0;
}

static int64_t unit_seconds(const char *u)
{
    if (!strcmp(u, "s"))
        return 1;
    if (!strcmp(u, "m"))
        return 60;
    if (!strcmp(u, "h"))
        return 3600;
    if (!strcmp(u, "d"))
        return 86400;
    if (!strcmp(u, "w"))
        return 7 * 86400;
    return 0;
}

int pp_history_parse_age(const char *s, int64_t *out, char *err, size_t errlen)
{
    const char *u;
    int64_t n, k;
    if (number(s, &u, &n) == 0 && n >= 1 && (k = *u ? unit_seconds(u) : 1) &&
        n <= INT64_MAX / 1000000 / k) {
        *out = n * k;
        return 0;
    }
    snprintf(err, errlen,
             "invalid age '%s': give a number and a unit, s, m, h, d or w "
             "(e.g. 30m, 1h, 7d)",
             s);
    return -1;
}

int pp_history_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
    static const char *const units[] = {"", "K", "M", "G", "T"};
    const char *u;
    int64_t n;
    if (number(s, &u, &n) == 0 && n >= 1) {
        for (int i = 0; i < 5; i++) {
            size_t l = strlen(units[i]);
            if (strncasecmp(u, units[i], l) != 0)
                continue;
            const char *rest = u + l;
            if (i && (!strcasecmp(rest, "") || !strcasecmp(rest, "B") || !strcasecmp(rest, "iB")))
                ;
            else if (!i && (!*rest || !strcasecmp(rest, "B")))
                ;
            else
                continue;
            if ((uint64_t)n > (UINT64_MAX >> (10 * i)))
                break;
            *out = (uint64_t)n << (10 * i);
            return 0;
        }
    }
    snprintf(err, errlen,
             "invalid size '%s': give a number of bytes, or with K, M, G or T "
             "(powers of 1024; e.g. 512M, 1G)",
             s);
    return -1;
}

/* "+HH:MM", "-HH:MM", "+HHMM", "+HH" or "Z" as seconds east of UTC; -1 when malformed. */
static int zone(const char *z, int64_t *off)
{
    if (!strcmp(z, "Z") || !strcmp(z, "z") || !*z) {
        *off = 0;
        return 0;
    }
    /* digits only, two per field: sscanf's %2d would take a sign or spaces ("+-1:30") */
    char sign = z[0];
    const char *d = z + 1;
    size_t len = strlen(d);
    bool colon = len == 5 && d[2] == ':';
    if ((sign != '+' && sign != '-') || !(len == 2 || len == 4 || colon))
        return -1;
    for (size_t i = 0; i < len; i++)
        if (!(colon && i == 2) && !isdigit((unsigned char)d[i]))
            return -1;
    int hh = (d[0] - '0') * 10 + (d[1] - '0');
    int mm = len == 2 ? 0 : (d[len - 2] - '0') * 10 + (d[len - 1] - '0');
    if (hh > 23 || mm > 59)
        return -1;
    *off = (sign == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
    return 0;
}

static int iso(const char *s, int64_t *out)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%d", &tm);
    if (!p)
        return -1;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        const char *q = strptime(p + 1, "%H:%M:%S", &tm);
        if (!q)
            q = strptime(p + 1, "%H:%M", &tm);
        if (!q)
            return -1;
        p = q;
        if (*p == '.') /* fractions of a second are dropped */
            for (p++; isdigit((unsigned char)*p); p++)
                ;
    }
    int64_t off;
    if (zone(p, &off) < 0)
        return -1;
    errno = 0; /* timegm sets it only on failure */
    time_t t = timegm(&tm);
    if (t == (time_t)-1 && errno == EOVERFLOW)
        return -1;
    *out = (int64_t)t - off;
    return 0;
}

/* The times polyprof history takes: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z (what gmtime
 * and the ISO 8601 of the .col header can show). */
#define TIME_MIN INT64_C(-62135596800)
#define TIME_MAX INT64_C(253402300799)

static int parse_time(const char *s, time_t now, int64_t *out)
{
    const char *u;
    int64_t n, k;
    if (!strcmp(s, "now")) {
        *out = now;
        return 0;
    }
    if (s[0] == '@' && number(s + 1, &u, &n) == 0 && !*u) {
        *out = n;
        return 0;
    }
    if (number(s, &u, &n) == 0) {
        if (!*u) {
            *out = n; /* digits only: seconds since the epoch */
            return 0;
        }
        if ((k = unit_seconds(u)) && n <= INT64_MAX / 1000000 / k) {
            *out = (int64_t)now - n * k;
            return 0;
        }
    }
    return iso(s, out);
}

int pp_history_parse_time(const char *s, time_t now, int64_t *out, char *err, size_t errlen)
{
    int64_t t;
    if (parse_time(s, now, &t) == 0 && t >= TIME_MIN && t <= TIME_MAX) {
        *out = t;
        return 0;
    }
    snprintf(err, errlen,
             "invalid time '%s': give a time ago (30m, 1h, 2d), seconds since the epoch, or "
             "ISO 8601 (2026-11-27T10:00:00Z; without a zone, UTC), between the years 1 and 9999",
             s);
    return -1;
}

int pp_history_parse_opts(pp_config *cfg, char *err, size_t errlen)
{
    char why[256];
    const char *name = "--history-max-bytes";
    if (pp_history_parse_size(cfg->history_max_bytes_s, &cfg->history_max_bytes, why, sizeof(why)) <
            0 ||
        (name = "--history-fine-age",
         pp_history_parse_age(cfg->history_fine_age_s, &cfg->history_fine_age, why, sizeof(why)) <
             0) ||
        (name = "--history-max-age",
         pp_history_parse_age(cfg->history_max_age_s, &cfg->history_max_age, why, sizeof(why)) <
             0)) {
        snprintf(err, errlen, "%s: %s", name, why);
        return -1;
    }
    if (cfg->history_fine_age > cfg->history_max_age) {
        snprintf(err, errlen,
                 "--history-fine-age %s is longer than --history-max-age %s: sessions would be "
                 "deleted before their summaries are made; give a fine age at most the max age",
                 cfg->history_fine_age_s, cfg->history_max_age_s);
        return -1;
    }
    if (cfg->history_dir && !*cfg->history_dir) {
        snprintf(err, errlen, "--history-dir: give a directory");
        return -1;
    }
    return 0;
}
