/* The PHP in-sampler walker's user-space half (docs/php.md): prepare() finds the engine of a
 * process (proc.c), picks the version's layout (layout.c, a self-check first for tables not
 * tested here) and fills the BPF walker's data (struct pp_php_info); name() turns the recorded
 * (zend_function, opline index, check) triples into phpspy's frame texts.
 *
 * Functions are cached per family: the processes of one executable and one process group (a
 * php-fpm master and its workers, which share the opcache's functions at the same addresses).
 * A worker that exited before the drain is then still named, from the cache or by reading a
 * live sibling; the check value recorded at the sample vouches that the function read is the
 * one sampled, else the frame is lost ([lost symbol]_[php]), never misnamed. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/hashtab.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/php/walker_info.h"
#include "bpf/sampler.h"
#include "runtimes/php/php_int.h"
#include "runtimes/system/sampler.h"

#define LOST_FRAME "[lost symbol]_[php]"
#define FAMILY_FUNCS 65536 /* cached functions per family; the cache starts over past it */
#define SIBLING_READS 4    /* live siblings tried for a function of an exited process */
#define PREFETCH_DEPTH 64  /* frames cached per running process and watcher pass */

typedef struct phpfam phpfam;

typedef struct phpwalk {
    int pid;
    pp_rmem mem;
    pp_php_layout L;
    pp_php_target t;
    int verified; /* 1 checked (or tested table), 0 not yet (no user frame seen), -1 failed */
    phpfam *fam;
    struct phpwalk *next; /* the family's members */
    pp_htab ids;          /* of id_ent: frame ids of the current profile */
    uint64_t generation;
    bool have_gen;
} phpwalk;

typedef struct fn_ent {
    uint64_t addr;
    uint32_t check;
    pp_php_func *f;
} fn_ent;

typedef struct id_ent {
    uint64_t addr;
    uint32_t check;
    int32_t line;
    uint32_t id;
} id_ent;

struct phpfam {
    dev_t dev;
    ino_t ino;
    pid_t pgid;
    int refs;
    phpwalk *members;
    pp_htab funcs;   /* of fn_ent, by address and check (owning) */
    pp_htab bycheck; /* of fn_ent, by check alone (the first function of each check) */
    phpfam *next;
};

static pthread_mutex_t fam_lock = PTHREAD_MUTEX_INITIALIZER;
static phpfam *families;

/* Processes whose layout failed its self-check at naming (backend.c adds their skip stacks). */
#define MAX_FAILED 64
static struct {
    int pid;
    char why[96];
} failed[MAX_FAILED];
static size_t nfailed;

static void note_failed(int pid, const char *why)
{
    pthread_mutex_lock(&fam_lock);
    if (nfailed < MAX_FAILED) {
        failed[nfailed].pid = pid;
        snprintf(failed[nfailed].why, sizeof(failed[nfailed].why), "%s", why);
        nfailed++;
    }
    pthread_mutex_unlock(&fam_lock);
}

size_t pp_php_take_failed(int *pids, char (*why)[96], size_t cap)
{
    pthread_mutex_lock(&fam_lock);
    size_t n = nfailed < cap ? nfailed : cap;
    for (size_t i = 0; i < n; i++) {
        pids[i] = failed[i].pid;
        memcpy(why[i], failed[i].why, sizeof(why[i]));
    }
    nfailed = 0;
    pthread_mutex_unlock(&fam_lock);
    return n;
}

static void funcs_clear(phpfam *f)
{
    size_t pos = 0;
    for (fn_ent *e; (e = pp_htab_each(&f->funcs, &pos));) {
        pp_php_func_clear(e->f);
        free(e->f);
    }
    pp_htab_clear(&f->funcs);
    pp_htab_clear(&f->bycheck);
}

static uint64_t fn_hash(uint64_t addr, uint32_t check)
{
    return pp_hash_u64(addr ^ ((uint64_t)check << 32));
}

/* Under fam_lock. */
static pp_php_func *fam_get(phpfam *f, uint64_t addr, uint32_t check)
{
    pp_htab_probe pr;
    for (fn_ent *e = pp_htab_first(&f->funcs, fn_hash(addr, check), &pr); e;
         e = pp_htab_next(&f->funcs, &pr))
        if (e->addr == addr && e->check == check)
            return e->f;
    return NULL;
}

/* A function of the family with this check, whatever its address (under fam_lock). The check
 * covers the addresses of the function's name and file strings and its first line: a request's
 * copy of an opcache script's main op_array (freed at the request's end, its address reused)
 * has the same check in every request and every worker, and names the same code. */
static pp_php_func *fam_get_check(phpfam *f, uint32_t check)
{
    pp_htab_probe pr;
    for (fn_ent *e = pp_htab_first(&f->bycheck, pp_hash_u64(check), &pr); e;
         e = pp_htab_next(&f->bycheck, &pr))
        if (e->check == check)
            return e->f;
    return NULL;
}

static void fam_put(phpfam *f, pp_php_func *fn)
{
    if (pp_htab_count(&f->funcs) >= FAMILY_FUNCS)
        funcs_clear(f);
    fn_ent *e = pp_htab_add(&f->funcs, fn_hash(fn->addr, fn->check));
    if (!e) {
        pp_php_func_clear(fn);
        free(fn);
        return;
    }
    *e = (fn_ent){fn->addr, fn->check, fn};
    if (!fam_get_check(f, fn->check) && (e = pp_htab_add(&f->bycheck, pp_hash_u64(fn->check))))
        *e = (fn_ent){fn->addr, fn->check, fn};
}

/* The family of pid (joined), or NULL without memory. */
static phpfam *fam_join(phpwalk *w)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/exe", w->pid);
    if (stat(path, &st) != 0)
        memset(&st, 0, sizeof(st));
    pid_t pgid = getpgid(w->pid);
    pthread_mutex_lock(&fam_lock);
    phpfam *f = families;
    while (f && !(f->dev == st.st_dev && f->ino == st.st_ino && f->pgid == pgid))
        f = f->next;
    if (!f && (f = calloc(1, sizeof(*f)))) {
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->pgid = pgid;
        PP_HTAB_INIT(&f->funcs, fn_ent, 50);
        PP_HTAB_INIT(&f->bycheck, fn_ent, 50);
        f->next = families;
        families = f;
    }
    if (f) {
        f->refs++;
        w->next = f->members;
        f->members = w;
    }
    pthread_mutex_unlock(&fam_lock);
    return f;
}

static void fam_leave(phpwalk *w)
{
    phpfam *f = w->fam;
    if (!f)
        return;
    pthread_mutex_lock(&fam_lock);
    for (phpwalk **p = &f->members; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    if (--f->refs == 0) {
        for (phpfam **p = &families; *p; p = &(*p)->next)
            if (*p == f) {
                *p = f->next;
                break;
            }
        funcs_clear(f);
        pp_htab_free(&f->funcs);
        pp_htab_free(&f->bycheck);
        free(f);
    }
    pthread_mutex_unlock(&fam_lock);
}

/* Whether w's process still exists (an exited worker stays registered for a few drains). */
static bool alive(phpwalk *w)
{
    if (kill(w->pid, 0) != 0 && errno == ESRCH)
        w->mem.gone = true;
    return !w->mem.gone;
}

/* Reads the function (addr, check) from w's process, else (w exited) from live siblings.
 * Under fam_lock. *from gets the reader that succeeded. */
static pp_php_func *read_func(phpwalk *w, uint64_t addr, uint32_t check, pp_rmem **from)
{
    pp_php_func *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    phpwalk *r = w, *sib = w->fam ? w->fam->members : NULL;
    for (int tries = 0; r && tries <= SIBLING_READS;) {
        if (!r->mem.gone && pp_php_func_read(&r->mem, &r->L, addr, f) == 0) {
            if (f->check == check && pp_php_func_plausible(f)) {
                *from = &r->mem;
                return f;
            }
            pp_php_func_clear(f);
        }
        if (!w->mem.gone)
            break; /* the sampled process itself answered: another function now */
        while (sib && (sib == w || sib->mem.gone || !alive(sib)))
            sib = sib->next;
        r = sib;
        if (sib)
            sib = sib->next;
        tries++;
    }
    free(f);
    return NULL;
}

static void pw_begin(void *state)
{
    phpwalk *w = state;
    pthread_mutex_lock(&fam_lock);
    pp_rmem_begin_sample(&w->mem);
    pthread_mutex_unlock(&fam_lock);
}

/* Whether pid runs on a CPU now (state R in /proc/<pid>/stat). */
static bool running(int pid)
{
    char path[48], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    ssize_t n = pp_read_small_file(path, buf, sizeof(buf));
    const char *close = n > 0 ? strrchr(buf, ')') : NULL;
    return close && close[1] == ' ' && close[2] == 'R';
}

/* Caches the functions (and the current lines) of w's stack as it is now (under fam_lock). */
static void prefetch_one(phpwalk *w)
{
    pp_rmem_begin_sample(&w->mem);
    uint64_t ed = 0;
    if (pp_rmem_ptr(&w->mem, w->t.eg + w->L.eg_ced, &ed) != 0)
        return;
    for (int depth = 0; ed && depth < PREFETCH_DEPTH; depth++) {
        uint64_t func = 0, opline = 0, prev = 0;
        if (!pp_rmem_valid_ptr(ed, 8) || pp_rmem_ptr(&w->mem, ed + w->L.ed_func, &func) != 0 ||
            pp_rmem_ptr(&w->mem, ed + w->L.ed_opline, &opline) != 0 ||
            pp_rmem_ptr(&w->mem, ed + w->L.ed_prev, &prev) != 0)
            return;
        /* a function read before is found by its check; only a new one is read whole */
        uint32_t check = 0;
        pp_php_func *have = NULL;
        if (func && pp_php_func_check(&w->mem, &w->L, func, &check) == 0)
            have = fam_get(w->fam, func, check);
        pp_php_func *f = have || !func ? NULL : calloc(1, sizeof(*f));
        if (f && pp_php_func_read(&w->mem, &w->L, func, f) == 0 && pp_php_func_plausible(f)) {
            have = fam_get(w->fam, func, f->check);
            if (!have) {
                fam_put(w->fam, f);
                have = fam_get(w->fam, func, f->check);
                f = NULL;
            }
        }
        if (f) {
            pp_php_func_clear(f);
            free(f);
        }
        if (have && have->user && opline >= have->opcodes &&
            opline < have->opcodes + (uint64_t)have->last * w->L.zop_size)
            pp_php_func_line(&w->mem, &w->L, have,
                             (uint32_t)((opline - have->opcodes) / w->L.zop_size));
        ed = prev == ed ? 0 : prev;
    }
    pp_rmem_begin_sample(&w->mem);
}

void pp_php_prefetch(void)
{
    pthread_mutex_lock(&fam_lock);
    for (phpfam *f = families; f; f = f->next)
        for (phpwalk *w = f->members; w; w = w->next)
            if (w->verified > 0 && !w->mem.gone && running(w->pid))
                prefetch_one(w);
    pthread_mutex_unlock(&fam_lock);
}

static void pw_free(void *state)
{
    phpwalk *w = state;
    if (!w)
        return;
    fam_leave(w);
    pp_htab_free(&w->ids);
    pp_rmem_free(&w->mem);
    free(w);
}

static uint32_t frame_id(phpwalk *w, pp_profile *out, const pp_php_func *f, int line)
{
    uint64_t h =
        pp_hash_u64(f->addr ^ ((uint64_t)f->check << 20) ^ ((uint64_t)(uint32_t)line << 44));
    pp_htab_probe pr;
    for (id_ent *e = pp_htab_first(&w->ids, h, &pr); e; e = pp_htab_next(&w->ids, &pr))
        if (e->addr == f->addr && e->check == f->check && e->line == line)
            return e->id;
    char text[2200];
    pp_php_frame_text(f, line, text, sizeof(text) - 8);
    strcat(text, "_[php]");
    uint32_t id = pp_profile_intern(out, text);
    id_ent *e = id != UINT32_MAX ? pp_htab_add(&w->ids, h) : NULL;
    if (e)
        *e = (id_ent){f->addr, f->check, line, id};
    return id;
}

/* The self-check of an untested layout on the functions of one trace: -1 when one user
 * function is implausible, 1 when one passed, 0 when none was checked. Under fam_lock. */
static int verify_trace(phpwalk *w, const uint64_t *words, size_t nframes)
{
    int ok = 0;
    for (size_t i = 0; i < nframes; i++) {
        pp_php_func f;
        if (pp_php_func_read(&w->mem, &w->L, words[2 * i], &f) != 0) {
            if (w->mem.gone)
                return 0;
            continue; /* freed since the sample: says nothing */
        }
        if (f.check == (uint32_t)words[2 * i + 1] && f.user) {
            uint32_t ln = 0;
            bool good = pp_php_func_plausible(&f) &&
                        pp_rmem_read(&w->mem, f.opcodes + w->L.zop_lineno, &ln, 4) == 0 &&
                        ln >= f.line_start && ln <= f.line_end;
            ok = good ? 1 : -1;
        }
        pp_php_func_clear(&f);
        if (ok)
            return ok;
    }
    return 0;
}

static size_t pw_name(void *state, pp_profile *out, const uint64_t *words, size_t nframes,
                      unsigned flags, uint32_t *ids, size_t cap, uint64_t *lost)
{
    phpwalk *w = state;
    if (!w->have_gen || w->generation != pp_profile_generation(out)) {
        pp_htab_clear(&w->ids);
        w->generation = pp_profile_generation(out);
        w->have_gen = true;
    }
    if (nframes > PP_RT_MAX_FRAMES)
        nframes = PP_RT_MAX_FRAMES;
    size_t k = 0;
    pthread_mutex_lock(&fam_lock);
    if (w->verified == 0) {
        int v = verify_trace(w, words, nframes);
        if (v != 0)
            w->verified = v;
        if (v < 0) {
            pthread_mutex_unlock(&fam_lock);
            char why[96];
            snprintf(why, sizeof(why), "unverified PHP %u.%u layout", w->t.major, w->t.minor);
            pp_warn_proc(w->pid, 0, "php pid %d: %s (its frames do not look like PHP %u.%u's)",
                         w->pid, why, w->t.major, w->t.minor);
            note_failed(w->pid, why);
            pthread_mutex_lock(&fam_lock);
        }
    }
    if (w->verified < 0) {
        pthread_mutex_unlock(&fam_lock);
        char text[128];
        snprintf(text, sizeof(text), "[Profiling skipped: unverified PHP %u.%u layout]", w->t.major,
                 w->t.minor);
        ids[0] = pp_profile_intern(out, text);
        return ids[0] == UINT32_MAX ? 0 : 1;
    }
    if ((flags & (PP_RT_TRUNCATED | PP_RT_READ_FAILED)) && k < cap)
        ids[k++] = pp_profile_intern(out, "[truncated]");
    for (size_t i = nframes; i-- > 0 && k < cap;) { /* root first */
        uint64_t addr = words[2 * i], aux = words[2 * i + 1];
        uint32_t check = (uint32_t)aux, idx = (uint32_t)(aux >> 32);
        pp_rmem *from = &w->mem;
        pp_php_func *f = w->fam ? fam_get(w->fam, addr, check) : NULL;
        bool owned = false;
        if (!f && (f = read_func(w, addr, check, &from))) {
            owned = !w->fam;
            if (w->fam)
                fam_put(w->fam, f);
        }
        if (!f && w->fam)
            f = fam_get_check(w->fam, check);
        if (!f) {
            (*lost)++;
            ids[k++] = pp_profile_intern(out, LOST_FRAME);
            continue;
        }
        if (from->gone) /* the lines of an exited process: a sibling's copy */
            for (phpwalk *s = w->fam ? w->fam->members : NULL; s; s = s->next)
                if (!s->mem.gone) {
                    from = &s->mem;
                    break;
                }
        int line = pp_php_func_line(from, &w->L, f, idx);
        ids[k++] = frame_id(w, out, f, line);
        if (owned) { /* not cached: free it now */
            pp_php_func_clear(f);
            free(f);
        }
    }
    pthread_mutex_unlock(&fam_lock);
    for (size_t i = 0; i < k; i++)
        if (ids[i] == UINT32_MAX)
            return 0;
    return k;
}

static const char *const loop_symbols[] = {"execute_ex", NULL};

static const pp_walker_ops ops = {
    .loop_symbols = loop_symbols,
    .begin = pw_begin,
    .name = pw_name,
    .free = pw_free,
};

/* The BPF walker's data; -1 when an offset does not fit the walker's buffers. */
static int fill_info(const phpwalk *w, struct pp_php_info *in)
{
    const pp_php_layout *L = &w->L;
    memset(in, 0, sizeof(*in));
    in->eg_ced = w->t.eg + L->eg_ced;
    in->vm_regs = 1;
    in->ed_opline = L->ed_opline;
    in->ed_func = L->ed_func;
    in->ed_prev = L->ed_prev;
    uint32_t el = L->ed_opline > L->ed_func ? L->ed_opline : L->ed_func;
    el = (el > L->ed_prev ? el : L->ed_prev) + 8;
    in->ed_len = el;
    in->fn_len = L->op_line_start + 4;
    in->fn_name = L->fn_name;
    in->fn_scope = L->fn_scope;
    in->op_last = L->op_last;
    in->op_opcodes = L->op_opcodes;
    in->op_filename = L->op_filename;
    in->op_line_start = L->op_line_start;
    in->zop_shift = 0;
    while ((1u << in->zop_shift) < L->zop_size && in->zop_shift < 7)
        in->zop_shift++;
    if (el >= 64 || in->fn_len >= 256 || in->fn_len < 24 || (1u << in->zop_shift) != L->zop_size)
        return -1;
    return 0;
}

static void *pw_prepare(const pp_runtime_ctx *ctx, int pid, void *info, size_t len,
                        pp_inwalk_status *status, char *err, size_t errlen)
{
    /* (the backend filters the processes it registers; processes started during the session
     * reach here through the agent's adoption: the same rule) */
    const char *filter = pp_runtime_opt(ctx, "php-proc-filter");
    if (filter && *filter) {
        char path[48], comm[32] = "";
        snprintf(path, sizeof(path), "/proc/%d/comm", pid);
        ssize_t cl = pp_read_small_file(path, comm, sizeof(comm));
        if (cl > 0 && comm[cl - 1] == '\n')
            comm[cl - 1] = '\0';
        if (cl <= 0 || !pp_php_filter_match(filter, comm)) {
            *status = cl <= 0 ? PP_INWALK_GONE : PP_INWALK_UNSUPPORTED;
            if (cl <= 0)
                snprintf(err, errlen, "process exited (pid %d)", pid);
            else
                snprintf(err, errlen, "not matched by --php-proc-filter");
            return NULL;
        }
    }
    phpwalk *w = calloc(1, sizeof(*w));
    if (!w || len < sizeof(struct pp_php_info)) {
        free(w);
        *status = PP_INWALK_ERROR;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->pid = pid;
    pp_rmem_init(&w->mem, pid);
    PP_HTAB_INIT(&w->ids, id_ent, 50);
    pp_php_st st = pp_php_find(pid, &w->t, err, errlen);
    const pp_php_layout *L = NULL;
    if (st == PP_PHP_FOUND && !(L = pp_php_layout_for(w->t.major, w->t.minor))) {
        snprintf(err, errlen, "unsupported PHP %u.%u", w->t.major, w->t.minor);
        st = PP_PHP_UNSUPPORTED;
    }
    if (st == PP_PHP_FOUND) {
        w->L = *L;
        w->verified = L->tested ? 1 : 0;
        if (!L->tested) {
            int v = pp_php_layout_selfcheck(&w->mem, &w->L, w->t.eg);
            if (v < 0 && w->mem.gone) {
                st = PP_PHP_GONE;
                snprintf(err, errlen, "process exited (pid %d)", pid);
            } else if (v < 0) {
                snprintf(err, errlen, "unverified PHP %u.%u layout", w->t.major, w->t.minor);
                st = PP_PHP_UNSUPPORTED;
            }
            w->verified = v;
        }
    }
    if (st == PP_PHP_FOUND && fill_info(w, info) < 0) {
        snprintf(err, errlen,
                 "unsupported PHP %u.%u (structure offsets out of the walker's bounds)", w->t.major,
                 w->t.minor);
        st = PP_PHP_UNSUPPORTED;
    }
    if (st != PP_PHP_FOUND) {
        *status = st == PP_PHP_UNSUPPORTED ? PP_INWALK_UNSUPPORTED
                  : st == PP_PHP_GONE      ? PP_INWALK_GONE
                                           : PP_INWALK_ERROR;
        pw_free(w);
        return NULL;
    }
    w->fam = fam_join(w);
    pp_debug("php pid %d: PHP %s walked in the sampler%s", pid, w->t.version,
             w->verified ? "" : " (layout to be checked on its first frames)");
    *status = PP_INWALK_OK;
    return w;
}

const pp_inwalker pp_php_inwalker = {
    .kind = PP_WALK_PHP,
    .prepare = pw_prepare,
    .ops = &ops,
};
