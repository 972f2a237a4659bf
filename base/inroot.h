/* Opening a file inside a process's root directory (a container's file system) so that no
 * symlink, ".." or magic link in the path can lead out of that root. */
#ifndef PP_INROOT_H
#define PP_INROOT_H

#include <stddef.h>

/* Opens path (absolute or relative) inside the directory tree of rootfd as if rootfd were "/":
 * "..", absolute symlinks and magic links cannot leave it. Uses openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS); where the kernel (before 5.6) or a seccomp filter refuses openat2, the
 * same resolution done component by component in user space (pp_openat_in_root_walk). flags as
 * open(2), without O_CREAT; O_CLOEXEC is added. -1 with errno set on failure. */
int pp_openat_in_root(int rootfd, const char *path, int flags);

/* The user-space resolution: every component opened with O_NOFOLLOW relative to the directory
 * already reached, symlinks read and resolved against rootfd (at most 40), ".." never above
 * rootfd. Exposed so that tests cover it on kernels that have openat2. */
int pp_openat_in_root_walk(int rootfd, const char *path, int flags);

/* pp_openat_in_root under /proc/<pid>/root. */
int pp_open_in_proc_root(int pid, const char *path, int flags);

/* For readers that take a path (pp_elfinfo_read, pp_elf_symbol_values, pp_read_small_file...):
 * opens path inside /proc/<pid>/root as pp_open_in_proc_root does, with O_PATH, and writes
 * "/proc/self/fd/<fd>" to out; opening that reopens the very file reached, in the reader's own
 * mode. A regular file only (EINVAL otherwise: a FIFO planted in a container would block the
 * reader's open). Returns the descriptor, which the caller closes once the reader is done, or
 * -1 with errno set. Not for readers that open with O_NOFOLLOW: /proc/self/fd/<fd> is a
 * (magic) link. */
#define PP_FD_PATH_LEN 32
int pp_open_in_proc_root_path(int pid, const char *path, char *out, size_t len);

#endif
