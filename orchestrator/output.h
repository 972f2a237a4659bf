/* Local output: DIR/profile_<UTC end time>.col written atomically (temp file, fsync, rename),
 * DIR/last_profile.col symlink replaced atomically, optional rotation; the flame graph
 * DIR/profile_<UTC end time>.html and DIR/last_flamegraph.html the same way, and the other
 * --format files (.pb.gz, .folded) beside the .col. DIR may be writable by
 * other users: every name is used relative to the directory held open, temp files have
 * unpredictable names and are created with O_EXCL|O_NOFOLLOW, final names are only reached by
 * rename (docs/security.md). */
#ifndef PP_OUTPUT_H
#define PP_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Creates DIR (and parents) if needed and removes temp files left by a crashed run. Fails when
 * the path exists and is not a directory, or cannot be created/written. */
int pp_output_prepare(const char *dir, char *err, size_t errlen);

/* Writes text as DIR/profile_<end>.col and updates last_profile.col. With rotate, the file the
 * link pointed to before is deleted. path_out receives the new file's path. */
int pp_output_write(const char *dir, time_t end, const char *text, size_t len, bool rotate,
                    char *path_out, size_t plen, char *err, size_t errlen);

/* Writes text as the .html of the profile col_path (same name, ".html" for ".col") in DIR and
 * updates last_flamegraph.html, like pp_output_write. */
int pp_output_write_html(const char *dir, const char *col_path, const char *text, size_t len,
                         bool rotate, char *path_out, size_t plen, char *err, size_t errlen);

/* Writes data as DIR/<the .col's name with ext for ".col"> (ext such as ".pb.gz") and updates the
 * link DIR/lname, like pp_output_write. */
int pp_output_write_beside(const char *dir, const char *col_path, const char *ext,
                           const char *lname, const void *data, size_t len, bool rotate,
                           char *path_out, size_t plen, char *err, size_t errlen);

#endif
