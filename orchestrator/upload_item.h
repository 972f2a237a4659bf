/* One pending upload as the backends see it, and how it is stored in a spool entry's meta. */
#ifndef PP_UPLOAD_ITEM_H
#define PP_UPLOAD_ITEM_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

typedef struct pp_upload_item {
    time_t start, end;       /* session window, UTC */
    time_t spawn;            /* polyprof's start time */
    double cpu_avg, mem_avg; /* NaN: null */
    int frequency;           /* Hz */
    const char *text;        /* the whole .col text */
    size_t len;
    const char *id; /* spool entry name (stable across retries), or NULL */
} pp_upload_item;

/* What a backend did with one item. */
typedef enum {
    PP_SEND_OK = 0,  /* delivered: remove from the spool */
    PP_SEND_RETRY,   /* transient failure: keep, retry later with backoff */
    PP_SEND_DROP,    /* permanent failure (already logged): remove from the spool */
    PP_SEND_ABORTED, /* polyprof is stopping: keep */
} pp_send_result;

/* Spool meta object for it (new reference). */
json_t *pp_upload_item_meta(const pp_upload_item *it);
/* Fills *it from a spool meta object (text/len untouched). Returns 0, or -1 if malformed. */
int pp_upload_item_from_meta(const json_t *meta, pp_upload_item *it);

#endif
