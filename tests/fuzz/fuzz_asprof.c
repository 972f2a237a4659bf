/* libFuzzer target for the async-profiler collapsed-output parser (pp_asprof_parse_threads, with
 * thread root frames kept or dropped by the input's first byte): any bytes give added +
 * malformed lines, never a crash, and every added line counts. */
#include <stdint.h>
#include <stdlib.h>

#include "merge/profile.h"
#include "base/log.h"
#include "runtimes/java/asprof.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    size_t bad = 0;
    pp_asprof_parse_opts po = {.thread_frames = size && (data[0] & 1)};
    long added = pp_asprof_parse_threads((const char *)data, size, prof, pp, &po, &bad);
    if (added < 0 || (added > 0 && pp_pid_nstacks(pp) == 0))
        abort();
    pp_profile_free(prof);
    return 0;
}
