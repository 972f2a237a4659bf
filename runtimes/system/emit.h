/* Turns one aggregated raw sample (pid, comm, user and kernel instruction pointers, count) into
 * a symbolized stack of a profile. Shared by both sampler backends. Caches (pid, ip) -> frame id
 * for the profile being filled. Each native frame's file (path, build-id) is recorded in the
 * profile as the frame's mapping (pp_profile_set_frame_mapping; kernel frames under
 * PP_ANY_PID), for the pprof export. */
#ifndef PP_EMIT_H
#define PP_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge/profile.h"
#include "runtimes/symbols/symbolizer.h"

typedef struct pp_emitter pp_emitter;

pp_emitter *pp_emitter_new(pp_symbolizer *sym);
void pp_emitter_free(pp_emitter *e);
/* user[0] and kernel[0] are the leaf-most addresses (as the kernel reports callchains). */
int pp_emit_sample(pp_emitter *e, pp_profile *out, int pid, const char *comm, const uint64_t *user,
                   size_t nuser, const uint64_t *kernel, size_t nkernel, uint64_t count);
/* What tells the runtime's own native frames (replaced by its frames): names starting with one
 * of symbols (an interpreter loop, NULL-terminated; NULL: none), or addresses code(arg, ip) says
 * are the runtime's generated code (NULL: none). */
typedef struct pp_emit_loop {
    const char *const *symbols;
    bool (*code)(void *arg, uint64_t ip);
    void *arg;
} pp_emit_loop;
/* The same on thread tid (0: not recorded; pp_pid_add_tid) with a runtime's frames (rt: frame
 * ids of out, ROOT first; none when nrt is 0): one mixed stack, from
 * the root: native frames below the outermost loop frame (loop: the interpreter loop or the
 * runtime's code), the runtime frames, the native frames above the innermost loop frame,
 * the kernel frames. Without a loop frame, the runtime frames are the root. At most
 * PP_EMIT_MAX_RT runtime frames are kept (the root side). */
#define PP_EMIT_MAX_FRAMES 640 /* native user and kernel frames, and a runtime trace */
#define PP_EMIT_MAX_RT (PP_EMIT_MAX_FRAMES / 2)
int pp_emit_mixed(pp_emitter *e, pp_profile *out, int pid, uint32_t tid, const char *comm,
                  const uint64_t *user, size_t nuser, const uint64_t *kernel, size_t nkernel,
                  const uint32_t *rt, size_t nrt, const pp_emit_loop *loop, uint64_t count);

#endif
