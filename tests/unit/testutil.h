/* Shared helpers for the Criterion unit tests. */
#ifndef PP_TESTUTIL_H
#define PP_TESTUTIL_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "merge/profile.h"

/* Quiet logging for tests: only CRITICAL reaches stderr. */
static inline void pp_test_quiet_log(void)
{
    pp_log_set_stderr_level(PP_LOG_CRITICAL);
}

/* Creates a private temp directory; the caller removes it with pp_test_rmtree. */
static inline char *pp_test_mkdtemp(void)
{
    char *d = strdup("/tmp/pp_test_XXXXXX");
    cr_assert(mkdtemp(d) != NULL);
    return d;
}

static inline void pp_test_rmtree(char *dir)
{
    char cmd[512];
    if (dir && strncmp(dir, "/tmp/pp_test_", 13) == 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        cr_assert(system(cmd) == 0);
    }
    free(dir);
}

/* The text of a file (up to 64 KiB), in a static buffer overwritten by the next call. */
static inline char *pp_test_read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static inline void pp_test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f != NULL, "cannot write %s", path);
    cr_assert(fwrite(data, 1, len, f) == len);
    fclose(f);
}

/* A child that runs setup(arg), then waits until killed (it dies with the test too); returns
 * once setup has succeeded. */
static inline pid_t pp_test_spawn_isolated(int (*setup)(const char *), const char *arg)
{
    int go[2];
    cr_assert(pipe(go) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (setup(arg) != 0)
            _exit(1);
        close(go[0]);
        (void)!write(go[1], "x", 1);
        pause();
        _exit(0);
    }
    close(go[1]);
    char x;
    cr_assert(read(go[0], &x, 1) == 1, "the child's setup failed");
    close(go[0]);
    return pid;
}

/* A setup for pp_test_spawn_isolated: dir becomes the root (and cwd) of the child, as for a
 * process in a container. */
static inline int pp_test_chroot(const char *dir)
{
    return chroot(dir) == 0 && chdir("/") == 0 ? 0 : -1;
}

/* Maps the first page of path into this process, as a loader maps a library. 0 or -1. */
static inline int pp_test_map_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    void *m = fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    return m == MAP_FAILED ? -1 : 0;
}

static inline char *pp_test_lib_to_map(void)
{
    static char path[4096];
    return path;
}

static inline int pp_test_map_lib_and_chroot(const char *root)
{
    return pp_test_map_file(pp_test_lib_to_map()) == 0 ? pp_test_chroot(root) : -1;
}

/* A process in a container whose root is root (a pp_test_mkdtemp directory) and that maps
 * <root>/<lib> first. /proc/<pid>/maps shows the host's path of the library (<root>/<lib>), so
 * <root>'s own path is made to lead back to root inside it (<root>/tmp/pp_test_X -> ..): a
 * path read from the maps names the same file in the process's root. */
static inline pid_t pp_test_spawn_in_root_with_lib(const char *root, const char *lib)
{
    char p[4200];
    cr_assert(strncmp(root, "/tmp/", 5) == 0 && !strchr(root + 5, '/'), "%s", root);
    snprintf(p, sizeof(p), "%s/tmp", root);
    cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
    snprintf(p, sizeof(p), "%s%s", root, root);
    cr_assert(symlink("..", p) == 0, "%s", p);
    snprintf(pp_test_lib_to_map(), 4096, "%s/%s", root, lib);
    return pp_test_spawn_isolated(pp_test_map_lib_and_chroot, root);
}

/* The i-th stack of pp as "frame;frame;..." (a static buffer), its count in *count. */
static inline const char *pp_test_stack_text(const pp_profile *p, const pp_pid_profile *pp,
                                             size_t i, uint64_t *count)
{
    size_t n;
    const uint32_t *f = pp_pid_stack(pp, i, &n, count);
    static char buf[4096];
    buf[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        if (k)
            strncat(buf, ";", sizeof(buf) - strlen(buf) - 1);
        strncat(buf, pp_profile_str(p, f[k]), sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

static inline void pp_test_kill(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* The line number of the "# L:<name>" marker comment in a fixture file (asserts it is there).
 * Tests name source lines by these markers rather than by numbers that move with edits. */
static inline int pp_test_marker(const char *file, const char *name)
{
    FILE *fp = fopen(file, "r");
    cr_assert(fp, "%s: run from the repository root", file);
    char line[512], key[64];
    snprintf(key, sizeof(key), "# L:%s\n", name);
    int n = 0, found = 0;
    while (!found && fgets(line, sizeof(line), fp)) {
        n++;
        const char *k = strstr(line, "# L:");
        if (k && strcmp(k, key) == 0)
            found = n;
    }
    fclose(fp);
    cr_assert(found, "marker %s in %s", name, file);
    return found;
}

#endif
