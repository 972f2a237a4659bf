/* --heartbeat-file: a file whose modification time says the profiler is alive (for a liveness
 * probe), touched at the end of every session. */
#ifndef PP_HEARTBEAT_H
#define PP_HEARTBEAT_H

#include <stddef.h>

/* Creates path (mode 0644) if it does not exist, and sets its modification time to now. A
 * symbolic link at path is refused, never followed (O_NOFOLLOW), and so is anything but a
 * regular file (a FIFO cannot block: O_NONBLOCK). Returns 0, or -1 with a message in err. */
int pp_heartbeat_touch(const char *path, char *err, size_t errlen);

#endif
