/* Symbolizer tests: external debug files (build-id, .gnu_debuglink) and JIT perf maps of a process
 * in a container are looked up inside its root: a symlink there, absolute or climbing with "..",
 * cannot lead to a host file. The process maps a stripped binary (its code executable) and chroots
 * into a directory, as a process in a container whose debug files are installed in its image. */
#include "tests/unit/testutil.h"

#include <fcntl.h>
#include <libelf.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "runtimes/symbols/symbolizer.h"
#include "runtimes/symbols/symbols_internal.h"

static const char fix_c[] =
    "#include <stdio.h>\n"
    "volatile int sink;\n"
    "__attribute__((noinline)) static int pp_inroot_local(int x) { sink -= x; return sink; }\n"
    "int main(void) { printf(\"%d\\n\", pp_inroot_local(2)); return 0; }\n";

TestSuite(symbols_inroot, .init = pp_test_quiet_log, .timeout = 60);

static int sh(const char *cmd)
{
    return system(cmd);
}

/* In root (a pp_test_mkdtemp directory): fix (with symbols), fix_stripped, fix.debug (its
 * debug file), dl (stripped, with a .gnu_debuglink to "fix.debug"). */
static void build_fixture(const char *root)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s/fix.c", root);
    pp_test_write_file(cmd, fix_c, strlen(fix_c));
    snprintf(cmd, sizeof(cmd),
             "cd %s && gcc -O1 -g -Wl,--build-id -o fix fix.c && "
             "strip --strip-all -o fix_stripped fix && objcopy --only-keep-debug fix fix.debug && "
             "strip --strip-all -o dl fix && objcopy --add-gnu-debuglink=fix.debug dl && rm fix.c",
             root);
    cr_assert(sh(cmd) == 0, "fixture build failed");
}

/* The address of pp_inroot_local in a copy of fix (stripped) mapped whole at base. */
static uint64_t local_address(const char *root, uint64_t base)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/fix", root);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0 && elf_version(EV_CURRENT) != EV_NONE);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    pp_elf_meta meta;
    cr_assert(e && pp_elf_meta_read(e, &meta) == 0);
    pp_symtab t;
    pp_symtab_init(&t);
    cr_assert(pp_elf_add_section_syms(e, SHT_SYMTAB, &t) > 0);
    uint64_t vaddr = 0;
    for (size_t i = 0; i < t.n; i++)
        if (strcmp(t.arena + t.syms[i].name, "pp_inroot_local") == 0)
            vaddr = t.syms[i].addr;
    pp_symtab_free(&t);
    elf_end(e);
    close(fd);
    cr_assert(vaddr, "pp_inroot_local not in the fixture");
    for (int i = 0; i < meta.nsegs; i++) {
        const pp_load_seg *s = &meta.segs[i];
        if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz)
            return base + vaddr - s->vaddr + s->offset + 1;
    }
    cr_assert_fail("pp_inroot_local in no segment");
    return 0;
}

/* A setup for pp_test_spawn_isolated: maps pp_test_lib_to_map() whole, executable (as a loader
 * maps code), then chroots into root. */
static int map_exec_and_chroot(const char *root)
{
    int fd = open(pp_test_lib_to_map(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    void *m = fd >= 0 && fstat(fd, &st) == 0
                  ? mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    return m == MAP_FAILED ? -1 : pp_test_chroot(root);
}

/* A process in root mapping <root>/<name>; root's own path leads back to root inside it (as
 * pp_test_spawn_in_root_with_lib does), so the mapped path names the file in the root too.
 * *base receives the mapping's start. */
static pid_t spawn_mapping(const char *root, const char *name, uint64_t *base)
{
    char p[1200];
    snprintf(p, sizeof(p), "%s/tmp", root);
    cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
    snprintf(p, sizeof(p), "%s%s", root, root);
    cr_assert(symlink("..", p) == 0 || errno == EEXIST, "%s", p);
    snprintf(pp_test_lib_to_map(), 4096, "%s/%s", root, name);
    pid_t pid = pp_test_spawn_isolated(map_exec_and_chroot, root);
    snprintf(p, sizeof(p), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(p, "r");
    cr_assert(f);
    char line[1200];
    *base = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long start, off;
        if (strstr(line, pp_test_lib_to_map()) &&
            sscanf(line, "%lx-%*x %*s %lx", &start, &off) == 2 && off == 0)
            *base = start;
    }
    fclose(f);
    cr_assert(*base, "the mapping of %s was not found", pp_test_lib_to_map());
    return pid;
}

/* The frame of ip once link (a debug file's path in the root) is a symlink to target. */
static const char *frame_via(const char *link, const char *target, int pid, uint64_t ip)
{
    static char frame[1024];
    unlink(link);
    cr_assert(symlink(target, link) == 0, "%s", link);
    pp_symbolizer *s = pp_symbolizer_new(0); /* a new cache: the binary is loaded again */
    pp_symbolize_user(s, pid, ip, frame, sizeof(frame));
    pp_symbolizer_free(s);
    return frame;
}

Test(symbols_inroot, build_id_debug_file_links_stay_in_the_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp();
    build_fixture(host);
    char p[1200], link[1200], target[1200];
    snprintf(p, sizeof(p), "cp %s/fix %s/fix_stripped %s/", host, host, root);
    cr_assert(sh(p) == 0);
    /* the build-id path of fix_stripped */
    snprintf(p, sizeof(p), "%s/fix_stripped", root);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0 && elf_version(EV_CURRENT) != EV_NONE);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    pp_elf_meta meta;
    cr_assert(e && pp_elf_meta_read(e, &meta) == 0 && meta.build_id_len >= 2);
    elf_end(e);
    close(fd);
    char hex[2 * PP_BUILD_ID_MAX + 1];
    for (size_t i = 0; i < meta.build_id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", meta.build_id[i]);
    snprintf(p, sizeof(p), "mkdir -p %s/usr/lib/debug/.build-id/%.2s %s/dbg", root, hex, root);
    cr_assert(sh(p) == 0);
    snprintf(link, sizeof(link), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, hex, hex + 2);

    uint64_t base;
    pid_t pid = spawn_mapping(root, "fix_stripped", &base);
    uint64_t ip = local_address(root, base);

    /* an absolute link to a host file (a matching debug file that exists on the host only) */
    snprintf(target, sizeof(target), "%s/fix.debug", host);
    cr_assert_str_neq(frame_via(link, target, pid, ip), "pp_inroot_local",
                      "a host debug file was used");
    /* ".." above the root stays at the root */
    snprintf(target, sizeof(target), "../../../../../../../../../../..%s/fix.debug", host);
    cr_assert_str_neq(frame_via(link, target, pid, ip), "pp_inroot_local",
                      "a host debug file was used through \"..\"");
    /* an absolute link to the root's own file is followed there */
    snprintf(p, sizeof(p), "cp %s/fix.debug %s/dbg/real.debug", host, root);
    cr_assert(sh(p) == 0);
    cr_assert_str_eq(frame_via(link, "/dbg/real.debug", pid, ip), "pp_inroot_local",
                     "the root's debug file was not found");

    pp_test_kill(pid);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}

/* The debuglink candidates: <dir>/<name>, <dir>/.debug/<name>, /usr/lib/debug<dir>/<name>; the
 * last one is used here (the first two, seen from the host through the root's own path, would
 * be found by the host-side search too). The CRC check still applies. */
Test(symbols_inroot, debuglink_links_stay_in_the_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp();
    build_fixture(host);
    char p[1200], link[1200], target[1200];
    snprintf(p, sizeof(p), "cp %s/fix %s/dl %s/ && mkdir -p %s/usr/lib/debug%s %s/dbg", host, host,
             root, root, root, root);
    cr_assert(sh(p) == 0);
    snprintf(link, sizeof(link), "%s/usr/lib/debug%s/fix.debug", root, root);

    uint64_t base;
    pid_t pid = spawn_mapping(root, "dl", &base);
    uint64_t ip = local_address(root, base);

    snprintf(target, sizeof(target), "%s/fix.debug", host);
    cr_assert_str_neq(frame_via(link, target, pid, ip), "pp_inroot_local",
                      "a host debug file was used");
    snprintf(p, sizeof(p), "cp %s/fix.debug %s/dbg/fix.debug", host, root);
    cr_assert(sh(p) == 0);
    cr_assert_str_eq(frame_via(link, "/dbg/fix.debug", pid, ip), "pp_inroot_local",
                     "the root's debug file was not found");
    /* a file that fails the CRC check is still refused */
    snprintf(p, sizeof(p), "printf x >> %s/dbg/fix.debug", root);
    cr_assert(sh(p) == 0);
    cr_assert_str_neq(frame_via(link, "/dbg/fix.debug", pid, ip), "pp_inroot_local",
                      "CRC mismatch accepted");

    pp_test_kill(pid);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}

/* A JIT's perf map (/tmp/perf-<pid>.map) is read inside the process's root too: a symlink there
 * to a host file is not followed onto the host. The process inherits an anonymous executable
 * mapping (JIT code) from the test and chroots. */
Test(symbols_inroot, perf_map_links_stay_in_the_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp();
    void *jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(jit != MAP_FAILED);
    uint64_t ip = (uint64_t)(uintptr_t)jit + 0x10;
    char p[1200], link[1200], content[128];
    int n = snprintf(content, sizeof(content), "%lx 100 jit_host\n", (unsigned long)jit);
    snprintf(p, sizeof(p), "%s/perf.map", host);
    pp_test_write_file(p, content, (size_t)n);
    snprintf(p, sizeof(p), "mkdir -p %s/tmp %s/maps", root, root);
    cr_assert(sh(p) == 0);
    n = snprintf(content, sizeof(content), "%lx 100 jit_root\n", (unsigned long)jit);
    snprintf(p, sizeof(p), "%s/maps/perf.map", root);
    pp_test_write_file(p, content, (size_t)n);

    pid_t pid = pp_test_spawn_isolated(pp_test_chroot, root);
    snprintf(link, sizeof(link), "%s/tmp/perf-%d.map", root, (int)pid);
    snprintf(p, sizeof(p), "%s/perf.map", host);
    char want[64];
    snprintf(want, sizeof(want), "(/tmp/perf-%d.map)", (int)pid);
    cr_assert_str_eq(frame_via(link, p, pid, ip), want, "the host's perf map was read");
    cr_assert_str_eq(frame_via(link, "/maps/perf.map", pid, ip), "jit_root",
                     "the root's own perf map was not read");

    pp_test_kill(pid);
    munmap(jit, 4096);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}
