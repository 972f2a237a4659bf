/* The gProfiler collapsed format (.col): a "# {json}" header line, then one line per stack:
 * "<app index>;<container>;<comm>[;appid: <id>];<frame>;...;<leaf> <count>", root first,
 * no trailing newline. */
#ifndef PP_COLLAPSED_H
#define PP_COLLAPSED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "merge/profile.h"

typedef struct pp_render_opts {
    bool v1;                   /* --profile-api-version v1: no index and container frames */
    bool app_metadata_enabled; /* emit the app-metadata index frame */
    bool appids_enabled;       /* emit "appid: ..." frames */
    bool plain;                /* plain collapsed text for flamegraph.pl, inferno and speedscope
                                  (--format collapsed-plain): no header line (header may be NULL), no index
                                  or container frames (comm is the root), every line ends with a newline */
} pp_render_opts;

/* Renders the whole .col text. header is the top-level header object; its
 * "application_metadata" (index 0 null, then each pid's metadata, deduplicated by equality) and
 * "containers" (distinct non-empty container names) values are set from the profile, keeping
 * their position. Pids are written in profile order, stacks in first-seen order; stacks with
 * count 0 are skipped. No two lines share a stack: stacks that render alike (several pids with
 * the same comm, container, metadata and appid, or frames made alike by escaping) are written
 * once, where the first of them appeared, with the sum of their counts. Returns malloc'd text (len
 * set), or NULL on OOM. */
char *pp_col_render(const pp_profile *p, json_t *header, const pp_render_opts *o, size_t *len);

/* Serializes a header object as gProfiler does (Python json.dumps defaults: ", " and ": "
 * separators, ASCII only, insertion order). Returns malloc'd text. */
char *pp_header_dump(const json_t *header);

/* Parses one stack line "a;b;c <count>" (count = last space-separated token, >= 0). On success
 * sets *stack_len to the length of the part before the last space and *count, returns 0;
 * returns -1 if the line has no valid count. */
int pp_col_split_count(const char *line, size_t len, size_t *stack_len, unsigned long long *count);

/* What a .col's header line says of the prefix frames its stack lines carry. */
typedef struct pp_col_prefix {
    bool header;    /* the text starts with a '#' line */
    bool parsed;    /* that line is "# " or "#" and a JSON object */
    bool app_idx;   /* lines start with the app-metadata index (application_metadata_enabled,
                       v2 only) */
    bool container; /* then the container (v2: not run_arguments.profile_api_version "v1") */
    size_t body;    /* offset of the first stack line */
} pp_col_prefix;

/* Reads the header line of the .col text col[0..len). Without a header line, or with one that
 * does not parse, app_idx and container are true (gProfiler's default). */
void pp_col_prefix_read(const char *col, size_t len, pp_col_prefix *out);

#endif
