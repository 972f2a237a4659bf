/* Per-version structure offsets of CPython 3.8-3.12 (x86_64, release build with the GIL) and
 * the 3.13 reader of _Py_DebugOffsets. Sources: CPython's headers of pyenv 3.8.18, 3.9.18,
 * 3.10.13, 3.11.7, 3.12.1 (Include/cpython/{pystate,code,frameobject,unicodeobject}.h,
 * Include/internal/{pycore_runtime,pycore_interp,pycore_frame,pycore_gil}.h), checked by walking
 * live interpreters of each version in tests/unit/test_cpython.c (see docs/python.md). */
#include <stdio.h>
#include <string.h>

#include "runtimes/python/cpython_int.h"

/* Fields common to the PyFrameObject versions (3.8-3.10). */
#define FRAME_OBJECT_COMMON                                                                        \
    .rt_interp_head = 32, .is_next = 0, .is_threads_head = 8, .ts_next = 8, .ts_interp = 16,       \
    .ts_frame = 24, .cframe_current = -1, .ts_thread_id = 176, .frame_object = true,               \
    .fr_back = 24, .fr_code = 32, .co_firstlineno = 40, .co_filename = 104, .co_name = 112,        \
    .co_linetable = 120, .u_length = 16, .u_state = 32, .u_ascii_data = 48, .u_compact_data = 72,  \
    .bytes_size = 16, .bytes_data = 32

static const pp_py_layout layouts[] = {
    {.minor = 8,
     FRAME_OBJECT_COMMON,
     .rt_gil_tstate = 1368,
     .fr_ip = 104,
     .fr_size = 108,
     .lines = PP_PY_LNOTAB},
    {.minor = 9,
     FRAME_OBJECT_COMMON,
     .rt_gil_tstate = 568,
     .fr_ip = 104,
     .fr_size = 108,
     .lines = PP_PY_LNOTAB},
    {.minor = 10,
     FRAME_OBJECT_COMMON,
     .rt_gil_tstate = 568,
     .fr_ip = 96,
     .fr_size = 100,
     .lines = PP_PY_LINES310},
    {.minor = 11,
     .rt_interp_head = 40,
     .rt_gil_tstate = 576,
     .is_next = 0,
     .is_threads_head = 16,
     .ts_next = 8,
     .ts_interp = 16,
     .ts_frame = 56, /* cframe */
     .cframe_current = 8,
     .ts_thread_id = 152,
     .ts_native_tid = 160,
     .fr_back = 48,
     .fr_code = 32,
     .fr_ip = 56,
     .fr_owner = 69,
     .fr_size = 72,
     .co_firstlineno = 72,
     .co_filename = 112,
     .co_name = 120,
     .co_qualname = 128,
     .co_linetable = 136,
     .co_code_adaptive = 184,
     .u_length = 16,
     .u_state = 32,
     .u_ascii_data = 48,
     .u_compact_data = 72,
     .bytes_size = 16,
     .bytes_data = 32,
     .lines = PP_PY_LOCATIONS},
    {.minor = 12,
     .rt_interp_head = 40,
     .is_next = 0,
     .is_threads_head = 72,
     .is_gil_ptr = 384,
     .gil_holder = 8,  /* _gil_runtime_state.last_holder */
     .gil_locked = 16, /* _gil_runtime_state.locked */
     .ts_next = 8,
     .ts_interp = 16,
     .ts_frame = 56, /* cframe */
     .cframe_current = 0,
     .ts_thread_id = 136,
     .ts_native_tid = 144,
     .fr_back = 8,
     .fr_code = 0,
     .fr_ip = 56,
     .fr_owner = 70,
     .fr_size = 72,
     .co_firstlineno = 68,
     .co_filename = 112,
     .co_name = 120,
     .co_qualname = 128,
     .co_linetable = 136,
     .co_code_adaptive = 192,
     .u_length = 16,
     .u_state = 32,
     .u_ascii_data = 40,
     .u_compact_data = 56,
     .bytes_size = 16,
     .bytes_data = 32,
     .lines = PP_PY_LOCATIONS},
};

const pp_py_layout *pp_py_layout_for(int minor)
{
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
        if (layouts[i].minor == minor)
            return &layouts[i];
    return NULL;
}

/* _Py_DebugOffsets (3.13.0, Include/internal/pycore_runtime.h): u64 fields, in this order. */
enum {
    D_VERSION = 1, /* after the 8-byte cookie */
    D_FREE_THREADED,
    D_RT_SIZE,
    D_RT_FINALIZING,
    D_RT_INTERP_HEAD,
    D_IS_SIZE,
    D_IS_ID,
    D_IS_NEXT,
    D_IS_THREADS_HEAD,
    D_IS_GC,
    D_IS_MODULES,
    D_IS_SYSDICT,
    D_IS_BUILTINS,
    D_IS_CEVAL_GIL,
    D_IS_GIL_STATE,
    D_IS_GIL_ENABLED,
    D_IS_GIL_LOCKED,
    D_IS_GIL_HOLDER,
    D_TS_SIZE,
    D_TS_PREV,
    D_TS_NEXT,
    D_TS_INTERP,
    D_TS_CURRENT_FRAME,
    D_TS_THREAD_ID,
    D_TS_NATIVE_TID,
    D_TS_DATASTACK,
    D_TS_STATUS,
    D_FR_SIZE,
    D_FR_PREVIOUS,
    D_FR_EXECUTABLE,
    D_FR_INSTR_PTR,
    D_FR_LOCALSPLUS,
    D_FR_OWNER,
    D_CO_SIZE,
    D_CO_FILENAME,
    D_CO_NAME,
    D_CO_QUALNAME,
    D_CO_LINETABLE,
    D_CO_FIRSTLINENO,
    D_CO_ARGCOUNT,
    D_CO_LOCALSPLUSNAMES,
    D_CO_LOCALSPLUSKINDS,
    D_CO_CODE_ADAPTIVE,
    D_OB_SIZE,
    D_OB_TYPE,
    D_TP_SIZE,
    D_TP_NAME,
    D_TP_REPR,
    D_TP_FLAGS,
    D_TUPLE_SIZE,
    D_TUPLE_ITEM,
    D_TUPLE_OBSIZE,
    D_LIST_SIZE,
    D_LIST_ITEM,
    D_LIST_OBSIZE,
    D_DICT_SIZE,
    D_DICT_KEYS,
    D_DICT_VALUES,
    D_FLOAT_SIZE,
    D_FLOAT_FVAL,
    D_LONG_SIZE,
    D_LONG_TAG,
    D_LONG_DIGIT,
    D_BYTES_SIZE,
    D_BYTES_OBSIZE,
    D_BYTES_SVAL,
    D_UNI_SIZE,
    D_UNI_STATE,
    D_UNI_LENGTH,
    D_UNI_ASCII_SIZE,
    D_GC_SIZE,
    D_GC_COLLECTING,
    D_COUNT
};

int pp_py_layout_from_debug(const uint8_t *buf, size_t len, pp_py_layout *out, char *err,
                            size_t errlen)
{
    uint64_t d[D_COUNT];
    if (len < sizeof(d) || memcmp(buf, "xdebugpy", 8) != 0) {
        snprintf(err, errlen, "_PyRuntime has no _Py_DebugOffsets cookie (not a 3.13+ runtime)");
        return -1;
    }
    memcpy(d, buf, sizeof(d));
    unsigned major = (unsigned)(d[D_VERSION] >> 24), minor = (d[D_VERSION] >> 16) & 0xff;
    if (major != 3 || minor != 13) {
        snprintf(err, errlen, "unsupported Python %u.%u (debug offsets)", major, minor);
        return -1;
    }
    if (d[D_FREE_THREADED]) {
        snprintf(err, errlen, "unsupported Python 3.13 free-threaded build");
        return -1;
    }
    /* Every offset read must fit in the structure size the runtime announces (and be small). */
    const struct {
        int field, size;
    } checks[] = {
        {D_RT_INTERP_HEAD, D_RT_SIZE},   {D_IS_NEXT, D_IS_SIZE},
        {D_IS_THREADS_HEAD, D_IS_SIZE},  {D_IS_CEVAL_GIL, D_IS_SIZE},
        {D_IS_GIL_LOCKED, D_IS_SIZE},    {D_IS_GIL_HOLDER, D_IS_SIZE},
        {D_TS_NEXT, D_TS_SIZE},          {D_TS_INTERP, D_TS_SIZE},
        {D_TS_CURRENT_FRAME, D_TS_SIZE}, {D_TS_THREAD_ID, D_TS_SIZE},
        {D_TS_NATIVE_TID, D_TS_SIZE},    {D_FR_PREVIOUS, D_FR_SIZE},
        {D_FR_EXECUTABLE, D_FR_SIZE},    {D_FR_INSTR_PTR, D_FR_SIZE},
        {D_FR_OWNER, D_FR_SIZE},         {D_CO_FILENAME, D_CO_SIZE},
        {D_CO_NAME, D_CO_SIZE},          {D_CO_QUALNAME, D_CO_SIZE},
        {D_CO_LINETABLE, D_CO_SIZE},     {D_CO_FIRSTLINENO, D_CO_SIZE},
        {D_CO_CODE_ADAPTIVE, D_CO_SIZE}, {D_BYTES_OBSIZE, D_BYTES_SIZE},
        {D_UNI_STATE, D_UNI_SIZE},       {D_UNI_LENGTH, D_UNI_SIZE},
    };
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
        uint64_t v = d[checks[i].field], sz = d[checks[i].size];
        if (sz > (1u << 22) || v >= sz) {
            snprintf(err, errlen, "implausible _Py_DebugOffsets (field %d = %llu, size %llu)",
                     checks[i].field, (unsigned long long)v, (unsigned long long)sz);
            return -1;
        }
    }
    /* gil locked/holder are given relative to the interpreter's own _gil; ceval.gil points to
     * the GIL in use (the main interpreter's unless it has its own), so make them relative. */
    if (d[D_IS_GIL_LOCKED] < d[D_IS_GIL_STATE] || d[D_IS_GIL_HOLDER] < d[D_IS_GIL_STATE]) {
        snprintf(err, errlen, "implausible _Py_DebugOffsets (gil fields)");
        return -1;
    }
    memset(out, 0, sizeof(*out));
    out->minor = (int)minor;
    out->rt_interp_head = (uint32_t)d[D_RT_INTERP_HEAD];
    out->is_next = (uint32_t)d[D_IS_NEXT];
    out->is_threads_head = (uint32_t)d[D_IS_THREADS_HEAD];
    out->is_gil_ptr = (uint32_t)d[D_IS_CEVAL_GIL];
    out->gil_locked = (uint32_t)(d[D_IS_GIL_LOCKED] - d[D_IS_GIL_STATE]);
    out->gil_holder = (uint32_t)(d[D_IS_GIL_HOLDER] - d[D_IS_GIL_STATE]);
    out->ts_next = (uint32_t)d[D_TS_NEXT];
    out->ts_interp = (uint32_t)d[D_TS_INTERP];
    out->ts_frame = (uint32_t)d[D_TS_CURRENT_FRAME];
    out->cframe_current = -1;
    out->ts_thread_id = (uint32_t)d[D_TS_THREAD_ID];
    out->ts_native_tid = (uint32_t)d[D_TS_NATIVE_TID];
    out->fr_back = (uint32_t)d[D_FR_PREVIOUS];
    out->fr_code = (uint32_t)d[D_FR_EXECUTABLE];
    out->fr_ip = (uint32_t)d[D_FR_INSTR_PTR];
    out->fr_owner = (uint32_t)d[D_FR_OWNER];
    uint64_t fs = d[D_FR_OWNER] + 1;
    if (d[D_FR_INSTR_PTR] + 8 > fs)
        fs = d[D_FR_INSTR_PTR] + 8;
    if (d[D_FR_PREVIOUS] + 8 > fs)
        fs = d[D_FR_PREVIOUS] + 8;
    if (d[D_FR_EXECUTABLE] + 8 > fs)
        fs = d[D_FR_EXECUTABLE] + 8;
    out->fr_size = (uint32_t)fs;
    out->co_firstlineno = (uint32_t)d[D_CO_FIRSTLINENO];
    out->co_filename = (uint32_t)d[D_CO_FILENAME];
    out->co_name = (uint32_t)d[D_CO_NAME];
    out->co_qualname = (uint32_t)d[D_CO_QUALNAME];
    out->co_linetable = (uint32_t)d[D_CO_LINETABLE];
    out->co_code_adaptive = (uint32_t)d[D_CO_CODE_ADAPTIVE];
    out->u_length = (uint32_t)d[D_UNI_LENGTH];
    out->u_state = (uint32_t)d[D_UNI_STATE];
    out->u_ascii_data = (uint32_t)d[D_UNI_ASCII_SIZE];
    /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 pointer. */
    out->u_compact_data = out->u_ascii_data + 16;
    out->bytes_size = (uint32_t)d[D_BYTES_OBSIZE];
    out->bytes_data = (uint32_t)d[D_BYTES_SVAL];
    out->lines = PP_PY_LOCATIONS;
    return 0;
}
