#include "runtimes/procfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t pp_read_small_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || len == 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < len - 1) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

int pp_find_mapping(int pid, const char *needle, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = -1;
    /* Bounded: a maps file has at most a few hundred thousand lines. */
    for (int i = 0; i < 1000000 && getline(&line, &cap, f) > 0; i++) {
        char *p = strchr(line, '/');
        if (!p || !strstr(p, needle))
            continue;
        p[strcspn(p, "\n")] = '\0';
        char *del = strstr(p, " (deleted)");
        if (del)
            *del = '\0';
        snprintf(out, len, "%s", p);
        rc = 0;
        break;
    }
    free(line);
    fclose(f);
    return rc;
}
