/* Reading CPython 3.8-3.13 interpreter state from outside the process: the built-in Python
 * sampler's memory reader. Reads with process_vm_readv (falling back to /proc/<pid>/mem); never
 * stops, ptraces or writes to the target. Every pointer read from the target is validated and
 * every loop is bounded: a target that exits or changes underneath gives an error return or a
 * partial stack, never a crash or garbage frames.
 *
 * Not thread-safe per handle: one thread samples a given pp_py_proc at a time (different
 * handles may be used from different threads). */
#ifndef PP_CPYTHON_H
#define PP_CPYTHON_H

#include <stdbool.h>
#include <stddef.h>

#define PP_PY_MAX_DEPTH 256 /* deeper stacks are cut at the root end and marked truncated */

typedef struct pp_py_proc pp_py_proc;

typedef enum pp_py_open_status {
    PP_PY_OK = 0,
    PP_PY_UNSUPPORTED, /* a Python outside 3.8-3.13 (or a build polyprof cannot read) */
    PP_PY_NOT_PYTHON,  /* no interpreter found (no _PyRuntime in any mapped module) */
    PP_PY_GONE,        /* the process exited */
    PP_PY_ERROR,       /* anything else (permission, unreadable memory, ...) */
} pp_py_open_status;

/* Opens pid: finds the python binary or libpython mapped in it (opened inside /proc/<pid>/root
 * for containers, inroot.h), _PyRuntime and the exact version (Py_Version on 3.11+, else the
 * version string), and selects the layout (3.13: from _Py_DebugOffsets). On failure returns NULL,
 * sets *status and writes a one-line reason into err, e.g. "unsupported Python 3.7"
 * (PP_PY_UNSUPPORTED). */
pp_py_proc *pp_py_open(int pid, pp_py_open_status *status, char *err, size_t errlen);
void pp_py_close(pp_py_proc *p);

/* "3.11.7". */
const char *pp_py_version(const pp_py_proc *p);

typedef struct pp_py_frame {
    const char *name; /* co_qualname on 3.11+, else co_name */
    const char *file; /* co_filename as the interpreter has it */
    int line;         /* line being executed (decoded from the line table), 0 if unknown */
} pp_py_frame;

/* One thread's stack: frames[0] is the ROOT (outermost call), frames[n-1] the leaf. The
 * strings live in the handle's cache (valid until pp_py_close) and may be shared between
 * frames and samples. truncated: the walk hit PP_PY_MAX_DEPTH or a read failed mid-stack (the
 * frames given are the valid leaf-side part). Threads without a Python frame are not reported. */
typedef struct pp_py_stack {
    long tid; /* native thread id (kernel tid) */
    bool truncated;
    bool holds_gil; /* this thread holds the GIL right now (best effort; false if unknown) */
    size_t n;
    const pp_py_frame *frames;
} pp_py_stack;

/* Called for each thread with Python frames, of every interpreter (sub-interpreters
 * included). Return non-zero to stop the walk early. */
typedef int (*pp_py_stack_cb)(void *arg, const pp_py_stack *stack);

/* Samples every thread's Python stack once. Returns the number of threads reported, or -1 when
 * the process is gone or its interpreter state cannot be read (err says why). */
int pp_py_sample(pp_py_proc *p, pp_py_stack_cb cb, void *arg, char *err, size_t errlen);

/* Whether to read the stack of the thread whose native thread id (kernel tid in the process's
 * own pid namespace; 0 when unknown) is tid. */
typedef bool (*pp_py_tid_filter)(void *arg, long tid);
/* pp_py_sample reading only the stacks of the threads want accepts: any other thread costs one
 * read of its thread state (on 3.8-3.10 also of its tid in glibc's struct pthread, cached). */
int pp_py_sample_threads(pp_py_proc *p, pp_py_tid_filter want, void *want_arg, pp_py_stack_cb cb,
                         void *arg, char *err, size_t errlen);

/* true once a read found the process gone (its memory went away: exiting or exited, even while
 * /proc still shows it running). */
bool pp_py_exited(const pp_py_proc *p);

/* Cache statistics (code objects cached, hits, misses), for benchmarks and debug logs. */
typedef struct pp_py_stats {
    size_t code_cached;
    unsigned long long code_hits, code_misses, reads, read_bytes;
} pp_py_stats;
void pp_py_get_stats(const pp_py_proc *p, pp_py_stats *st);

#endif
