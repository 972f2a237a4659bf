/* Opening files inside a process's root (base/inroot.h): the openat2 resolution, the
 * user-space walk used where openat2 is missing, and the path form given to readers that take a
 * path, against fake roots whose symlinks try to lead out. */
#include "tests/unit/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "base/inroot.h"
#include "base/procfiles.h"

Test(inroot, files_open_inside_a_root_only)
{
    char root[] = "/tmp/pp_root_XXXXXX", path[128];
    cr_assert(mkdtemp(root));
    snprintf(path, sizeof(path), "%s/etc", root);
    cr_assert(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/etc/passwd", root);
    pp_test_write_file(path, "inside", 6);
    snprintf(path, sizeof(path), "%s/lib", root);
    cr_assert(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/lib/abs", root);
    cr_assert(symlink("/etc/passwd", path) == 0);
    snprintf(path, sizeof(path), "%s/lib/up", root);
    cr_assert(symlink("../../../../../etc/passwd", path) == 0);
    snprintf(path, sizeof(path), "%s/lib/rel", root);
    cr_assert(symlink("./../lib/./abs", path) == 0); /* relative, to a link */
    snprintf(path, sizeof(path), "%s/lib/self", root);
    cr_assert(symlink("/proc/self/root/etc/passwd", path) == 0); /* a magic link on the way */
    snprintf(path, sizeof(path), "%s/lib/loop", root);
    cr_assert(symlink("loop", path) == 0);
    snprintf(path, sizeof(path), "%s/proc", root);
    cr_assert(mkdir(path, 0700) == 0);
    int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    cr_assert(rfd >= 0);
    const char *tries[] = {"/etc/passwd",       "/lib/abs",  "lib/up",
                           "/../../etc/passwd", "//lib/rel", "/lib/../etc//passwd"};
    /* both the openat2 path and the user-space walk used where openat2 is missing */
    int (*const opens[2])(int, const char *, int) = {pp_openat_in_root, pp_openat_in_root_walk};
    for (int o = 0; o < 2; o++) {
        for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
            int fd = opens[o](rfd, tries[i], O_RDONLY);
            cr_assert(fd >= 0, "%s (%d): %s", tries[i], o, strerror(errno));
            char buf[16] = {0};
            cr_assert(read(fd, buf, sizeof(buf) - 1) > 0);
            cr_assert_str_eq(buf, "inside", "%s resolved outside the root (%d)", tries[i], o);
            close(fd);
        }
        errno = 0;
        cr_assert_eq(opens[o](rfd, "/lib/loop", O_RDONLY), -1);
        cr_assert_eq(errno, ELOOP, "%d: %s", o, strerror(errno));
        cr_assert_eq(opens[o](rfd, "/lib/self", O_RDONLY), -1, "%d: a magic link followed", o);
        cr_assert_eq(opens[o](rfd, "/etc/passwd/x", O_RDONLY), -1);
        cr_assert_eq(errno, ENOTDIR);
        /* O_NOFOLLOW: a last component that is a symlink is refused, or opened itself */
        cr_assert_eq(opens[o](rfd, "/lib/abs", O_RDONLY | O_NOFOLLOW), -1, "%d", o);
        cr_assert_eq(errno, ELOOP, "%d: %s", o, strerror(errno));
        int lfd = opens[o](rfd, "/lib/rel", O_PATH | O_NOFOLLOW);
        struct stat ls;
        cr_assert(lfd >= 0 && fstat(lfd, &ls) == 0 && S_ISLNK(ls.st_mode), "%d", o);
        close(lfd);
        lfd = opens[o](rfd, "/lib/../lib/../etc/passwd", O_RDONLY | O_NOFOLLOW);
        cr_assert(lfd >= 0, "%d: %s", o, strerror(errno));
        close(lfd);
        int dfd = opens[o](rfd, "/lib/..", O_RDONLY | O_DIRECTORY);
        cr_assert(dfd >= 0, "%d: %s", o, strerror(errno));
        struct stat a, b;
        cr_assert(fstat(dfd, &a) == 0 && fstat(rfd, &b) == 0);
        cr_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        close(dfd);
    }
    close(rfd);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    cr_assert(system(cmd) == 0);
}

/* A process chrooted into root (as in a container) whose /lib/abs is an absolute symlink to a
 * host path: the reader given pp_open_in_proc_root_path's path reads the file of that path
 * inside root, as the process would, never the host's. */
Test(inroot, reader_path_stays_inside_a_process_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp(), path[512], target[256];
    snprintf(target, sizeof(target), "%s/secret", host);
    pp_test_write_file(target, "host", 4);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s%s' '%s/lib'", root, host, root);
    cr_assert(system(cmd) == 0);
    snprintf(path, sizeof(path), "%s%s/secret", root, host);
    pp_test_write_file(path, "inside", 6);
    snprintf(path, sizeof(path), "%s/lib/abs", root);
    cr_assert(symlink(target, path) == 0);
    pid_t pid = pp_test_spawn_isolated(pp_test_chroot, root);

    char fdpath[PP_FD_PATH_LEN], buf[16];
    int fd = pp_open_in_proc_root_path(pid, "/lib/abs", fdpath, sizeof(fdpath));
    cr_assert(fd >= 0, "%s", strerror(errno));
    cr_assert(strncmp(fdpath, "/proc/self/fd/", 14) == 0, "%s", fdpath);
    cr_assert_eq(pp_read_small_file(fdpath, buf, sizeof(buf)), 6);
    cr_assert_str_eq(buf, "inside");
    close(fd);
    /* what a plain open of /proc/<pid>/root/... reads: the host's file */
    snprintf(path, sizeof(path), "/proc/%d/root/lib/abs", (int)pid);
    cr_assert_eq(pp_read_small_file(path, buf, sizeof(buf)), 4);
    cr_assert_str_eq(buf, "host");
    /* a missing file, not a regular file (a FIFO would block the reader), a buffer too small */
    cr_assert_eq(pp_open_in_proc_root_path(pid, "/nothing", fdpath, sizeof(fdpath)), -1);
    cr_assert_eq(errno, ENOENT);
    snprintf(path, sizeof(path), "%s/lib/fifo", root);
    cr_assert(mkfifo(path, 0600) == 0);
    cr_assert_eq(pp_open_in_proc_root_path(pid, "/lib/fifo", fdpath, sizeof(fdpath)), -1);
    cr_assert_eq(errno, EINVAL);
    cr_assert_eq(pp_open_in_proc_root_path(pid, "/lib", fdpath, sizeof(fdpath)), -1);
    cr_assert_eq(pp_open_in_proc_root_path(pid, "/lib/abs", fdpath, 8), -1);
    cr_assert_eq(errno, ENAMETOOLONG);
    pp_test_kill(pid);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}
