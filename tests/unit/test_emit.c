/* Unit tests: the emitter's (pid, ip) -> frame id cache never outlives the profile it was filled
 * for, even when the next session's profile is allocated at the freed one's address; runtime
 * frames take the interpreter loop's place, and garbage under the loop is dropped; native frames
 * record their file and build-id. */
#include "tests/unit/testutil.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <valgrind/valgrind.h>

#include "base/elfnotes.h"
#include "merge/profile.h"
#include "runtimes/symbols/symbolizer.h"
#include "runtimes/symbols/symbols_internal.h"
#include "runtimes/system/emit.h"

/* Freed memory is handed out again at once (ASan would otherwise quarantine it), so that a new
 * profile lands where the old one was, as it does with glibc in the agent. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
}

TestSuite(emit, .init = pp_test_quiet_log);

__attribute__((noinline, noipa)) int pp_emit_fn_alpha(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline, noipa)) int pp_emit_fn_beta(int x)
{
    return x * 5 + 2;
}

/* The single stack of pid in p, rendered "a;b;c". */
static void stack_text(pp_profile *p, int pid, char *out, size_t len)
{
    pp_pid_profile *pp = pp_profile_get(p, pid, false);
    cr_assert_not_null(pp);
    cr_assert_eq(pp_pid_nstacks(pp), 1);
    size_t nf;
    const uint32_t *f = pp_pid_stack(pp, 0, &nf, NULL);
    out[0] = '\0';
    for (size_t i = 0; i < nf; i++) {
        if (i)
            strncat(out, ";", len - strlen(out) - 1);
        strncat(out, pp_profile_str(p, f[i]), len - strlen(out) - 1);
    }
}

/* A profile allocated where `where` was, if the allocator gives that address back within a few
 * tries (the others are freed). */
static pp_profile *profile_at(const void *where)
{
    pp_profile *keep[64];
    size_t n = 0;
    pp_profile *p = pp_profile_new();
    while (p && (const void *)p != where && n < 64) {
        keep[n++] = p;
        p = pp_profile_new();
    }
    for (size_t i = 0; i < n; i++)
        pp_profile_free(keep[i]);
    return p;
}

Test(emit, cache_does_not_outlive_its_profile)
{
    pp_symbolizer *sym = pp_symbolizer_new(0);
    pp_emitter *e = pp_emitter_new(sym);
    cr_assert(sym && e);
    int pid = getpid();
    uint64_t ua[] = {(uint64_t)(uintptr_t)pp_emit_fn_alpha + 1};
    uint64_t ub[] = {(uint64_t)(uintptr_t)pp_emit_fn_beta + 1};
    bool reused = false;
    const void *prev = NULL;
    for (int session = 0; session < 6; session++) {
        pp_profile *p = prev ? profile_at(prev) : pp_profile_new();
        cr_assert_not_null(p);
        reused |= prev && (const void *)p == prev;
        /* Each session interns other strings first, so that an id from an earlier session
         * names something else in this one. */
        for (int k = 0; k <= session; k++) {
            char s[32];
            snprintf(s, sizeof(s), "session %d string %d", session, k);
            pp_profile_intern(p, s);
        }
        pp_symbolizer_begin_pass(sym);
        const uint64_t *first = session % 2 ? ub : ua, *second = session % 2 ? ua : ub;
        cr_assert_eq(pp_emit_sample(e, p, pid, "emitter", first, 1, NULL, 0, 3), 0);
        cr_assert_eq(pp_emit_sample(e, p, pid + 1000000, "other", second, 1, NULL, 0, 1), 0);
        char text[256];
        stack_text(p, pid, text, sizeof(text));
        cr_assert_str_eq(text, session % 2 ? "pp_emit_fn_beta" : "pp_emit_fn_alpha",
                         "session %d: %s", session, text);
        cr_assert_str_eq(pp_profile_str(p, pp_profile_get(p, pid, false)->comm), "emitter");
        prev = p;
        pp_profile_free(p);
    }
    if (RUNNING_ON_VALGRIND)
        cr_log_info("valgrind delays the reuse of freed blocks: no profile reused an address");
    else
        cr_assert(reused, "no profile was allocated at a freed one's address: the test checked "
                          "nothing about reuse");
    pp_emitter_free(e);
    pp_symbolizer_free(sym);
}

Test(emit, generations_are_unique)
{
    pp_profile *a = pp_profile_new();
    uint64_t ga = pp_profile_generation(a);
    pp_profile_free(a);
    pp_profile *b = pp_profile_new();
    cr_assert_neq(pp_profile_generation(b), 0);
    cr_assert_neq(pp_profile_generation(b), ga);
    pp_profile_free(b);
}

/* Emits user (n addresses, leaf first) with the runtime frames R1;R2 (root first) and loop into a
 * new profile, and checks the stack's text against want (case k). */
static void expect_mixed(pp_symbolizer *sym, pp_emitter *e, const uint64_t *user, size_t n,
                         const pp_emit_loop *loop, const char *want, size_t k)
{
    pp_profile *p = pp_profile_new();
    cr_assert_not_null(p);
    uint32_t rt[] = {pp_profile_intern(p, "R1"), pp_profile_intern(p, "R2")};
    pp_symbolizer_begin_pass(sym);
    cr_assert_eq(pp_emit_mixed(e, p, getpid(), 1, "mixed", user, n, NULL, 0, rt, 2, loop, 1), 0);
    char text[256];
    stack_text(p, getpid(), text, sizeof(text));
    cr_assert_str_eq(text, want, "case %zu: %s", k, text);
    pp_profile_free(p);
}

/* Runtime frames replace the interpreter loop's; the native frames are kept up to the first
 * address in no mapping (a frame-pointer walk gone astray): what lies past it is dropped, so the
 * sample keeps the process's usual root and no garbage sits above the runtime's frames. */
Test(emit, garbage_under_the_loop_is_dropped)
{
    pp_symbolizer *sym = pp_symbolizer_new(0);
    pp_emitter *e = pp_emitter_new(sym);
    cr_assert(sym && e);
    static const char *const loop[] = {"pp_emit_fn_alpha", NULL};
    uint64_t a = (uint64_t)(uintptr_t)pp_emit_fn_alpha + 1,
             b = (uint64_t)(uintptr_t)pp_emit_fn_beta + 1;
    struct {
        uint64_t user[4];
        size_t n;
        const char *want;
    } cases[] = {
        {{b, a, b}, 3, "pp_emit_fn_beta;R1;R2;pp_emit_fn_beta"},
        {{b, a, 0x10, b}, 4, "R1;R2;pp_emit_fn_beta"},
        {{b, a, b, 0x10}, 4, "pp_emit_fn_beta;R1;R2;pp_emit_fn_beta"},
        {{b, 0x10, 0x20}, 3, "R1;R2;pp_emit_fn_beta"}, /* no loop: garbage past the leaf */
        {{b, 0x10, a, b}, 4, "R1;R2;pp_emit_fn_beta"}, /* a loop frame found in garbage */
        {{b, b, a, b}, 4, "pp_emit_fn_beta;R1;R2;pp_emit_fn_beta;pp_emit_fn_beta"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        expect_mixed(sym, e, cases[k].user, cases[k].n, &(pp_emit_loop){.symbols = loop},
                     cases[k].want, k);
    pp_emitter_free(e);
    pp_symbolizer_free(sym);
}

static bool alpha_is_code(void *arg, uint64_t ip)
{
    return ip == *(uint64_t *)arg;
}

/* A runtime whose frames run generated code (a JIT's) names it by address: the native frames in
 * that code (the innermost run of them) are replaced by the runtime's frames, the native frames
 * under them kept below. */
Test(emit, frames_in_the_runtimes_code_take_its_frames_place)
{
    pp_symbolizer *sym = pp_symbolizer_new(0);
    pp_emitter *e = pp_emitter_new(sym);
    cr_assert(sym && e);
    uint64_t a = (uint64_t)(uintptr_t)pp_emit_fn_alpha + 1,
             b = (uint64_t)(uintptr_t)pp_emit_fn_beta + 1;
    struct {
        uint64_t user[5];
        size_t n;
        const char *want;
    } cases[] = {
        {{a, a, b}, 3, "pp_emit_fn_beta;R1;R2"},                    /* the leaf in the code */
        {{b, a, a, b}, 4, "pp_emit_fn_beta;R1;R2;pp_emit_fn_beta"}, /* a native callee */
        {{b, b}, 2, "R1;R2;pp_emit_fn_beta;pp_emit_fn_beta"},       /* no code frame */
        /* code that called native code that called code again (Java -> JNI -> Java): the
         * runtime's frames are the innermost run's (its walk ends at the native frames); the
         * native frames under that run, the outer run's included, stay below it */
        {{b, a, b, a, b},
         5,
         "pp_emit_fn_beta;pp_emit_fn_alpha;pp_emit_fn_beta;R1;R2;pp_emit_fn_beta"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        expect_mixed(sym, e, cases[k].user, cases[k].n,
                     &(pp_emit_loop){.code = alpha_is_code, .arg = &a}, cases[k].want, k);
    pp_emitter_free(e);
    pp_symbolizer_free(sym);
}

/* A native stack (no runtime frames) ends before its first address in no mapping past the leaf:
 * the frame-pointer fallback through code without frame pointers reads garbage there. An
 * unmapped leaf is kept, the sample's only user frame. */
Test(emit, native_stack_ends_at_the_first_unmapped_caller)
{
    pp_symbolizer *sym = pp_symbolizer_new(0);
    pp_emitter *e = pp_emitter_new(sym);
    pp_profile *p = pp_profile_new();
    cr_assert(sym && e && p);
    int pid = getpid();
    uint64_t garbage = 0x10; /* no process maps page 0 */
    uint64_t user[] = {(uint64_t)(uintptr_t)pp_emit_fn_alpha + 1, garbage,
                       (uint64_t)(uintptr_t)pp_emit_fn_beta + 1};
    cr_assert_eq(pp_emit_sample(e, p, pid, "me", user, 3, NULL, 0, 1), 0);
    char text[512];
    stack_text(p, pid, text, sizeof(text));
    cr_assert_str_eq(text, "pp_emit_fn_alpha", "garbage callers kept: %s", text);
    pp_profile_free(p);

    p = pp_profile_new();
    uint64_t leaf_only[] = {garbage, (uint64_t)(uintptr_t)pp_emit_fn_beta + 1};
    cr_assert_eq(pp_emit_sample(e, p, pid, "me", leaf_only, 2, NULL, 0, 1), 0);
    stack_text(p, pid, text, sizeof(text));
    cr_assert_str_eq(text, "[unknown]", "an unmapped leaf: %s", text);
    pp_profile_free(p);
    pp_emitter_free(e);
    pp_symbolizer_free(sym);
}

/* The GNU build-id of the file at path, as lowercase hex ("" when none). */
static int own_note(void *arg, const char *name, size_t namesz, uint32_t type,
                    const unsigned char *desc, size_t descsz)
{
    char *hex = arg;
    if (type != NT_GNU_BUILD_ID || !pp_elf_note_named(name, namesz, "GNU") || descsz > 64)
        return 0;
    for (size_t i = 0; i < descsz; i++)
        snprintf(hex + 2 * i, 3, "%02x", desc[i]);
    return 1;
}

static void file_build_id(const char *path, char *hex)
{
    hex[0] = '\0';
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    cr_assert_not_null(e);
    pp_elf_notes_walk(e, 0, own_note, hex);
    elf_end(e);
    close(fd);
}

/* The mapping recorded for frame text in pid: its file and build-id. */
static void frame_mapping(pp_profile *p, int pid, const char *text, const char **file,
                          const char **build_id)
{
    uint32_t f = pp_profile_intern(p, text), fs, bs;
    uint32_t m = pp_profile_frame_mapping(p, pid, f);
    cr_assert(m, "no mapping recorded for frame %s", text);
    pp_profile_mapping_get(p, m, &fs, &bs);
    *file = pp_profile_str(p, fs);
    *build_id = pp_profile_str(p, bs);
}

/* Every native frame carries its file into the profile (the pprof export's mappings): a user
 * frame the executable it was found in, with the executable's build-id; a kernel frame
 * [kernel.kallsyms] for every process; an address in no mapping none. */
Test(emit, native_frames_record_their_file_and_build_id)
{
    pp_symbolizer *sym = pp_symbolizer_new(0);
    pp_emitter *e = pp_emitter_new(sym);
    pp_profile *p = pp_profile_new();
    cr_assert(sym && e && p);
    pp_symbolizer_set_kallsyms_path(sym, "/nonexistent/kallsyms");
    int pid = getpid();
    uint64_t user[] = {(uint64_t)(uintptr_t)pp_emit_fn_alpha + 1};
    uint64_t unmapped[] = {0x10};
    uint64_t kernel[] = {0xffffffff81000100ull};
    pp_symbolizer_begin_pass(sym);
    cr_assert_eq(pp_emit_sample(e, p, pid, "me", user, 1, kernel, 1, 2), 0);
    cr_assert_eq(pp_emit_sample(e, p, pid + 1000000, "other", unmapped, 1, kernel, 1, 1), 0);

    char exe[PATH_MAX], want[129];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    cr_assert(n > 0);
    exe[n] = '\0';
    file_build_id(exe, want);
    cr_assert_eq(strlen(want), 40, "the test binary has a sha1 build-id (gcc's default): %s", want);
    const char *file, *bid;
    frame_mapping(p, pid, "pp_emit_fn_alpha", &file, &bid);
    cr_expect_str_eq(file, exe, "the executable as the process maps it");
    cr_expect_str_eq(bid, want);
    cr_expect_eq(pp_profile_frame_mapping(p, pid + 1000000, pp_profile_intern(p, "[unknown]")), 0,
                 "an address in no mapping has no file");
    frame_mapping(p, pid + 1000000, "[unknown]_[k]", &file, &bid);
    cr_expect_str_eq(file, "[kernel.kallsyms]");
    if (access("/sys/kernel/notes", R_OK) == 0)
        cr_expect_eq(strlen(bid), 40, "the running kernel's build-id: %s", bid);
    cr_expect_eq(pp_profile_nmappings(p), 2, "each file once");
    pp_profile_free(p);
    pp_emitter_free(e);
    pp_symbolizer_free(sym);
}
