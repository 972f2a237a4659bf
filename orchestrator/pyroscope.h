/* Grafana Pyroscope client: POST {server}/ingest in folded format, one request per session.
 * The folded format carries no per-line labels: the process name (comm) is the root frame of
 * every stack (under the container's name for processes in a container), and the request's
 * labels are those that hold for the whole session (docs/uploads.md): hostname; comm and
 * container only when every stack has the same one. */
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

/* Sends one session in one request; logs the outcome. A request refused with a 4xx is dropped
 * (PP_SEND_DROP, logged); a 5xx or a network error is retried (PP_SEND_RETRY). */
pp_send_result pp_pyroscope_send(pp_pyroscope *p, const pp_upload_item *it);

/* ---- building (exposed for the unit tests) ---- */

/* One session's request body and the labels that hold for all of it. */
typedef struct pp_pyro_body {
    char *text; /* folded lines "[container;]comm;...;leaf N\n", distinct, in .col order; NULL
                 * when the session has no stacks */
    size_t len, lines;
    unsigned long long samples;
    char *comm;      /* the comm of every stack when they all have the same one, else NULL */
    char *container; /* the container of every stack when they are all in the same one, else
                      * NULL (also when none is in a container) */
} pp_pyro_body;

/* Builds the body from a .col text. The header line decides which prefix frames to strip
 * (application_metadata_enabled, run_arguments.profile_api_version): the app index always; the
 * container frame stays as the root frame of the stacks of processes in a container, and is
 * dropped when empty. Stacks that are equal once stripped are summed. The body is UTF-8: invalid
 * bytes of col become U+FFFD. Returns 0, or -1 when out of memory (then *b is empty). */
int pp_pyroscope_body(const char *col, size_t len, pp_pyro_body *b);
void pp_pyroscope_body_free(pp_pyro_body *b);

/* The application name: the service name with characters outside [A-Za-z0-9_./-] replaced by
 * '_' ("polyprof" when empty), plus ".cpu". malloc'd. */
char *pp_pyroscope_app_name(const char *service);
/* A label value safe for Pyroscope's name{k=v} syntax (no ',', '{', '}', '=', '"', control
 * characters; trimmed; at most 256 bytes, never cut inside a character). malloc'd; "" when
 * nothing is left. */
char *pp_pyroscope_label_value(const char *v, size_t len);
/* The full /ingest URL for one session: labels hostname, and comm and container when b has
 * them. malloc'd. */
char *pp_pyroscope_url(const char *server, const char *app, const char *hostname,
                       const pp_pyro_body *b, time_t from, time_t until, int rate);

#endif
