/* Unit tests: process discovery with real processes of each runtime (run as root). Every child
 * prints "ready" once it is up; each test kills and reaps its process groups.
 * Under valgrind --trace-children=yes the runtimes must run natively (their /proc/<pid>/exe would
 * otherwise be valgrind's tool): VALGRIND_OPTS=--trace-children-skip=* is set for every child,
 * and under valgrind programs are started through "/bin/sh -c 'exec "$@"'", so only that shell
 * is traced and it execs the real program untraced. */
#include "base/child.h"
#include "tests/unit/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <valgrind/valgrind.h>

#include "orchestrator/discovery.h"
#include "orchestrator/discovery_int.h"
#include "runtimes/registry.h"
#include "runtimes/runtime.h"

static void suite_init(void)
{
    pp_test_quiet_log();
    setenv("VALGRIND_OPTS", "--trace-children-skip=*", 1);
}

TestSuite(discovery, .init = suite_init, .timeout = 300);

/* ---- helpers ---- */

/* Starts argv (in its own process group, stdout on a pipe) and waits for its "ready" line. */
static pid_t spawn_ready(const char *cwd, char *const argv_in[])
{
    char *wrapped[32];
    char *const *argv = argv_in;
    if (RUNNING_ON_VALGRIND) {
        size_t n = 0;
        wrapped[n++] = "/bin/sh";
        wrapped[n++] = "-c";
        wrapped[n++] = "exec \"$@\"";
        wrapped[n++] = "sh";
        for (size_t i = 0; argv_in[i] && n < 31; i++)
            wrapped[n++] = argv_in[i];
        wrapped[n] = NULL;
        argv = wrapped;
    }
    int p[2];
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[1], 1);
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid);
    close(p[1]);
    char line[256];
    size_t len = 0;
    while (len < sizeof(line) - 1) {
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        if (poll(&pfd, 1, 60000) <= 0)
            break;
        ssize_t r = read(p[0], line + len, sizeof(line) - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        if (memchr(line, '\n', len))
            break;
    }
    line[len] = '\0';
    close(p[0]);
    cr_assert(strstr(line, "ready") != NULL, "%s did not get ready: '%s'", argv[0], line);
    return pid;
}

static void kill_reap(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void sh(const char *cmd)
{
    int rc = system(cmd);
    cr_assert_eq(rc, 0, "command failed (%d): %s", rc, cmd);
}

/* A native program that prints "ready" and pauses, compiled into dir/name. */
static void build_sleeper(const char *dir, const char *name)
{
    char src[PATH_MAX], cmd[3 * PATH_MAX];
    snprintf(src, sizeof(src), "%s/sleeper.c", dir);
    const char *code = "#include <stdio.h>\n#include <unistd.h>\n"
                       "int main(void){puts(\"ready\");fflush(stdout);for(;;)pause();}\n";
    pp_test_write_file(src, code, strlen(code));
    snprintf(cmd, sizeof(cmd), "gcc -O1 -o '%s/%s' '%s'", dir, name, src);
    sh(cmd);
}

static pid_t spawn_path(const char *path)
{
    char *argv[] = {(char *)path, NULL};
    return spawn_ready(NULL, argv);
}

static pp_discovery *new_disc(pp_discovery_opts *o)
{
    char err[256] = "";
    pp_discovery *d = pp_discovery_new(o, err, sizeof(err));
    cr_assert_not_null(d, "%s", err);
    return d;
}

static const pp_proc *find(const pp_proc_list *l, int pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->procs[i].pid == pid)
            return &l->procs[i];
    return NULL;
}

/* Classifies pid through a --pids restricted pass and through pp_discover_one, reading the
 * mappings with PROCMAP_QUERY (where the kernel has it) and from the whole maps text: all must
 * agree. */
static pp_proc classify(int pid)
{
    pp_discovery_opts o = {.pids = &pid, .npids = 1, .self_pid = -1};
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 1, "pid %d listed %zu times", pid, l.n);
    pp_proc p = l.procs[0], q;
    pp_discovery_free(d);
    d = new_disc(&o);
    cr_assert_eq(pp_discover_one(d, pid, &q), 0);
    cr_assert_eq(q.kind, p.kind);
    cr_assert_eq(q.kinds, p.kinds);
    cr_assert_eq(q.blacklisted, p.blacklisted);
    pp_discovery_free(d);
    pp_disc_force_text_maps(true);
    d = new_disc(&o);
    int rc = pp_discover_one(d, pid, &q);
    pp_disc_force_text_maps(false);
    cr_assert_eq(rc, 0);
    cr_assert_eq(q.kind, p.kind, "maps text: %s, query: %s", pp_proc_kind_name(q.kind),
                 pp_proc_kind_name(p.kind));
    cr_assert_eq(q.kinds, p.kinds);
    cr_assert_eq(q.blacklisted, p.blacklisted);
    pp_discovery_free(d);
    pp_proc_list_free(&l);
    cr_assert_eq(p.pid, pid);
    return p;
}

static void expect_kind(pid_t pid, pp_proc_kind want, const char *what)
{
    pp_proc p = classify(pid);
    cr_expect_eq(p.kind, want, "%s: kind %s, want %s (kinds 0x%x)", what, pp_proc_kind_name(p.kind),
                 pp_proc_kind_name(want), p.kinds);
    cr_expect(p.kinds & (1u << want) || want == PP_KIND_NATIVE, "%s: kinds 0x%x", what, p.kinds);
    cr_expect(!p.blacklisted, "%s: not blacklisted", what);
}

static bool executable(const char *path)
{
    return access(path, X_OK) == 0;
}

/* ---- pure parts ---- */

Test(discovery, kind_names)
{
    const char *want[] = {"native", "java", "python", "ruby", "php", "dotnet", "node", "go"};
    for (int k = 0; k < PP_KIND_COUNT; k++)
        cr_expect_str_eq(pp_proc_kind_name((pp_proc_kind)k), want[k]);
    cr_expect_str_eq(pp_proc_kind_name(PP_KIND_COUNT), "unknown");
}

Test(discovery, parse_stat_with_tricky_comm)
{
    const char *line = "4242 (a) b (c) d) S 77 4242 4242 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 1 0 "
                       "123456 9876543 300 18446744073709551615\n";
    pp_stat_info st;
    cr_assert_eq(pp_disc_parse_stat(line, strlen(line), &st), 0);
    cr_expect_str_eq(st.comm, "a) b (c) d");
    cr_expect_eq(st.ppid, 77);
    cr_expect_eq(st.flags, 4194560UL);
    cr_expect_eq(st.start_ticks, 123456ULL);
    cr_expect_eq(st.vsize, 9876543ULL);
    const char *kthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n";
    cr_assert_eq(pp_disc_parse_stat(kthread, strlen(kthread), &st), 0);
    cr_expect(st.flags & PP_PF_KTHREAD);
    const char *longcomm = "9 (0123456789abcdefghij) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 6\n";
    cr_assert_eq(pp_disc_parse_stat(longcomm, strlen(longcomm), &st), 0);
    cr_expect_str_eq(st.comm, "0123456789abcdef", "comm is cut to 16 characters");
    cr_expect_eq(st.start_ticks, 5ULL);
    const char *bad[] = {"", "12 no parens S 1", "12 (x) S 1 2 3", "12 )x( S 1 2 3 4 5 6"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(pp_disc_parse_stat(bad[i], strlen(bad[i]), &st), -1, "'%s'", bad[i]);
}

Test(discovery, maps_lines_are_matched_whole_and_the_exe_wins)
{
    pp_discovery_opts o = {.self_pid = -1};
    pp_discovery *d = new_disc(&o);
    const char *maps = "55d0-55d1 r--p 00000000 fe:00 100 /usr/bin/python3.11\n"
                       "55d1-55d2 r-xp 00001000 fe:00 100 /usr/bin/python3.11\n"
                       "55e0-55e9 rw-p 00000000 00:00 0 [heap]\n"
                       "7f00-7f01 rw-p 00000000 00:00 0 \n"
                       "7f01-7f02 r--p 00000000 fe:00 200 /opt/jdk/lib/server/libjvm.so (deleted)\n"
                       "7f02-7f03 r--p 00000000 fe:00 300 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
                       "7f03-7f04 r--p 00000000 fe:00 400 /srv/dir with space/libcoreclr.so\n"
                       "7f04-7f05 r--p 00000000 fe:00 500 /usr/lib/php/libphp8.2.so";
    unsigned kinds = 0, exe_kinds = 0;
    pp_disc_match_maps(d, maps, strlen(maps), "/usr/bin/python3.11", 19, &kinds, &exe_kinds);
    cr_expect_eq(kinds,
                 (1u << PP_KIND_PYTHON) | (1u << PP_KIND_JAVA) | (1u << PP_KIND_DOTNET) |
                     (1u << PP_KIND_PHP),
                 "kinds 0x%x", kinds);
    cr_expect_eq(exe_kinds, 1u << PP_KIND_PYTHON, "exe kinds 0x%x", exe_kinds);

    const char *other =
        "1-2 r--p 00000000 fe:00 1 /usr/lib/ruby/3.1.0/x86_64-linux/libruby-3.1.so\n"
        "2-3 r--p 00000000 fe:00 2 /usr/local/lib/python3.11/site-packages/x.so\n"
        "3-4 r--p 00000000 fe:00 3 /usr/lib/rubygems/notruby/x.so\n"
        "4-5 r--p 00000000 fe:00 4 /x/jvm/libjvm.sox\n";
    kinds = exe_kinds = 0;
    pp_disc_match_maps(d, other, strlen(other), "", 0, &kinds, &exe_kinds);
    cr_expect_eq(kinds, (1u << PP_KIND_RUBY) | (1u << PP_KIND_PYTHON) | (1u << PP_KIND_JAVA),
                 "libruby, site-packages; libjvm.so is not end-anchored (gProfiler): 0x%x", kinds);
    cr_expect_eq(exe_kinds, 0u);

    const char *plain = "1-2 r--p 00000000 fe:00 1 /usr/bin/sleep\n"
                        "2-3 r--p 00000000 fe:00 2 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
                        "3-4 r--p 00000000 fe:00 3 /usr/share/pythons/notes.txt\n";
    kinds = exe_kinds = 0;
    pp_disc_match_maps(d, plain, strlen(plain), "/usr/bin/sleep", 14, &kinds, &exe_kinds);
    cr_expect_eq(kinds, 0u, "kinds 0x%x", kinds);
    pp_discovery_free(d);
}

Test(discovery, bad_regex_is_reported_with_kind_and_offset)
{
    pp_discovery_opts o = {.self_pid = -1};
    o.maps_regex[PP_KIND_PYTHON] = "/python(3";
    char err[256] = "";
    cr_assert_null(pp_discovery_new(&o, err, sizeof(err)));
    cr_expect(strstr(err, "python") != NULL, "%s", err);
    cr_expect(strstr(err, "offset 9") != NULL, "%s", err);
    cr_expect(strstr(err, "parenthesis") != NULL, "%s", err);

    pp_discovery_opts o2 = {.self_pid = -1};
    o2.maps_regex[PP_KIND_NODE] = "node[";
    cr_assert_null(pp_discovery_new(&o2, err, sizeof(err)));
    cr_expect(strstr(err, "node") != NULL, "%s", err);

    pp_discovery_opts o3 = {.self_pid = -1};
    o3.maps_regex[PP_KIND_NATIVE] = "x";
    cr_assert_null(pp_discovery_new(&o3, err, sizeof(err)));
    cr_expect(strstr(err, "native") != NULL, "%s", err);
}

/* ---- real processes ---- */

Test(discovery, native_program)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "sleeper");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/sleeper", dir);
    pid_t pid = spawn_path(path);
    pp_proc p = classify(pid);
    cr_expect_eq(p.kind, PP_KIND_NATIVE);
    cr_expect_eq(p.kinds, 0u);
    cr_expect_str_eq(p.comm, "sleeper");
    cr_expect_eq(p.ppid, getpid());
    cr_expect_gt(p.start_ticks, 0ULL);
    kill_reap(pid);
    pp_test_rmtree(dir);
}

Test(discovery, comm_with_spaces_and_parentheses)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "a) b (c");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/a) b (c", dir);
    pid_t pid = spawn_path(path);
    pp_proc p = classify(pid);
    cr_expect_str_eq(p.comm, "a) b (c");
    cr_expect_eq(p.ppid, getpid());
    cr_expect_eq(p.kind, PP_KIND_NATIVE);
    kill_reap(pid);
    pp_test_rmtree(dir);
}

Test(discovery, python_debian)
{
    char *argv[] = {"/usr/bin/python3", "-c",
                    "import time; print('ready', flush=True); time.sleep(60)", NULL};
    pid_t pid = spawn_ready(NULL, argv);
    expect_kind(pid, PP_KIND_PYTHON, "/usr/bin/python3");
    kill_reap(pid);
}

Test(discovery, python_pyenv_with_libpython)
{
    glob_t g;
    if (glob("/root/.pyenv/versions/3.*/bin/python3", 0, NULL, &g) != 0) {
        cr_skip_test("no pyenv python");
        return;
    }
    char *argv[] = {g.gl_pathv[g.gl_pathc - 1], "-c",
                    "import time; print('ready', flush=True); time.sleep(60)", NULL};
    pid_t pid = spawn_ready(NULL, argv);
    expect_kind(pid, PP_KIND_PYTHON, argv[0]);
    kill_reap(pid);
    globfree(&g);
}

Test(discovery, python_blacklist)
{
    char *argv[] = {"/usr/bin/python3", "-c",
                    "import time; print('ready', flush=True); time.sleep(60)", "supervisord", NULL};
    pid_t pid = spawn_ready(NULL, argv);
    pp_proc p = classify(pid);
    cr_expect_eq(p.kind, PP_KIND_PYTHON);
    cr_expect(p.blacklisted, "argv containing supervisord is blacklisted");
    kill_reap(pid);
}

Test(discovery, java)
{
    const char *java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
    if (!executable(java) || !executable("/usr/bin/javac")) {
        cr_skip_test("no JDK");
        return;
    }
    char *dir = pp_test_mkdtemp();
    char src[PATH_MAX], cmd[2 * PATH_MAX];
    snprintf(src, sizeof(src), "%s/Sleep.java", dir);
    const char *code = "public class Sleep { public static void main(String[] a) throws Exception "
                       "{ System.out.println(\"ready\"); System.out.flush(); "
                       "Thread.sleep(60000); } }\n";
    pp_test_write_file(src, code, strlen(code));
    snprintf(cmd, sizeof(cmd), "/usr/bin/javac -d '%s' '%s'", dir, src);
    sh(cmd);
    char *argv[] = {(char *)java, "-XX:+UseSerialGC", "-Xshare:off", "-cp", dir, "Sleep", NULL};
    pid_t pid = spawn_ready(NULL, argv);
    expect_kind(pid, PP_KIND_JAVA, "java");
    kill_reap(pid);
    pp_test_rmtree(dir);
}

Test(discovery, node)
{
    if (!executable("/usr/bin/node")) {
        cr_skip_test("no node");
        return;
    }
    char *argv[] = {"/usr/bin/node", "-e", "console.log('ready'); setInterval(() => {}, 1000)",
                    NULL};
    pid_t pid = spawn_ready(NULL, argv);
    expect_kind(pid, PP_KIND_NODE, "node");
    kill_reap(pid);
}

Test(discovery, ruby)
{
    if (!executable("/usr/bin/ruby")) {
        cr_skip_test("ruby not installed");
        return;
    }
    char *argv[] = {"/usr/bin/ruby", "-e", "puts 'ready'; STDOUT.flush; sleep 60", NULL};
    pid_t pid = spawn_ready(NULL, argv);
    expect_kind(pid, PP_KIND_RUBY, "ruby");
    kill_reap(pid);
}

Test(discovery, php)
{
    if (!executable("/usr/bin/php")) {
        cr_skip_test("php not installed");
        return;
    }
    char *argv[] = {"/usr/bin/php", "-r", "echo \"ready\\n\"; flush(); sleep(60);", NULL};
    pid_t pid = spawn_ready(NULL, argv);
    expect_kind(pid, PP_KIND_PHP, "php");
    kill_reap(pid);
}

/* No .NET SDK here: an executable named dotnet stands for the host. */
Test(discovery, dotnet_host_by_name)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "dotnet");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/dotnet", dir);
    pid_t pid = spawn_path(path);
    expect_kind(pid, PP_KIND_DOTNET, "dotnet");
    kill_reap(pid);
    pp_test_rmtree(dir);
}

Test(discovery, node_by_executable_name_only)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "nodejs");
    char path[PATH_MAX], cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof(cmd), "cp '%s/nodejs' '%s/node_exporter'", dir, dir);
    sh(cmd);
    snprintf(path, sizeof(path), "%s/nodejs", dir);
    pid_t a = spawn_path(path);
    snprintf(path, sizeof(path), "%s/node_exporter", dir);
    pid_t b = spawn_path(path);
    expect_kind(a, PP_KIND_NODE, "nodejs");
    expect_kind(b, PP_KIND_NATIVE, "node_exporter is not node");
    kill_reap(a);
    kill_reap(b);
    pp_test_rmtree(dir);
}

static void build_go(const char *dir)
{
    char src[PATH_MAX], cmd[4 * PATH_MAX];
    snprintf(src, sizeof(src), "%s/main.go", dir);
    const char *code = "package main\nimport (\"fmt\"; \"time\")\n"
                       "func main() { fmt.Println(\"ready\"); time.Sleep(60 * time.Second) }\n";
    pp_test_write_file(src, code, strlen(code));
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && GO111MODULE=off go build -o gofull main.go && "
             "GO111MODULE=off go build -ldflags='-s -w' -o gostripped main.go && "
             "cp gofull gostrip2 && strip gostrip2 && cp gostripped gonoshdr",
             dir);
    sh(cmd);
    /* gonoshdr: no section headers at all (e_shoff, e_shnum, e_shstrndx zeroed), so only the
     * PT_NOTE segment tells it is Go. */
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/gonoshdr", dir);
    int fd = open(p, O_WRONLY);
    cr_assert_geq(fd, 0);
    const char z[8] = {0};
    cr_assert_eq(pwrite(fd, z, 8, 0x28), 8);
    cr_assert_eq(pwrite(fd, z, 4, 0x3c), 4);
    close(fd);
}

Test(discovery, go_plain_stripped_and_without_sections)
{
    if (!executable("/usr/bin/go")) {
        cr_skip_test("no go toolchain");
        return;
    }
    char *dir = pp_test_mkdtemp();
    build_go(dir);
    const char *names[] = {"gofull", "gostripped", "gostrip2", "gonoshdr"};
    for (size_t i = 0; i < 4; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        pid_t pid = spawn_path(path);
        expect_kind(pid, PP_KIND_GO, names[i]);
        kill_reap(pid);
    }
    pp_test_rmtree(dir);
}

/* Detectors (Go's ELF check, .NET's bundle marker): each examines a new executable once. */
static unsigned long detectors(void)
{
    unsigned long n = 0;
    for (int k = 1; k < PP_KIND_COUNT; k++)
        n += pp_runtime_get((pp_proc_kind)k) && pp_runtime_get((pp_proc_kind)k)->detector;
    return n;
}

Test(discovery, go_answer_is_cached_per_executable)
{
    const unsigned long per_exe = detectors();
    if (!executable("/usr/bin/go")) {
        cr_skip_test("no go toolchain");
        return;
    }
    char *dir = pp_test_mkdtemp();
    build_go(dir);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/gostripped", dir);
    int pids[3];
    for (int i = 0; i < 3; i++)
        pids[i] = spawn_path(path);
    pp_discovery_opts o = {.pids = pids, .npids = 3, .self_pid = -1};
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    pp_discovery_stats st;
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 3);
    for (size_t i = 0; i < l.n; i++)
        cr_expect_eq(l.procs[i].kind, PP_KIND_GO);
    pp_discovery_get_stats(d, &st);
    cr_expect_eq(st.elf_opens, per_exe,
                 "three processes of one executable: one parse per detector");
    cr_expect_eq(st.maps_reads, 3UL);
    /* Second pass: nothing re-read for unchanged processes. */
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 3);
    pp_discovery_get_stats(d, &st);
    cr_expect_eq(st.elf_opens, per_exe);
    cr_expect_eq(st.reused, 3UL);
    cr_expect_eq(st.maps_reads, 3UL, "maps not read again");
    pp_discovery_free(d);
    /* On demand: a new process of a known executable has its maps read, its ELF not. */
    pp_discovery_opts o2 = {.self_pid = -1};
    d = new_disc(&o2);
    pp_proc p;
    cr_assert_eq(pp_discover_one(d, pids[1], &p), 0);
    cr_expect_eq(p.kind, PP_KIND_GO);
    kill_reap(pids[0]);
    pids[0] = spawn_path(path);
    cr_assert_eq(pp_discover_one(d, pids[0], &p), 0);
    cr_expect_eq(p.kind, PP_KIND_GO);
    cr_assert_eq(pp_discover_one(d, pids[0], &p), 0);
    pp_discovery_get_stats(d, &st);
    cr_expect_eq(st.elf_opens, per_exe);
    cr_expect_eq(st.maps_reads, 2UL);
    cr_expect_eq(st.reused, 1UL);
    pp_discovery_free(d);
    pp_proc_list_free(&l);
    for (int i = 0; i < 3; i++)
        kill_reap(pids[i]);
    pp_test_rmtree(dir);
}

Test(discovery, regex_override_reclassifies_and_empty_disables)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "my_custom_rt");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/my_custom_rt", dir);
    pid_t a = spawn_path(path);
    char *argv[] = {"/usr/bin/python3", "-c",
                    "import time; print('ready', flush=True); time.sleep(60)", NULL};
    pid_t b = spawn_ready(NULL, argv);
    int pids[2] = {a, b};
    pp_discovery_opts o = {.pids = pids, .npids = 2, .self_pid = -1};
    o.maps_regex[PP_KIND_RUBY] = "^.+/my_custom_rt$";
    o.maps_regex[PP_KIND_PYTHON] = "";
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 2);
    cr_expect_eq(find(&l, a)->kind, PP_KIND_RUBY);
    cr_expect_eq(find(&l, b)->kind, PP_KIND_NATIVE, "python detection disabled");
    pp_discovery_free(d);
    pp_proc_list_free(&l);
    kill_reap(a);
    kill_reap(b);
    pp_test_rmtree(dir);
}

Test(discovery, full_scan_excludes_kernel_threads_and_self_tree)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "sleeper");
    char path[PATH_MAX], script[2 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/sleeper", dir);
    pid_t other = spawn_path(path); /* our child: excluded when we are "polyprof" */
    snprintf(script, sizeof(script), "'%s'; true", path);
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    pid_t shell = spawn_ready(NULL, argv); /* sh and its sleeper child: our descendants */

    pp_discovery_opts o = {.self_pid = 0}; /* 0: getpid() */
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_gt(l.n, 0);
    cr_expect_null(find(&l, getpid()), "self excluded");
    cr_expect_null(find(&l, other), "child excluded");
    cr_expect_null(find(&l, shell), "child excluded");
    cr_expect_null(find(&l, 2), "kthreadd excluded");
    for (size_t i = 0; i < l.n; i++) {
        cr_expect_neq(l.procs[i].ppid, 2, "kernel thread %d listed", l.procs[i].pid);
        cr_expect_neq(l.procs[i].ppid, getpid());
        cr_expect_neq(l.procs[i].ppid, shell, "grandchild %d listed", l.procs[i].pid);
    }
    pp_proc p;
    cr_expect_eq(pp_discover_one(d, getpid(), &p), -1);
    cr_expect_eq(pp_discover_one(d, other, &p), -1);
    cr_expect_eq(pp_discover_one(d, 2, &p), -1);
    pp_discovery_free(d);

    /* Without self-exclusion the same processes are listed. */
    pp_discovery_opts o2 = {.self_pid = -1};
    d = new_disc(&o2);
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_expect_not_null(find(&l, getpid()));
    cr_expect_not_null(find(&l, other));
    cr_expect_not_null(find(&l, shell));
    cr_expect_null(find(&l, 2));
    pp_discovery_free(d);
    pp_proc_list_free(&l);
    kill_reap(other);
    kill_reap(shell);
    pp_test_rmtree(dir);
}

Test(discovery, pids_restrict_everything)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "sleeper");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/sleeper", dir);
    pid_t a = spawn_path(path), b = spawn_path(path);
    int pids[] = {a, a, 999999999, -5};
    pp_discovery_opts o = {.pids = pids, .npids = 4, .self_pid = -1};
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 1, "only the listed, existing pid (once)");
    cr_expect_eq(l.procs[0].pid, a);
    pp_proc p;
    cr_expect_eq(pp_discover_one(d, a, &p), 0);
    cr_expect_eq(p.pid, a);
    cr_expect_eq(pp_discover_one(d, b, &p), -1, "not in --pids");
    pp_discovery_free(d);

    /* --pids never lists polyprof's own descendants either. */
    pp_discovery_opts o2 = {.pids = pids, .npids = 1, .self_pid = 0};
    d = new_disc(&o2);
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_expect_eq(l.n, 0);
    pp_discovery_free(d);
    pp_proc_list_free(&l);
    kill_reap(a);
    kill_reap(b);
    pp_test_rmtree(dir);
}

/* Starts a process at path and runs discovery with min_duration 1 (over pids {old, it}, or the
 * whole host when full) while it is younger than that: *young_listed and *young_one (unless
 * NULL) say whether it was listed and what pp_discover_one said; *old_listed whether old was.
 * False when the checks took 0.8 s or more (valgrind on a loaded host): nothing is said then
 * and the caller tries again with a new process. */
static bool young_check(const char *path, pid_t old, bool full, bool *young_listed, int *young_one,
                        bool *old_listed)
{
    double t0 = pp_mono_now();
    pid_t young = spawn_path(path);
    int pids[] = {old, young};
    pp_discovery_opts o = {
        .pids = full ? NULL : pids, .npids = full ? 0 : 2, .self_pid = -1, .min_duration = 1};
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    cr_assert_eq(pp_discover(d, &l), 0);
    *young_listed = find(&l, young) != NULL;
    *old_listed = find(&l, old) != NULL;
    pp_proc p;
    if (young_one)
        *young_one = pp_discover_one(d, young, &p);
    bool in_time = pp_mono_now() - t0 < 0.8;
    pp_discovery_free(d);
    pp_proc_list_free(&l);
    kill_reap(young);
    return in_time;
}

Test(discovery, min_duration_skips_young_processes)
{
    char *dir = pp_test_mkdtemp();
    build_sleeper(dir, "sleeper");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/sleeper", dir);
    pid_t old = spawn_path(path);
    usleep(1300 * 1000); /* the point of the test: let it age past 1 s */
    bool young_listed, old_listed, checked = false;
    int young_one;
    for (int i = 0; i < 20 && !checked; i++) {
        if (!young_check(path, old, false, &young_listed, &young_one, &old_listed))
            continue;
        checked = true;
        cr_expect(old_listed, "a process older than --min-duration is listed");
        cr_expect(!young_listed, "a process younger than --min-duration is listed");
        cr_expect_eq(young_one, -1, "pp_discover_one takes a young process");
    }
    cr_assert(checked, "no check ran within 0.8 s of its process's start in 20 tries");
    pp_discovery_opts o = {.pids = &old, .npids = 1, .self_pid = -1, .min_duration = 1};
    pp_discovery *d = new_disc(&o);
    pp_proc p;
    cr_expect_eq(pp_discover_one(d, old, &p), 0);
    pp_discovery_free(d);
    /* Full scan: same rule, when a scan of the host takes less than 0.8 s here */
    for (int i = 0; i < 5; i++) {
        if (!young_check(path, old, true, &young_listed, NULL, &old_listed))
            continue;
        cr_expect(old_listed);
        cr_expect(!young_listed, "a full scan lists a process younger than --min-duration");
        break;
    }
    kill_reap(old);
    pp_test_rmtree(dir);
}

Test(discovery, processes_vanishing_during_the_scan)
{
    char *argv[] = {"/bin/sh", "-c", "echo ready; while :; do /bin/true; /bin/true & done", NULL};
    pid_t churn = spawn_ready(NULL, argv);
    pp_discovery_opts o = {.self_pid = -1};
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    for (int i = 0; i < 15; i++)
        cr_assert_eq(pp_discover(d, &l), 0);
    cr_expect_not_null(find(&l, churn));
    /* A reaped child is gone for pp_discover_one. */
    kill_reap(churn);
    pp_proc p;
    cr_expect_eq(pp_discover_one(d, churn, &p), -1);
    pp_discovery_free(d);
    pp_proc_list_free(&l);
}

Test(discovery, exec_in_place_is_reclassified)
{
    /* The shell prints ready, waits for a line, then execs python: same pid and start time. */
    int in[2];
    cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
    char script[] = "echo ready; read x; exec /usr/bin/python3 -c "
                    "\"import time; print('ready', flush=True); time.sleep(60)\"";
    int out[2];
    cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    char buf[64];
    cr_assert_gt(read(out[0], buf, sizeof(buf)), 0);
    int pids[] = {pid};
    pp_discovery_opts o = {.pids = pids, .npids = 1, .self_pid = -1};
    pp_discovery *d = new_disc(&o);
    pp_proc_list l = {0};
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 1);
    cr_expect_eq(l.procs[0].kind, PP_KIND_NATIVE);
    cr_assert_eq(write(in[1], "go\n", 3), 3);
    ssize_t n = read(out[0], buf, sizeof(buf) - 1);
    cr_assert_gt(n, 0);
    buf[n] = '\0';
    cr_assert(strstr(buf, "ready"), "%s", buf);
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 1);
    cr_expect_eq(l.procs[0].kind, PP_KIND_PYTHON, "re-read after exec");
    pp_discovery_free(d);
    pp_proc_list_free(&l);
    close(in[1]);
    close(out[0]);
    kill_reap(pid);
}
