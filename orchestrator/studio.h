/* Performance Studio client, as gProfiler's ProfilerAPIClient:
 * the start-up health check, POST /api/v2/profiles with the gzipped JSON body, the gpid carried
 * from one reply to the next upload, and upload-file's header merge. */
#ifndef PP_STUDIO_H
#define PP_STUDIO_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "orchestrator/cli.h"
#include "orchestrator/upload_item.h"

/* Performance Studio's default limit on the gzipped body (CONFIG_MAX_CONTENT_LEN). */
#define PP_STUDIO_MAX_BODY (4u << 20)

typedef struct pp_studio pp_studio;

/* abort: raised by the uploader when polyprof stops (may be NULL). NULL on OOM. */
pp_studio *pp_studio_new(const pp_config *cfg, const atomic_int *abort);
void pp_studio_free(pp_studio *s);

/* GET /api/v1/health_check. Returns 0, or -1 with gProfiler's message in err ("Server error:
 * ..." for a 4xx, "Failed to connect to server. ..." otherwise). */
int pp_studio_health_check(pp_studio *s, char *err, size_t errlen);

/* One upload attempt; logs the outcome (never the token). */
pp_send_result pp_studio_send(pp_studio *s, const pp_upload_item *it);

/* ---- request building (exposed for the unit tests) ---- */

/* server.rstrip("/") + "/api/" + version + path + "?key=..&service=..&hostname=..&timestamp=.."
 * (+ "&version=<agent version>" when with_version). malloc'd. */
char *pp_studio_url(const char *server, const char *version, const char *path, const char *token,
                    const char *service, const char *hostname, time_t now, bool with_version);
/* The JSON body {start_time, end_time, hostname, profile, cpu_avg, mem_avg, spawn_time, gpid}
 * (uncompressed, UTF-8: invalid bytes of the profile become U+FFFD). gpid: "" or what the last
 * reply returned. malloc'd, NUL-terminated. */
char *pp_studio_body(const pp_upload_item *it, const char *hostname, const json_t *gpid,
                     size_t *len);
/* gzip (RFC 1952) of data at level. malloc'd, NULL on failure. */
unsigned char *pp_gzip(const void *data, size_t len, int level, size_t *outlen);

/* upload-file: the file's "# {json}" header deep-merged on top of fresh_md (the file's keys
 * win), "run_arguments.func" removed, stack lines right-stripped, joined by "\n". *start and
 * *end are set from top-level "start_time"/"end_time" when both are present (else left
 * alone). Returns malloc'd text, or NULL with a message in err. */
char *pp_studio_merge_file(const char *text, size_t len, const json_t *fresh_md, time_t *start,
                           time_t *end, size_t *outlen, char *err, size_t errlen);

#endif
