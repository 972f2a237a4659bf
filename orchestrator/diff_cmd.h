/* `polyprof diff BASE.col TARGET.col [-o OUT.html] [--top N]`: compares two collapsed profiles
 * (merge/diff.h), prints the functions whose share grew and shrank most, and writes the
 * differential flame graph page. */
#ifndef PP_DIFF_CMD_H
#define PP_DIFF_CMD_H

#include <stddef.h>

/* The largest profile file read (a larger one is refused as a usage error). */
#define PP_DIFF_MAX_FILE (256u << 20)

/* argv[0] is "diff". Returns the exit code: 0, 1 (a file that cannot be read or written, a
 * profile without samples, out of memory), 2 (usage: bad arguments, a file that is not a
 * profile or is too large). */
int pp_diff_main(int argc, char **argv);

#endif
