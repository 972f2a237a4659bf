/* libFuzzer target for the py-spy raw output parser and the py-spy frame rewriter (package
 * annotations, with the host root: real site-packages lookups on whatever the paths name). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge/profile.h"
#include "base/log.h"
#include "runtimes/python/pkgversions.h"
#include "runtimes/python/python_int.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    char out[512];
    pp_pkgver_rewrite_frame("/", s, "3.11.2", out, sizeof(out));
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 1, true);
    pp_pyspy_parse(s, p, pp, size % 2 ? "/" : NULL, "3.11.2");
    pp_profile_free(p);
    free(s);
    return 0;
}
