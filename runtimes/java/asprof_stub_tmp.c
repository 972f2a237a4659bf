/* TEMPORARY weak stand-ins for the async-profiler launcher until the jfr branch's asprof.c is
 * merged. Deleted before the final commit. */
#include <stdio.h>

#include "runtimes/java/asprof.h"

__attribute__((weak)) int pp_asprof_find(char *out, size_t len)
{
    (void)out;
    (void)len;
    return -1;
}

__attribute__((weak)) pp_asprof_session *pp_asprof_start(const char *asprof, int pid,
                                                         const pp_runtime_ctx *ctx, double deadline,
                                                         char *err, size_t errlen)
{
    (void)asprof;
    (void)pid;
    (void)ctx;
    (void)deadline;
    snprintf(err, errlen, "async-profiler support is not built in");
    return NULL;
}

__attribute__((weak)) int pp_asprof_collect(pp_asprof_session *s, pp_profile *prof,
                                            pp_pid_profile *pp, char *err, size_t errlen)
{
    (void)s;
    (void)prof;
    (void)pp;
    snprintf(err, errlen, "async-profiler support is not built in");
    return -1;
}

__attribute__((weak)) void pp_asprof_free(pp_asprof_session *s)
{
    (void)s;
}
