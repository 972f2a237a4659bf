/* CPython reader: finding the interpreter of a process (module, _PyRuntime, version, layout)
 * and walking its interpreters, threads and frames (see cpython.h, docs/python.md). */
#include "runtimes/python/cpython.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "runtimes/modules.h"
#include "runtimes/python/cpython_int.h"

#define FRAME_OWNED_BY_CSTACK 3 /* 3.12+: shim / entry frame, not Python code */
#define GLIBC_PTHREAD_TID 0x2d0 /* struct pthread.tid, glibc 2.36 x86_64 (calibrated at open) */

/* ---- locating the interpreter ---- */

/* version.0: Py_GetVersion's static buffer ("3.8.18 (default, ..."), in .symtab only. */
/* _Py_InitCleanup: 3.13's init shim code object (a local symbol, .symtab only). */
enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE, SYM_UNICODE, SYM_BYTES, SYM_VERBUF, SYM_SHIM, NSYMS };
static const char *const sym_names[NSYMS] = {"_PyRuntime",     "Py_Version",   "PyCode_Type",
                                             "PyUnicode_Type", "PyBytes_Type", "version.0",
                                             "_Py_InitCleanup"};

/* X.Y from a file name such as python3.11, libpython3.7m.so.1.0. */
static int version_from_name(const char *path, unsigned *major, unsigned *minor)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *p = strstr(base, "python");
    return p && sscanf(p + 6, "%u.%u", major, minor) == 2 ? 0 : -1;
}

/* "X.Y.Z" from Py_GetVersion's buffer when it starts with "X.Y." (else just "X.Y"). */
static void micro_version(pp_rmem *m, uint64_t verbuf, unsigned major, unsigned minor, char *out,
                          size_t len)
{
    char buf[24] = "", prefix[16];
    int pl = snprintf(prefix, sizeof(prefix), "%u.%u.", major, minor);
    snprintf(out, len, "%u.%u", major, minor);
    if (!verbuf || pp_rmem_read(m, verbuf, buf, sizeof(buf) - 1) != 0 ||
        strncmp(buf, prefix, (size_t)pl) != 0)
        return;
    size_t n = (size_t)pl + strspn(buf + pl, "0123456789");
    if (n > (size_t)pl && n < len) {
        memcpy(out, buf, n);
        out[n] = '\0';
    }
}

static pp_py_proc *fail(pp_py_proc *p, pp_py_open_status *st, pp_py_open_status code, char *err,
                        size_t errlen, const char *fmt, const char *arg)
{
    if (st)
        *st = code;
    if (err && errlen)
        snprintf(err, errlen, fmt, arg);
    pp_py_close(p);
    return NULL;
}

/* ≤3.10 only give the pthread_t: find struct pthread's tid field by looking for the main
 * thread's tid (= pid) in the main thread's struct pthread (default: glibc 2.36's offset). */
static uint32_t calibrate_pthread_tid(pp_py_proc *p, uint64_t interp)
{
    uint64_t ts = 0, last = 0;
    if (pp_rmem_ptr(&p->mem, interp + p->L.is_threads_head, &ts) != 0)
        return GLIBC_PTHREAD_TID;
    for (int i = 0; i < PP_PY_MAX_THREADS && pp_rmem_valid_ptr(ts, 8); i++) {
        last = ts; /* the list is newest first: the main thread is last */
        if (pp_rmem_ptr(&p->mem, ts + p->L.ts_next, &ts) != 0)
            break;
    }
    uint64_t pt = 0;
    int32_t buf[256];
    if (!last || pp_rmem_ptr(&p->mem, last + p->L.ts_thread_id, &pt) != 0 ||
        !pp_rmem_valid_ptr(pt, 8) || pp_rmem_read(&p->mem, pt, buf, sizeof(buf)) != 0)
        return GLIBC_PTHREAD_TID;
    if (buf[GLIBC_PTHREAD_TID / 4] == p->pid)
        return GLIBC_PTHREAD_TID;
    for (size_t i = 0; i < 256; i++)
        if (buf[i] == p->pid)
            return (uint32_t)(i * 4);
    return GLIBC_PTHREAD_TID;
}

pp_py_proc *pp_py_open(int pid, pp_py_open_status *status, char *err, size_t errlen)
{
    char pidbuf[16];
    snprintf(pidbuf, sizeof(pidbuf), "%d", pid);
    pp_py_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return fail(p, status, PP_PY_ERROR, err, errlen, "out of memory%s", "");
    p->pid = pid;
    pp_rmem_init(&p->mem, pid);
    pp_rt_module lib, exe;
    if (pid <= 0 || pp_rt_find_modules(pid, "libpython", &lib, &exe) != 0) {
        if (pid > 0 && errno != ENOENT && errno != ESRCH)
            return fail(p, status, PP_PY_ERROR, err, errlen,
                        "cannot read /proc/%s/maps (permission? run as root)", pidbuf);
        return fail(p, status, PP_PY_GONE, err, errlen, "process exited (pid %s)", pidbuf);
    }

    /* libpython first (pyenv / --enable-shared builds), else the executable itself. */
    pp_rt_module *mods[2] = {lib.path[0] ? &lib : NULL, exe.path[0] ? &exe : NULL};
    pp_rt_module *mod = NULL;
    uint64_t sym[NSYMS] = {0}, first_load = 0;
    unsigned major = 0, minor = 0;
    char file[PATH_MAX + 64];
    for (int i = 0; i < 2 && !mod; i++) {
        if (!mods[i])
            continue;
        int fd = pp_rt_module_file(pid, mods[i], mods[i] == &exe, file, sizeof(file));
        long found = file[0] ? pp_elf_symbol_values(file, sym_names, NSYMS, sym, &first_load) : -1;
        if (fd >= 0)
            close(fd);
        if (found > 0 && sym[SYM_RUNTIME])
            mod = mods[i];
        else if (version_from_name(mods[i]->path, &major, &minor) == 0 &&
                 (major != 3 || minor < 8 || minor > 13))
            break; /* a named python outside the supported range */
        else
            major = minor = 0;
    }
    if (!mod && major) {
        char v[32];
        snprintf(v, sizeof(v), "%u.%u", major, minor);
        return fail(p, status, PP_PY_UNSUPPORTED, err, errlen, "unsupported Python %s", v);
    }
    if (!mod)
        return fail(p, status, PP_PY_NOT_PYTHON, err, errlen,
                    "no CPython interpreter (_PyRuntime symbol) in pid %s", pidbuf);
    uint64_t bias = mod->start - first_load;
    p->runtime = bias + sym[SYM_RUNTIME];

    /* Version: Py_Version (3.11+), else X.Y from the file name and the micro version from
     * Py_GetVersion's buffer. */
    uint32_t hex = 0;
    if (sym[SYM_VERSION] && pp_rmem_read(&p->mem, bias + sym[SYM_VERSION], &hex, 4) == 0 &&
        (hex >> 24) == 3) {
        major = 3;
        minor = (hex >> 16) & 0xff;
        snprintf(p->version, sizeof(p->version), "3.%u.%u", minor, (hex >> 8) & 0xff);
    } else if (p->mem.gone) {
        return fail(p, status, PP_PY_GONE, err, errlen, "process exited (pid %s)", pidbuf);
    } else if (version_from_name(mod->path, &major, &minor) == 0) {
        micro_version(&p->mem, sym[SYM_VERBUF] ? bias + sym[SYM_VERBUF] : 0, major, minor,
                      p->version, sizeof(p->version));
    } else {
        return fail(p, status, PP_PY_UNSUPPORTED, err, errlen,
                    "cannot tell the Python version of %s (no Py_Version, no X.Y in its name)",
                    mod->path);
    }
    if (major != 3 || minor < 8 || minor > 13) {
        char v[32];
        snprintf(v, sizeof(v), "%u.%u", major, minor);
        return fail(p, status, PP_PY_UNSUPPORTED, err, errlen, "unsupported Python %s", v);
    }

    if (minor >= 13) {
        uint8_t dbg[PP_PY_DEBUG_OFFSETS_SIZE];
        char why[160];
        if (pp_rmem_read(&p->mem, p->runtime, dbg, sizeof(dbg)) != 0)
            return fail(p, status, p->mem.gone ? PP_PY_GONE : PP_PY_ERROR, err, errlen,
                        "cannot read _PyRuntime of pid %s (permission? run as root)", pidbuf);
        if (pp_py_layout_from_debug(dbg, sizeof(dbg), &p->L, why, sizeof(why)) != 0)
            return fail(p, status, PP_PY_UNSUPPORTED, err, errlen, "%s", why);
    } else {
        p->L = *pp_py_layout_for((int)minor);
    }
    p->L.code_type = sym[SYM_CODE] ? bias + sym[SYM_CODE] : 0;
    p->L.unicode_type = sym[SYM_UNICODE] ? bias + sym[SYM_UNICODE] : 0;
    p->L.bytes_type = sym[SYM_BYTES] ? bias + sym[SYM_BYTES] : 0;
    p->L.shim_code = sym[SYM_SHIM] && minor >= 13 ? bias + sym[SYM_SHIM] : 0;

    uint64_t interp;
    if (pp_rmem_ptr(&p->mem, p->runtime + p->L.rt_interp_head, &interp) != 0)
        return fail(p, status, p->mem.gone ? PP_PY_GONE : PP_PY_ERROR, err, errlen,
                    p->mem.gone ? "process exited (pid %s)"
                                : "cannot read the memory of pid %s (permission? run as root)",
                    pidbuf);
    p->pthread_tid = p->L.ts_native_tid || !pp_rmem_valid_ptr(interp, 8)
                         ? GLIBC_PTHREAD_TID
                         : calibrate_pthread_tid(p, interp);
    if (status)
        *status = PP_PY_OK;
    if (err && errlen)
        err[0] = '\0';
    return p;
}

void pp_py_close(pp_py_proc *p)
{
    if (!p)
        return;
    pp_py_code_cache_free(&p->codes);
    pp_rmem_free(&p->mem);
    free(p);
}

const char *pp_py_version(const pp_py_proc *p)
{
    return p->version;
}

bool pp_py_exited(const pp_py_proc *p)
{
    return p->mem.gone;
}

void pp_py_get_stats(const pp_py_proc *p, pp_py_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->code_cached = pp_htab_count(&p->codes.slots);
    st->code_hits = p->codes.hits;
    st->code_misses = p->codes.misses;
    st->reads = p->mem.reads;
    st->read_bytes = p->mem.read_bytes;
}

/* ---- walking ---- */

/* Brent's cycle detection over a chain of addresses. */
typedef struct cycle {
    uint64_t tortoise;
    unsigned power, lam;
} cycle;

static bool cycle_step(cycle *c, uint64_t addr)
{
    if (addr == c->tortoise)
        return true;
    if (++c->lam == c->power) {
        c->tortoise = addr;
        c->power *= 2;
        c->lam = 0;
    }
    return false;
}

/* Walks one thread's frames from the leaf; fills p->frames root first. Returns the count.
 * Two passes: the frame chain first (code object address and instruction of each frame), then
 * the code objects, validated in one batched read (pp_py_code_prefetch). */
static size_t walk_frames(pp_py_proc *p, uint64_t f, bool *truncated)
{
    const pp_py_layout *L = &p->L;
    uint64_t codes[PP_PY_MAX_DEPTH];
    int idxs[PP_PY_MAX_DEPTH];
    size_t n = 0;
    cycle cy = {0, 1, 0};
    uint8_t buf[256];
    *truncated = false;
    for (int steps = 0; f; steps++) {
        if (n == PP_PY_MAX_DEPTH || steps >= 4 * PP_PY_MAX_DEPTH || !pp_rmem_valid_ptr(f, 8) ||
            L->fr_size > sizeof(buf) || cycle_step(&cy, f) ||
            pp_rmem_read_cached(&p->mem, f, buf, L->fr_size) != 0) {
            *truncated = true;
            break;
        }
        uint64_t code, back, ip = 0;
        memcpy(&code, buf + L->fr_code, 8);
        memcpy(&back, buf + L->fr_back, 8);
        f = back;
        int idx;
        if (L->frame_object) {
            int32_t lasti;
            memcpy(&lasti, buf + L->fr_ip, 4);
            idx = lasti;
        } else {
            if (L->minor >= 12 && buf[L->fr_owner] == FRAME_OWNED_BY_CSTACK)
                continue; /* shim / entry frame */
            if (L->shim_code && code == L->shim_code)
                continue; /* 3.13 init shim: owned by the thread, runs the interpreter's code */
            memcpy(&ip, buf + L->fr_ip, 8);
            int64_t d = (int64_t)(ip - (code + L->co_code_adaptive));
            if (d < 0)
                continue; /* incomplete frame: being set up, no instruction run yet */
            idx = d / 2 > INT_MAX ? INT_MAX : (int)(d / 2);
        }
        codes[n] = code;
        idxs[n++] = idx;
    }
    pp_py_code_prefetch(&p->codes, &p->mem, L, codes, n);
    size_t k = 0; /* frames kept, leaf first: up to the first code object not read */
    for (size_t i = 0; i < n; i++) {
        pp_py_code *co = pp_py_code_get(&p->codes, &p->mem, L, codes[i]);
        if (!co) {
            *truncated = true;
            break;
        }
        if (co->internal)
            continue; /* a shim frame not told by its address (stripped libpython) */
        pp_py_frame *fr = &p->frames[k++];
        fr->name = co->name;
        fr->file = co->file;
        fr->line = pp_py_code_line(co, L, idxs[i]);
    }
    for (size_t i = 0; i < k / 2; i++) { /* root first */
        pp_py_frame t = p->frames[i];
        p->frames[i] = p->frames[k - 1 - i];
        p->frames[k - 1 - i] = t;
    }
    return k;
}

static long thread_tid(pp_py_proc *p, const uint8_t *ts)
{
    uint64_t v;
    if (p->L.ts_native_tid) {
        memcpy(&v, ts + p->L.ts_native_tid, 8);
        return (long)v;
    }
    memcpy(&v, ts + p->L.ts_thread_id, 8);
    int32_t tid = 0;
    if (!pp_rmem_valid_ptr(v, 8) || pp_rmem_read_cached(&p->mem, v + p->pthread_tid, &tid, 4) != 0)
        return 0;
    return tid;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* With sub-interpreters one OS thread has a thread state in each interpreter it entered: the
 * newest interpreter (listed first) holds the code running now, an older one only the frame
 * suspended in the call that entered it (e.g. _interpreters.run_string). Report each tid once:
 * returns false when an earlier interpreter of this sample reported tid already. */
static bool tid_first(pp_py_proc *p, long tid, size_t nsorted, size_t *nseen)
{
    if (bsearch(&tid, p->tids, nsorted, sizeof(*p->tids), cmp_long))
        return false;
    if (*nseen < PP_PY_MAX_THREADS)
        p->tids[(*nseen)++] = tid;
    return true;
}

static int gone(pp_py_proc *p, char *err, size_t errlen)
{
    snprintf(err, errlen, "process exited (pid %d)", p->pid);
    return -1;
}

int pp_py_sample(pp_py_proc *p, pp_py_stack_cb cb, void *arg, char *err, size_t errlen)
{
    return pp_py_sample_threads(p, NULL, NULL, cb, arg, err, errlen);
}

int pp_py_sample_threads(pp_py_proc *p, pp_py_tid_filter want, void *want_arg, pp_py_stack_cb cb,
                         void *arg, char *err, size_t errlen)
{
    const pp_py_layout *L = &p->L;
    pp_rmem_begin_sample(&p->mem);
    uint64_t interp, gil_ts = 0;
    if (pp_rmem_ptr(&p->mem, p->runtime + L->rt_interp_head, &interp) != 0) {
        if (p->mem.gone)
            return gone(p, err, errlen);
        snprintf(err, errlen, "cannot read _PyRuntime of pid %d at 0x%llx: %s", p->pid,
                 (unsigned long long)p->runtime, strerror(errno));
        return -1;
    }
    if (L->rt_gil_tstate)
        pp_rmem_ptr(&p->mem, p->runtime + L->rt_gil_tstate, &gil_ts);
    int reported = 0, threads = 0;
    bool multi = false;            /* several interpreters: report each tid once */
    size_t nseen = 0, nsorted = 0; /* p->tids[0, nsorted) sorted, then this interpreter's */
    cycle icy = {0, 1, 0};
    for (int ni = 0; interp && ni < PP_PY_MAX_INTERPS; ni++) {
        uint64_t ts, next_interp = 0;
        if (!pp_rmem_valid_ptr(interp, 8) || cycle_step(&icy, interp) ||
            pp_rmem_ptr(&p->mem, interp + L->is_threads_head, &ts) != 0)
            break;
        pp_rmem_ptr(&p->mem, interp + L->is_next, &next_interp);
        multi = multi || next_interp;
        if (L->is_gil_ptr) { /* 3.12+: the GIL this interpreter uses */
            uint64_t gil = 0, holder = 0;
            int32_t locked = 0;
            gil_ts = 0;
            if (pp_rmem_ptr(&p->mem, interp + L->is_gil_ptr, &gil) == 0 &&
                pp_rmem_valid_ptr(gil, 8) &&
                pp_rmem_read_cached(&p->mem, gil + L->gil_locked, &locked, 4) == 0 && locked &&
                pp_rmem_ptr(&p->mem, gil + L->gil_holder, &holder) == 0)
                gil_ts = holder;
        }
        cycle tcy = {0, 1, 0};
        uint8_t tsb[512];
        uint32_t tsize = L->ts_frame + 8;
        if (L->ts_thread_id + 8 > tsize)
            tsize = L->ts_thread_id + 8;
        if (L->ts_native_tid + 8 > tsize)
            tsize = L->ts_native_tid + 8;
        if (L->ts_next + 8 > tsize)
            tsize = L->ts_next + 8;
        for (; ts && threads < PP_PY_MAX_THREADS; threads++) {
            if (!pp_rmem_valid_ptr(ts, 8) || tsize > sizeof(tsb) || cycle_step(&tcy, ts) ||
                pp_rmem_read_cached(&p->mem, ts, tsb, tsize) != 0)
                break;
            uint64_t frame, next;
            memcpy(&frame, tsb + L->ts_frame, 8);
            memcpy(&next, tsb + L->ts_next, 8);
            if (L->cframe_current >= 0 && frame &&
                (!pp_rmem_valid_ptr(frame, 8) ||
                 pp_rmem_ptr(&p->mem, frame + (uint32_t)L->cframe_current, &frame) != 0))
                frame = 0;
            pp_py_stack st = {.tid = want ? thread_tid(p, tsb) : 0};
            if (want && !want(want_arg, st.tid))
                goto next_thread;
            st.n = walk_frames(p, frame, &st.truncated);
            if (st.n) {
                st.tid = want ? st.tid : thread_tid(p, tsb);
                st.holds_gil = gil_ts && gil_ts == ts;
                st.frames = p->frames;
                if (multi && !tid_first(p, st.tid, nsorted, &nseen))
                    goto next_thread; /* this OS thread runs a newer interpreter's code */
                reported++;
                if (cb(arg, &st) != 0)
                    return reported;
            }
        next_thread:
            ts = next;
        }
        interp = next_interp;
        if (multi) { /* tids of this interpreter join the sorted set */
            qsort(p->tids, nseen, sizeof(*p->tids), cmp_long);
            nsorted = nseen;
        }
    }
    if (p->mem.gone)
        return gone(p, err, errlen);
    return reported;
}
