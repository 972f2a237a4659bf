/* Unit tests: the ELF readers that look at files of profiled processes (base/elfinfo.c and the
 * detectors built on libelf) read them and never map them. A mapped file that its owner truncates
 * meanwhile (any user's library in a profiled process) raises SIGBUS in the reader: polyprof would
 * die of a file it reads. A seccomp filter makes any mapping of a file a crash, so that the test
 * fails whenever a reader maps one, however the race would have turned out. */
#include "tests/unit/testutil.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <valgrind/valgrind.h>

#include "base/elfinfo.h"
#include "runtimes/dotnet/dotnet.h"
#include "runtimes/go/go.h"

TestSuite(elfinfo, .init = pp_test_quiet_log);

#define LIBZ "/usr/lib/x86_64-linux-gnu/libz.so.1"

/* From here on, mmap of anything but anonymous memory kills the process. False where seccomp is
 * not implemented: under valgrind (its stage checks the readers' memory; the ASan stage runs
 * this test whole). */
static bool forbid_file_mappings(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 2), /* else: allowed */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])), /* flags */
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
    if (RUNNING_ON_VALGRIND) {
        cr_log_info("valgrind does not implement seccomp: mappings not checked in this stage");
        return false;
    }
    cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), 0, "%s", strerror(errno));
    return true;
}

typedef struct {
    pp_elfinfo info;
    uint64_t deflate, first_load;
    char version[32], code[16];
    ssize_t code_len, note_len;
    unsigned char note[64];
    int go, bundle;
} readings;

static int any(const char *s)
{
    (void)s;
    return 1;
}

static void read_all(readings *r)
{
    memset(r, 0, sizeof(*r));
    cr_assert_eq(pp_elfinfo_read(LIBZ, &r->info), 0);
    const char *names[] = {"deflate"};
    cr_assert_eq(pp_elf_symbol_values(LIBZ, names, 1, &r->deflate, &r->first_load), 1);
    cr_assert_eq(
        pp_elf_find_string(LIBZ, "1.2.", "0123456789.", 16, any, r->version, sizeof(r->version)),
        0);
    r->code_len = pp_elf_read_symbol_upto(LIBZ, "deflate", r->code, sizeof(r->code));
    r->note_len = pp_elf_section_read(LIBZ, ".note.gnu.build-id", r->note, sizeof(r->note));
    int fd = open(LIBZ, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0);
    r->go = pp_go_check_fd(fd);
    r->bundle = pp_net_bundle_check_fd(fd);
    close(fd);
}

Test(elfinfo, readers_never_map_the_file, .timeout = 60)
{
    if (access(LIBZ, R_OK) != 0)
        cr_assert_fail("%s is missing (zlib1g, a dependency of polyprof)", LIBZ);
    readings before, after;
    read_all(&before);
    cr_assert(before.info.buildid[0], "libz's build-id");
    cr_assert_str_eq(before.version, "1.2.13");
    cr_assert_eq(before.code_len, (ssize_t)sizeof(before.code));
    cr_assert(before.note_len > 16);
    cr_assert_eq(before.go, 0);
    cr_assert_eq(before.bundle, 0);
    if (!forbid_file_mappings())
        return;
    read_all(&after); /* a reader that maps the file is killed here */
    cr_assert_str_eq(after.info.buildid, before.info.buildid);
    cr_assert_eq(after.deflate, before.deflate);
    cr_assert_eq(after.first_load, before.first_load);
    cr_assert_str_eq(after.version, before.version);
    cr_assert_eq(memcmp(after.code, before.code, sizeof(after.code)), 0);
    cr_assert_eq(after.note_len, before.note_len);
    cr_assert_eq(after.go, 0);
    cr_assert_eq(after.bundle, 0);
}

/* An ELF file of a few bytes whose section headers say: a string table of `table` bytes at 4096,
 * the file `size` bytes long (sparse). */
static void write_claiming_elf(const char *path, uint64_t table, uint64_t size)
{
    Elf64_Ehdr eh = {
        .e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
        .e_type = ET_EXEC,
        .e_machine = EM_X86_64,
        .e_version = EV_CURRENT,
        .e_ehsize = sizeof(Elf64_Ehdr),
        .e_shoff = sizeof(Elf64_Ehdr),
        .e_shentsize = sizeof(Elf64_Shdr),
        .e_shnum = 2,
        .e_shstrndx = 1};
    Elf64_Shdr sh[2] = {{0},
                        {.sh_name = 1,
                         .sh_type = SHT_STRTAB,
                         .sh_offset = 4096,
                         .sh_size = table,
                         .sh_addralign = 1}};
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, &eh, sizeof(eh)), (ssize_t)sizeof(eh));
    cr_assert_eq(write(fd, sh, sizeof(sh)), (ssize_t)sizeof(sh));
    cr_assert_eq(ftruncate(fd, (off_t)size), 0);
    close(fd);
}

static long max_rss_kib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

/* libelf believes the sizes a file's headers give: a sparse 2 GiB file whose section-name table
 * claims 2 GiB was read whole (2 GiB resident) by the first elf_strptr. Such a file is refused
 * before anything is read; so is one whose table runs past its end. */
Test(elfinfo, files_claiming_huge_tables_are_refused, .timeout = 60)
{
    char *dir = pp_test_mkdtemp();
    char sparse[PATH_MAX], past[PATH_MAX];
    snprintf(sparse, sizeof(sparse), "%s/sparse.elf", dir);
    snprintf(past, sizeof(past), "%s/past.elf", dir);
    write_claiming_elf(sparse, 2ull << 30, (2ull << 30) + 4096);
    write_claiming_elf(past, 1 << 20, 8192);
    long before = max_rss_kib();
    pp_elfinfo info;
    cr_assert_eq(pp_elfinfo_read(sparse, &info), -1, "a 2 GiB string table is refused");
    cr_assert_eq(pp_elfinfo_read(past, &info), -1, "a table past the end is refused");
    char out[32];
    cr_assert_eq(pp_elf_find_string(sparse, "x", "x", 4, NULL, out, sizeof(out)), -1);
    cr_assert_eq(pp_elf_section_read(sparse, ".x", out, sizeof(out)), -1);
    int fd = open(sparse, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0);
    cr_assert_eq(pp_go_check_fd(fd), -1);
    cr_assert_eq(pp_net_bundle_check_fd(fd), -1);
    close(fd);
    long grown = max_rss_kib() - before;
    cr_assert(grown < 32 * 1024, "the readers grew by %ld KiB", grown);
    pp_test_rmtree(dir);
}
