/* The start-up line that names the runtime profilers a run uses, with their modes and the
 * backend each mode picks now (when its name differs from the mode's):
 *
 *   runtime profilers: java (auto: jfr), python (auto: builtin); without a profiler (system
 *   sampler frames only): ruby (auto); disabled: php, dotnet, nodejs
 *
 * Runtimes without a mode option (Go) are not listed: the system sampler always profiles them. */
#ifndef PP_RUNTIME_MODES_H
#define PP_RUNTIME_MODES_H

#include <stdbool.h>
#include <stddef.h>

#include "orchestrator/cli.h"
#include "runtimes/registry.h"

/* The line without its log prefix (for the tests). profiled[k]: kind k has a runtime profiler
 * in this run (its mode is not disabled and it has backends). */
void pp_runtime_modes_format(const pp_config *cfg, const bool profiled[PP_KIND_COUNT], char *out,
                             size_t len);
/* Logs the line at INFO. */
void pp_log_runtime_modes(const pp_config *cfg, const bool profiled[PP_KIND_COUNT]);

#endif
