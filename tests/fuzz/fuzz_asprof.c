/* libFuzzer target for the async-profiler collapsed-output parser (pp_asprof_parse_collapsed):
 * any bytes give added + malformed lines, never a crash, and every added line counts. */
#include <stdint.h>
#include <stdlib.h>

#include "merge/profile.h"
#include "base/log.h"
#include "runtimes/java/asprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        pp_log_set_stderr_level(PP_LOG_CRITICAL);
        quiet = 1;
    }
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    size_t bad = 0;
    long added = pp_asprof_parse_collapsed((const char *)data, size, prof, pp, &bad);
    if (added < 0 || (added > 0 && pp_pid_nstacks(pp) == 0))
        abort();
    pp_profile_free(prof);
    return 0;
}
