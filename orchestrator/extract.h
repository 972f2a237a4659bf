/* `polyprof extract-resources --resources-dest DIR` (gProfiler's subcommand, which copies its
 * bundled resources tree out): copies the resources polyprof finds into DIR, so that DIR is a
 * resources directory another polyprof can use (POLYPROF_RESOURCES=DIR).
 *
 * The files are those below the resources directories of the search path (base/resource.h
 * steps 1-4: $POLYPROF_RESOURCES, then the directories beside the binary), each relative path
 * taken from the first directory holding it, as a lookup would find it: py-spy, rbspy, the
 * async-profiler jar, the Node addons. Tools found only on PATH are not resources and are not
 * copied. Dot files are skipped; a symbolic link to a file is copied as the file; linked
 * directories are not entered (no loops), nor DIR itself when it lies below a resources
 * directory.
 *
 * DIR is created (mode 0755, not its parents) when missing. Below it every directory is
 * created or opened without following a symbolic link, and every file is written as a new
 * file under an unpredictable name, then renamed over its name (base/safefile.h): a link or
 * file planted there is replaced, never written through. Files keep their executable bit (0755
 * or 0644). */
#ifndef PP_EXTRACT_H
#define PP_EXTRACT_H

#include <stddef.h>
#include <stdio.h>

#include "base/resource.h"

/* Largest file copied (a larger one is an error): the tools are ~10 MB. */
#define PP_EXTRACT_MAX_FILE (256u << 20)
/* Most files copied, and deepest directory level entered. */
#define PP_EXTRACT_MAX_FILES 4096
#define PP_EXTRACT_MAX_DEPTH 16

/* Copies the resources found with env's inputs (this process's when NULL) into dest, printing
 * one line per file to out ("<rel> <- <source>"; out may be NULL). Returns the number of files
 * copied, or -1 with a message in err (what failed and what to do). */
int pp_extract_resources(const pp_resource_env *env, const char *dest, FILE *out, char *err,
                         size_t errlen);

#endif
