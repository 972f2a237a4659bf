/* Uploaders: Performance Studio (gProfiler's protocol) and Pyroscope. The session loop hands
 * each session's finished .col text to pp_uploader_submit; uploads run in the background, a
 * failed upload is retried and spooled on disk, never lost and never blocking sampling. */
#ifndef PP_UPLOAD_H
#define PP_UPLOAD_H

#include <stddef.h>
#include <time.h>

#include "orchestrator/cli.h"

typedef struct pp_uploader pp_uploader;

/* One finished session. */
typedef struct pp_session_result {
    const char *col_text; /* the whole .col text, header line first */
    size_t len;
    time_t start, end;       /* session window, UTC */
    double cpu_avg, mem_avg; /* NaN when metrics are disabled */
    int frequency;           /* sampling frequency (Pyroscope sampleRate) */
} pp_session_result;

/* Creates the uploaders cfg asks for (-u: Performance Studio; --pyroscope-server: Pyroscope).
 * *out is NULL when none is configured. Runs start-up checks (Performance Studio health check);
 * returns 0, or -1 with a message in err when polyprof must exit 1. */
int pp_uploader_start(const pp_config *cfg, pp_uploader **out, char *err, size_t errlen);
/* Queues one session for upload; returns at once. */
void pp_uploader_submit(pp_uploader *u, const pp_session_result *r);
/* The uploads' state for the session summary: per backend "<name> N sent, M waiting" (waiting:
 * queued or in the spool, not yet accepted), ", K dropped" when the server refused some, and
 * " (failing)" when the last attempt must be retried; "off" when u is NULL. */
void pp_uploader_status(pp_uploader *u, char *out, size_t len);
/* A stop signal arrived: the stop window (5 s, POLYPROF_UPLOAD_STOP_MS) starts now, and
 * pp_uploader_stop ends it then instead of starting its own, so the whole stop stays within the
 * window however long the session took to wind down. Uploads go on meanwhile. */
void pp_uploader_stop_window(pp_uploader *u);
/* Stops the background work: uploads go on until the stop window ends (started here unless
 * pp_uploader_stop_window started it), then the upload in flight is aborted at once; whatever
 * is not sent stays in the spool for the next run. */
void pp_uploader_stop(pp_uploader *u);

/* Largest file upload-file reads (a larger one is refused with exit code 2). */
#define PP_UPLOAD_MAX_FILE (256u << 20)

/* `polyprof upload-file --file-path X`: uploads an existing .col. Returns the exit code (2 when
 * X is not a regular file or is too large). */
int pp_upload_file(const pp_config *cfg);

#endif
