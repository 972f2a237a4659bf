/* Unwind rows from CFI (runtimes/unwind/cfi.c): a program compiled here without frame pointers,
 * libc (qsort, the PLT, __restore_rt) and malformed files. */
#include <dlfcn.h>
#include <gelf.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>

#include "base/safefile.h"
#include "runtimes/unwind/cfi.h"
#include "testutil.h"

static const char prog_src[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "extern long ext(long, long, long, long, long, long, long);\n"
    "__attribute__((noinline)) long busy(long a, long b, long c, long d, long e, long f, long g)\n"
    "{\n"
    "    long x = ext(a, b, c, d, e, f, g);\n"
    "    long y = ext(x, a, b, c, d, e, f);\n"
    "    return x * a + y * b + c * d + e * f + g + x + y;\n"
    "}\n"
    "long ext(long a, long b, long c, long d, long e, long f, long g)\n"
    "{ return a ^ b ^ c ^ d ^ e ^ f ^ g ^ (long)getenv(\"X\"); }\n"
    "int main(int argc, char **argv)\n"
    "{ printf(\"%ld\\n\", busy(argc, 2, 3, 4, 5, 6, (long)argv)); return 0; }\n";

static char *tmpdir;

static void build_prog(char *bin, size_t len)
{
    tmpdir = pp_test_mkdtemp();
    char src[512], cmd[1400];
    snprintf(src, sizeof(src), "%s/prog.c", tmpdir);
    snprintf(bin, len, "%s/prog", tmpdir);
    pp_test_write_file(src, prog_src, strlen(prog_src));
    snprintf(cmd, sizeof(cmd),
             "gcc -O2 -fomit-frame-pointer -fno-inline -fasynchronous-unwind-tables -o %s %s", bin,
             src);
    cr_assert(system(cmd) == 0, "cannot compile the test program: %s", cmd);
}

/* st_value and st_size of a symbol from the file's .symtab. */
static bool symbol(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0);
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    bool found = false;
    Elf_Scn *scn = NULL;
    while (e && !found && (scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym s;
            if (gelf_getsym(d, (int)i, &s) &&
                !strcmp(elf_strptr(e, sh.sh_link, s.st_name) ?: "", name)) {
                *addr = s.st_value;
                *size = s.st_size;
                found = true;
                break;
            }
        }
    }
    /* the .plt section's address, when name is ".plt" */
    if (!found && name[0] == '.') {
        size_t shstr;
        scn = NULL;
        while (e && elf_getshdrstrndx(e, &shstr) == 0 && (scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(e, shstr, sh.sh_name) ?: "", name)) {
                *addr = sh.sh_addr;
                *size = sh.sh_size;
                found = true;
                break;
            }
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return found;
}

static long build_path(const char *path, pp_cfi_table *t, char *err, size_t errsz)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0, "%s", path);
    long n = pp_cfi_build(fd, t, err, errsz);
    close(fd);
    return n;
}

static void teardown(void)
{
    pp_test_rmtree(tmpdir), tmpdir = NULL;
}

TestSuite(cfi, .fini = teardown);

Test(cfi, rows_are_sorted_unique_and_merged)
{
    pp_cfi_table t;
    char err[256];
    cr_assert(build_path("/bin/sh", &t, err, sizeof(err)) > 0, "%s", err);
    for (size_t i = 1; i < t.n; i++) {
        cr_assert(t.rows[i - 1].pc < t.rows[i].pc, "row %zu not after row %zu", i, i - 1);
        cr_assert(t.rows[i - 1].kind != t.rows[i].kind ||
                      t.rows[i - 1].cfa_off != t.rows[i].cfa_off ||
                      t.rows[i - 1].rbp_off != t.rows[i].rbp_off,
                  "rows %zu and %zu have the same rule: not merged", i - 1, i);
    }
    cr_assert(t.text_lo < t.text_hi);
    pp_cfi_free(&t);
}

/* gcc -O2 -fomit-frame-pointer: at the function's entry CFA = rsp + 8 (only the return
 * address); each push of a callee-saved register moves the CFA offset by 8, and rbp (a general
 * register here) is saved at a CFA-relative slot while the function holds it. */
Test(cfi, function_without_frame_pointer)
{
    char bin[512];
    build_prog(bin, sizeof(bin));
    uint64_t f = 0, fsz = 0;
    cr_assert(symbol(bin, "busy", &f, &fsz) && fsz > 0, "no symbol busy in %s", bin);
    pp_cfi_table t;
    char err[256];
    cr_assert(build_path(bin, &t, err, sizeof(err)) > 0, "%s", err);

    const pp_cfi_row *r = pp_cfi_find(&t, f);
    cr_assert(r && r->pc == f, "no row starts at busy's entry 0x%lx", (unsigned long)f);
    cr_assert_eq(r->kind, PP_CFI_RSP);
    cr_assert_eq(r->cfa_off, 8, "CFA at entry is rsp+%d, want rsp+8", r->cfa_off);
    cr_assert_eq(r->rbp_off, 0);

    /* the prologue's pushes: offsets 16, 24, ... in order, each at the pc after a push */
    int expect = 16, pushes = 0;
    bool rbp_saved = false;
    for (const pp_cfi_row *x = r + 1; x < t.rows + t.n && x->pc < f + fsz; x++) {
        cr_assert(x->kind == PP_CFI_RSP, "row at 0x%lx has kind %d", (unsigned long)x->pc, x->kind);
        cr_assert(x->cfa_off >= 8 && x->cfa_off % 8 == 0);
        if (x->cfa_off == expect && pushes == (expect - 16) / 8) {
            pushes++;
            expect += 8;
        }
        if (x->rbp_off) {
            /* (gcc's epilogues keep the rule after the pop: the slot still holds the value) */
            cr_assert(x->rbp_off < 0 && x->rbp_off % 8 == 0, "rbp saved at CFA%+d", x->rbp_off);
            rbp_saved = true;
        }
    }
    cr_assert(pushes >= 2, "want at least two pushes (CFA rsp+16, rsp+24), saw %d", pushes);
    cr_assert(rbp_saved, "busy keeps 7 values across calls: rbp must be saved in some row");
    pp_cfi_free(&t);
}

/* The .plt's CFA expression becomes a PLT row (its entries after PLT0, at .plt + 16). */
Test(cfi, plt_row_kind)
{
    char bin[512];
    build_prog(bin, sizeof(bin));
    uint64_t plt = 0, pltsz = 0;
    cr_assert(symbol(bin, ".plt", &plt, &pltsz) && pltsz > 16, "no .plt in %s", bin);
    pp_cfi_table t;
    char err[256];
    cr_assert(build_path(bin, &t, err, sizeof(err)) > 0, "%s", err);
    const pp_cfi_row *r = pp_cfi_find(&t, plt + 16);
    cr_assert(r, "no row for the PLT entries");
    cr_assert_eq(r->kind, PP_CFI_PLT, "PLT entries: kind %d, want PP_CFI_PLT", r->kind);
    r = pp_cfi_find(&t, plt);
    cr_assert(r && r->kind == PP_CFI_RSP && r->cfa_off == 16, "PLT0 is CFA = rsp + 16");
    pp_cfi_free(&t);
}

/* libc's rows: qsort's entry is covered by a row, CFA = rsp + 8. */
Test(cfi, libc_qsort)
{
    Dl_info di;
    cr_assert(dladdr((void *)qsort, &di) && di.dli_fname);
    uint64_t off = (uint64_t)(uintptr_t)di.dli_saddr - (uint64_t)(uintptr_t)di.dli_fbase;
    pp_cfi_table t;
    char err[256];
    long n = build_path(di.dli_fname, &t, err, sizeof(err));
    cr_assert(n > 1000, "libc %s: %ld rows (%s)", di.dli_fname, n, err);
    const pp_cfi_row *r = pp_cfi_find(&t, off);
    cr_assert(r, "no row for qsort at 0x%lx", (unsigned long)off);
    cr_assert(r->pc <= off);
    cr_assert_eq(r->kind, PP_CFI_RSP, "qsort entry: kind %d", r->kind);
    cr_assert_eq(r->cfa_off, 8);
    cr_assert(off >= t.text_lo && off < t.text_hi);
    pp_cfi_free(&t);
}

/* The restorer glibc installs with sigaction is __restore_rt: its 9 bytes are one SIGRETURN row,
 * and the row after it is not SIGRETURN. */
struct k_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
};

static void on_usr1(int sig)
{
    (void)sig;
}

Test(cfi, restore_rt_is_sigreturn)
{
    struct sigaction sa = {.sa_handler = on_usr1};
    cr_assert(sigaction(SIGUSR1, &sa, NULL) == 0);
    struct k_sigaction k;
    cr_assert(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &k, 8) == 0);
    signal(SIGUSR1, SIG_DFL);
    cr_assert(k.restorer, "glibc installed no restorer");
    Dl_info di;
    cr_assert(dladdr(k.restorer, &di) && di.dli_fname);
    uint64_t off = (uint64_t)(uintptr_t)k.restorer - (uint64_t)(uintptr_t)di.dli_fbase;
    pp_cfi_table t;
    char err[256];
    cr_assert(build_path(di.dli_fname, &t, err, sizeof(err)) > 0, "%s", err);
    const pp_cfi_row *r = pp_cfi_find(&t, off);
    cr_assert(r && r->pc == off, "no row starts at __restore_rt (0x%lx)", (unsigned long)off);
    cr_assert_eq(r->kind, PP_CFI_SIGRETURN, "__restore_rt: kind %d", r->kind);
    r = pp_cfi_find(&t, off + 8);
    cr_assert_eq(r->kind, PP_CFI_SIGRETURN, "its syscall instruction too");
    r = pp_cfi_find(&t, off + 9);
    cr_assert(r->kind != PP_CFI_SIGRETURN, "the row ends after the 9 bytes");
    r = pp_cfi_find(&t, off - 1);
    cr_assert(r->kind != PP_CFI_SIGRETURN);
    pp_cfi_free(&t);
}

static int memfd_with(const void *data, size_t len)
{
    int fd = memfd_create("cfi-test", MFD_CLOEXEC);
    cr_assert(fd >= 0);
    cr_assert(pp_write_all(fd, data, len) == 0);
    return fd;
}

Test(cfi, garbage_and_truncated_files_fail_with_a_reason)
{
    pp_cfi_table t;
    char err[256];
    /* not an ELF */
    char junk[4096];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (char)(i * 131 + 7);
    int fd = memfd_with(junk, sizeof(junk));
    cr_assert_eq(pp_cfi_build(fd, &t, err, sizeof(err)), -1);
    cr_assert(err[0], "no reason given");
    cr_assert_null(t.rows);
    close(fd);

    /* libc cut short: headers but no CFI left */
    Dl_info di;
    cr_assert(dladdr((void *)qsort, &di) && di.dli_fname);
    int lf = open(di.dli_fname, O_RDONLY);
    cr_assert(lf >= 0);
    static char head[16384];
    cr_assert(read(lf, head, sizeof(head)) == (ssize_t)sizeof(head));
    close(lf);
    size_t cuts[] = {16, 64, 1000, sizeof(head)};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        fd = memfd_with(head, cuts[i]);
        err[0] = 0;
        cr_assert_eq(pp_cfi_build(fd, &t, err, sizeof(err)), -1, "libc cut at %zu", cuts[i]);
        cr_assert(err[0], "no reason for libc cut at %zu", cuts[i]);
        close(fd);
    }

    /* a directory is not a file */
    fd = open("/", O_RDONLY | O_DIRECTORY);
    cr_assert_eq(pp_cfi_build(fd, &t, err, sizeof(err)), -1);
    cr_assert(strstr(err, "regular"), "%s", err);
    close(fd);
}

/* A hostile .eh_frame_hdr table: FDE pointers into garbage, a count larger than the table. */
Test(cfi, hostile_eh_frame_hdr)
{
    char bin[512];
    build_prog(bin, sizeof(bin));
    int fd = open(bin, O_RDONLY);
    cr_assert(fd >= 0);
    struct stat st;
    cr_assert(fstat(fd, &st) == 0);
    char *img = malloc((size_t)st.st_size);
    cr_assert(read(fd, img, (size_t)st.st_size) == st.st_size);
    close(fd);
    uint64_t hdr = 0, hdrsz = 0, ehf = 0, ehfsz = 0;
    cr_assert(symbol(bin, ".eh_frame_hdr", &hdr, &hdrsz));
    cr_assert(symbol(bin, ".eh_frame", &ehf, &ehfsz));
    /* in this small PIE the sections' file offsets equal their addresses */
    cr_assert(hdr + hdrsz <= (uint64_t)st.st_size && ehf + ehfsz <= (uint64_t)st.st_size);
    pp_cfi_table t;
    char err[256];
    for (int round = 0; round < 4; round++) {
        char *m = malloc((size_t)st.st_size);
        memcpy(m, img, (size_t)st.st_size);
        if (round == 0) { /* a count beyond the table (read past it if believed) */
            uint32_t count = (uint32_t)((hdrsz - 12) / 8 + 4096);
            memcpy(m + hdr + 8, &count, 4);
        } else if (round == 1) /* .eh_frame overwritten with a repeating pattern */
            for (uint64_t i = 0; i < ehfsz; i++)
                m[ehf + i] = (char)(i % 4 == 0 ? 0x10 : 0);
        else if (round == 2) /* FDE entries loop back to one CIE with length 0xffffffff */
            memset(m + ehf, 0xff, ehfsz);
        else /* table entries point everywhere */
            for (uint64_t i = 12; i < hdrsz; i++)
                m[hdr + i] = (char)(i * 37);
        int mf = memfd_with(m, (size_t)st.st_size);
        long n = pp_cfi_build(mf, &t, err, sizeof(err));
        cr_assert(n == -1 || (n >= 0 && t.n == (size_t)n), "round %d", round);
        if (n < 0)
            cr_assert(err[0], "round %d: no reason", round);
        pp_cfi_free(&t);
        close(mf);
        free(m);
    }
    free(img);
}

/* Section headers stripped (e_shoff, e_shnum zeroed): the same rows, through PT_GNU_EH_FRAME. */
Test(cfi, no_section_headers)
{
    Dl_info di;
    cr_assert(dladdr((void *)qsort, &di) && di.dli_fname);
    int lf = open(di.dli_fname, O_RDONLY);
    cr_assert(lf >= 0);
    struct stat st;
    cr_assert(fstat(lf, &st) == 0);
    char *img = malloc((size_t)st.st_size);
    cr_assert(read(lf, img, (size_t)st.st_size) == st.st_size);
    close(lf);
    Elf64_Ehdr *eh = (Elf64_Ehdr *)(void *)img;
    eh->e_shoff = 0;
    eh->e_shnum = 0;
    eh->e_shstrndx = 0;
    int fd = memfd_with(img, (size_t)st.st_size);
    free(img);
    pp_cfi_table a, b;
    char err[256];
    long n = pp_cfi_build(fd, &a, err, sizeof(err));
    close(fd);
    cr_assert(n > 1000, "%ld rows without section headers (%s)", n, err);
    cr_assert(build_path(di.dli_fname, &b, err, sizeof(err)) == n);
    cr_assert(!memcmp(a.rows, b.rows, (size_t)n * sizeof(pp_cfi_row)), "rows differ");
    pp_cfi_free(&a);
    pp_cfi_free(&b);
}

/* One FDE of 2,000 rows: libdw interprets an FDE from its start for each row (2 M row steps
 * here); past the work bound (1 M in this test, PP_CFI_MAX_WORK in use) the builder stops with a
 * reason: a hostile FDE of millions of rows must not hold the worker for hours. */
Test(cfi, costly_fde_is_refused)
{
    tmpdir = pp_test_mkdtemp();
    char src[600], bin[600], cmd[1400];
    snprintf(src, sizeof(src), "%s/big.s", tmpdir);
    snprintf(bin, sizeof(bin), "%s/big.so", tmpdir);
    FILE *f = fopen(src, "w");
    cr_assert(f);
    fprintf(f, ".text\n.globl big\n.type big,@function\nbig:\n.cfi_startproc\n");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "push %%rax\n.cfi_adjust_cfa_offset 8\npop %%rax\n.cfi_adjust_cfa_offset -8\n");
    fprintf(f, "ret\n.cfi_endproc\n.size big,.-big\n");
    fclose(f);
    snprintf(cmd, sizeof(cmd), "gcc -shared -nostdlib -Wl,--eh-frame-hdr -o %s %s", bin, src);
    cr_assert(system(cmd) == 0, "%s", cmd);
    pp_cfi_table t;
    char err[256] = "";
    int fd = open(bin, O_RDONLY);
    cr_assert(fd >= 0);
    pp_cfi_limits lim = {.max_work = 1000000};
    long n = pp_cfi_build_limited(fd, &lim, &t, err, sizeof(err));
    cr_assert_eq(n, -1, "%ld rows built from a 2,000-row FDE", n);
    cr_assert(strstr(err, "costly"), "reason: %s", err);
    /* under the default bound it is an ordinary function */
    n = pp_cfi_build(fd, &t, err, sizeof(err));
    close(fd);
    cr_assert(n >= 2000, "%ld rows (%s)", n, err);
    pp_cfi_free(&t);
}

/* More rows than the per-file cap (/bin/sh: ~250 FDEs, ~2,500 rows): no rows, a reason. */
Test(cfi, row_cap)
{
    int fd = open("/bin/sh", O_RDONLY);
    cr_assert(fd >= 0);
    pp_cfi_table t;
    char err[256] = "";
    pp_cfi_limits lim = {.max_rows = 1000};
    cr_assert_eq(pp_cfi_build_limited(fd, &lim, &t, err, sizeof(err)), -1);
    cr_assert(strstr(err, "more than 1000 unwind rows"), "reason: %s", err);
    cr_assert_null(t.rows);
    close(fd);
}
