/* The PHP runtime's naming code (runtimes/php/): reading zend_functions, names and lines out of
 * fake memory through the reader's test hook (garbage refused), phpspy's frame text, gProfiler's
 * phpspy output parser, the process filter, and the layout self-check against Debian's real PHP
 * 8.2 with its table and with a deliberately wrong one. */
#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "runtimes/php/walker_info.h"
#include "runtimes/php/php_int.h"
#include "runtimes/system/sampler.h"
#include "testutil.h"

/* ---- fake memory: a few regions at fixed addresses ---- */

typedef struct region {
    uint64_t addr;
    uint8_t data[512];
} region;

static region mem[8];
static size_t nmem;

static int hook(void *arg, uint64_t addr, void *buf, size_t len)
{
    (void)arg;
    for (size_t i = 0; i < nmem; i++)
        if (addr >= mem[i].addr && addr + len <= mem[i].addr + sizeof(mem[i].data)) {
            memcpy(buf, mem[i].data + (addr - mem[i].addr), len);
            return 0;
        }
    errno = EFAULT;
    return -1;
}

static uint8_t *region_at(uint64_t addr)
{
    memset(&mem[nmem], 0, sizeof(mem[nmem]));
    mem[nmem].addr = addr;
    return mem[nmem++].data;
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
    memcpy(p + off, &v, 8);
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
    memcpy(p + off, &v, 4);
}

static void zstr(uint64_t addr, const char *s)
{
    uint8_t *p = region_at(addr);
    put64(p, 16, strlen(s));
    memcpy(p + 24, s, strlen(s));
}

#define FN 0x100000ull
#define NAME 0x200000ull
#define FILE_ 0x300000ull
#define OPS 0x400000ull
#define CLASS 0x500000ull
#define CNAME 0x600000ull

static const pp_php_layout *L82;

/* A user function "run" of class Worker in /app/x.php, lines 5-9, three oplines. */
static void fake_function(uint8_t type, bool with_class)
{
    nmem = 0;
    L82 = pp_php_layout_for(8, 2);
    cr_assert_not_null(L82);
    uint8_t *f = region_at(FN);
    f[0] = type;
    put64(f, L82->fn_name, NAME);
    put64(f, L82->fn_scope, with_class ? CLASS : 0);
    put64(f, L82->op_filename, FILE_);
    put32(f, L82->op_line_start, 5);
    put32(f, L82->op_line_end, 9);
    put32(f, L82->op_last, 3);
    put64(f, L82->op_opcodes, OPS);
    zstr(NAME, "run");
    zstr(FILE_, "/app/x.php");
    uint8_t *c = region_at(CLASS);
    put64(c, L82->ce_name, CNAME);
    zstr(CNAME, "Worker");
    uint8_t *o = region_at(OPS);
    for (uint32_t i = 0; i < 3; i++)
        put32(o, i * L82->zop_size + L82->zop_lineno, 6 + i);
}

static pp_rmem reader(void)
{
    pp_rmem m;
    pp_rmem_init(&m, 1);
    m.hook = hook;
    return m;
}

Test(php, user_method_named_with_its_line)
{
    fake_function(PP_PHP_USER_FUNCTION, true);
    pp_rmem m = reader();
    pp_php_func f;
    cr_assert_eq(pp_php_func_read(&m, L82, FN, &f), 0);
    cr_expect_str_eq(f.text, "Worker::run");
    cr_expect_str_eq(f.file, "/app/x.php");
    cr_expect_eq(f.check, pp_php_check(PP_PHP_USER_FUNCTION, NAME, FILE_, 5));
    cr_expect(pp_php_func_plausible(&f));
    cr_expect_eq(pp_php_func_line(&m, L82, &f, 1), 7);
    cr_expect_eq(pp_php_func_line(&m, L82, &f, PP_PHP_NO_OPLINE), 5, "unknown opline: first line");
    cr_expect_eq(pp_php_func_line(&m, L82, &f, 3), 5, "out of the op_array: first line");
    char text[256];
    pp_php_frame_text(&f, pp_php_func_line(&m, L82, &f, 2), text, sizeof(text));
    cr_expect_str_eq(text, "Worker::run /app/x.php:8");
    pp_php_func_clear(&f);
    pp_rmem_free(&m);
}

Test(php, main_code_and_internal_functions)
{
    fake_function(PP_PHP_USER_FUNCTION, false);
    put64(mem[0].data, L82->fn_name, 0); /* top-level code: no name */
    pp_rmem m = reader();
    pp_php_func f;
    char text[256];
    cr_assert_eq(pp_php_func_read(&m, L82, FN, &f), 0);
    pp_php_frame_text(&f, 6, text, sizeof(text));
    cr_expect_str_eq(text, "<main> /app/x.php:6");
    pp_php_func_clear(&f);

    fake_function(1, false); /* an internal function: phpspy's "<internal>:-1" */
    cr_assert_eq(pp_php_func_read(&m, L82, FN, &f), 0);
    cr_expect_eq(f.check, pp_php_check(1, NAME, 0, 0));
    pp_php_frame_text(&f, pp_php_func_line(&m, L82, &f, 0), text, sizeof(text));
    cr_expect_str_eq(text, "run <internal>:-1");
    pp_php_func_clear(&f);
    pp_rmem_free(&m);
}

Test(php, garbage_refused)
{
    pp_rmem m = reader();
    pp_php_func f;
    fake_function(7, false); /* not a function type */
    cr_expect_eq(pp_php_func_read(&m, L82, FN, &f), -1);
    fake_function(PP_PHP_USER_FUNCTION, false);
    put64(mem[1].data, 16, 1ull << 40); /* the name's length: absurd */
    cr_expect_eq(pp_php_func_read(&m, L82, FN, &f), -1);
    fake_function(PP_PHP_USER_FUNCTION, false);
    mem[1].data[25] = '\0'; /* a NUL inside a name */
    cr_expect_eq(pp_php_func_read(&m, L82, FN, &f), -1);
    fake_function(PP_PHP_USER_FUNCTION, false);
    put64(mem[0].data, L82->op_filename, 0xdead0000); /* unmapped file name */
    cr_expect_eq(pp_php_func_read(&m, L82, FN, &f), -1);
    cr_expect_eq(pp_php_func_read(&m, L82, 0, &f), -1);
    cr_expect_eq(pp_php_func_read(&m, L82, 0x7, &f), -1);
    fake_function(PP_PHP_USER_FUNCTION, false);
    put32(mem[0].data, L82->op_line_end, 2); /* ends before it starts: implausible */
    cr_assert_eq(pp_php_func_read(&m, L82, FN, &f), 0);
    cr_expect(!pp_php_func_plausible(&f));
    pp_php_func_clear(&f);
    fake_function(PP_PHP_USER_FUNCTION, false);
    uint8_t *o = mem[5].data; /* an opline's line outside the function: garbage */
    put32(o, 1 * L82->zop_size + L82->zop_lineno, 4000);
    cr_assert_eq(pp_php_func_read(&m, L82, FN, &f), 0);
    cr_expect_eq(pp_php_func_line(&m, L82, &f, 1), 5);
    pp_php_func_clear(&f);
    pp_rmem_free(&m);
}

/* The function is freed while it is read, after its own fields: its name's memory now holds the
 * name of the function made at the same address (another first line). */
static bool reuse_done;

static int reuse_on_name(void *arg, uint64_t addr, void *buf, size_t len)
{
    if (!reuse_done && addr == NAME + L82->zs_val) {
        reuse_done = true;
        put64(mem[1].data, 16, strlen("other_fn"));
        memcpy(mem[1].data + 24, "other_fn", strlen("other_fn"));
        put32(mem[0].data, L82->op_line_start, 20);
    }
    return hook(arg, addr, buf, len);
}

Test(php, a_function_reused_while_read_is_not_named)
{
    fake_function(PP_PHP_USER_FUNCTION, true);
    pp_rmem m = reader();
    m.hook = reuse_on_name;
    reuse_done = false;
    pp_php_func f;
    int rc = pp_php_func_read(&m, L82, FN, &f);
    cr_assert(reuse_done, "the name was read");
    cr_expect_eq(rc, -1, "named %s from line %u", rc == 0 ? f.text : "",
                 rc == 0 ? f.line_start : 0);
    if (rc == 0)
        pp_php_func_clear(&f);
    /* read again: the new function, named by what it holds now */
    cr_assert_eq(pp_php_func_read(&m, L82, FN, &f), 0);
    cr_expect_str_eq(f.text, "Worker::other_fn");
    cr_expect_eq(f.line_start, 20);
    pp_php_func_clear(&f);
    pp_rmem_free(&m);
}

/* ---- phpspy's output ---- */

static char *stack_text(pp_profile *p, const pp_pid_profile *pp, size_t i, uint64_t *count)
{
    static char buf[2048];
    size_t o = 0, n;
    const uint32_t *f = pp_pid_stack(pp, i, &n, count);
    for (size_t k = 0; k < n; k++)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", k ? ";" : "",
                              pp_profile_str(p, f[k]));
    return buf;
}

Test(php, phpspy_output_parsed_as_gprofiler)
{
    static const char out[] = "0 Worker::inner /t.php:10\n1 Worker::run /t.php:5\n2 <main> "
                              "/t.php:16\n# pid = 455\n\n"
                              "0 strlen <internal>:-1\n1 <main> /t.php:3\n# pid = 455\n\n"
                              "0 a /t.php:1\n2 b /t.php:2\n# pid = 9\n\n" /* index skips */
                              "0 a /t.php:1\n# pid = x\n\n"               /* bad pid */
                              "0 Worker::inner /t.php:10\n1 Worker::run /t.php:5\n2 <main> "
                              "/t.php:16\n# pid = 455\n\n"
                              "0 cut /t.php:1\n"; /* cut mid-block */
    pp_profile *p = pp_profile_new();
    long corrupt = -1;
    cr_assert_eq(pp_phpspy_parse(out, sizeof(out) - 1, p, &corrupt), 3);
    cr_expect_eq(corrupt, 2);
    pp_pid_profile *pp = pp_profile_get(p, 455, false);
    cr_assert_not_null(pp);
    cr_expect_str_eq(pp_profile_str(p, pp->comm), "php");
    cr_assert_eq(pp_pid_nstacks(pp), 2);
    uint64_t count;
    cr_expect_str_eq(stack_text(p, pp, 0, &count),
                     "<main> /t.php:16_[php];Worker::run /t.php:5_[php];"
                     "Worker::inner /t.php:10_[php]");
    cr_expect_eq(count, 2);
    cr_expect_str_eq(stack_text(p, pp, 1, &count),
                     "<main> /t.php:3_[php];strlen <internal>:-1_[php]");
    cr_expect_null(pp_profile_get(p, 9, false));
    pp_profile_free(p);
}

Test(php, proc_filter_is_an_extended_regex)
{
    cr_expect(pp_php_filter_match("php-fpm", "php-fpm8.2"));
    cr_expect(!pp_php_filter_match("php-fpm", "php8.2"));
    cr_expect(pp_php_filter_match("^php[0-9.]*$", "php8.2"));
    cr_expect(pp_php_filter_match(NULL, "anything"));
    cr_expect(!pp_php_filter_match("(", "php"), "an invalid pattern matches nothing");
}

/* ---- the self-check against a real PHP ---- */

static const char *php_bin(void)
{
    return access("/usr/bin/php8.2", X_OK) == 0 ? "/usr/bin/php8.2" : NULL;
}

static pid_t start_php(void)
{
    char script[PATH_MAX];
    cr_assert_not_null(realpath("tests/integration/apps/php/hot.php", script));
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pfd[1], 1);
        close(pfd[0]);
        execl(php_bin(), "php8.2", script, "30", (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char buf[16] = "";
    cr_assert(read(pfd[0], buf, sizeof(buf) - 1) > 0, "php started");
    close(pfd[0]);
    return pid;
}

static void stop_php(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

Test(php, selfcheck_passes_the_right_table_and_fails_a_wrong_one)
{
    if (!php_bin())
        cr_skip_test("php8.2 (Debian's php8.2-cli) is not installed");
    pp_test_quiet_log();
    pid_t pid = start_php();
    pp_php_target t;
    char err[256];
    cr_assert_eq(pp_php_find(pid, &t, err, sizeof(err)), PP_PHP_FOUND, "%s", err);
    cr_expect_eq(t.major, 8);
    cr_expect_eq(t.minor, 2);
    pp_rmem m;
    pp_rmem_init(&m, pid);
    pp_php_layout good = *pp_php_layout_for(8, 2), bad = good;
    /* 0: no frame to check yet (between frames, or not in its loop yet: under valgrind the
     * fixture starts slowly); awaited up to 10 s */
    int v = 0;
    for (int i = 0; i < 10000 && v == 0; i++) {
        v = pp_php_layout_selfcheck(&m, &good, t.eg);
        if (v == 0)
            usleep(1000);
    }
    cr_expect_eq(v, 1);
    bad.op_filename = 144; /* 8.3's places on an 8.2 engine */
    bad.op_line_start = 152;
    bad.op_line_end = 156;
    bad.op_last = 76;
    bad.op_opcodes = 80;
    cr_expect_eq(pp_php_layout_selfcheck(&m, &bad, t.eg), -1);

    /* the walker's prepare: an untested table is used only when the check passes */
    bad.tested = good.tested = false;
    unsigned char info[192];
    pp_inwalk_status st;
    pp_php_layout_override(8, 2, &bad);
    void *w = pp_php_inwalker.prepare(NULL, pid, info, sizeof(info), &st, err, sizeof(err));
    cr_expect_null(w);
    cr_expect_eq(st, PP_INWALK_UNSUPPORTED);
    cr_expect_str_eq(err, "unverified PHP 8.2 layout");
    pp_php_layout_override(8, 2, &good);
    w = pp_php_inwalker.prepare(NULL, pid, info, sizeof(info), &st, err, sizeof(err));
    cr_expect_not_null(w, "%s", err);
    if (w)
        pp_php_inwalker.ops->free(w);
    pp_php_layout_override(8, 2, NULL);
    pp_rmem_free(&m);
    stop_php(pid);
}

Test(php, unknown_versions_have_no_table)
{
    cr_expect_null(pp_php_layout_for(7, 3));
    cr_expect_null(pp_php_layout_for(8, 5));
    for (unsigned minor = 0; minor <= 4; minor++)
        cr_expect_not_null(pp_php_layout_for(8, minor));
    cr_expect_not_null(pp_php_layout_for(7, 4));
    cr_expect(pp_php_layout_for(8, 2)->tested);
}
