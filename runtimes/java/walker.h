/* The HotSpot in-sampler walker's user-space half (walker.c) and the builtin backend
 * (builtin.c): docs/java.md "In-sampler walker". */
#ifndef PP_JAVA_WALKER_H
#define PP_JAVA_WALKER_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/java/hotspot.h"
#include "runtimes/java/walker_info.h"
#include "runtimes/runtime.h"

extern const pp_inwalker pp_java_inwalker;

/* The BPF walker's data for the JVM p reads (its layout and code cache). 0, or -1 with why. */
int pp_java_walker_info(pp_hs_proc *p, struct pp_hotspot_info *in, char *why, size_t len);
/* The text of one recorded frame (its two words, walker_info.h) into out:
 * "pkg/Class.method(Sig)Ret" and the type's suffix, or "[lost symbol]" and the suffix when the
 * Method* does not hold the method recorded (returns 0 then, 1 when named). */
size_t pp_java_frame_text(pp_hs_proc *p, uint64_t method, uint64_t aux, char *out, size_t cap);
/* The texts of one recorded frame, root first: its own (pp_java_frame_text), then, for a
 * compiled frame when in is given (the debug information's layout is known; in: the walker's
 * data, for where the frame's nmethod is), each method inlined at its pc toward the innermost,
 * "pkg/Class.method(Sig)Ret_[i]". At most cap. 0 when the frame's own method is not the one
 * recorded (nothing is named). why: NULL, or why a compiled frame's inlined methods are not
 * shown (its nmethod flushed since the sample, its debug information unreadable or
 * inconsistent). */
#define PP_JAVA_FRAME_TEXT (PP_HS_TEXT_MAX + 8)
size_t pp_java_frame_texts(pp_hs_proc *p, const struct pp_hotspot_info *in, uint64_t w0,
                           uint64_t aux, char (*out)[PP_JAVA_FRAME_TEXT], size_t cap,
                           const char **why);

#endif
