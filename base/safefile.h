/* Creating and reading files so that nothing another user planted (a symlink, a hard link, a
 * FIFO, an existing file under a predictable name) can redirect, block or exhaust polyprof.
 * The rules (docs/security.md): every file polyprof creates is created with
 * O_CREAT|O_EXCL|O_NOFOLLOW relative to a directory descriptor it holds, under a name nobody
 * can predict, then renamed into place (rename never follows a link at the destination); a file
 * polyprof reads is opened non-blocking, must be a regular file and is read up to a cap. */
#ifndef PP_SAFEFILE_H
#define PP_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes n random characters [A-Za-z0-9] and a NUL into out (n + 1 bytes). */
void pp_random_chars(char *out, size_t n);

/* Creates a new file in directory dfd named prefix + 12 random characters + suffix (suffix may
 * be NULL), with O_CREAT|O_EXCL|O_NOFOLLOW (an existing entry, link or not, is never opened);
 * the name is written to name. flags: O_WRONLY or O_RDWR, plus anything else wanted. Returns the
 * descriptor, or -1 with errno. */
int pp_create_unique_at(int dfd, const char *prefix, const char *suffix, int flags, mode_t mode,
                        char *name, size_t namelen);

/* Where pp_create_unique_at's random part comes from (same contract as pp_random_chars).
 * Tests only: a predictable source lets a test plant a link or a file at the name that will be
 * tried and see it refused or skipped. NULL restores pp_random_chars. Not thread-safe: set it
 * before anything creates files. */
typedef void (*pp_unique_name_source)(char *out, size_t n);
void pp_safefile_set_name_source(pp_unique_name_source source);

/* Writes all of data (retrying short writes and EINTR). 0, or -1 with errno. */
int pp_write_all(int fd, const void *data, size_t len);

/* Replaces dfd/name with a new file holding data (unique temporary file, fsync, renameat): an
 * existing entry under that name (a link included) is replaced, never written through. 0, or -1
 * with errno. */
int pp_replace_file_at(int dfd, const char *name, const void *data, size_t len, mode_t mode);

/* Creates the missing parent directories of path (mode 0755, as mkdir -p; path itself is not
 * created). 0, or -1 with errno (ENAMETOOLONG for a path over PATH_MAX). */
int pp_mkdir_parents(const char *path);

/* Opens (creating it with mode when missing) the directory path for polyprof's own use: never a
 * symlink as the last component, a directory, owned by the effective uid, not writable by group
 * or others (its mode is set to mode). Missing parents are created (pp_mkdir_parents). Returns
 * an O_DIRECTORY descriptor, or -1 with a message in err (what is wrong and what to do). */
int pp_open_private_dir(const char *path, mode_t mode, char *err, size_t errlen);

/* Opens dfd/name (dfd may be AT_FDCWD) for appending (created with mode when missing) as a file
 * polyprof owns: a symlink
 * is refused (O_NOFOLLOW), and so is anything but a regular file owned by the effective uid with
 * one link (a hard link planted by another user to a file polyprof would write). Never blocks
 * on a FIFO. Returns the descriptor, or -1 with a message in err. */
int pp_open_owned_append(int dfd, const char *name, mode_t mode, char *err, size_t errlen);

/* Reads an input file polyprof was told to read (config, token, upload file): opened
 * non-blocking (a FIFO never hangs), a regular file only (a directory, FIFO, socket or device
 * such as /dev/zero is refused), at most max bytes (a larger file is refused). what names the
 * file in messages ("config file"). Returns a malloc'd NUL-terminated buffer and its length, or
 * NULL with a message in err; *usage is set when the error is the user's (a wrong kind of file,
 * too large) rather than a failure to read (missing, permissions, I/O). */
char *pp_read_input_file(const char *path, size_t max, const char *what, size_t *len, bool *usage,
                         char *err, size_t errlen);

/* Copies in to out (outlen bytes, NUL-terminated, truncated) with every byte that is not
 * printable ASCII written as \xNN, so that a message quoting a file's content never sends raw
 * bytes to a terminal. */
void pp_escape_text(const char *in, char *out, size_t outlen);

#endif
