/* The --format files written beside each session's .col: the pprof export
 * (profile_<time>.pb.gz, link last_profile.pb.gz) and plain collapsed stacks
 * (profile_<time>.folded, link last_profile.folded). */
#ifndef PP_EXPORTS_H
#define PP_EXPORTS_H

#include <time.h>

#include "merge/collapsed.h"
#include "merge/profile.h"
#include "orchestrator/cli.h"

/* Writes the formats cfg asks for, beside the .col at col_path, from the profile the .col was
 * rendered from (start/end: the session's, ro: the .col's options). A failure is logged and
 * returns -1; the .col is already written. */
int pp_write_exports(const pp_config *cfg, const pp_profile *prof, const char *col_path,
                     time_t start, time_t end, const pp_render_opts *ro);

#endif
