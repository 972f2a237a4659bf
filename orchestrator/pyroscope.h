/* Grafana Pyroscope client: POST {server}/ingest in folded format.
 * The folded format carries no per-line labels, so each
 * session is sent as one request per (comm, container) group, labelled with hostname, comm,
 * container and runtime. */
#ifndef PP_PYROSCOPE_H
#define PP_PYROSCOPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "orchestrator/cli.h"
#include "orchestrator/upload_item.h"

/* Pyroscope's folded parser stops (silently) at a line over 64 KiB: longer stacks are cut. */
#define PP_PYRO_MAX_LINE 60000

typedef struct pp_pyroscope pp_pyroscope;

/* Reads --pyroscope-basic-auth-file. NULL with a message in err when it cannot be used. */
pp_pyroscope *pp_pyroscope_new(const pp_config *cfg, const atomic_int *abort, char *err,
                               size_t errlen);
void pp_pyroscope_free(pp_pyroscope *p);

/* Sends every group of one session; logs the outcome. A group refused with a 4xx is dropped
 * (logged); when a group must be retried, the groups already accepted are not sent again on the
 * next attempt with the same it->id. */
pp_send_result pp_pyroscope_send(pp_pyroscope *p, const pp_upload_item *it);

/* ---- building (exposed for the unit tests) ---- */

typedef struct pp_pyro_group {
    char *comm, *container; /* container "" when none */
    const char *runtime;    /* a runtime's label (runtimes/runtime.h), or "native" */
    char *body;             /* folded lines "comm;...;leaf N\n" in .col order */
    size_t len;
    unsigned long long samples;
    unsigned long long rt_samples[PP_KIND_COUNT]; /* per kind (runtimes/registry.h) */
} pp_pyro_group;

/* Splits a .col text into groups, in order of first appearance. The header line decides which
 * prefix frames to strip (application_metadata_enabled, run_arguments.profile_api_version).
 * Returns the number of groups (*out malloc'd), or 0 (then *out is NULL). */
size_t pp_pyroscope_groups(const char *col, size_t len, pp_pyro_group **out);
void pp_pyroscope_groups_free(pp_pyro_group *g, size_t n);

/* Runtime label of one folded stack: that of the first frame carrying a runtime's frame suffix
 * or prefix (the runtimes' descriptors), or "native". */
const char *pp_pyroscope_runtime(const char *stack, size_t len);

/* The application name: the service name with characters outside [A-Za-z0-9_./-] replaced by
 * '_' ("polyprof" when empty), plus ".cpu". malloc'd. */
char *pp_pyroscope_app_name(const char *service);
/* A label value safe for Pyroscope's name{k=v} syntax (no ',', '{', '}', '=', '"', control
 * characters; trimmed; at most 256 bytes). malloc'd; "" when nothing is left. */
char *pp_pyroscope_label_value(const char *v, size_t len);
/* The full /ingest URL for one group. malloc'd. */
char *pp_pyroscope_url(const char *server, const char *app, const char *hostname,
                       const pp_pyro_group *g, time_t from, time_t until, int rate);

#endif
