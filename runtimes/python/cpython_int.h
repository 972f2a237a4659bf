/* Private pieces of the CPython reader: per-version layouts (cpython_layout.c), the code object
 * cache and line-table decoders (cpython_code.c), and the handle itself. Exposed for the unit
 * tests, the fuzz target and the benchmark; not part of the API (see cpython.h). */
#ifndef PP_CPYTHON_INT_H
#define PP_CPYTHON_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtimes/python/cpython.h"
#include "base/hashtab.h"
#include "base/remote_mem.h"

#define PP_PY_MAX_THREADS 4096
#define PP_PY_MAX_INTERPS 64
#define PP_PY_STR_MAX 1024            /* code-unit bound of a name / file name */
#define PP_PY_LINETABLE_MAX (1 << 20) /* larger line tables are not read (line 0) */
#define PP_PY_CODE_CACHE 4096         /* code objects cached; the cache is cleared when full */
#define PP_PY_STRINGS_MAX (32u << 20) /* interned names beyond this: "<too many names>" */

typedef enum pp_py_lines {
    PP_PY_LNOTAB,    /* 3.8/3.9 co_lnotab */
    PP_PY_LINES310,  /* 3.10 co_linetable */
    PP_PY_LOCATIONS, /* 3.11+ location table */
} pp_py_lines;

/* Byte offsets of the fields read, for one minor version (x86_64, release build with GIL). A
 * 0 offset for an optional field means "absent in this version". */
typedef struct pp_py_layout {
    int minor;
    /* _PyRuntime */
    uint32_t rt_interp_head, rt_gil_tstate; /* gilstate.tstate_current (3.8-3.11) */
    /* PyInterpreterState */
    uint32_t is_next, is_threads_head;
    uint32_t is_gil_ptr;             /* ceval.gil pointer (3.12+) */
    uint32_t gil_locked, gil_holder; /* inside _gil_runtime_state */
    /* PyThreadState */
    uint32_t ts_next, ts_interp, ts_frame; /* frame / cframe / current_frame */
    int32_t cframe_current;               /* >= 0: ts_frame is a _PyCFrame*, frame at this offset */
    uint32_t ts_thread_id, ts_native_tid; /* pthread_t; kernel tid (3.11+) */
    /* frames */
    bool frame_object; /* 3.8-3.10 PyFrameObject (f_lasti int), else interpreter frame */
    uint32_t fr_back, fr_code,
        fr_ip;         /* f_back/previous, f_code/f_executable, f_lasti/prev_instr/instr_ptr */
    uint32_t fr_owner; /* 3.11+ */
    uint32_t fr_size;  /* bytes to read to cover the fields above */
    bool ip_is_next;   /* 3.13 instr_ptr: current or next instruction */
    /* PyCodeObject */
    uint32_t co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_code_adaptive;
    /* strings */
    uint32_t u_length, u_state, u_ascii_data, u_compact_data;
    uint32_t bytes_size, bytes_data;
    pp_py_lines lines;
    /* Filled at open from the module's symbols (+ load bias); 0 = not checked. Objects whose
     * ob_type differs are rejected. */
    uint64_t code_type, unicode_type, bytes_type;
    /* The interpreter's own code object that shim frames run (3.13: _Py_InitCleanup, pushed
     * under a Python __init__ called through a specialised class call), from .symtab; 0 when
     * unknown (stripped libpython: pp_py_code.internal still tells it). */
    uint64_t shim_code;
} pp_py_layout;

/* Fixed table for 3.8-3.12 (NULL for other minors). */
const pp_py_layout *pp_py_layout_for(int minor);
/* 3.13+: fills out from the _Py_DebugOffsets block at the start of _PyRuntime (buf, len bytes
 * read from the target). Returns 0, or -1 with a reason in err (bad cookie, free-threaded,
 * implausible offsets). */
int pp_py_layout_from_debug(const uint8_t *buf, size_t len, pp_py_layout *out, char *err,
                            size_t errlen);
#define PP_PY_DEBUG_OFFSETS_SIZE 584

/* ---- code objects (cpython_code.c) ---- */

typedef struct pp_py_code {
    uint64_t addr;     /* code object address */
    uint64_t check[4]; /* filename, name, qualname/linetable pointers: validated on hits */
    int firstlineno;
    const char *name, *file; /* interned in the cache's string table (live until close) */
    bool internal;           /* the interpreter's own code (a shim frame's), not a program's: frames
                                running it are not reported */
    uint8_t *table;          /* line table copy */
    size_t table_len;
    int last_idx, last_line;        /* memo of the last lookup */
    unsigned long long checked_gen; /* sample generation (pp_rmem.gen) it was last validated in */
} pp_py_code;

typedef struct pp_strtab pp_strtab;

typedef struct pp_py_code_cache {
    pp_htab slots;   /* of pp_py_code: room for PP_PY_CODE_CACHE, set up at the first miss */
    pp_strtab *strs; /* names and file names, freed only by pp_py_close */
    unsigned long long hits, misses;
} pp_py_code_cache;

void pp_py_code_cache_free(pp_py_code_cache *c);
/* Looks code object addr up (validating a cached entry against the target unless it was in this
 * sample), reading it on a miss. Returns NULL when it cannot be read or is not a plausible code
 * object. */
pp_py_code *pp_py_code_get(pp_py_code_cache *c, pp_rmem *m, const pp_py_layout *L, uint64_t addr);
/* The cached entry of addr as it was last read, not validated (NULL if not cached): for a
 * caller that checks it otherwise (the in-sampler walker's check value, once the process is
 * gone). */
pp_py_code *pp_py_code_cached(pp_py_code_cache *c, uint64_t addr);
/* Validates the cached code objects among addrs (n entries, duplicates allowed) that were not
 * validated in this sample yet, with one batched read; pp_py_code_get then answers them without
 * reading. Objects not cached are left to pp_py_code_get. */
void pp_py_code_prefetch(pp_py_code_cache *c, pp_rmem *m, const pp_py_layout *L,
                         const uint64_t *addrs, size_t n);
/* Line for code-unit index idx (3.11+), byte offset (3.8/3.9) or instruction index (3.10) as
 * the version's line table counts; 0 if unknown. */
int pp_py_code_line(pp_py_code *co, const pp_py_layout *L, int idx);

/* Line-table decoders over raw bytes (also fuzzed). Return 0 when the line is unknown. */
int pp_py_line_lnotab(const uint8_t *t, size_t n, int firstlineno, int lasti_bytes);
int pp_py_line_310(const uint8_t *t, size_t n, int firstlineno, int lasti_bytes);
int pp_py_line_locations(const uint8_t *t, size_t n, int firstlineno, int unit_idx);
/* Reads a str object into a malloc'd UTF-8 string (NULL if unreadable / not a string). */
char *pp_py_read_str(pp_rmem *m, const pp_py_layout *L, uint64_t addr);

/* ---- the handle (cpython.c) ---- */

struct pp_py_proc {
    int pid;
    pp_rmem mem;
    pp_py_layout L;
    char version[32];
    uint64_t runtime;     /* _PyRuntime address in the target */
    uint32_t pthread_tid; /* <= 3.10: offset of the kernel tid in glibc's struct pthread */
    pp_py_code_cache codes;
    pp_py_frame frames[PP_PY_MAX_DEPTH];
    long tids[PP_PY_MAX_THREADS]; /* tids reported in this sample (several interpreters only) */
};

#endif
