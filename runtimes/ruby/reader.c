/* The Ruby reader (ruby_int.h, docs/ruby.md): the process's libruby, version and symbols; iseqs
 * and their line tables, read bounded and cached. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "base/procfiles.h"
#include "runtimes/ruby/ruby_int.h"
#include "runtimes/modules.h"

#define MAX_ISEQ_WORDS (1u << 22) /* iseq_size bound (VALUE words) */
#define MAX_INFO 65536u           /* insns_info entries read */
#define MAX_ISEQS 65536u          /* cached iseqs; the cache starts over past it */
#define T_STRING 0x05u
#define T_ARRAY 0x07u
#define FL_USER1 (1ull << 13)
#define SELFCHECK_FRAMES 100000

enum { SYM_VERSION, SYM_VM, SYM_EC, NSYMS };
static const char *const sym_names[NSYMS] = {"ruby_version", "ruby_current_vm_ptr",
                                             "ruby_current_execution_context_ptr"};

static pp_rb_proc *fail(pp_rb_proc *p, pp_rb_status *st, pp_rb_status code, char *err,
                        size_t errlen, const char *fmt, const char *arg)
{
    *st = code;
    snprintf(err, errlen, fmt, arg);
    pp_rb_close(p);
    return NULL;
}

pp_rb_proc *pp_rb_open(int pid, pp_rb_status *st, char *err, size_t errlen)
{
    char pidbuf[16], file[PATH_MAX + 64];
    snprintf(pidbuf, sizeof(pidbuf), "%d", pid);
    pp_rb_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return fail(p, st, PP_RB_ERROR, err, errlen, "out of memory%s", "");
    p->pid = pid;
    pp_rmem_init(&p->mem, pid);
    PP_HTAB_INIT(&p->iseqs, pp_rb_iseq *, 50);
    pp_rt_module lib, exe;
    if (pid <= 0 || pp_rt_find_modules(pid, "libruby", &lib, &exe) != 0)
        return fail(p, st, errno == EACCES ? PP_RB_ERROR : PP_RB_GONE, err, errlen,
                    errno == EACCES ? "cannot read /proc/%s/maps (permission? run as root)"
                                    : "process exited (pid %s)",
                    pidbuf);
    pp_rt_module *mods[2] = {lib.path[0] ? &lib : NULL, exe.path[0] ? &exe : NULL};
    uint64_t sym[NSYMS] = {0}, first_load = 0;
    pp_rt_module *mod = NULL;
    for (int i = 0; i < 2 && !mod; i++) {
        if (!mods[i])
            continue;
        int fd = pp_rt_module_file(pid, mods[i], mods[i] == &exe, file, sizeof(file));
        memset(sym, 0, sizeof(sym));
        long found = file[0] ? pp_elf_symbol_values(file, sym_names, NSYMS, sym, &first_load) : -1;
        if (found > 0 && sym[SYM_VERSION] && sym[SYM_VM])
            mod = mods[i];
        if (fd >= 0)
            close(fd);
    }
    if (!mod)
        return fail(p, st, PP_RB_NOT_RUBY, err, errlen,
                    "no Ruby interpreter (ruby_version, ruby_current_vm_ptr symbols) in pid %s",
                    pidbuf);
    uint64_t bias = mod->start - first_load;
    char v[16] = "";
    if (pp_rmem_read(&p->mem, bias + sym[SYM_VERSION], v, sizeof(v) - 1) != 0)
        return fail(p, st, p->mem.gone ? PP_RB_GONE : PP_RB_ERROR, err, errlen,
                    "cannot read the memory of pid %s (permission? run as root)", pidbuf);
    int major = 0, minor = 0, micro = 0;
    if (sscanf(v, "%d.%d.%d", &major, &minor, &micro) != 3)
        return fail(p, st, PP_RB_UNSUPPORTED, err, errlen, "unsupported Ruby (version '%s')", v);
    snprintf(p->version, sizeof(p->version), "%d.%d.%d", major, minor, micro);
    const pp_rb_layout *L = pp_rb_layout_for(major, minor);
    if (!L) {
        char mm[16];
        snprintf(mm, sizeof(mm), "%d.%d", major, minor);
        return fail(p, st, PP_RB_UNSUPPORTED, err, errlen, "unsupported Ruby %s", mm);
    }
    p->L = *L;
    if (pp_rmem_ptr(&p->mem, bias + sym[SYM_VM], &p->vm) != 0 || !pp_rmem_valid_ptr(p->vm, 8))
        return fail(p, st, p->mem.gone ? PP_RB_GONE : PP_RB_ERROR, err, errlen,
                    "pid %s: no Ruby VM yet (ruby_current_vm_ptr unset)", pidbuf);
    p->ec_ptr = sym[SYM_EC] ? bias + sym[SYM_EC] : 0;
    *st = PP_RB_OK;
    err[0] = '\0';
    return p;
}

static void iseq_free(pp_rb_iseq *q)
{
    if (!q)
        return;
    free(q->label);
    free(q->path);
    free(q->lines);
    free(q->succ);
    free(q->positions);
    free(q);
}

static void cache_clear(pp_rb_proc *p)
{
    size_t pos = 0;
    for (pp_rb_iseq **e; (e = pp_htab_each(&p->iseqs, &pos));)
        iseq_free(*e);
    pp_htab_clear(&p->iseqs);
}

void pp_rb_close(pp_rb_proc *p)
{
    if (!p)
        return;
    cache_clear(p);
    pp_htab_free(&p->iseqs);
    pp_rmem_free(&p->mem);
    free(p);
}

/* ---- strings ---- */

int pp_rb_read_string(pp_rmem *m, const pp_rb_layout *L, uint64_t addr, char *out, size_t cap)
{
    uint64_t h[4];
    out[0] = '\0';
    if (!pp_rmem_valid_ptr(addr, 8) || cap < 2 || pp_rmem_read(m, addr, h, sizeof(h)) != 0 ||
        (h[0] & 0x1f) != T_STRING)
        return -1;
    uint64_t len, ptr;
    if (L->string_kind == 0 && !(h[0] & FL_USER1)) {
        len = (h[0] >> 14) & 0x1f;
        ptr = addr + 16;
    } else if (L->string_kind == 0 || L->string_kind == 2) {
        len = h[2];
        ptr = (h[0] & FL_USER1) ? h[3] : addr + 24;
    } else { /* 3.2: the length at 16 always; embedded bytes at 24 */
        len = h[2];
        ptr = (h[0] & FL_USER1) ? h[3] : addr + 24;
    }
    if (len >= cap)
        len = cap - 1;
    if (len && pp_rmem_read(m, ptr, out, (size_t)len) != 0)
        return -1;
    out[len] = '\0';
    if (memchr(out, '\0', (size_t)len))
        out[strlen(out)] = '\0';
    return 0;
}

/* The path of an iseq: pathobj is a String, or an Array [path, realpath] (realpath preferred,
 * as rbspy prints it). */
static int read_path(pp_rmem *m, const pp_rb_layout *L, uint64_t obj, char *out, size_t cap)
{
    uint64_t h[5];
    if (!pp_rmem_valid_ptr(obj, 8) || pp_rmem_read(m, obj, h, sizeof(h)) != 0)
        return -1;
    if ((h[0] & 0x1f) == T_STRING)
        return pp_rb_read_string(m, L, obj, out, cap);
    if ((h[0] & 0x1f) != T_ARRAY)
        return -1;
    uint64_t el[2] = {0, 0}, len;
    if (h[0] & FL_USER1) { /* embedded */
        len = (h[0] >> 15) & 3;
        el[0] = h[2];
        el[1] = h[3];
    } else {
        len = h[2];
        if (len < 1 || len > 2 || pp_rmem_read(m, h[4], el, (size_t)len * 8) != 0)
            return -1;
    }
    if (len >= 2 && pp_rb_read_string(m, L, el[1], out, cap) == 0 && out[0])
        return 0;
    return len >= 1 ? pp_rb_read_string(m, L, el[0], out, cap) : -1;
}

/* ---- iseqs ---- */

static int read_lines(pp_rb_proc *p, pp_rb_iseq *q, const uint8_t *body)
{
    const pp_rb_layout *L = &p->L;
    uint64_t info, positions, succ;
    uint32_t n;
    memcpy(&info, body + L->body_insns_body, 8);
    memcpy(&positions, body + L->body_insns_positions, 8);
    memcpy(&n, body + L->body_insns_size, 4);
    memcpy(&succ, body + L->body_succ, 8);
    if (n == 0 || n > MAX_INFO || !pp_rmem_valid_ptr(info, 4))
        return -1;
    size_t es = L->insn_entry_size;
    uint8_t *raw = malloc((size_t)n * es);
    q->lines = malloc((size_t)n * sizeof(*q->lines));
    if (!raw || !q->lines || pp_rmem_read(&p->mem, info, raw, (size_t)n * es) != 0) {
        free(raw);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        memcpy(&q->lines[i], raw + i * es, 4);
    free(raw);
    q->ninfo = n;
    if (n == 1)
        return 0;
    if (pp_rmem_valid_ptr(succ, 8)) {
        /* imm_part (6 words), then 10-word blocks of 512 positions past the first 54 */
        size_t blocks = q->size > 54 ? (q->size - 54) / 512 + 1 : 0;
        q->nsucc = 6 + blocks * 10;
        q->succ = malloc(q->nsucc * 8);
        if (q->succ && pp_rmem_read(&p->mem, succ, q->succ, q->nsucc * 8) == 0)
            return 0;
        free(q->succ);
        q->succ = NULL;
        q->nsucc = 0;
    }
    if (pp_rmem_valid_ptr(positions, 4)) {
        q->positions = malloc((size_t)n * 4);
        if (q->positions && pp_rmem_read(&p->mem, positions, q->positions, (size_t)n * 4) == 0)
            return 0;
        free(q->positions);
        q->positions = NULL;
    }
    return -1;
}

static pp_rb_iseq *iseq_read(pp_rb_proc *p, uint64_t addr)
{
    const pp_rb_layout *L = &p->L;
    pp_rb_iseq *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->addr = addr;
    q->bad = true;
    uint64_t h[4];
    uint8_t body[256];
    /* Read past the page cache (its pages may predate this iseq): iseqs, their bodies and their
     * strings are freed and reused as fast as a program evals code. */
    if (!pp_rmem_valid_ptr(addr, 8) || pp_rmem_read(&p->mem, addr, h, sizeof(h)) != 0 ||
        (h[0] & 0x1f) != 0x1a || ((h[0] >> 12) & 0xf) != 7)
        return q;
    memcpy(&q->body, (uint8_t *)h + L->iseq_body, 8);
    if (!pp_rmem_valid_ptr(q->body, 8) || pp_rmem_read(&p->mem, q->body, body, sizeof(body)))
        return q;
    uint64_t pathobj, label, first;
    memcpy(&q->size, body + L->body_iseq_size, 4);
    memcpy(&q->encoded, body + L->body_iseq_encoded, 8);
    memcpy(&pathobj, body + L->body_pathobj, 8);
    memcpy(&label, body + L->body_label, 8);
    memcpy(&first, body + L->body_first_lineno, 8);
    if (L->first_lineno_int) { /* 3.2+: an int (and node_id in the next 4 bytes) */
        int32_t n;
        memcpy(&n, &first, sizeof(n));
        if (n < 0)
            return q;
        first = ((uint64_t)n << 1) | 1;
    }
    if (q->size == 0 || q->size > MAX_ISEQ_WORDS || !pp_rmem_valid_ptr(q->encoded, 8) ||
        !(first & 1))
        return q;
    q->first_lineno = (int)((int64_t)first >> 1);
    char lbuf[512], pbuf[PATH_MAX];
    if (pp_rb_read_string(&p->mem, L, label, lbuf, sizeof(lbuf)) != 0 || !lbuf[0] ||
        read_path(&p->mem, L, pathobj, pbuf, sizeof(pbuf)) != 0)
        return q;
    q->label = strdup(lbuf);
    q->path = strdup(pbuf);
    if (!q->label || !q->path)
        return q;
    read_lines(p, q, body); /* without a line table the line is first_lineno */
    /* Still the same iseq with the same body after its strings were read: else they may be
     * another's (a label freed and reused between the reads). */
    uint64_t h2[4];
    uint8_t body2[256];
    if (pp_rmem_read(&p->mem, addr, h2, sizeof(h2)) != 0 ||
        memcmp((uint8_t *)h2 + L->iseq_body, &q->body, 8) != 0 ||
        pp_rmem_read(&p->mem, q->body, body2, sizeof(body2)) != 0)
        return q;
    const uint32_t named[] = {L->body_label, L->body_pathobj, L->body_first_lineno,
                              L->body_iseq_encoded, L->body_insns_body};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (memcmp(body + named[i], body2 + named[i], 8) != 0)
            return q; /* (what it is named by changed: mutable counters are not compared) */
    q->bad = false;
    return q;
}

pp_rb_iseq *pp_rb_iseq_get(pp_rb_proc *p, uint64_t addr, unsigned gen)
{
    uint64_t h = pp_hash_u64(addr);
    pp_htab_probe pr;
    pp_rb_iseq **slot = NULL;
    for (pp_rb_iseq **e = pp_htab_first(&p->iseqs, h, &pr); e; e = pp_htab_next(&p->iseqs, &pr))
        if ((*e)->addr == addr) {
            slot = e;
            break;
        }
    if (slot && (*slot)->checked_gen == gen)
        return (*slot)->bad ? NULL : *slot;
    if (slot) { /* validate once per drain: the same iseq (body) still at addr */
        uint64_t w[4];
        pp_rb_iseq *q = *slot;
        if (!q->bad && pp_rmem_read_cached(&p->mem, addr, w, sizeof(w)) == 0 &&
            memcmp((uint8_t *)w + p->L.iseq_body, &q->body, 8) == 0) {
            q->checked_gen = gen;
            return q;
        }
        if (p->mem.gone) /* exited since the sample: keep what was read */
            return q->bad ? NULL : q;
        pp_htab_remove(&p->iseqs, slot);
        iseq_free(q);
    }
    if (pp_htab_count(&p->iseqs) >= MAX_ISEQS)
        cache_clear(p);
    pp_rb_iseq *q = iseq_read(p, addr);
    if (!q)
        return NULL;
    q->checked_gen = gen;
    pp_rb_iseq **e = pp_htab_add(&p->iseqs, h);
    if (!e) {
        iseq_free(q);
        return NULL;
    }
    *e = q;
    return q->bad ? NULL : q;
}

/* ---- the self-check ---- */

/* The script named on the command line (the first argument after the options), or "". */
static void cmdline_script(int pid, char *out, size_t len)
{
    char path[48], buf[4096];
    out[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    ssize_t n = pp_read_small_file(path, buf, sizeof(buf) - 1);
    if (n <= 0)
        return;
    buf[n] = '\0';
    for (const char *a = buf + strlen(buf) + 1; a < buf + n; a += strlen(a) + 1) {
        if (a[0] == '-') {
            if (strcmp(a, "-e") == 0) {
                snprintf(out, len, "-e");
                return;
            }
            if ((strcmp(a, "-r") == 0 || strcmp(a, "-I") == 0 || strcmp(a, "-C") == 0) &&
                a + strlen(a) + 1 < buf + n)
                a += strlen(a) + 1;
            continue;
        }
        snprintf(out, len, "%s", a);
        return;
    }
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The thread's own execution context. While a fiber runs, th->ec points at the fiber's context
 * (each fiber has its own; a fiber's stack holds its own frames only, from its block), so the
 * thread's first context is found through th->root_fiber, set once the thread made a fiber: it
 * is embedded in the root fiber's rb_fiber_t (private to cont.c, its offset not in any header),
 * found as the first aligned word among the fiber's first ROOT_FIBER_SCAN bytes whose context
 * points back to the thread (ec->thread_ptr) and whose frame pointer is inside its VM stack.
 * th->ec when there is no root fiber or no such word. */
#define ROOT_FIBER_SCAN 512
static uint64_t thread_root_ec(pp_rb_proc *h, uint64_t th, uint64_t ec)
{
    const pp_rb_layout *L = &h->L;
    uint64_t fib = 0, words[ROOT_FIBER_SCAN / 8];
    if (!L->th_root_fiber || pp_rmem_ptr(&h->mem, th + L->th_root_fiber, &fib) ||
        !pp_rmem_valid_ptr(fib, 8) || pp_rmem_read(&h->mem, fib, words, sizeof(words)) != 0)
        return ec;
    unsigned ne = L->ec_thread / 8;
    for (unsigned i = 0; i + ne < ROOT_FIBER_SCAN / 8; i++) {
        if (words[i + ne] != th)
            continue;
        uint64_t cand = fib + i * 8ull, stack = 0, size = 0, cfp = 0;
        if (pp_rmem_ptr(&h->mem, cand + L->ec_vm_stack, &stack) == 0 &&
            pp_rmem_ptr(&h->mem, cand + L->ec_vm_stack_size, &size) == 0 &&
            pp_rmem_ptr(&h->mem, cand + L->ec_cfp, &cfp) == 0 && pp_rmem_valid_ptr(stack, 8) &&
            size <= (1u << 28) && cfp >= stack && cfp < stack + size * 8)
            return cand;
    }
    return ec;
}

int pp_rb_self_check(pp_rb_proc *h, char *why, size_t len)
{
    const pp_rb_layout *L = &h->L;
    uint64_t th = 0, ec = 0, stack = 0, size = 0, cfp = 0;
    if (pp_rmem_ptr(&h->mem, h->vm + L->vm_main_thread, &th) || !pp_rmem_valid_ptr(th, 8) ||
        pp_rmem_ptr(&h->mem, th + L->th_ec, &ec) || !pp_rmem_valid_ptr(ec, 8) ||
        !(ec = thread_root_ec(h, th, ec)) || pp_rmem_ptr(&h->mem, ec + L->ec_vm_stack, &stack) ||
        pp_rmem_ptr(&h->mem, ec + L->ec_vm_stack_size, &size) ||
        pp_rmem_ptr(&h->mem, ec + L->ec_cfp, &cfp) || !pp_rmem_valid_ptr(stack, 8) ||
        size > (1u << 28) || cfp < stack) {
        snprintf(why, len, "the main thread's execution context does not read");
        return -1;
    }
    uint64_t end = stack + size * 8 - L->cfp_size, root = 0;
    /* frames are pushed down from the dummy frame at the stack's end: cfp is on that grid */
    if (!L->cfp_size || cfp > end || (end - cfp) % L->cfp_size != 0) {
        snprintf(why, len, "the main thread's frame pointer is not on the frame grid");
        return -1;
    }
    for (int i = 0; i < SELFCHECK_FRAMES && cfp < end; i++, cfp += L->cfp_size) {
        uint64_t iseq = 0;
        if (pp_rmem_ptr(&h->mem, cfp + L->cfp_iseq, &iseq) != 0)
            break;
        if (iseq && pp_rb_iseq_get(h, iseq, 0))
            root = iseq;
    }
    pp_rb_iseq *q = root ? pp_rb_iseq_get(h, root, 0) : NULL;
    char script[PATH_MAX];
    cmdline_script(h->pid, script, sizeof(script));
    if (!q || strcmp(q->label, "<main>") != 0 ||
        (script[0] && strcmp(base_name(q->path), base_name(script)) != 0)) {
        snprintf(why, len, "the main thread's outermost frame is %s, not <main> of %s",
                 q ? q->label : "not an iseq", script[0] ? script : "its script");
        return -1;
    }
    return 0;
}

/* ---- line numbers ---- */

long pp_rb_succ_rank(const uint64_t *tab, size_t nwords, uint32_t pos)
{
    if (nwords < 6)
        return -1;
    if (pos < 54)
        return (long)((tab[pos / 9] >> ((pos % 9) * 7)) & 0x7f);
    uint32_t b = (pos - 54) / 512, bit = (pos - 54) % 512, s = bit / 64;
    size_t base = 6 + (size_t)b * 10;
    if (base + 10 > nwords)
        return -1;
    uint32_t rank = (uint32_t)tab[base]; /* unsigned int rank, then padding */
    uint64_t small = tab[base + 1];
    long r = (long)rank + (s ? (long)((small >> ((s - 1) * 9)) & 0x1ff) : 0);
    return r + __builtin_popcountll(tab[base + 2 + s] << (63 - bit % 64));
}

long pp_rb_positions_index(const uint32_t *pos, uint32_t n, uint32_t at)
{
    long lo = 0, hi = (long)n - 1, best = -1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (pos[mid] <= at) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

int pp_rb_iseq_line(const pp_rb_iseq *q, uint64_t pc)
{
    if (!pc || pc < q->encoded || (pc - q->encoded) / 8 > q->size || !q->ninfo)
        return q->first_lineno;
    uint32_t pos = (uint32_t)((pc - q->encoded) / 8);
    if (pos > 0)
        pos--; /* the pc points past the instruction being run */
    if (q->ninfo == 1)
        return q->lines[0];
    long idx = -1;
    if (q->succ) {
        long r = pp_rb_succ_rank(q->succ, q->nsucc, pos);
        idx = r >= 1 ? r - 1 : -1;
    } else if (q->positions) {
        idx = pp_rb_positions_index(q->positions, q->ninfo, pos);
    }
    return idx >= 0 && idx < (long)q->ninfo ? q->lines[idx] : q->first_lineno;
}

void pp_rb_frame_text(char *out, size_t len, const char *label, const char *path, int line)
{
    if (!label)
        snprintf(out, len, "(unknown) [c function] - (unknown):0");
    else
        snprintf(out, len, "%s - %s:%d_[rb]", label, path ? path : "(unknown)", line);
}
