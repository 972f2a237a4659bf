/* The Ruby reader (runtimes/ruby/ruby_int.h) against Debian's ruby 3.1: a fixture stopped in a
 * known stack (tests/fixtures/ruby/stacks.rb) is walked through the layout and every frame's
 * label, path and line must match the fixture; the layout self-check passes with the right table
 * and refuses a wrong one (PP_RUBY_TEST_LAYOUT), and every other version's table; every table
 * is internally sane and reads a fake iseq laid out by it; the line tables' succinct bitvector
 * against a plain count; rbspy's frame texts; garbage memory through the reader's test hook. */
#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "base/child.h"
#include "runtimes/ruby/walker_info.h"
#include "runtimes/ruby/ruby_int.h"
#include "runtimes/runtime.h"
#include "runtimes/system/sampler.h"
#include "testutil.h"

#define RUBY "/usr/bin/ruby"
#define FIXTURE "tests/fixtures/ruby/stacks.rb"
#define FIBER_FIXTURE "tests/fixtures/ruby/fiber.rb"

extern const pp_inwalker pp_ruby_inwalker;

typedef struct fixture {
    pp_child *child;
    char *dir;
    int pid;
    char path[PATH_MAX], ready[PATH_MAX];
} fixture;

static void fixture_start_script(fixture *f, const char *script)
{
    memset(f, 0, sizeof(*f));
    if (access(RUBY, X_OK) != 0)
        cr_skip_test("needs %s (Debian's ruby: apt-get install ruby)", RUBY);
    cr_assert(realpath(script, f->path), "run from the repository root");
    f->dir = pp_test_mkdtemp();
    snprintf(f->ready, sizeof(f->ready), "%s/ready", f->dir);
    char *argv[] = {RUBY, f->path, f->ready, NULL};
    pp_child_opts o = {.argv = argv, .quiet = true};
    char err[256];
    f->child = pp_child_start(&o, err, sizeof(err));
    cr_assert(f->child, "%s", err);
    f->pid = pp_child_pid(f->child);
    for (int i = 0; i < 3000 && access(f->ready, R_OK) != 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    cr_assert(access(f->ready, R_OK) == 0, "ruby did not get ready");
}

static void fixture_start(fixture *f)
{
    fixture_start_script(f, FIXTURE);
}

static void fixture_stop(fixture *f)
{
    pp_child_free(f->child);
    pp_test_rmtree(f->dir);
}

/* The main thread's frames as the BPF walker reads them (innermost first), named. */
static size_t walk_main(pp_rb_proc *p, char out[][600], size_t cap)
{
    const pp_rb_layout *L = &p->L;
    uint64_t th, ec, stack, size, cfp;
    cr_assert(pp_rmem_ptr(&p->mem, p->vm + L->vm_main_thread, &th) == 0);
    cr_assert(pp_rmem_ptr(&p->mem, th + L->th_ec, &ec) == 0);
    cr_assert(pp_rmem_ptr(&p->mem, ec + L->ec_vm_stack, &stack) == 0);
    cr_assert(pp_rmem_ptr(&p->mem, ec + L->ec_vm_stack_size, &size) == 0);
    cr_assert(pp_rmem_ptr(&p->mem, ec + L->ec_cfp, &cfp) == 0);
    size_t n = 0;
    for (uint64_t end = stack + size * 8 - L->cfp_size; cfp < end && n < cap; cfp += L->cfp_size) {
        uint64_t pc = 0, iseq = 0, ep = 0, flags = 0;
        if (pp_rmem_ptr(&p->mem, cfp + L->cfp_pc, &pc) ||
            pp_rmem_ptr(&p->mem, cfp + L->cfp_iseq, &iseq) ||
            pp_rmem_ptr(&p->mem, cfp + L->cfp_ep, &ep))
            break;
        if (!iseq) {
            if (pp_rmem_ptr(&p->mem, ep, &flags) == 0 &&
                (flags & PP_RUBY_FRAME_MAGIC_MASK) == PP_RUBY_FRAME_MAGIC_CFUNC)
                pp_rb_frame_text(out[n++], 600, NULL, NULL, 0);
            continue;
        }
        pp_rb_iseq *q = pp_rb_iseq_get(p, iseq, 1);
        if (q)
            pp_rb_frame_text(out[n++], 600, q->label, q->path, pp_rb_iseq_line(q, pc));
    }
    return n;
}

/* Asserts that the main thread's frames are `want` ({label, marker}; NULL label: a C function)
 * of `script` (at `path`), walking it until they are, for up to 3 s: the ready file exists from
 * the moment File.write opens it, while the thread may still be inside File.write (a C
 * function too) on the line before the marker. */
static void expect_stack(pp_rb_proc *p, const char *script, const char *path, const char *want[][2],
                         size_t nw)
{
    char exp[16][PATH_MAX + 600], got[32][600];
    cr_assert(nw <= 16);
    for (size_t i = 0; i < nw; i++)
        pp_rb_frame_text(exp[i], sizeof(exp[i]), want[i][0], path,
                         want[i][1] ? pp_test_marker(script, want[i][1]) : 0);
    size_t n = 0, same = 0;
    for (int i = 0; i < 300; i++) {
        pp_rmem_begin_sample(&p->mem);
        n = walk_main(p, got, 32);
        for (same = 0; n == nw && same < nw && strcmp(got[same], exp[same]) == 0; same++)
            ;
        if (n == nw && same == nw)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < n; i++)
        cr_log_info("frame %zu: %s", i, got[i]);
    cr_assert_eq(n, nw);
    for (size_t i = 0; i < nw; i++)
        cr_assert_str_eq(got[i], exp[i], "frame %zu", i);
}

Test(ruby, fixture_stack_exact)
{
    pp_test_quiet_log();
    fixture f;
    fixture_start(&f);
    pp_rb_status st;
    char err[256];
    pp_rb_proc *p = pp_rb_open(f.pid, &st, err, sizeof(err));
    cr_assert(p, "%s", err);
    cr_assert_eq(p->L.major, 3);
    cr_assert_str_eq(p->version, "3.1.2");
    /* innermost first; NULL: a C function */
    const char *want[][2] = {{NULL, NULL},
                             {"deep", "sleep"},
                             {"deep", "deep"},
                             {"deep", "deep"},
                             {"block in <class:Shape>", "dm"},
                             {"inner", "inner"},
                             {"block in area", "area"},
                             {NULL, NULL}, /* Integer#times */
                             {"area", "area"},
                             {"<main>", "main"}};
    expect_stack(p, FIXTURE, f.path, want, sizeof(want) / sizeof(want[0]));
    pp_rb_close(p);
    fixture_stop(&f);
}

/* The walker's prepare(): the tested 3.1 table is used as is; treated as untested, the
 * self-check passes; with a wrong table it fails and the process is skipped as unverified. */
Test(ruby, layout_self_check)
{
    pp_test_quiet_log();
    fixture f;
    fixture_start(&f);
    const char *modes[] = {"", "untested", "wrong"};
    for (int i = 0; i < 3; i++) {
        setenv("PP_RUBY_TEST_LAYOUT", modes[i], 1);
        unsigned char info[192];
        char err[256] = "";
        pp_inwalk_status st;
        void *state =
            pp_ruby_inwalker.prepare(NULL, f.pid, info, sizeof(info), &st, err, sizeof(err));
        if (i < 2) {
            cr_assert(state && st == PP_INWALK_OK, "%s: %s", modes[i], err);
            const struct pp_ruby_info *in = (const void *)info;
            cr_assert_eq(in->root_ec, 520);
            cr_assert_eq(in->cfp_size, 64);
            pp_ruby_inwalker.ops->free(state);
        } else {
            cr_assert(!state && st == PP_INWALK_UNSUPPORTED);
            cr_assert_str_eq(err, "unverified Ruby 3.1 layout");
        }
    }
    unsetenv("PP_RUBY_TEST_LAYOUT");
    fixture_stop(&f);
}

Test(ruby, not_ruby_and_gone)
{
    pp_test_quiet_log();
    pp_rb_status st;
    char err[256];
    cr_assert_null(pp_rb_open(getpid(), &st, err, sizeof(err)));
    cr_assert_eq(st, PP_RB_NOT_RUBY, "%s", err);
    cr_assert_null(pp_rb_open(0x3fffffff, &st, err, sizeof(err)));
    cr_assert_eq(st, PP_RB_GONE, "%s", err);
}

/* Ruby's succ_index_table built from a set of positions, as iseq.c builds it. */
static size_t build_succ(const bool *set, uint32_t size, uint64_t *tab)
{
    uint32_t rank = 0;
    memset(tab, 0, 6 * 8);
    for (uint32_t x = 0; x < 54 && x < size; x++) {
        rank += set[x];
        tab[x / 9] |= (uint64_t)rank << ((x % 9) * 7);
    }
    size_t blocks = size > 54 ? (size - 54) / 512 + 1 : 0;
    for (size_t b = 0; b < blocks; b++) {
        uint64_t *blk = tab + 6 + b * 10;
        memset(blk, 0, 80);
        blk[0] = rank;
        uint32_t in_block = 0;
        for (uint32_t s = 0; s < 8; s++) {
            if (s)
                blk[1] |= (uint64_t)in_block << ((s - 1) * 9);
            for (uint32_t bit = 0; bit < 64; bit++) {
                uint32_t x = 54 + (uint32_t)b * 512 + s * 64 + bit;
                if (x < size && set[x]) {
                    blk[2 + s] |= 1ull << bit;
                    in_block++;
                }
            }
        }
        rank += in_block;
    }
    return 6 + blocks * 10;
}

Test(ruby, succinct_rank_matches_count)
{
    static bool set[3000];
    static uint64_t tab[6 + 6 * 10];
    srand(7);
    for (int round = 0; round < 20; round++) {
        uint32_t size = 1 + (uint32_t)(rand() % 3000);
        for (uint32_t i = 0; i < size; i++)
            set[i] = i == 0 || rand() % (1 + round % 5) == 0;
        size_t nw = build_succ(set, size, tab);
        long count = 0;
        for (uint32_t pos = 0; pos < size; pos++) {
            count += set[pos];
            cr_assert_eq(pp_rb_succ_rank(tab, nw, pos), count, "size %u pos %u", size, pos);
        }
        cr_assert_eq(pp_rb_succ_rank(tab, nw, size + 600), -1);
    }
    uint32_t pos[] = {0, 3, 9, 20};
    cr_assert_eq(pp_rb_positions_index(pos, 4, 0), 0);
    cr_assert_eq(pp_rb_positions_index(pos, 4, 8), 1);
    cr_assert_eq(pp_rb_positions_index(pos, 4, 100), 3);
}

Test(ruby, frame_texts)
{
    char t[256];
    pp_rb_frame_text(t, sizeof(t), "block in run", "/app/x.rb", 12);
    cr_assert_str_eq(t, "block in run - /app/x.rb:12_[rb]");
    pp_rb_frame_text(t, sizeof(t), NULL, NULL, 0);
    cr_assert_str_eq(t, "(unknown) [c function] - (unknown):0");
}

/* Garbage memory: every read answered from a pseudo-random buffer; the reader never crashes,
 * and whatever it accepts is NUL-terminated and bounded. */
static int garbage(void *arg, uint64_t addr, void *buf, size_t len)
{
    unsigned *seed = arg;
    uint8_t *b = buf;
    for (size_t i = 0; i < len; i++) {
        *seed = *seed * 1103515245u + 12345u;
        b[i] = (uint8_t)(*seed >> 16);
        if ((*seed >> 8) % 7 == 0) /* plausible flags and pointers now and then */
            b[i] = i % 8 == 0 ? 0x1a : (uint8_t)(addr >> (8 * (i % 6)));
    }
    return (*seed >> 4) % 13 == 0 ? -1 : 0;
}

/* A reader over test memory (the hook answers every read) with the layout L. */
static pp_rb_proc *hooked_proc(const pp_rb_layout *L, pp_rmem_hook hook, void *arg)
{
    pp_rb_proc *pp = calloc(1, sizeof(*pp));
    cr_assert(pp);
    pp->L = *L;
    pp_rmem_init(&pp->mem, 1);
    PP_HTAB_INIT(&pp->iseqs, pp_rb_iseq *, 50);
    pp->mem.hook = hook;
    pp->mem.hook_arg = arg;
    return pp;
}

Test(ruby, garbage_memory)
{
    for (size_t t = 0; pp_rb_layout_at(t); t++) { /* every table */
        unsigned seed = 1 + (unsigned)t;
        pp_rb_proc *pp = hooked_proc(pp_rb_layout_at(t), garbage, &seed);
#define p (*pp)
        for (int i = 0; i < 20000; i++) {
            pp_rb_iseq *q = pp_rb_iseq_get(&p, 0x10000 + (uint64_t)i * 64, (unsigned)i);
            if (q) {
                cr_assert(strlen(q->label) < 512);
                (void)pp_rb_iseq_line(q, q->encoded + (uint64_t)(i % 100) * 8);
            }
            char s[64];
            if (pp_rb_read_string(&p.mem, &p.L, 0x20000 + (uint64_t)i * 8, s, sizeof(s)) == 0)
                cr_assert(strlen(s) < sizeof(s));
        }
#undef p
        pp->mem.hook = NULL;
        pp_rb_close(pp);
    }
}

/* Every table is internally sane: offsets aligned and within their structures, within the
 * walker's and the reader's buffers, the version switches where the versions need them; only
 * the versions tested here (3.1) are marked tested. */
Test(ruby, layout_tables_sane)
{
    unsetenv("PP_RUBY_TEST_LAYOUT");
    int seen[5][10] = {{0}};
    size_t n = 0;
    for (const pp_rb_layout *L; (L = pp_rb_layout_at(n)); n++) {
        int v = L->major * 10 + L->minor;
        cr_assert(v >= 26 && v <= 34 && (L->major == 3 || L->minor >= 6), "version %d", v);
        cr_assert(!seen[L->major][L->minor]++, "two tables for %d.%d", L->major, L->minor);
        cr_assert_eq(pp_rb_layout_for(L->major, L->minor), L);
        cr_assert_eq(L->tested, v == 31, "%d.%d: only 3.1 is tested here", L->major, L->minor);
        /* rb_control_frame_t: 7 or 8 words, the walker's buffer is 64 bytes */
        cr_assert(L->cfp_size % 8 == 0 && L->cfp_size >= 56 && L->cfp_size <= 64, "%d", v);
        unsigned cf[3] = {L->cfp_pc, L->cfp_iseq, L->cfp_ep};
        for (int i = 0; i < 3; i++) {
            cr_assert(cf[i] % 8 == 0 && cf[i] + 8 <= L->cfp_size, "%d cfp field %d", v, i);
            for (int j = 0; j < i; j++)
                cr_assert_neq(cf[i], cf[j], "%d", v);
        }
        /* rb_execution_context_t: its first words; rb_iseq_t.body within the walker's 31 */
        unsigned ec[4] = {L->ec_vm_stack, L->ec_vm_stack_size, L->ec_cfp, L->ec_thread};
        for (int i = 0; i < 4; i++) {
            cr_assert(ec[i] % 8 == 0 && ec[i] < 128, "%d ec field %d", v, i);
            for (int j = 0; j < i; j++)
                cr_assert_neq(ec[i], ec[j], "%d", v);
        }
        cr_assert(L->iseq_body % 8 == 0 && L->iseq_body >= 8 && L->iseq_body <= 24);
        /* rb_thread_t, rb_native_thread, rb_vm_t, rb_ractor_t */
        cr_assert(L->th_ec % 8 == 0 && L->th_ec < 256 && L->th_thread_id % 8 == 0 &&
                  L->th_thread_id < 512 && L->th_nt % 8 == 0 && L->th_nt < 256);
        cr_assert_eq(L->th_nt != 0, v >= 32, "%d: rb_native_thread from 3.2", v);
        /* th->root_fiber: a pointer after ec and thread_id (or nt), inside rb_thread_t */
        cr_assert(L->th_root_fiber % 8 == 0 && L->th_root_fiber > L->th_ec &&
                      L->th_root_fiber < 512 && L->th_root_fiber != L->th_thread_id,
                  "%d root_fiber %u", v, L->th_root_fiber);
        cr_assert(L->vm_main_thread % 8 == 0 && L->vm_main_thread < 1024);
        if (L->major == 2) {
            cr_assert_eq(L->root_ec, -1, "%d: no ractor before 3.0", v);
        } else {
            cr_assert(L->root_ec > 0 && L->root_ec % 8 == 0 && L->root_ec < 2048, "%d", v);
            cr_assert(L->vm_main_ractor % 8 == 0 && L->vm_main_ractor < L->vm_main_thread);
        }
        /* rb_iseq_constant_body: the reader reads its first 256 bytes */
        cr_assert(L->body_iseq_size % 4 == 0 && L->body_iseq_size + 4 <= L->body_iseq_encoded);
        unsigned words[] = {L->body_iseq_encoded, L->body_pathobj,    L->body_label,
                            L->body_first_lineno, L->body_insns_body, L->body_insns_positions,
                            L->body_insns_size,   L->body_succ};
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
            cr_assert(words[i] % (i == 6 ? 4 : 8) == 0 && words[i] + 8 <= 256, "%d #%zu", v, i);
            if (i)
                cr_assert_gt(words[i], words[i - 1], "%d: body fields in order (#%zu)", v, i);
        }
        cr_assert_eq(L->first_lineno_int, v >= 32, "%d: first_lineno an int from 3.2", v);
        cr_assert_eq(L->insn_entry_size, v >= 31 ? 12u : 8u, "%d: node_id from 3.1", v);
        cr_assert_eq(L->string_kind, v <= 31 ? 0 : v == 32 ? 1 : 2, "%d", v);
    }
    cr_assert_eq(n, 7u);
    cr_assert_null(pp_rb_layout_for(2, 5));
    cr_assert_null(pp_rb_layout_for(3, 5));
    cr_assert_null(pp_rb_layout_for(4, 0));
    setenv("PP_RUBY_TEST_LAYOUT", "untested", 1);
    for (size_t i = 0; pp_rb_layout_at(i); i++)
        cr_assert(!pp_rb_layout_for(pp_rb_layout_at(i)->major, pp_rb_layout_at(i)->minor)->tested);
    unsetenv("PP_RUBY_TEST_LAYOUT");
}

/* A fake iseq in test memory laid out by each table: the reader finds its label, path, first
 * line (a Fixnum before 3.2, an int after) and line table through the table's offsets and its
 * String layout (embedded label, heap path). */
#define IMG_BASE 0x100000u
typedef struct image {
    uint8_t b[4096];
} image;

static int image_read(void *arg, uint64_t addr, void *buf, size_t len)
{
    image *im = arg;
    if (addr < IMG_BASE || addr - IMG_BASE + len > sizeof(im->b))
        return -1;
    memcpy(buf, im->b + (addr - IMG_BASE), len);
    return 0;
}

static void put64(image *im, unsigned off, uint64_t v)
{
    memcpy(im->b + off, &v, 8);
}

/* A String at off: embedded (the bytes in the object) or on the heap at data. */
static void put_string(image *im, const pp_rb_layout *L, unsigned off, const char *s, bool heap,
                       unsigned data)
{
    uint64_t len = strlen(s);
    if (heap) {
        put64(im, off, 0x05 | (1u << 13));
        put64(im, off + 16, len);
        put64(im, off + 24, IMG_BASE + data);
        memcpy(im->b + data, s, len);
    } else if (L->string_kind == 0) {
        put64(im, off, 0x05 | (len << 14));
        memcpy(im->b + off + 16, s, len);
    } else {
        put64(im, off, 0x05);
        put64(im, off + 16, len);
        memcpy(im->b + off + 24, s, len);
    }
}

enum { F_BODY = 256, F_LABEL = 1024, F_PATH = 1280, F_CODE = 2048, F_ENTRIES = 3072 };

/* An iseq at IMG_BASE whose body (at body) names "block in run" of worker.rb, first line 42,
 * one line-table entry (line 43). */
static void fake_iseq(image *im, const pp_rb_layout *L, unsigned body)
{
    put64(im, 0, 0x1a | (7u << 12)); /* T_IMEMO, imemo_iseq */
    put64(im, L->iseq_body, IMG_BASE + body);
    uint32_t size = 10, n = 1, line = 43;
    memcpy(im->b + body + L->body_iseq_size, &size, 4);
    put64(im, body + L->body_iseq_encoded, IMG_BASE + F_CODE);
    put64(im, body + L->body_pathobj, IMG_BASE + F_PATH);
    put64(im, body + L->body_label, IMG_BASE + F_LABEL);
    if (L->first_lineno_int) {
        uint64_t w = 42 | (7ull << 32); /* int first_lineno, then node_id 7 */
        put64(im, body + L->body_first_lineno, w);
    } else {
        put64(im, body + L->body_first_lineno, (42u << 1) | 1);
    }
    put64(im, body + L->body_insns_body, IMG_BASE + F_ENTRIES);
    memcpy(im->b + body + L->body_insns_size, &n, 4);
    memcpy(im->b + F_ENTRIES, &line, 4);
    put_string(im, L, F_LABEL, "block in run", false, 0);
    put_string(im, L, F_PATH, "/app/some/long/path/worker.rb", true, 1536);
}

Test(ruby, layout_reads_fake_iseq)
{
    for (size_t t = 0; pp_rb_layout_at(t); t++) {
        const pp_rb_layout *L = pp_rb_layout_at(t);
        static image im;
        memset(&im, 0, sizeof(im));
        fake_iseq(&im, L, F_BODY);
        pp_rb_proc *pp = hooked_proc(L, image_read, &im);
        pp_rb_iseq *q = pp_rb_iseq_get(pp, IMG_BASE, 1);
        cr_assert(q, "%d.%d", L->major, L->minor);
        cr_assert_str_eq(q->label, "block in run");
        cr_assert_str_eq(q->path, "/app/some/long/path/worker.rb");
        cr_assert_eq(q->first_lineno, 42, "%d.%d", L->major, L->minor);
        cr_assert_eq(pp_rb_iseq_line(q, IMG_BASE + F_CODE + 16), 43);
        cr_assert_eq(pp_rb_iseq_line(q, 0), 42);
        pp->mem.hook = NULL;
        pp_rb_close(pp);
    }
}

/* The iseq is freed while it is read, after its body: its label's memory now holds the label of
 * the iseq made at the same address (another body, another first line; or, in_place, the same
 * body's memory reused with another first line). */
typedef struct reused {
    image im;
    const pp_rb_layout *L;
    bool done, in_place;
} reused;

static int reuse_on_label(void *arg, uint64_t addr, void *buf, size_t len)
{
    reused *r = arg;
    if (!r->done && addr == IMG_BASE + F_LABEL) {
        r->done = true;
        put_string(&r->im, r->L, F_LABEL, "other_method", false, 0);
        if (r->in_place) {
            uint64_t first = r->L->first_lineno_int ? 99 : (99u << 1) | 1;
            put64(&r->im, F_BODY + r->L->body_first_lineno, first);
        } else {
            put64(&r->im, r->L->iseq_body, IMG_BASE + 512); /* the new iseq's body */
        }
    }
    return image_read(&r->im, addr, buf, len);
}

Test(ruby, an_iseq_reused_while_read_is_not_named)
{
    for (size_t t = 0; pp_rb_layout_at(t / 2); t++) { /* each table, both ways */
        static reused r;
        memset(&r, 0, sizeof(r));
        r.L = pp_rb_layout_at(t / 2);
        r.in_place = t % 2;
        fake_iseq(&r.im, r.L, F_BODY);
        fake_iseq(&r.im, r.L, 512);
        put64(&r.im, r.L->iseq_body, IMG_BASE + F_BODY);
        put_string(&r.im, r.L, F_LABEL, "block in run", false, 0);
        pp_rb_proc *pp = hooked_proc(r.L, reuse_on_label, &r);
        pp_rb_iseq *q = pp_rb_iseq_get(pp, IMG_BASE, 1);
        cr_assert(r.done, "the label was read");
        cr_expect_null(q, "%d.%d: named %s with the old body's first line", r.L->major, r.L->minor,
                       q ? q->label : "");
        /* read again (next drain): the new iseq, named by what it holds now */
        q = pp_rb_iseq_get(pp, IMG_BASE, 2);
        cr_assert(q, "%d.%d", r.L->major, r.L->minor);
        cr_expect_str_eq(q->label, "other_method");
        pp->mem.hook = NULL;
        pp_rb_close(pp);
    }
}

/* Another version's table on a real Ruby 3.1: the self-check refuses it (the process would be
 * skipped as unverified), so a table applied to the wrong layout never gives frames. */
Test(ruby, other_tables_refused_on_31)
{
    pp_test_quiet_log();
    fixture f;
    fixture_start(&f);
    for (size_t i = 0; pp_rb_layout_at(i); i++) {
        const pp_rb_layout *L = pp_rb_layout_at(i);
        if (L->major == 3 && L->minor == 1)
            continue;
        char mode[16], want[64], err[256] = "";
        snprintf(mode, sizeof(mode), "%d.%d", L->major, L->minor);
        snprintf(want, sizeof(want), "unverified Ruby %d.%d layout", L->major, L->minor);
        setenv("PP_RUBY_TEST_LAYOUT", mode, 1);
        unsigned char info[192];
        pp_inwalk_status st;
        void *state =
            pp_ruby_inwalker.prepare(NULL, f.pid, info, sizeof(info), &st, err, sizeof(err));
        cr_expect(!state && st == PP_INWALK_UNSUPPORTED, "table %s taken on 3.1: %s", mode, err);
        if (state)
            pp_ruby_inwalker.ops->free(state);
        else
            cr_expect_str_eq(err, want);
    }
    unsetenv("PP_RUBY_TEST_LAYOUT");
    fixture_stop(&f);
}

/* A thread inside fibers (tests/fixtures/ruby/fiber.rb): the running context is the innermost
 * fiber's, whose frames are its own only (the Enumerator's generator under Enumerator#each and
 * its Generator's each; the resumer's frames are on other stacks); the self-check of an
 * untested table still finds `<main>`, on the main thread's root fiber. */
Test(ruby, fiber_stacks_and_self_check)
{
    pp_test_quiet_log();
    fixture f;
    fixture_start_script(&f, FIBER_FIXTURE);
    pp_rb_status st;
    char err[256];
    pp_rb_proc *p = pp_rb_open(f.pid, &st, err, sizeof(err));
    cr_assert(p, "%s", err);
    /* innermost first; NULL: a C function. The Enumerator's fiber starts in its C function
     * next_i (an ifunc frame, not a method: skipped), which calls Enumerator#each. */
    const char *want[][2] = {{NULL, NULL},                /* Kernel#sleep */
                             {"gen", "gen"},              /* */
                             {"block in in_fiber", "en"}, /* the Enumerator's block */
                             {NULL, NULL},                /* Enumerator::Generator#each */
                             {NULL, NULL}};               /* Enumerator#each */
    expect_stack(p, FIBER_FIXTURE, f.path, want, sizeof(want) / sizeof(want[0]));
    pp_rb_close(p);
    /* th->ec is the generator's context: the self-check finds the root fiber's */
    setenv("PP_RUBY_TEST_LAYOUT", "untested", 1);
    unsigned char info[192];
    pp_inwalk_status ist;
    void *state = pp_ruby_inwalker.prepare(NULL, f.pid, info, sizeof(info), &ist, err, sizeof(err));
    cr_assert(state && ist == PP_INWALK_OK, "%s", err);
    pp_ruby_inwalker.ops->free(state);
    setenv("PP_RUBY_TEST_LAYOUT", "wrong", 1);
    state = pp_ruby_inwalker.prepare(NULL, f.pid, info, sizeof(info), &ist, err, sizeof(err));
    cr_assert(!state && ist == PP_INWALK_UNSUPPORTED);
    unsetenv("PP_RUBY_TEST_LAYOUT");
    fixture_stop(&f);
}
