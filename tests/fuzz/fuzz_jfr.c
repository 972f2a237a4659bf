/* libFuzzer target for the native JFR parser (pp_jfr_parse_buf): any bytes must give 0 or -1
 * with a message, never a crash, a hang or a huge allocation. Seeds: small real recordings. */
#include <stdint.h>
#include <stdlib.h>

#include "merge/profile.h"
#include "base/log.h"
#include "runtimes/java/jfr.h"
#include "tests/fuzz/fuzz_common.h"

static int keep_odd(void *arg, long tid)
{
    (void)arg;
    return tid & 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    pp_jfr_stats st;
    char err[256];
    /* the thread filters, per-thread stacks and every sample event on odd sizes, the defaults
     * otherwise */
    pp_jfr_opts o = {.keep_tid = keep_odd,
                     .keep_native_tid = keep_odd,
                     .per_thread = true,
                     .events = PP_JFR_EXECUTION | PP_JFR_NATIVE | PP_JFR_CPUTIME};
    int rc = pp_jfr_parse_buf(data, size, (size & 1) ? &o : NULL, prof, pp, &st, err, sizeof(err));
    if (rc < 0 && err[0] == '\0')
        abort(); /* an error always says what went wrong */
    if (pp_pid_total(pp) != st.samples)
        abort();
    pp_profile_free(prof);
    return 0;
}
