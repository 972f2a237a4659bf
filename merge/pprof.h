/* The pprof export (--format pprof): a profile as a gzip-compressed profile.proto
 * (github.com/google/pprof, proto/profile.proto; our subset in merge/pprof.proto), readable by
 * `go tool pprof`, Pyroscope, Parca and speedscope. Sample types "samples/count" then
 * "cpu/nanoseconds" (count x the sampling period), period type cpu/nanoseconds. One sample per
 * (process, distinct stack), in profile order; one function per distinct frame name (the frame
 * text as in the .col, runtime suffix such as _[k] or _[j] kept) and one location per (frame,
 * mapping): a native frame whose file the profile knows (pp_profile_frame_mapping: the file as
 * mapped and its build-id; the kernel's frames [kernel.kallsyms]) is in that file's Mapping
 * (has_functions set, no addresses), other frames (a runtime's, JIT code, unmapped addresses)
 * have none; labels pid (number), comm, container (when in one), runtime (when a runtime's
 * own profiler produced the process's stacks; none for the system sampler's stacks, in-sampler
 * walkers' included, whose frame suffixes name the runtime) and appid (when identified and
 * enabled). Strings are made valid UTF-8. */
#ifndef PP_PPROF_H
#define PP_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge/profile.h"

typedef struct pp_pprof_opts {
    int frequency;          /* sampling frequency (Hz, >= 1): the period is 1e9 / frequency ns */
    int64_t time_nanos;     /* session start, ns since the epoch */
    int64_t duration_nanos; /* session length */
    bool appids_enabled;    /* the appid label */
} pp_pprof_opts;

/* The gzip-compressed profile.proto of p (stacks with count 0 left out). Returns malloc'd bytes
 * (*len set), or NULL on OOM. */
unsigned char *pp_pprof_render(const pp_profile *p, const pp_pprof_opts *o, size_t *len);

#endif
