/* --external-metadata, as gProfiler reads it: a JSON file {"static": {...}, "application":
 * {"<pid>": {...}}} kept up to date by another program. "static" becomes the header's
 * metadata.external_metadata; application[<pid>] is merged into that process's application
 * metadata (its keys win). The file is read at start (any problem is fatal there) and again at
 * every session. */
#ifndef PP_EXTMETA_H
#define PP_EXTMETA_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

#include "merge/profile.h"

/* A file not modified for this long is stale (gProfiler's limit). */
#define PP_EXTMETA_MAX_AGE 300

/* Reads the file at path. Returns a new object with "static" and "application" (both objects,
 * empty when absent), or NULL with a one-line message in err: missing or unreadable, not a
 * regular file, larger than 16 MiB, not JSON, not an object, "static"/"application" not
 * objects, or last modified more than PP_EXTMETA_MAX_AGE seconds before now (stale). */
json_t *pp_extmeta_load(const char *path, time_t now, char *err, size_t errlen);

/* Merges ext's application[<pid>] into the application metadata of each pid of prof (a copy:
 * metadata objects are shared between profiles). */
void pp_extmeta_apply(const json_t *ext, pp_profile *prof);

#endif
