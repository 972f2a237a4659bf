/* Two collapsed profiles compared (`polyprof diff`): each side is a merged profile, a set of
 * distinct stacks (container, comm, frames) with counts, read from a .col text or filled stack
 * by stack (a history window); shares are normalised by each side's own total samples, and the
 * change of a frame is target share - base share (docs/decisions.md, "polyprof diff"). */
#ifndef PP_DIFF_H
#define PP_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The largest total of samples one side may hold: counts stay exact as the page's JavaScript
 * numbers (2^53). */
#define PP_DIFF_MAX_TOTAL (1ULL << 53)

/* A merged collapsed profile: distinct stacks "container;comm;frame;...;leaf" (root first, the
 * container empty when there is none) with summed counts, in first-seen order, and the header
 * line it came with (may be empty). */
typedef struct pp_stackset pp_stackset;

pp_stackset *pp_stackset_new(void);
void pp_stackset_free(pp_stackset *s);

/* Adds count samples of the stack "container;comm[;frame...]" s[0..len) (';' only between
 * fields). Names are made valid UTF-8 (U+FFFD) with control characters as '?'. 0; -1 on OOM; -2
 * when the total would pass PP_DIFF_MAX_TOTAL. A count of 0 adds nothing. */
int pp_stackset_add(pp_stackset *s, const char *stack, size_t len, uint64_t count);

/* Keeps json[0..len) (the header object's text, without "# ") as the profile's header. 0, or -1
 * on OOM. */
int pp_stackset_set_header(pp_stackset *s, const char *json, size_t len);

/* Reads the .col text col[0..len) into s: a "# {json}" header line, whose
 * application_metadata_enabled and profile_api_version say which prefix frames the lines carry
 * (the app-metadata index is dropped, the container kept, empty for v1), then
 * "<stack> <count>" lines; a text without a header line is plain collapsed text ("comm;frames
 * count" lines, --format collapsed-plain, flamegraph.pl's input). Names are cleaned as by
 * pp_stackset_add. Empty lines and count 0 are skipped. Returns 0; -1 on
 * OOM; -2 when the text is not such a profile (err says which line and why: a header that is not
 * a JSON object, a line without a count, an index that is not a number, a line without a comm,
 * a total above PP_DIFF_MAX_TOTAL). */
int pp_stackset_parse_col(pp_stackset *s, const char *col, size_t len, char *err, size_t errlen);

uint64_t pp_stackset_total(const pp_stackset *s);
size_t pp_stackset_size(const pp_stackset *s);
/* The i-th distinct stack (NUL-terminated, valid until s changes), its length and count. */
const char *pp_stackset_get(const pp_stackset *s, size_t i, size_t *len, uint64_t *count);
/* The header object's text ("" when none). */
const char *pp_stackset_header(const pp_stackset *s);

/* One function of the comparison: samples of the stacks that hold it (each stack counted once,
 * however often it recurses), on each side, and the change of its share. */
typedef struct pp_diff_row {
    const char *name;
    uint64_t base, target;
    double base_share, target_share; /* fractions of each side's total (0 when it is empty) */
    double delta;                    /* target_share - base_share */
} pp_diff_row;

/* The comparison by function name (inclusive): every frame below the comm, the container and
 * comm themselves left out. */
typedef struct pp_diff pp_diff;

/* NULL on OOM. The result keeps its own copy of the names: the sides may be freed after. */
pp_diff *pp_diff_compute(const pp_stackset *base, const pp_stackset *target);
void pp_diff_free(pp_diff *d);
uint64_t pp_diff_base_total(const pp_diff *d);
uint64_t pp_diff_target_total(const pp_diff *d);
/* The functions whose share grew (delta > 0), largest change first, or shrank (delta < 0),
 * largest fall first; ties by name. At most n rows; *count gets how many. */
const pp_diff_row *pp_diff_grew(const pp_diff *d, size_t n, size_t *count);
const pp_diff_row *pp_diff_shrank(const pp_diff *d, size_t n, size_t *count);

/* The two top-n tables as text (for a terminal: ASCII but for the names, which are UTF-8). */
void pp_diff_write_table(const pp_diff *d, size_t n, FILE *f);

/* The differential flame graph page (merge/html.h): shaped by the target, each frame coloured
 * by its change in share, with both sides' counts and the top-n tables. Returns malloc'd text
 * (*out_len set), or NULL on OOM. */
char *pp_diff_render_html(const pp_stackset *base, const pp_stackset *target, const pp_diff *d,
                          size_t n, size_t *out_len);

#endif
