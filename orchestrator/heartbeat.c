#include "orchestrator/heartbeat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pp_heartbeat_touch(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot touch heartbeat file %s: %s", path,
                 errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) < 0)
        snprintf(err, errlen, "cannot touch heartbeat file %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(err, errlen, "cannot touch heartbeat file %s: not a regular file", path);
    else if (futimens(fd, NULL) < 0)
        snprintf(err, errlen, "cannot touch heartbeat file %s: %s", path, strerror(errno));
    else
        rc = 0;
    close(fd);
    return rc;
}
