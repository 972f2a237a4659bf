/* The values of the history options: times (--since/--until of `polyprof history`), ages
 * (--history-fine-age, --history-max-age) and sizes (--history-max-bytes). */
#ifndef PP_HISTORY_TIME_H
#define PP_HISTORY_TIME_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A time: "now"; relative, N followed by s, m, h, d or w (that long before now: "30m", "2d");
 * seconds since the epoch (digits only, or "@N"); or ISO 8601 "YYYY-MM-DD[THH:MM[:SS]][Z|+HH:MM|
 * -HH:MM]" (a space may replace the T; without a zone, UTC). 0, or -1 with a message in err. */
int pp_history_parse_time(const char *s, time_t now, int64_t *out, char *err, size_t errlen);

/* An age: N followed by s, m, h, d or w (no unit: seconds), N >= 1. */
int pp_history_parse_age(const char *s, int64_t *out, char *err, size_t errlen);

/* A size: N followed by nothing (bytes), K, M, G or T (powers of 1024; "KiB", "MB" alike),
 * N >= 1. */
int pp_history_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);

/* Parses the --history-max-bytes, --history-fine-age and --history-max-age texts of cfg into
 * its numbers (a fine age above the max age is refused). 0, or -1 with a message in err. */
struct pp_config;
int pp_history_parse_opts(struct pp_config *cfg, char *err, size_t errlen);

#endif
