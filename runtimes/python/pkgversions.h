/* Package-version annotations of Python frames (gProfiler's py_module_version, spec
 * gprofiler-compat.md §5.4): a frame file that belongs to an installed distribution gets
 * " [<dist>==<version>]", a standard-library file " [standard-library==X.Y.Z]".
 *
 * A file belongs to a distribution when it is listed in a `*.dist-info/RECORD` or an
 * `*.egg-info/installed-files.txt` of the site-packages/dist-packages directory that holds it,
 * or, for a module imported from an archive ("<archive>/<member>": a zipapp, a PEX, an egg),
 * in a RECORD inside the archive (relative to the directory holding its *.dist-info) or in an
 * egg whose EGG-INFO/PKG-INFO names it. Archives are read with libarchive (the central
 * directory; at most 200,000 entries) and cached like directories.
 * Directories and files are opened inside the process's root (/proc/<pid>/root, inroot.h: a
 * container's symlinks resolve in the container, never on the host), so containers and mount
 * namespaces see their own packages. The map of one directory is built once and cached
 * process-wide, keyed by the directory's device and inode and revalidated by its mtime
 * (installing or removing a package changes it). Thread-safe. Memory is bounded: at most
 * PP_PKGVER_MAX_DIRS directories are cached (the cache is emptied when full), every file read
 * is size-capped, and only `.py` entries are kept. */
#ifndef PP_PKGVERSIONS_H
#define PP_PKGVERSIONS_H

#include <stddef.h>

#define PP_PKGVER_MAX_DIRS 64

/* The annotation of file (as the interpreter names it) in a process whose root directory is
 * root ("/proc/<pid>/root", or "" / "/" for the host; tests use fixture trees). pyver is the
 * process's exact version ("3.11.7"), used for standard-library files; NULL or "" disables
 * that case. Writes "[dist==version]" (without a leading space) into out and returns 1, or
 * returns 0 (out = "") when the file belongs to no known distribution. */
int pp_pkgver_annotation(const char *root, const char *file, const char *pyver, char *out,
                         size_t len);

/* Python frame text as py-spy prints it through gProfiler: "<name> (<file>:<line>)_[p]",
 * "<name> (<file>)_[p]" when line is 0 or less, "<name>_[p]" without a file; with a non-empty
 * ann: "<name> (<file>:<line> <ann>)_[p]". Returns the length (truncated to len-1). */
int pp_py_frame_text(char *out, size_t len, const char *name, const char *file, int line,
                     const char *ann);

/* Rewrites one py-spy frame: "<func> (<file>.py:<n>)_[p]" becomes
 * "<func> (<file>.py:<n> <annotation>)_[p]" when the file has one; any other frame is copied
 * unchanged. root and pyver as in pp_pkgver_annotation. */
void pp_pkgver_rewrite_frame(const char *root, const char *frame, const char *pyver, char *out,
                             size_t len);

/* Drops every cached directory map (tests, and a bound on memory). */
void pp_pkgver_clear_cache(void);

#endif
