/* The profile header object, keys in gProfiler's order, plus polyprof's own counters under
 * "polyprof". */
#ifndef PP_HEADER_H
#define PP_HEADER_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

typedef struct pp_header_info {
    const json_t *metadata; /* static metadata object (copied); per-session keys added */
    bool metrics_enabled;
    double cpu_avg, mem_avg; /* percent, used when metrics_enabled */
    bool container_names_enabled;
    bool app_metadata_enabled;
    const char *profiling_mode; /* "cpu" */
    int frequency;
    time_t current_time;    /* session end, UTC */
    const json_t *polyprof; /* polyprof's counters (copied), or NULL */
    /* metadata.external_metadata for this session (copied), or NULL to keep the metadata's */
    const json_t *external_metadata;
} pp_header_info;

/* New reference; "containers" and "application_metadata" are placeholders that
 * pp_col_render fills. */
json_t *pp_header_build(const pp_header_info *h);

/* "YYYY-MM-DDTHH:MM:SS" in UTC (gProfiler's time format, no microseconds or zone); a time
 * outside the years 1 to 9999 shows as the epoch. */
void pp_iso_time(time_t t, char *buf, size_t len);

#endif
