/* Host and run metadata for the profile header's "metadata" object, in gProfiler's key order,
 * collected once at start-up. Cloud provider comes
 * from DMI only (no network calls). */
#ifndef PP_HOSTINFO_H
#define PP_HOSTINFO_H

#include <jansson.h>
#include <time.h>

#include "orchestrator/cli.h"

/* New reference. spawn_time: polyprof's start time. With --disable-metadata-collection the
 * object only holds "hostname". */
json_t *pp_host_metadata(const pp_config *cfg, time_t spawn_time);

/* Whole-host CPU and memory use, for the header's "metrics". */
typedef struct pp_host_metrics {
    unsigned long long cpu_total, cpu_idle; /* /proc/stat jiffies at the window start */
    double mem_sum;
    unsigned mem_samples;
} pp_host_metrics;

void pp_metrics_begin(pp_host_metrics *m);
/* Adds one memory-use sample (call every few seconds). */
void pp_metrics_poll(pp_host_metrics *m);
/* CPU % since pp_metrics_begin and mean memory %, then restarts the window. */
void pp_metrics_end(pp_host_metrics *m, double *cpu_avg, double *mem_avg);

#endif
