/* A profile as a self-contained HTML flame graph page: the page of
 * resources/flamegraph/flamegraph.html (compiled in) with the .col's header and stacks embedded
 * as JSON. The page needs nothing but itself (no network): search, click-to-zoom, colours by
 * runtime from the frame suffix, counts and percentages on hover, the header's metadata. */
#ifndef PP_HTML_H
#define PP_HTML_H

#include <stddef.h>

#include "merge/collapsed.h"

/* Renders the .col text col[0..len) (a "# {json}" header line, then "<stack> <count>" lines) as
 * HTML. o says which prefix frames the lines carry (the app-metadata index unless v1 or
 * !app_metadata_enabled, the container unless v1): they are dropped, as gProfiler's flame graph
 * does; the process (comm) is the first level under "all". Every string is embedded as ASCII
 * JSON with '<', '>' and '&' escaped (\u003c...), so no frame can end the script element that
 * holds it, and invalid UTF-8 becomes U+FFFD. Returns malloc'd text (*out_len set), or NULL on
 * OOM. */
char *pp_html_render(const char *col, size_t len, const pp_render_opts *o, size_t *out_len);

/* One profile of a page: .col text and the number of prefix frames its lines carry (dropped). */
typedef struct pp_html_profile {
    const char *col;
    size_t len;
    size_t skip;
} pp_html_profile;

/* The differential page (merge/diff.h): the flame graph of target, each frame coloured by its
 * change in share against base (red grew, blue shrank), with both profiles' counts on hover
 * and the tables of diff_json (JSON text dumped with JSON_ENSURE_ASCII: {"top", "base_total",
 * "target_total", "grew": [[name, base, target]...], "shrank": [...]}). Escaped as
 * pp_html_render's data. Returns malloc'd text (*out_len set), or NULL on OOM. */
char *pp_html_render_diff(const pp_html_profile *base, const pp_html_profile *target,
                          const char *diff_json, size_t *out_len);

#endif
