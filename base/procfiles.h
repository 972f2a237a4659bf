/* Small bounded readers of /proc files shared by the runtime drivers. */
#ifndef PP_PROCFILES_H
#define PP_PROCFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Reads at most len-1 bytes of path (works for /proc files, whose size reads as 0), and
 * NUL-terminates; returns the bytes read (the data may hold NULs), or -1 with errno set when
 * the file cannot be opened or read (e.g. ESRCH: the process exited). */
ssize_t pp_read_small_file(const char *path, char *buf, size_t len);
/* A whole regular file (not a FIFO or device: opened non-blocking) in a malloc'd buffer,
 * NUL-terminated, its length in *len. Larger than max: NULL, or with PP_READ_TRUNCATE its first
 * max bytes. PP_READ_NOFOLLOW refuses a symlink as the last component. NULL on any error. */
enum { PP_READ_TRUNCATE = 1, PP_READ_NOFOLLOW = 2 };
char *pp_read_file(const char *path, size_t max, int flags, size_t *len);
/* pp_read_file of a descriptor open for reading (left open; PP_READ_NOFOLLOW is the opener's
 * business), e.g. one opened inside a process's root (inroot.h). */
char *pp_read_fd(int fd, size_t max, int flags, size_t *len);

/* The value after "Key:" at the start of a line of a /proc/<pid>/status text (leading blanks
 * included), or NULL. */
const char *pp_status_field(const char *status, const char *key);

/* The innermost id of the "NSpid:" line of a /proc/<pid>/status or /proc/<pid>/task/<tid>/status
 * text: its last, the id in the task's own pid namespace (the first is the id in the namespace
 * of the /proc read). *levels (unless NULL) gets how many ids the line has: 1 when the task
 * lives in that same namespace. The ids end at the end of the line or at the first character
 * that is neither a blank nor a digit. -1 (*levels 0) when the line is absent, holds no id, or
 * one of its ids is not in 1..INT_MAX. */
int pp_status_nspid(const char *status, int *levels);
/* pp_status_nspid of /proc/<pid>/status, or of /proc/<pid>/task/<tid>/status when tid > 0 (its
 * first 8 KiB, the line whole); -1 (*levels 0) when it cannot be read or is cut there. */
int pp_read_nspid(int pid, int tid, int *levels);

/* True when no process pid exists (kill(pid, 0) fails with ESRCH): one syscall, no /proc read;
 * a zombie is not gone. */
bool pp_pid_gone(int pid);

/* True when pid exists and is not a zombie (state of /proc/<pid>/stat). */
bool pp_proc_alive(int pid);
/* True when pid has an address space: /proc/<pid>/maps lists a mapping. False for a process
 * that is gone, a zombie, a kernel thread, and a process inside exit(2) that has released its
 * memory but is not a zombie yet (its state still R or D: pp_proc_alive says true). */
bool pp_proc_has_memory(int pid);
/* Field 22 of /proc/<pid>/stat (start time in clock ticks), 0 when the process is gone. */
unsigned long long pp_proc_start_ticks(int pid);
/* Fields 14 and 15 of /proc/<pid>/stat (user + system time of the whole process, clock ticks),
 * 0 when the process is gone. */
unsigned long long pp_proc_cpu_ticks(int pid);
/* The same of one thread (/proc/<pid>/task/<tid>/stat), and its name into comm (unless NULL; at
 * most commlen - 1 bytes, empty when the thread is gone). */
unsigned long long pp_task_cpu_ticks(int pid, int tid, char *comm, size_t commlen);

/* Path (as in /proc/<pid>/maps) of the first mapping whose path contains needle. */
int pp_find_mapping(int pid, const char *needle, char *out, size_t len);

#endif
