/* Unit tests: detection of .NET single-file apps by their apphost's bundle marker
 * (runtimes/dotnet/bundle.c). No .NET SDK is installed here to publish a real single-file app:
 * the stand-in is a C program whose writable data holds the 40-byte marker as the apphost's
 * bundle_marker.cpp lays it out (the header offset, then the signature), patched and followed by
 * a bundle header as `dotnet publish` does (docs/dotnet.md). */
#include "tests/unit/testutil.h"

#include <elf.h>
#include <glob.h>
#include <limits.h>

#include "base/execache.h"
#include "orchestrator/discovery.h"
#include "runtimes/dotnet/dotnet.h"

TestSuite(dotnet_bundle, .init = pp_test_quiet_log);

/* Compiles dir/name: the marker in writable data (as in the apphost), or with rodata only in a
 * read-only array (where no apphost has it). */
static void build_standin(const char *dir, const char *name, bool rodata)
{
    char src[PATH_MAX], cmd[3 * PATH_MAX];
    snprintf(src, sizeof(src), "%s/%s.c", dir, name);
    FILE *f = fopen(src, "w");
    cr_assert(f);
    fprintf(f, "#include <unistd.h>\n%s unsigned char marker[40] = {0, 0, 0, 0, 0, 0, 0, 0",
            rodata ? "const" : "volatile");
    for (size_t i = 0; i < sizeof(pp_net_bundle_signature); i++)
        fprintf(f, ", 0x%02x", pp_net_bundle_signature[i]);
    fprintf(f,
            "};\nint main(void) { if (marker[0] == 1) return 1; (void)!write(1, \"ready\\n\", 6);"
            " for (;;) pause(); }\n");
    fclose(f);
    snprintf(cmd, sizeof(cmd), "cc -O0 -o '%s/%s' '%s'", dir, name, src);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Makes dir/name a bundle as `dotnet publish` does: the marker's offset set to where a bundle
 * header of major version major is appended (offset_past_end: to beyond the file's end). */
static void make_bundle(const char *dir, const char *name, uint32_t major, bool offset_past_end)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    uint8_t *b = malloc((size_t)st.st_size);
    cr_assert_eq(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
    uint8_t *m = memmem(b, (size_t)st.st_size, pp_net_bundle_signature, 32);
    cr_assert(m && m - b >= 8, "the marker is in the stand-in");
    cr_assert_null(memmem(m + 1, (size_t)(b + st.st_size - m - 1), pp_net_bundle_signature, 32));
    uint64_t off = (uint64_t)st.st_size + (offset_past_end ? 4096 : 0);
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(off >> (8 * i));
    cr_assert_eq(pwrite(fd, le, 8, m - 8 - b), 8);
    /* major, minor, file count, then the bundle id's length and text */
    uint8_t hdr[20] = {(uint8_t)major, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7, 'a', 'b', 'c', 'd'};
    cr_assert_eq(pwrite(fd, hdr, sizeof(hdr), st.st_size), (ssize_t)sizeof(hdr));
    free(b);
    close(fd);
}

static int check_path(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "%s", path);
    int r = pp_net_bundle_check_fd(fd);
    close(fd);
    return r;
}

Test(dotnet_bundle, the_marker_with_a_header_offset_in_writable_data_is_a_bundle)
{
    char *dir = pp_test_mkdtemp();
    build_standin(dir, "single", false);
    build_standin(dir, "apphost", false);
    build_standin(dir, "pastend", false);
    build_standin(dir, "rodata", true);
    build_standin(dir, "net31", false);
    make_bundle(dir, "single", 6, false);
    make_bundle(dir, "pastend", 6, true);
    make_bundle(dir, "rodata", 6, false);
    make_bundle(dir, "net31", 1, false);
    cr_expect_eq(check_path(dir, "single"), 1, ".NET 6+ bundle (major 6)");
    cr_expect_eq(check_path(dir, "net31"), 1, ".NET Core 3.1 bundle (major 1)");
    cr_expect_eq(check_path(dir, "apphost"), 0, "an apphost that is not a bundle: offset 0");
    cr_expect_eq(check_path(dir, "pastend"), 0, "an offset beyond the file's end");
    cr_expect_eq(check_path(dir, "rodata"), 0, "only writable segments are read");
    char src[PATH_MAX];
    snprintf(src, sizeof(src), "%s/single.c", dir);
    int fd = open(src, O_RDONLY);
    cr_expect_eq(pp_net_bundle_check_fd(fd), -1, "not ELF");
    close(fd);
    pp_test_rmtree(dir);
}

/* A minimal ELF file of size bytes (sparse) whose one writable PT_LOAD segment covers it all,
 * with the marker at file offset at, its header offset pointing at a bundle header at the end. */
static void write_elf_with_marker(const char *path, off_t size, off_t at)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, size), 0);
    Elf64_Ehdr eh = {
        .e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
        .e_type = ET_EXEC,
        .e_machine = EM_X86_64,
        .e_version = EV_CURRENT,
        .e_phoff = sizeof(Elf64_Ehdr),
        .e_ehsize = sizeof(Elf64_Ehdr),
        .e_phentsize = sizeof(Elf64_Phdr),
        .e_phnum = 1};
    Elf64_Phdr ph = {.p_type = PT_LOAD,
                     .p_flags = PF_R | PF_W,
                     .p_offset = 0,
                     .p_filesz = (uint64_t)size,
                     .p_memsz = (uint64_t)size,
                     .p_align = 4096};
    cr_assert_eq(pwrite(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
    cr_assert_eq(pwrite(fd, &ph, sizeof(ph), sizeof(eh)), (ssize_t)sizeof(ph));
    uint8_t m[40];
    uint64_t hdr_at = (uint64_t)size - 16;
    for (int i = 0; i < 8; i++)
        m[i] = (uint8_t)(hdr_at >> (8 * i));
    memcpy(m + 8, pp_net_bundle_signature, 32);
    cr_assert_eq(pwrite(fd, m, sizeof(m), at), (ssize_t)sizeof(m));
    const uint8_t major[4] = {6};
    cr_assert_eq(pwrite(fd, major, 4, (off_t)hdr_at), 4);
    close(fd);
}

Test(dotnet_bundle, a_marker_across_two_reads_is_found_and_past_the_read_bound_not_looked_for)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/elf", dir);
    const off_t chunk = 256 << 10; /* bundle.c's read size: the marker spans the first boundary */
    for (off_t at = chunk - 39; at <= chunk - 1; at += 7) {
        write_elf_with_marker(path, 1 << 20, at);
        cr_expect_eq(check_path(dir, "elf"), 1, "the marker at %lld, across %lld", (long long)at,
                     (long long)chunk);
    }
    write_elf_with_marker(path, 1 << 20, chunk - 48);
    cr_expect_eq(check_path(dir, "elf"), 1, "just before the boundary");
    write_elf_with_marker(path, 24 << 20, 20 << 20);
    cr_expect_eq(check_path(dir, "elf"), 0, "past the first 16 MiB of writable segments");
    write_elf_with_marker(path, 24 << 20, (15 << 20) + 5);
    cr_expect_eq(check_path(dir, "elf"), 1, "within them");
    pp_test_rmtree(dir);
}

Test(dotnet_bundle, the_real_31_host_and_runtime_are_not_bundles)
{
    const char *tools = getenv("PP_TOOLS");
    char pat[600];
    snprintf(pat, sizeof(pat), "%s/dotnetcore2-*/dotnetcore2/bin/{dotnet,shared/*/*/libcoreclr.so}",
             tools && *tools ? tools : "/var/cache/polyprof/tools");
    glob_t g;
    if (glob(pat, GLOB_BRACE, NULL, &g) != 0) {
        cr_skip_test("no .NET runtime (make deps)");
        return;
    }
    cr_assert_eq(g.gl_pathc, 2, "the host and libcoreclr.so");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        cr_expect_eq(pp_net_bundle_check_fd(fd), 0, "%s", g.gl_pathv[i]);
        close(fd);
    }
    globfree(&g);
}

/* Runs path; returns once it is running its main (it wrote "ready"). */
static pid_t run(const char *path)
{
    int p[2];
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(p[1], 1);
        execl(path, path, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char got[8] = "";
    cr_assert_eq(read(p[0], got, 6), 6, "%s did not start", path); /* blocks until it writes */
    close(p[0]);
    cr_assert_str_eq(got, "ready\n");
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

Test(dotnet_bundle, a_single_file_app_is_discovered_as_dotnet_and_examined_once)
{
    char *dir = pp_test_mkdtemp();
    build_standin(dir, "single", false);
    build_standin(dir, "apphost", false);
    make_bundle(dir, "single", 6, false);
    char single[PATH_MAX], apphost[PATH_MAX];
    snprintf(single, sizeof(single), "%s/single", dir);
    snprintf(apphost, sizeof(apphost), "%s/apphost", dir);
    int pids[3] = {run(single), run(single), run(apphost)};

    pp_discovery_opts o = {.pids = pids, .npids = 3, .self_pid = -1};
    char err[256] = "";
    pp_discovery *d = pp_discovery_new(&o, err, sizeof(err));
    cr_assert_not_null(d, "%s", err);
    pp_proc_list l = {0};
    cr_assert_eq(pp_discover(d, &l), 0);
    cr_assert_eq(l.n, 3);
    for (size_t i = 0; i < l.n; i++)
        cr_expect_eq(l.procs[i].kind, l.procs[i].pid == pids[2] ? PP_KIND_NATIVE : PP_KIND_DOTNET,
                     "process %d: %s", l.procs[i].pid, pp_proc_kind_name(l.procs[i].kind));
    pp_proc_list_free(&l);
    pp_discovery_free(d);

    /* the answer is kept per executable: its file is read once for both processes */
    pp_execache c = {0};
    bool m0 = false, m1 = false, m2 = true;
    cr_assert_eq(pp_execache_check_pid(&c, pids[0], pp_net_bundle_check_fd, &m0), 0);
    cr_assert_eq(pp_execache_check_pid(&c, pids[1], pp_net_bundle_check_fd, &m1), 0);
    cr_assert_eq(pp_execache_check_pid(&c, pids[2], pp_net_bundle_check_fd, &m2), 0);
    cr_expect(m0 && m1 && !m2);
    cr_expect_eq(c.opens, 2UL, "two executables, each examined once");
    pp_execache_free(&c);
    for (int i = 0; i < 3; i++)
        stop(pids[i]);
    pp_test_rmtree(dir);
}
