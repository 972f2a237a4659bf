/* Shared helpers for the Criterion unit tests. */
#ifndef PP_TESTUTIL_H
#define PP_TESTUTIL_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orchestrator/log.h"

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

static inline void pp_test_kill(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

#endif
