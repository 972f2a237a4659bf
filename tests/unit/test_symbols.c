/* Symbolizer tests: fixtures (C with/without symbols, debuglink, MiniDebugInfo, C++, Go) are built
 * once per run in a temp dir by a PRE_ALL hook; tests run real child processes against them. */
#include "tests/unit/testutil.h"

#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "base/child.h"
#include "base/procfiles.h"
#include "runtimes/symbols/symbolizer.h"
#include "runtimes/symbols/symbols_internal.h"
#include "runtimes/system/ksym_bpf.h"

#define FIXENV "PP_TEST_SYMBOLS_FIXDIR"

static const char fix_c[] =
    "#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/mman.h>\n"
    "#include <unistd.h>\n"
    "volatile int sink;\n"
    "__attribute__((noinline)) void pp_fixture_alpha(void) { for (int i = 0; i < 10; i++) sink "
    "+= i; }\n"
    "__attribute__((noinline)) int pp_fixture_beta(int x) { sink += x; return sink * 3; }\n"
    "__attribute__((noinline)) static int pp_fixture_local(int x) { sink -= x; return sink; }\n"
    "int main(int argc, char **argv) {\n"
    "  char *anon = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | "
    "MAP_ANONYMOUS, -1, 0);\n"
    "  if (anon != MAP_FAILED) memset(anon, 0xc3, 8192); else anon = NULL;\n"
    "  void *fm = NULL;\n"
    "  if (argc > 1) { int fd = open(argv[1], O_RDONLY);\n"
    "    fm = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);\n"
    "    if (fm == MAP_FAILED) fm = NULL; }\n"
    "  printf(\"%#lx %#lx %#lx %#lx %#lx\\n\", (unsigned long)pp_fixture_alpha,\n"
    "         (unsigned long)pp_fixture_beta, (unsigned long)pp_fixture_local,\n"
    "         (unsigned long)anon, (unsigned long)fm);\n"
    "  fflush(stdout);\n"
    "  pp_fixture_alpha(); pp_fixture_beta(1); pp_fixture_local(2);\n"
    "  for (;;) pause();\n"
    "}\n";

static const char fix_cpp[] =
    "#include <cstdio>\n#include <vector>\n#include <unistd.h>\n"
    "namespace ppns {\n"
    "__attribute__((noinline)) int compute(std::vector<int> &v, double d) { v.push_back((int)d); "
    "return (int)v.size(); }\n"
    "}\n"
    "int main() { std::vector<int> v; ppns::compute(v, 1.0);\n"
    "  printf(\"%#lx\\n\", (unsigned long)(void *)&ppns::compute); fflush(stdout);\n"
    "  for (;;) pause(); }\n";

static const char fix_go[] = "package main\n\nimport (\n\t\"fmt\"\n\t\"reflect\"\n\t\"time\"\n)\n\n"
                             "//go:noinline\nfunc work(n int) int {\n\ts := 0\n"
                             "\tfor i := 0; i < n; i++ {\n\t\ts += i\n\t}\n\treturn s\n}\n\n"
                             "func main() {\n\tfmt.Printf(\"%#x %#x\\n\", "
                             "reflect.ValueOf(main).Pointer(), reflect.ValueOf(work).Pointer())\n"
                             "\tfor {\n\t\twork(10)\n\t\ttime.Sleep(time.Second)\n\t}\n}\n";

static char g_fixdir[256];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    char tmpl[] = "/tmp/pp_test_symfix_XXXXXX";
    if (!mkdtemp(tmpl))
        return;
    const char *d = tmpl;
    write_text(d, "fix.c", fix_c);
    write_text(d, "cpp.cc", fix_cpp);
    write_text(d, "main.go", fix_go);
    int rc = 0;
    rc |= sh("cd %s && gcc -O1 -g -o fix fix.c", d);
    rc |= sh("cd %s && strip --strip-all -o fix_stripped fix", d);
    /* debuglink: stripped binary + separate debug file in the same dir */
    rc |=
        sh("cd %s && mkdir dl && objcopy --only-keep-debug fix dl/fix.debug && "
           "strip --strip-all -o dl/fix fix && cd dl && objcopy --add-gnu-debuglink=fix.debug fix",
           d);
    /* MiniDebugInfo */
    rc |= sh("cd %s && mkdir mini && objcopy --only-keep-debug fix mini/fix.dbg && "
             "xz -z mini/fix.dbg && strip --strip-all -o mini/fix fix && "
             "objcopy --add-section .gnu_debugdata=mini/fix.dbg.xz mini/fix && rm mini/fix.dbg.xz",
             d);
    rc |= sh("cd %s && g++ -O1 -o cpp cpp.cc", d);
    rc |= sh("cd %s && GOCACHE=%s/gocache GO111MODULE=off go build -ldflags='-s -w' -o gofix "
             "main.go >/dev/null 2>&1 && rm -rf gocache",
             d, d);
    rc |= sh("head -c 8192 /dev/urandom > %s/garbage", d);
    if (rc == 0) {
        snprintf(g_fixdir, sizeof(g_fixdir), "%s", d);
        setenv(FIXENV, d, 1);
    } else {
        fprintf(stderr, "test_symbols: fixture build failed\n");
    }
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    if (g_fixdir[0] && strncmp(g_fixdir, "/tmp/pp_test_symfix_", 20) == 0)
        sh("rm -rf '%s'", g_fixdir);
}

static const char *fixdir(void)
{
    const char *d = getenv(FIXENV);
    cr_assert(d && *d, "fixtures were not built");
    return d;
}

static void fixpath(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", fixdir(), name);
}

typedef struct child {
    pid_t pid;
    unsigned long v[8];
    int nv;
} child;

/* Starts argv[0] with stdout piped, reads its first line of hex numbers. */
static child spawn(const char *path, const char *arg)
{
    child c = {0};
    int fds[2];
    cr_assert(pipe(fds) == 0);
    c.pid = fork();
    cr_assert(c.pid >= 0);
    if (c.pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(path, path, arg, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[512];
    size_t n = 0;
    while (n + 1 < sizeof(line)) {
        ssize_t r = read(fds[0], line + n, 1);
        if (r <= 0 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    close(fds[0]);
    char *p = line, *end;
    while (c.nv < 8) {
        unsigned long v = strtoul(p, &end, 0);
        if (end == p)
            break;
        c.v[c.nv++] = v;
        p = end;
    }
    cr_assert(c.nv > 0, "child %s printed nothing", path);
    return c;
}

static void reap(child *c)
{
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
}

static char *sym_user(pp_symbolizer *s, int pid, uint64_t ip)
{
    static char buf[1024];
    pp_symbolize_user(s, pid, ip, buf, sizeof(buf));
    return buf;
}

static bool have_procmap_query(void)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0);
    int r = pp_maps_covers_exec(fd, (uint64_t)(uintptr_t)&have_procmap_query);
    close(fd);
    return r == 1;
}

typedef struct maps_list {
    char text[65536];
    size_t len;
} maps_list;

static int list_map(void *arg, const pp_maps_line *ml)
{
    maps_list *l = arg;
    int n = snprintf(l->text + l->len, sizeof(l->text) - l->len, "%lx-%lx %s %lx %.*s %d\n",
                     (unsigned long)ml->start, (unsigned long)ml->end, ml->perms,
                     (unsigned long)ml->offset, (int)ml->pathlen, ml->path, ml->deleted);
    if (n > 0 && (size_t)n < sizeof(l->text) - l->len)
        l->len += (size_t)n;
    return 0;
}

static void init(void)
{
    pp_test_quiet_log();
}

TestSuite(symbols, .init = init, .timeout = 60);

/* ---- pure units ---- */

Test(symbols, symtab_lookup_and_dedupe)
{
    pp_symtab t;
    pp_symtab_init(&t);
    cr_assert(pp_symtab_add(&t, 0x2000, 0x10, "sized", 5, PP_SYM_FUNC | PP_SYM_GLOBAL) == 0);
    pp_symtab_add(&t, 0x1000, 0, "weak_alias", 10, PP_SYM_FUNC | PP_SYM_WEAK);
    pp_symtab_add(&t, 0x1000, 0, "the_global", 10, PP_SYM_FUNC | PP_SYM_GLOBAL);
    pp_symtab_add(&t, 0x1000, 0, "local", 5, PP_SYM_FUNC);
    pp_symtab_add(&t, 0x1000, 0, "notype", 6, PP_SYM_GLOBAL);
    pp_symtab_add(&t, 0x2004, 0, "label_inside", 12, 0);
    pp_symtab_add(&t, 0x3000, 0, "last", 4, PP_SYM_FUNC);
    pp_symtab_finish(&t, 0x100);
    cr_assert_null(pp_symtab_find(&t, 0xfff));
    const pp_sym *s = pp_symtab_find(&t, 0x1000);
    cr_assert_not_null(s);
    cr_assert_str_eq(pp_symtab_name(&t, s), "the_global");
    s = pp_symtab_find(&t, 0x1fff); /* size-0: up to next symbol */
    cr_assert_str_eq(pp_symtab_name(&t, s), "the_global");
    cr_assert_str_eq(pp_symtab_name(&t, pp_symtab_find(&t, 0x2005)), "sized");
    cr_assert_null(pp_symtab_find(&t, 0x2010)); /* past the sized symbol */
    cr_assert_str_eq(pp_symtab_name(&t, pp_symtab_find(&t, 0x30ff)), "last");
    cr_assert_null(pp_symtab_find(&t, 0x3100));
    cr_assert_eq(t.n, 3);
    pp_symtab_free(&t);
}

Test(symbols, demangle_cpp_and_rust)
{
    char *d = pp_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
    cr_assert_not_null(d);
    cr_assert_str_eq(d, "std::vector<int, std::allocator<int> >::push_back(int const&)");
    free(d);
    d = pp_demangle("_ZN4core3fmt5write17h0123456789abcdefE");
    cr_assert_not_null(d);
    cr_assert_str_eq(d, "core::fmt::write");
    free(d);
    cr_assert_null(pp_demangle("main"));
    cr_assert_null(pp_demangle("_Znotmangled!!"));
    /* cached display name through a table */
    pp_symtab t;
    pp_symtab_init(&t);
    pp_symtab_add(&t, 0x10, 0x10, "_ZNSt6vectorIiSaIiEE9push_backERKi", 34, PP_SYM_FUNC);
    pp_symtab_finish(&t, 1);
    const pp_sym *s = pp_symtab_find(&t, 0x11);
    const char *a = pp_symtab_display_name(&t, s);
    const char *b = pp_symtab_display_name(&t, s);
    cr_assert_eq(a, b);
    cr_assert_str_eq(a, "std::vector<int, std::allocator<int> >::push_back(int const&)");
    pp_symtab_free(&t);
}

Test(symbols, frame_text_is_sanitized)
{
    char buf[64];
    size_t n = pp_frame_write(buf, sizeof(buf), "a;b\nc\td", "_[k]");
    cr_assert_str_eq(buf, "a|b?c?d_[k]");
    cr_assert_eq(n, strlen(buf));
    n = pp_frame_write(buf, 5, "abcdefgh", NULL);
    cr_assert_str_eq(buf, "abcd");
    cr_assert_eq(n, 4);
}

Test(symbols, maps_line_parsing)
{
    pp_maps_line m;
    const char *l = "7f0a1c000000-7f0a1c1c2000 r-xp 00028000 fd:01 1234567                    "
                    "/usr/lib/x86_64-linux-gnu/libc.so.6\n";
    cr_assert(pp_maps_parse_line(l, strlen(l), &m) == 0);
    cr_assert_eq(m.start, 0x7f0a1c000000ull);
    cr_assert_eq(m.end, 0x7f0a1c1c2000ull);
    cr_assert_eq(m.offset, 0x28000);
    cr_assert_eq(m.dev_major, 0xfd);
    cr_assert_eq(m.inode, 1234567);
    cr_assert_str_eq(m.perms, "r-xp");
    cr_assert(m.pathlen == strlen("/usr/lib/x86_64-linux-gnu/libc.so.6"));
    cr_assert_eq(pp_maps_classify(m.path, m.pathlen), PP_MAP_FILE);
    l = "1000-2000 r-xp 00000000 00:00 0 \n";
    cr_assert(pp_maps_parse_line(l, strlen(l), &m) == 0);
    cr_assert_eq(m.pathlen, 0);
    cr_assert_eq(pp_maps_classify(m.path, m.pathlen), PP_MAP_ANON);
    l = "1000-2000 r-xp 00000000 08:01 77 /opt/app/bin (deleted)";
    cr_assert(pp_maps_parse_line(l, strlen(l), &m) == 0);
    cr_assert(m.deleted);
    cr_assert_eq(pp_maps_classify("[vdso]", 6), PP_MAP_VDSO);
    cr_assert_eq(pp_maps_classify("[vsyscall]", 10), PP_MAP_OTHER);
    cr_assert_eq(pp_maps_classify("/memfd:jit (deleted)", 20), PP_MAP_ANON);
    cr_assert_eq(pp_maps_classify("[anon:v8]", 9), PP_MAP_ANON);
    const char *bad[] = {"",
                         "zz-10 r-xp 0 0:0 0",
                         "2000-1000 r-xp 00000000 00:00 0",
                         "1000-2000 r-x",
                         "1000-2000 r-xp 0 00:00",
                         "10000000000000000-1 r-xp 0 0:0 0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(pp_maps_parse_line(bad[i], strlen(bad[i]), &m) != 0, "accepted '%s'", bad[i]);
}

Test(symbols, perfmap_parsing)
{
    uint64_t a, sz;
    const char *name;
    size_t nl;
    const char *l = "7f00dead0000 40 LazyCompile:~foo bar.js:1:2\n";
    cr_assert(pp_perfmap_parse_line(l, strlen(l), &a, &sz, &name, &nl) == 0);
    cr_assert_eq(a, 0x7f00dead0000ull);
    cr_assert_eq(sz, 0x40);
    cr_assert(nl == strlen("LazyCompile:~foo bar.js:1:2"));
    cr_assert(strncmp(name, "LazyCompile:~foo bar.js:1:2", nl) == 0);
    l = "0x1000 0x10 Ljava/lang/Thread;::run";
    cr_assert(pp_perfmap_parse_line(l, strlen(l), &a, &sz, &name, &nl) == 0);
    cr_assert_eq(a, 0x1000);
    /* blanks: tabs as separators, leading blanks; exactly one blank after SIZE, the rest is
     * the name's (a name may start with a blank); a trailing CR LF is not the name's */
    l = "\t 0X1000\t\t0x10\t\tname with\ttab\r\n";
    cr_assert(pp_perfmap_parse_line(l, strlen(l), &a, &sz, &name, &nl) == 0);
    cr_assert_eq(a, 0x1000);
    cr_assert_eq(sz, 0x10);
    cr_assert(nl == strlen("\tname with\ttab") && strncmp(name, "\tname with\ttab", nl) == 0,
              "name '%.*s'", (int)nl, name);
    l = "ffffffffffffffff ffffffffffffffff x"; /* 16 digits: the largest values */
    cr_assert(pp_perfmap_parse_line(l, strlen(l), &a, &sz, &name, &nl) == 0);
    cr_assert(a == UINT64_MAX && sz == UINT64_MAX && nl == 1);
    const char *bad[] = {"",
                         "1000",
                         "1000 10",
                         "1000 10 ",
                         "1000 10\t",
                         "1000 10 \r\n",
                         "1000 10\n",
                         "xyz 10 name",
                         "1000 zz name",
                         "11111111111111111 1 n", /* 17 digits: overflow */
                         "1000 11111111111111111 n",
                         "0x00000000000000001 1 n", /* leading zeros count */
                         "1000 10g name",           /* junk glued to SIZE */
                         "1000g 10 name",           /* junk glued to START */
                         "1000 0x name",
                         "0x 10 name",
                         "1000 -10 name",
                         "-1000 10 name",
                         "1000,10 name",
                         "1000  name", /* SIZE missing: "name" is not hex */
                         "1000 10name",
                         "1000\n10 name",
                         " ",
                         "\t\t",
                         "\n",
                         "1000 10 \n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(pp_perfmap_parse_line(bad[i], strlen(bad[i]), &a, &sz, &name, &nl) != 0,
                  "accepted the malformed line '%s'", bad[i]);
    const char data[] = "1000 10 first\ngarbage line\n1010 10 second;x\n1010 8 newer\n2000 0 z";
    pp_perfmap m = {0};
    cr_assert_eq(pp_perfmap_parse(&m, data, sizeof(data) - 1), 4);
    cr_assert_str_eq(pp_perfmap_find(&m, 0x100f), "first");
    cr_assert_str_eq(pp_perfmap_find(&m, 0x1011), "newer");
    cr_assert_null(pp_perfmap_find(&m, 0x1020));
    cr_assert_str_eq(pp_perfmap_find(&m, 0x2000), "z");
    cr_assert_null(pp_perfmap_find(&m, 0xfff));
    pp_perfmap_free(&m);
}

/* A perf map file far larger than the memory bound: memory stays under the bound, the newest
 * entries are kept, the dropped ones are counted; lines appended later are read from where the
 * last read stopped, a rewrite is read again. */
Test(symbols, perfmap_memory_is_bounded)
{
    char *dir = pp_test_mkdtemp();
    char path[512];
    snprintf(path, sizeof(path), "%s/perf-1.map", dir);
    FILE *f = fopen(path, "w");
    const int lines = 200000; /* ~11 MiB of text */
    for (int i = 0; i < lines; i++)
        fprintf(f, "%x 10 LazyCompile:~function_number_%07d /srv/app/some/module.js:1:2\n",
                0x100000 + i * 0x10, i);
    fclose(f);
    pp_perfmap m = {.max_bytes = 2u << 20};
    int fd = open(path, O_RDONLY);
    cr_assert_eq(pp_perfmap_update(&m, fd), lines);
    cr_assert(pp_perfmap_memory(&m) <= 2u << 20, "%zu bytes", pp_perfmap_memory(&m));
    cr_assert(m.dropped > lines / 2 && m.dropped + m.n == (uint64_t)lines, "%llu dropped, %zu held",
              (unsigned long long)m.dropped, m.n);
    char want[128];
    snprintf(want, sizeof(want), "LazyCompile:~function_number_%07d /srv/app/some/module.js:1:2",
             lines - 1);
    cr_assert_str_eq(pp_perfmap_find(&m, 0x100000 + (uint64_t)(lines - 1) * 0x10 + 4), want,
                     "the newest entries are kept");
    cr_assert_null(pp_perfmap_find(&m, 0x100004), "the oldest went first");
    /* an entry in use survives the next eviction; an unused old one does not */
    uint64_t used = 0x100000 + (uint64_t)(lines - (int)m.n) * 0x10;
    cr_assert_not_null(pp_perfmap_find(&m, used));
    /* appended lines: only they are read */
    f = fopen(path, "a");
    for (int i = 0; i < 100000; i++)
        fprintf(f, "%x 10 LazyCompile:~appended_%07d /srv/app/other.js:3:4\n", 0x8000000 + i * 0x10,
                i);
    fclose(f);
    cr_assert_eq(pp_perfmap_update(&m, fd), 100000);
    cr_assert(pp_perfmap_memory(&m) <= 2u << 20);
    cr_assert_not_null(pp_perfmap_find(&m, used), "the used entry was evicted");
    cr_assert_str_eq(pp_perfmap_find(&m, 0x8000000 + 99999 * 0x10),
                     "LazyCompile:~appended_0099999 /srv/app/other.js:3:4");
    cr_assert_eq(pp_perfmap_update(&m, fd), 0, "unchanged: nothing read");
    close(fd);
    /* rewritten (Compiler.perfmap writes the whole file again): read again */
    pp_test_write_file(path, "500 10 rewritten\n", 17);
    fd = open(path, O_RDONLY);
    cr_assert_eq(pp_perfmap_update(&m, fd), 1);
    cr_assert_eq(m.n, 1);
    cr_assert_str_eq(pp_perfmap_find(&m, 0x505), "rewritten");
    close(fd);
    pp_perfmap_free(&m);
    pp_test_rmtree(dir);
}

Test(symbols, kallsyms_fixture_file)
{
    char *dir = pp_test_mkdtemp();
    char path[512];
    snprintf(path, sizeof(path), "%s/kallsyms", dir);
    const char ks[] = "ffffffff81000000 T _stext\n"
                      "ffffffff81000000 T _text\n"
                      "ffffffff81000100 t do_thing\n"
                      "ffffffff81000200 D some_data\n"
                      "ffffffff81000300 T schedule\n"
                      "garbage\n"
                      "ffffffffc0001000 t ext4_fn\t[ext4]\n"
                      "0000000000000000 T hidden\n";
    pp_test_write_file(path, ks, sizeof(ks) - 1);
    pp_symtab t;
    pp_symtab_init(&t);
    cr_assert_eq(pp_ksyms_load(path, &t), 5);
    cr_assert_str_eq(pp_symtab_name(&t, pp_symtab_find(&t, 0xffffffff81000000ull)), "_stext");
    pp_symtab_free(&t);

    pp_symbolizer *s = pp_symbolizer_new(0);
    pp_symbolizer_set_kallsyms_path(s, path);
    char buf[128];
    pp_symbolize_kernel(s, 0xffffffff81000150ull, buf, sizeof(buf));
    cr_assert_str_eq(buf, "do_thing_[k]");
    pp_symbolize_kernel(s, 0xffffffff81000250ull, buf, sizeof(buf)); /* data is skipped */
    cr_assert_str_eq(buf, "do_thing_[k]");
    pp_symbolize_kernel(s, 0xffffffffc0001010ull, buf, sizeof(buf));
    cr_assert_str_eq(buf, "ext4_fn_[k]");
    pp_symbolize_kernel(s, 0x1000, buf, sizeof(buf));
    cr_assert_str_eq(buf, "[unknown]_[k]");
    pp_symbolizer_set_kallsyms_path(s, "/nonexistent/kallsyms");
    pp_symbolize_kernel(s, 0xffffffff81000150ull, buf, sizeof(buf));
    cr_assert_str_eq(buf, "[unknown]_[k]");
    pp_symbolizer_free(s);
    pp_test_rmtree(dir);
}

Test(symbols, kallsyms_real)
{
    FILE *f = fopen("/proc/kallsyms", "r");
    cr_assert_not_null(f);
    char line[512], name[256] = "";
    unsigned long long addr = 0;
    while (fgets(line, sizeof(line), f)) {
        char type;
        if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && type == 'T' &&
            strcmp(name, "schedule") == 0)
            break;
        name[0] = '\0';
    }
    fclose(f);
    cr_assert(name[0] && addr, "no schedule in /proc/kallsyms (not root?)");
    pp_symbolizer *s = pp_symbolizer_new(0);
    char buf[256];
    pp_symbolize_kernel(s, addr + 1, buf, sizeof(buf));
    cr_assert_str_eq(buf, "schedule_[k]");
    pp_symbolizer_free(s);
}

/* The kernel namer (BPF %ps) names addresses as /proc/kallsyms does: sample every 97th text
 * symbol of kallsyms (core and modules) and check that the symbolizer with the namer gives the
 * same frame as the one reading kallsyms (aliases at one address may differ: accept any name
 * at that address). Unknown addresses are "[unknown]_[k]" in both. */
Test(symbols, kernel_namer_matches_kallsyms)
{
    char err[256];
    pp_ksym_bpf *k = pp_ksym_bpf_open(err, sizeof(err));
    cr_assert_not_null(k, "%s", err);
    pp_symbolizer *named = pp_symbolizer_new(0), *plain = pp_symbolizer_new(0);
    pp_symbolizer_set_kernel_namer(named, pp_ksym_bpf_namer, k);
    FILE *f = fopen("/proc/kallsyms", "r");
    cr_assert_not_null(f);
    char line[512];
    unsigned long long prev = 0;
    int checked = 0, differ = 0, i = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long addr;
        char type, name[256];
        if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || (type != 'T' && type != 't'))
            continue;
        if (i++ % 97 || addr == prev) {
            prev = addr;
            continue;
        }
        prev = addr;
        char a[300], b[300];
        pp_symbolize_kernel(named, addr, a, sizeof(a));
        pp_symbolize_kernel(plain, addr, b, sizeof(b));
        /* An alias (another symbol at the same address) may be named instead; never unknown. */
        cr_assert(strstr(a, "[unknown]") == NULL, "%llx: namer %s, kallsyms %s", addr, a, b);
        if (strcmp(a, b) != 0)
            differ++;
        checked++;
    }
    fclose(f);
    cr_assert_gt(checked, 100);
    cr_assert_lt(differ * 50, checked, "%d of %d names differ", differ, checked);
    char a[300];
    pp_symbolize_kernel(named, 1, a, sizeof(a));
    cr_assert_str_eq(a, "[unknown]_[k]");
    /* cached: a second lookup does not ask the kernel again */
    pp_symbolizer_stats st1, st2;
    pp_symbolizer_get_stats(named, &st1);
    pp_symbolize_kernel(named, 1, a, sizeof(a));
    pp_symbolizer_get_stats(named, &st2);
    cr_assert_eq(st1.kernel_named, st2.kernel_named);
    pp_symbolizer_free(named);
    pp_symbolizer_free(plain);
    pp_ksym_bpf_close(k);
}

/* The bounded cache of namer answers starts over when full and keeps answering. */
Test(symbols, kernel_name_cache_bound)
{
    pp_kcache *c = pp_kcache_new(4);
    const char *n;
    for (uint64_t ip = 1; ip <= 10; ip++) {
        char name[16];
        snprintf(name, sizeof(name), "f%llu", (unsigned long long)ip);
        cr_assert_eq(pp_kcache_put(c, ip, name), 0);
        cr_assert_eq(pp_kcache_get(c, ip, &n), 1);
        cr_assert_str_eq(n, name);
    }
    cr_assert_eq(pp_kcache_get(c, 1, &n), 0, "old entries are dropped when the cache starts over");
    cr_assert_eq(pp_kcache_put(c, 42, ""), 0);
    cr_assert_eq(pp_kcache_get(c, 42, &n), 1);
    cr_assert_str_eq(n, "");
    pp_kcache_free(c);
}

/* ---- ELF tables ---- */

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc((size_t)n);
    cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static const pp_sym *find_by_name(const pp_symtab *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(pp_symtab_name(t, &t->syms[i]), name) == 0)
            return &t->syms[i];
    return NULL;
}

Test(symbols, elf_memory_tables)
{
    char p[512];
    size_t len;
    const char *cases[] = {"fix", "mini/fix", "gofix"};
    const char *want[] = {"pp_fixture_local", "pp_fixture_local", "main.work"};
    for (int i = 0; i < 3; i++) {
        fixpath(p, sizeof(p), cases[i]);
        void *img = slurp(p, &len);
        pp_symtab t;
        pp_symtab_init(&t);
        pp_elf_meta meta;
        cr_assert(pp_elf_load_memory(img, len, &t, &meta) > 0, "%s", cases[i]);
        const pp_sym *s = find_by_name(&t, want[i]);
        cr_assert_not_null(s, "%s lacks %s", cases[i], want[i]);
        cr_assert_eq(pp_symtab_find(&t, s->addr + 1), s);
        cr_assert(meta.nsegs > 0);
        if (i < 2)
            cr_assert(meta.build_id_len > 0);
        pp_symtab_free(&t);
        free(img);
    }
    /* stripped: only .dynsym imports, not our functions */
    fixpath(p, sizeof(p), "fix_stripped");
    void *img = slurp(p, &len);
    pp_symtab t;
    pp_symtab_init(&t);
    cr_assert(pp_elf_load_memory(img, len, &t, NULL) >= 0);
    cr_assert_null(find_by_name(&t, "pp_fixture_alpha"));
    pp_symtab_free(&t);
    free(img);
}

Test(symbols, build_id_debug_dir)
{
    char p[512], root[512], cmd[2048];
    fixpath(p, sizeof(p), "fix_stripped");
    int fd = open(p, O_RDONLY);
    cr_assert(fd >= 0);
    cr_assert(elf_version(EV_CURRENT) != EV_NONE);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    pp_elf_meta meta;
    cr_assert(pp_elf_meta_read(e, &meta) == 0);
    cr_assert(meta.build_id_len >= 2 && !meta.has_symtab);
    char hex[200];
    for (size_t i = 0; i < meta.build_id_len; i++)
        sprintf(hex + 2 * i, "%02x", meta.build_id[i]);
    snprintf(root, sizeof(root), "%s/bidroot", fixdir());
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/usr/lib/debug/.build-id/%.2s && objcopy --only-keep-debug %s/fix "
             "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
             root, hex, fixdir(), root, hex, hex + 2);
    cr_assert(system(cmd) == 0);
    pp_symtab t;
    pp_symtab_init(&t);
    pp_debug_ctx none = {.rootfd = -1, .pid = 0, .path = "/nonexistent/fix"};
    cr_assert(pp_elf_load_all(e, &meta, &none, &t, NULL) >= 0);
    pp_symtab_finish(&t, 16);
    cr_assert_null(find_by_name(&t, "pp_fixture_local"));
    pp_symtab_free(&t);
    pp_symtab_init(&t);
    int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    cr_assert(rootfd >= 0);
    pp_debug_ctx dbg = {.rootfd = rootfd, .pid = 0, .path = "/nonexistent/fix"};
    cr_assert(pp_elf_load_all(e, &meta, &dbg, &t, NULL) > 0);
    close(rootfd);
    pp_symtab_finish(&t, 16);
    cr_assert_not_null(find_by_name(&t, "pp_fixture_local"));
    pp_symtab_free(&t);
    elf_end(e);
    close(fd);
}

Test(symbols, garbage_and_truncated_elf)
{
    char p[512];
    size_t len;
    fixpath(p, sizeof(p), "fix");
    uint8_t *img = slurp(p, &len);
    for (size_t cut = 0; cut < len; cut += len / 37 + 1) {
        pp_symtab t;
        pp_symtab_init(&t);
        pp_elf_load_memory(img, cut ? cut : 1, &t, NULL);
        pp_symtab_free(&t);
    }
    srand(1234);
    for (int round = 0; round < 40; round++) {
        uint8_t *m = malloc(len);
        memcpy(m, img, len);
        for (int k = 0; k < 64; k++)
            m[(size_t)rand() % (round < 20 ? 256 : len)] = (uint8_t)rand();
        pp_symtab t;
        pp_symtab_init(&t);
        pp_elf_load_memory(m, len, &t, NULL);
        pp_symtab_free(&t);
        free(m);
    }
    free(img);
    pp_symtab t;
    pp_symtab_init(&t);
    cr_assert(pp_elf_load_memory("\x7f"
                                 "ELF",
                                 4, &t, NULL) < 0);
    pp_symtab_free(&t);
    /* gopclntab parser on garbage and on headers with absurd offsets */
    uint8_t hdr[64] = {0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8};
    memset(hdr + 8, 0xff, sizeof(hdr) - 8);
    pp_symtab_init(&t);
    cr_assert(pp_gopclntab_parse(hdr, sizeof(hdr), 0, &t) < 0);
    hdr[0] = 0xfa;
    cr_assert(pp_gopclntab_parse(hdr, sizeof(hdr), 0, &t) < 0);
    hdr[0] = 0xfb;
    cr_assert(pp_gopclntab_parse(hdr, sizeof(hdr), 0, &t) < 0);
    cr_assert(pp_gopclntab_parse(hdr, 3, 0, &t) < 0);
    pp_symtab_free(&t);
}

/* ---- live processes ---- */

Test(symbols, live_symtab_process)
{
    char p[512];
    fixpath(p, sizeof(p), "fix");
    child c = spawn(p, NULL);
    cr_assert(c.nv >= 4);
    pp_symbolizer *s = pp_symbolizer_new(0);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "pp_fixture_alpha");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[1]), "pp_fixture_beta");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[2] + 2), "pp_fixture_local");
    cr_assert_str_eq(sym_user(s, c.pid, 0x10), "[unknown]");
    pp_symbolizer_stats st;
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.binaries_loaded, 1);
    cr_assert_eq(st.binaries_cached, 2);
    cr_assert_eq(st.maps_reads, 1); /* maps read this pass already: no re-read */
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, 0x10), "[unknown]");
    cr_assert_str_eq(sym_user(s, c.pid, 0x20), "[unknown]");
    pp_symbolizer_get_stats(s, &st);
    /* with PROCMAP_QUERY an address no mapping covers is one query, not a re-read; without it,
     * maps are re-read at most once per pass */
    cr_assert_eq(st.maps_reads, have_procmap_query() ? 1 : 2);
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0]), "pp_fixture_alpha");
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.maps_reads, have_procmap_query() ? 1 : 2); /* known address: no re-read */
    cr_assert_eq(st.binaries_loaded, 1);
    reap(&c);
    pp_symbolizer_forget_pid(s, c.pid);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0]), "[unknown]");
    pp_symbolizer_free(s);
}

Test(symbols, insert_dso_name)
{
    char p[512], want[700], map[128], content[128];
    fixpath(p, sizeof(p), "fix");
    child c = spawn(p, NULL);
    cr_assert(c.nv >= 4 && c.v[3] != 0);
    snprintf(map, sizeof(map), "/tmp/perf-%d.map", c.pid);
    int n = snprintf(content, sizeof(content), "%lx 100 jit_one\n", (unsigned long)c.v[3]);
    pp_test_write_file(map, content, (size_t)n);
    pp_symbolizer *s = pp_symbolizer_new(0);
    pp_symbolizer_set_dso_names(s, true);
    /* gProfiler's perf frames with --insert-dso-name: "<symbol> (<dso>)" */
    snprintf(want, sizeof(want), "pp_fixture_alpha (%s)", p);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), want);
    snprintf(want, sizeof(want), "jit_one (%s)", map);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[3] + 0x10), want);
    /* unnamed frames keep their form */
    cr_assert_str_eq(sym_user(s, c.pid, 0x10), "[unknown]");
    snprintf(want, sizeof(want), "(%s)", map);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[3] + 0x200), want);
    unlink(map);
    reap(&c);
    pp_symbolizer_free(s);
}

Test(symbols, live_stripped_debuglink_minidebuginfo)
{
    char p[512];
    pp_symbolizer *s = pp_symbolizer_new(0);
    fixpath(p, sizeof(p), "fix_stripped");
    child c = spawn(p, NULL);
    char want[600];
    snprintf(want, sizeof(want), "(%s)", p);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[2]), want);
    reap(&c);
    fixpath(p, sizeof(p), "dl/fix");
    c = spawn(p, NULL);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "pp_fixture_alpha");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[2] + 1), "pp_fixture_local");
    reap(&c);
    fixpath(p, sizeof(p), "mini/fix");
    c = spawn(p, NULL);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[1] + 1), "pp_fixture_beta");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[2] + 1), "pp_fixture_local");
    reap(&c);
    pp_symbolizer_free(s);
}

Test(symbols, debuglink_crc_mismatch_is_rejected)
{
    char dir[512], cmd[2048], p[600];
    snprintf(dir, sizeof(dir), "%s/dlbad", fixdir());
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s && cp %s/dl/fix %s/dl/fix.debug %s/ && printf x >> %s/fix.debug", dir,
             fixdir(), fixdir(), dir, dir);
    cr_assert(system(cmd) == 0);
    snprintf(p, sizeof(p), "%s/fix", dir);
    child c = spawn(p, NULL);
    pp_symbolizer *s = pp_symbolizer_new(0);
    char want[700];
    snprintf(want, sizeof(want), "(%s)", p);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[2]), want);
    reap(&c);
    pp_symbolizer_free(s);
}

Test(symbols, live_cpp_demangled)
{
    char p[512];
    fixpath(p, sizeof(p), "cpp");
    child c = spawn(p, NULL);
    pp_symbolizer *s = pp_symbolizer_new(0);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1),
                     "ppns::compute(std::vector<int, std::allocator<int> >&, double)");
    reap(&c);
    pp_symbolizer_free(s);
}

Test(symbols, live_go_stripped_pclntab)
{
    char p[512];
    fixpath(p, sizeof(p), "gofix");
    child c = spawn(p, NULL);
    cr_assert(c.nv == 2);
    pp_symbolizer *s = pp_symbolizer_new(0);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "main.main");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[1] + 1), "main.work");
    reap(&c);
    pp_symbolizer_free(s);
}

/* A large perf map (more than a pass may read itself) is read by the background worker, never
 * by the lookup that finds it: the lookup names the frame from what is there (nothing yet), the
 * worker reads the map meanwhile, and the next pass names it. A stop ends a read at its next
 * chunk. */
Test(symbols, large_perf_map_is_read_in_the_background)
{
    char p[512], map[128], want[64];
    fixpath(p, sizeof(p), "fix");
    child c = spawn(p, NULL);
    cr_assert(c.v[3] != 0, "anonymous exec mmap failed");
    uint64_t anon = c.v[3];
    snprintf(map, sizeof(map), "/tmp/perf-%d.map", c.pid);
    FILE *f = fopen(map, "w");
    cr_assert(f);
    for (long i = 0; i < 150000; i++) /* ~9 MiB of other functions, then the one that runs */
        fprintf(f, "%lx 40 LazyCompile:~filler_%ld /srv/app/x.js:1\n", 0x10000000 + i * 0x40, i);
    fprintf(f, "%lx 100 jit_last_line\n", (unsigned long)anon);
    cr_assert(fclose(f) == 0);
    pp_symbolizer *s = pp_symbolizer_new(0);
    snprintf(want, sizeof(want), "(/tmp/perf-%d.map)", c.pid);
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), want, "read on the lookup's path");
    pp_symbolizer_end_pass(s);
    cr_assert(pp_symbolizer_wait_reads(s, pp_mono_now() + 30));
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), "jit_last_line");
    pp_symbolizer_end_pass(s);
    /* rewritten whole: read again in the background; a stop ends that read for good */
    f = fopen(map, "r+");
    cr_assert(f);
    fputs("20000000 40 rewritten_head", f);
    cr_assert(fclose(f) == 0);
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), want, "the old map's names after a rewrite");
    pp_symbolizer_stop_reading(s);
    pp_symbolizer_end_pass(s);
    cr_assert(pp_symbolizer_wait_reads(s, pp_mono_now() + 30));
    pp_symbolizer_begin_pass(s);
    {
        const char *got = sym_user(s, c.pid, anon + 0x10);
        cr_assert_str_eq(got, want, "read on after the stop: %s", got);
    }
    unlink(map);
    reap(&c);
    pp_symbolizer_free(s);
}

Test(symbols, live_perf_map_jit)
{
    char p[512], map[128];
    fixpath(p, sizeof(p), "fix");
    child c = spawn(p, NULL);
    cr_assert(c.v[3] != 0, "anonymous exec mmap failed");
    uint64_t anon = c.v[3];
    snprintf(map, sizeof(map), "/tmp/perf-%d.map", c.pid);
    char content[256];
    int n = snprintf(content, sizeof(content), "%lx 100 jit_one\n%lx 80 Interp;frame x\n",
                     (unsigned long)anon, (unsigned long)anon + 0x200);
    pp_symbolizer *s = pp_symbolizer_new(0);
    char want[64];
    snprintf(want, sizeof(want), "(/tmp/perf-%d.map)", c.pid);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), want); /* no map yet */
    pp_test_write_file(map, content, (size_t)n);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), want); /* same pass: not re-read */
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), "jit_one");
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x210), "Interp|frame x");
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x100), want);
    /* rewrite: picked up on the next pass only */
    n = snprintf(content, sizeof(content), "%lx 100 jit_two_longer\n", (unsigned long)anon);
    pp_test_write_file(map, content, (size_t)n);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), "jit_one");
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, anon + 0x10), "jit_two_longer");
    unlink(map);
    reap(&c);
    pp_symbolizer_free(s);
}

Test(symbols, exited_process_is_unknown)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    pp_symbolizer *s = pp_symbolizer_new(0);
    cr_assert_str_eq(sym_user(s, pid, 0x401000), "[unknown]");
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, pid, 0x401000), "[unknown]");
    pp_symbolizer_stats st;
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.unknown_frames, 2);
    cr_assert_eq(st.maps_reads, 2); /* dropped at the pass boundary, read once more */
    cr_assert_str_eq(sym_user(s, pid, 0x401000), "[unknown]");
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.maps_reads, 2);
    pp_symbolizer_free(s);
}

Test(symbols, maps_query_and_text_agree)
{
    if (!have_procmap_query())
        cr_skip_test("kernel without PROCMAP_QUERY");
    char p[512];
    fixpath(p, sizeof(p), "fix");
    child c = spawn(p, NULL);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", c.pid);
    static maps_list q, t;
    memset(&q, 0, sizeof(q));
    memset(&t, 0, sizeof(t));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int no_query = 0, text = 1;
    cr_assert(pp_maps_read_exec(fd, &no_query, list_map, &q) == 0);
    cr_assert_eq(no_query, 0);
    cr_assert(pp_maps_read_exec(fd, &text, list_map, &t) == 0);
    close(fd);
    cr_assert(q.len > 0);
    /* the one difference: [vsyscall] is no VMA of the process (the kernel's gate area), so the
     * query does not list it; nothing runs there on current systems */
    char *vs = strstr(t.text, "[vsyscall]");
    if (vs) {
        char *bol = vs;
        while (bol > t.text && bol[-1] != '\n')
            bol--;
        char *eol = strchr(vs, '\n');
        memmove(bol, eol + 1, strlen(eol + 1) + 1);
    }
    cr_assert_str_eq(q.text, t.text);
    cr_assert(strstr(q.text, "[vdso]"));
    cr_assert(strstr(q.text, p));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_eq(pp_maps_covers_exec(fd, c.v[0]), 1);
    cr_assert_eq(pp_maps_covers_exec(fd, 0x10), 0);
    close(fd);
    reap(&c);
}

static int do_unshare_mounts(const char *unused)
{
    (void)unused;
    return unshare(CLONE_NEWNS);
}

Test(symbols, only_the_host_root_is_held)
{
    char dir[] = "/tmp/pp_chroot_XXXXXX";
    cr_assert(mkdtemp(dir));
    pid_t pid = pp_test_spawn_isolated(pp_test_chroot, dir);
    pp_roots t = {0};
    int self = pp_roots_get(&t, getpid());
    cr_assert(self >= 0);
    cr_assert_eq(pp_roots_get(&t, getpid()), self, "one root, shared");
    cr_assert(pp_roots_fd(&t, self) >= 0);
    /* a container-like root is never held (it would pin the container's mounts) */
    cr_assert_eq(pp_roots_get(&t, pid), -1);
    /* nor the same root seen from another mount namespace (PrivateTmp-like: other files) */
    pid_t ns = pp_test_spawn_isolated(do_unshare_mounts, NULL);
    cr_assert_eq(pp_roots_get(&t, ns), -1);
    pp_test_kill(ns);
    pp_roots_put(&t, self);
    cr_assert(pp_roots_fd(&t, self) >= 0);
    pp_roots_put(&t, self);
    cr_assert_eq(pp_roots_fd(&t, self), -1, "closed with its last reference");
    pp_test_kill(pid);
    rmdir(dir);
}

Test(symbols, noted_process_is_named_after_it_exits)
{
    char p[512];
    fixpath(p, sizeof(p), "fix");
    child c = spawn(p, NULL);
    pp_symbolizer *s = pp_symbolizer_new(0);
    pp_symbolizer_note_pid(s, c.pid); /* first sample: mappings and root read while it runs */
    reap(&c);
    /* gone before the drain: its file is still opened through its (held) root */
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "pp_fixture_alpha");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[1]), "pp_fixture_beta");
    /* the next drain: an address outside the mappings read makes it re-read them, which fails;
     * the mappings read earlier stay for this pass */
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, 0x10), "[unknown]");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[2] + 2), "pp_fixture_local");
    pp_symbolizer_stats st;
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.maps_reads, 2);
    /* the pass after still names it (samples taken after that drain's flip) */
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[1]), "pp_fixture_beta");
    /* unused for a pass and dead: dropped, so the pid is read afresh and unknown */
    pp_symbolizer_begin_pass(s);
    pp_symbolizer_begin_pass(s);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "[unknown]");
    pp_symbolizer_free(s);
}

Test(symbols, gone_processes_are_dropped_after_two_idle_passes)
{
    char p[512];
    fixpath(p, sizeof(p), "fix");
    child c = spawn(p, NULL), live = spawn(p, NULL);
    pp_symbolizer *s = pp_symbolizer_new(0);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "pp_fixture_alpha");
    cr_assert_str_eq(sym_user(s, live.pid, live.v[0] + 1), "pp_fixture_alpha");
    reap(&c);
    pp_symbolizer_begin_pass(s); /* idle one pass: kept (a drain may still name it) */
    pp_symbolizer_begin_pass(s); /* idle two passes and gone: dropped */
    pp_symbolizer_stats st;
    pp_symbolizer_get_stats(s, &st);
    uint64_t reads = st.maps_reads;
    cr_assert_str_eq(sym_user(s, live.pid, live.v[0] + 1), "pp_fixture_alpha");
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.maps_reads, reads, "a live idle process keeps its mappings");
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "[unknown]");
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.maps_reads, reads + 1, "the gone one was dropped and is read afresh");
    reap(&live);
    pp_symbolizer_free(s);
}

Test(symbols, deleted_binary_and_unreadable_mapping)
{
    char src[512], p[600], g[512];
    fixpath(src, sizeof(src), "fix");
    snprintf(p, sizeof(p), "%s/fix_del", fixdir());
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "cp %s %s", src, p);
    cr_assert(system(cmd) == 0);
    fixpath(g, sizeof(g), "garbage");
    child c = spawn(p, g);
    cr_assert(c.v[4] != 0, "file mapping failed");
    cr_assert(unlink(p) == 0);
    pp_symbolizer *s = pp_symbolizer_new(0);
    cr_assert_str_eq(sym_user(s, c.pid, c.v[0] + 1), "pp_fixture_alpha");
    char want[700];
    snprintf(want, sizeof(want), "(%s)", g); /* not an ELF: unnamed */
    cr_assert_str_eq(sym_user(s, c.pid, c.v[4] + 8), want);
    reap(&c);
    pp_symbolizer_free(s);
}

/* Names a's and b's first function three times, alternately (the C and the C++ fixture). */
static void name_alternately(pp_symbolizer *s, const child *a, const child *b)
{
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(sym_user(s, a->pid, a->v[0]), "pp_fixture_alpha");
        cr_assert_str_eq(sym_user(s, b->pid, b->v[0]),
                         "ppns::compute(std::vector<int, std::allocator<int> >&, double)");
    }
}

Test(symbols, vdso_and_cache_eviction)
{
    char p[512], cpp[512];
    fixpath(p, sizeof(p), "fix");
    fixpath(cpp, sizeof(cpp), "cpp");
    child a = spawn(p, NULL), b = spawn(cpp, NULL);
    pp_symbolizer *s = pp_symbolizer_new(1);
    name_alternately(s, &a, &b);
    pp_symbolizer_stats st;
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.binaries_loaded, 6);
    cr_assert_eq(st.binaries_evicted, 5);
    /* vdso of the child */
    char mp[64], line[512];
    snprintf(mp, sizeof(mp), "/proc/%d/maps", a.pid);
    FILE *f = fopen(mp, "r");
    unsigned long vs = 0, ve = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, "[vdso]"))
            sscanf(line, "%lx-%lx", &vs, &ve);
    if (f)
        fclose(f);
    cr_assert(vs != 0);
    char *v = sym_user(s, a.pid, vs + (ve - vs) / 2);
    cr_assert(strcmp(v, "[unknown]") != 0);
    cr_assert(v[0] != '\0');
    reap(&a);
    reap(&b);
    pp_symbolizer_free(s);
}

/* The byte bound: with room for about one table, the two binaries take turns in the cache, and
 * every address is still named. */
/* Two processes of two binaries ("fix" and "cpp") and a symbolizer naming them alternately. */
typedef struct {
    child a, b;
    pp_symbolizer *s;
} two_binaries;

static two_binaries two_binaries_start(void)
{
    char p[512], cpp[512];
    fixpath(p, sizeof(p), "fix");
    fixpath(cpp, sizeof(cpp), "cpp");
    two_binaries t = {.a = spawn(p, NULL), .b = spawn(cpp, NULL), .s = pp_symbolizer_new(0)};
    return t;
}

/* Names both alternately; then the symbolizer has loaded `loaded` tables in all (and evicted
 * `evicted`, unless negative). */
static void two_binaries_expect(two_binaries *t, unsigned loaded, int evicted)
{
    name_alternately(t->s, &t->a, &t->b);
    pp_symbolizer_stats st;
    pp_symbolizer_get_stats(t->s, &st);
    cr_assert_eq(st.binaries_loaded, loaded);
    if (evicted >= 0)
        cr_assert_eq(st.binaries_evicted, (unsigned)evicted);
    if (evicted > 0)
        cr_assert(st.binary_bytes > 1, "the one table kept is counted");
}

static void two_binaries_stop(two_binaries *t)
{
    reap(&t->a);
    reap(&t->b);
    pp_symbolizer_free(t->s);
}

Test(symbols, cache_bounded_in_bytes)
{
    two_binaries t = two_binaries_start();
    pp_symbolizer_set_max_binary_bytes(t.s, 1); /* only the newest table stays */
    two_binaries_expect(&t, 6, 5);
    pp_symbolizer_set_max_binary_bytes(t.s, 64u << 20); /* both fit: loaded once more each */
    two_binaries_expect(&t, 7, -1);
    two_binaries_stop(&t);
}

static size_t other_facts(void *arg)
{
    return *(size_t *)arg;
}

/* Other per-binary facts (the unwind rows) count against the same bound: with them taking all
 * but a byte of it, only the newest table stays, as with a bound of one byte. */
Test(symbols, unwind_rows_share_the_byte_bound)
{
    two_binaries t = two_binaries_start();
    size_t rows = (64u << 20) - 1;
    pp_symbolizer_set_max_binary_bytes(t.s, 64u << 20);
    pp_symbolizer_share_budget(t.s, other_facts, &rows);
    two_binaries_expect(&t, 6, 5);
    rows = 0; /* the rows went: both tables fit */
    two_binaries_expect(&t, 7, -1);
    two_binaries_stop(&t);
}

/* Repeated lookups (the sampler's hot path) keep naming the same function: the cached table is
 * reused, not reloaded (their speed is for a benchmark in bench/, not a unit test). */
Test(symbols, repeated_lookups_reuse_the_table)
{
    char p[512];
    fixpath(p, sizeof(p), "cpp");
    child c = spawn(p, NULL);
    pp_symbolizer *s = pp_symbolizer_new(0);
    char first[256], buf[256];
    cr_assert(pp_symbolize_user(s, c.pid, c.v[0], first, sizeof(first)) > 0);
    for (int i = 0; i < 100000; i++) {
        pp_symbolize_user(s, c.pid, c.v[0] + (uint64_t)(i % 16), buf, sizeof(buf));
        if (i % 16 == 0)
            cr_assert_str_eq(buf, first);
    }
    pp_symbolizer_stats st;
    pp_symbolizer_get_stats(s, &st);
    cr_assert_eq(st.binaries_loaded, 1, "the table is read once");
    reap(&c);
    pp_symbolizer_free(s);
}

/* The kernel's build-id from its notes (/sys/kernel/notes): found after other notes, refused
 * when a note runs past the end. */
Test(symbols, kernel_notes_build_id)
{
    unsigned char notes[] = {
        6, 0, 0, 0, 4, 0, 0, 0, 1, 1, 0, 0, 'L', 'i', 'n', 'u', 'x',  0,    0,    0,
        1, 2, 3, 4,                                                                     /* other */
        4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0,   0xde, 0xad, 0xbe, 0xef, /* id */
    };
    char hex[2 * PP_BUILD_ID_MAX + 1];
    cr_assert_eq(pp_ksyms_notes_build_id(notes, sizeof(notes), hex, sizeof(hex)), 0);
    cr_expect_str_eq(hex, "deadbeef");
    cr_expect_eq(pp_ksyms_notes_build_id(notes, sizeof(notes) - 1, hex, sizeof(hex)), -1,
                 "a desc cut short");
    cr_expect_str_eq(hex, "");
    cr_expect_eq(pp_ksyms_notes_build_id(notes, 24, hex, sizeof(hex)), -1, "no GNU note");
    notes[4] = 0xff; /* the first note's desc size runs past the end */
    cr_expect_eq(pp_ksyms_notes_build_id(notes, sizeof(notes), hex, sizeof(hex)), -1);
    if (access("/sys/kernel/notes", R_OK) == 0) {
        unsigned char real[4096];
        ssize_t n = pp_read_small_file("/sys/kernel/notes", (char *)real, sizeof(real));
        cr_assert(n > 0);
        cr_expect_eq(pp_ksyms_notes_build_id(real, (size_t)n, hex, sizeof(hex)), 0);
        cr_expect_eq(strlen(hex), 40, "the running kernel's sha1 build-id: %s", hex);
    }
}
