#include "merge/header.h"

#include <stdio.h>

void pp_iso_time(time_t t, char *buf, size_t len)
{
    struct tm tm;
    /* gmtime_r fails for a year past INT_MAX; strftime of a year past 9999 is not ISO 8601:
     * both show as the epoch, never as an uninitialised struct tm */
    if (!gmtime_r(&t, &tm) || tm.tm_year > 9999 - 1900 || tm.tm_year < 1 - 1900)
        t = 0, gmtime_r(&t, &tm);
    if (len && !strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))
        buf[0] = '\0';
}

json_t *pp_header_build(const pp_header_info *h)
{
    json_t *o = json_object();
    json_t *md = h->metadata ? json_deep_copy(h->metadata) : json_object();
    char now[32];
    pp_iso_time(h->current_time, now, sizeof(now));
    if (h->external_metadata)
        json_object_set_new(md, "external_metadata", json_deep_copy(h->external_metadata));
    json_object_set_new(md, "current_time", json_string(now));
    json_object_set_new(md, "profiling_mode", json_string(h->profiling_mode));
    json_object_set_new(md, "sampling_event", json_string("cpu-time"));
    json_object_set_new(md, "sampling_mode", json_string("frequency"));
    json_object_set_new(md, "sampling_frequency", json_integer(h->frequency));

    json_object_set_new(o, "containers", json_array());
    json_object_set_new(o, "container_names_enabled", json_boolean(h->container_names_enabled));
    json_object_set_new(o, "metadata", md);
    json_object_set_new(o, "metrics",
                        h->metrics_enabled
                            ? json_pack("{s:f,s:f}", "cpu_avg", h->cpu_avg, "mem_avg", h->mem_avg)
                            : json_pack("{s:n,s:n}", "cpu_avg", "mem_avg"));
    json_object_set_new(o, "application_metadata", json_array());
    json_object_set_new(o, "application_metadata_enabled", json_boolean(h->app_metadata_enabled));
    json_object_set_new(o, "profiling_mode", json_string(h->profiling_mode));
    json_object_set_new(o, "hwmetrics", json_null());
    json_object_set_new(o, "htmlblob", json_null());
    json_object_set_new(o, "flamegraph_html", json_null());
    json_object_set_new(o, "sampling_event", json_string("cpu-time"));
    json_object_set_new(o, "sampling_mode", json_string("frequency"));
    json_object_set_new(o, "sampling_frequency", json_integer(h->frequency));
    if (h->polyprof)
        json_object_set_new(o, "polyprof", json_deep_copy(h->polyprof));
    return o;
}
