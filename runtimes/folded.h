/* Folded stacks as external profilers write them (py-spy's raw format, rbspy's collapsed
 * format): one "frame;frame;...;frame count" line per stack, root first, split at the last
 * space. Shared by the backends that launch such a profiler. */
#ifndef PP_FOLDED_H
#define PP_FOLDED_H

#include <stddef.h>

#include "merge/profile.h"

#define PP_FOLDED_MAX_FRAMES 1024 /* frames kept of one line (the root-most ones) */
#define PP_FOLDED_MAX_COUNT (1ull << 40)

/* Writes the frame text to keep for the raw frame f (len bytes, not NUL-terminated: the
 * caller's rewrite, e.g. a suffix) into out (cap bytes, NUL-terminated). Called once per
 * distinct raw frame of a parse. */
typedef void (*pp_folded_frame_fn)(void *arg, const char *f, size_t len, char *out, size_t cap);

/* Adds the stacks of text to dst, a pid entry of out, each frame rewritten by fn. Lines
 * without a count in 1..PP_FOLDED_MAX_COUNT-1 after their last space, or without a frame, are
 * skipped; empty frames are dropped; a "\r\n" ending is accepted. text is modified. Returns the
 * number of lines added. */
size_t pp_folded_parse(char *text, pp_profile *out, pp_pid_profile *dst, pp_folded_frame_fn fn,
                       void *arg);

#endif
