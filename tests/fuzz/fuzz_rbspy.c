/* libFuzzer target for the rbspy collapsed output parser (runtimes/ruby/rbspy.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "merge/profile.h"
#include "runtimes/ruby/rbspy.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 1, true);
    pp_rbspy_parse(s, p, pp);
    pp_profile_free(p);
    free(s);
    return 0;
}
