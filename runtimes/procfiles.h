/* Small bounded readers of /proc files shared by the runtime drivers. */
#ifndef PP_PROCFILES_H
#define PP_PROCFILES_H

#include <stddef.h>
#include <sys/types.h>

/* Reads at most len-1 bytes of path (works for /proc files, whose size reads as 0), and
 * NUL-terminates; returns the bytes read (the data may hold NULs), or -1 with errno set when
 * the file cannot be opened or read (e.g. ESRCH: the process exited). */
ssize_t pp_read_small_file(const char *path, char *buf, size_t len);
/* Path (as in /proc/<pid>/maps) of the first mapping whose path contains needle. */
int pp_find_mapping(int pid, const char *needle, char *out, size_t len);

#endif
