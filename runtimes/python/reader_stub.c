/* TEMPORARY: weak stand-ins for the CPython reader (branch pyreader) until it is merged. */
#include <stdio.h>

#include "runtimes/python/cpython.h"

__attribute__((weak)) pp_py_proc *pp_py_open(int pid, pp_py_open_status *status, char *err,
                                             size_t errlen)
{
    (void)pid;
    *status = PP_PY_UNSUPPORTED;
    snprintf(err, errlen, "unsupported Python (reader not built)");
    return NULL;
}
__attribute__((weak)) void pp_py_close(pp_py_proc *p)
{
    (void)p;
}
__attribute__((weak)) const char *pp_py_version(const pp_py_proc *p)
{
    (void)p;
    return "";
}
__attribute__((weak)) int pp_py_sample(pp_py_proc *p, pp_py_stack_cb cb, void *arg, char *err,
                                       size_t errlen)
{
    (void)p, (void)cb, (void)arg, (void)err, (void)errlen;
    return -1;
}
