/* Ruby structure offsets by version (x86_64; docs/ruby.md gives the source of each). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/ruby/ruby_int.h"

/* 3.1 (Debian's 3.1.2p20, checked on running processes): rb_vm_t, rb_ractor_t, rb_thread_t,
 * rb_execution_context_t, rb_control_frame_t (with __bp__ and jit_return: 64 bytes),
 * rb_iseq_constant_body. */
static const pp_rb_layout ruby31 = {
    .major = 3,
    .minor = 1,
    .tested = true,
    .root_ec = 520,
    .vm_main_ractor = 32,
    .vm_main_thread = 40,
    .ec_vm_stack = 0,
    .ec_vm_stack_size = 8,
    .ec_cfp = 16,
    .ec_thread = 48,
    .th_ec = 40,
    .th_nt = 0,
    .th_thread_id = 80,
    .th_root_fiber = 328,
    .cfp_size = 64,
    .cfp_pc = 0,
    .cfp_iseq = 16,
    .cfp_ep = 32,
    .iseq_body = 16,
    .body_iseq_size = 4,
    .body_iseq_encoded = 8,
    .body_pathobj = 64,
    .body_label = 80,
    .body_first_lineno = 88,
    .body_insns_body = 120,
    .body_insns_positions = 128,
    .body_insns_size = 136,
    .body_succ = 144,
    .insn_entry_size = 12,
    .string_kind = 0,
};

/* The tables below are untested here (no such Ruby can be installed): each is used for a
 * process only after the self-check passes. Offsets computed from the version's headers
 * (docs/ruby.md, "Versions and layouts"). */

/* 3.2: rb_thread_t.nt (the native thread holds thread_id), rb_control_frame_t still 64 bytes
 * (__bp__, jit_return), location.first_lineno an int, insns_info 8 bytes earlier, RString
 * with the length at 16 for embedded strings too. */
static const pp_rb_layout ruby32 = {
    .major = 3,
    .minor = 2,
    .root_ec = 520,
    .vm_main_ractor = 32,
    .vm_main_thread = 40,
    .ec_vm_stack = 0,
    .ec_vm_stack_size = 8,
    .ec_cfp = 16,
    .ec_thread = 48,
    .th_ec = 48,
    .th_nt = 40,
    .th_thread_id = 8,
    .th_root_fiber = 280,
    .cfp_size = 64,
    .cfp_pc = 0,
    .cfp_iseq = 16,
    .cfp_ep = 32,
    .iseq_body = 16,
    .body_iseq_size = 4,
    .body_iseq_encoded = 8,
    .body_pathobj = 64,
    .body_label = 80,
    .body_first_lineno = 88,
    .first_lineno_int = true,
    .body_insns_body = 112,
    .body_insns_positions = 120,
    .body_insns_size = 128,
    .body_succ = 136,
    .insn_entry_size = 12,
    .string_kind = 1,
};

/* 3.3 and 3.4 (the same offsets but th_root_fiber): rb_control_frame_t without __bp__ (56 bytes),
 * the ractor's threads.running_ec at 384, rb_native_thread.thread_id at 16, RString.len outside the
 * union; th_thread_id is in rb_native_thread. */
#define RUBY33_OFFSETS                                                                             \
    .root_ec = 384, .vm_main_ractor = 32, .vm_main_thread = 40, .ec_vm_stack = 0,                  \
    .ec_vm_stack_size = 8, .ec_cfp = 16, .ec_thread = 48, .th_ec = 48, .th_nt = 40,                \
    .th_thread_id = 16, .cfp_size = 56, .cfp_pc = 0, .cfp_iseq = 16, .cfp_ep = 32,                 \
    .iseq_body = 16, .body_iseq_size = 4, .body_iseq_encoded = 8, .body_pathobj = 64,              \
    .body_label = 80, .body_first_lineno = 88, .first_lineno_int = true, .body_insns_body = 112,   \
    .body_insns_positions = 120, .body_insns_size = 128, .body_succ = 136, .insn_entry_size = 12,  \
    .string_kind = 2

/* 3.0: no jit_return (rb_control_frame_t 56 bytes), ec->thread_ptr at 56 (protect_tag before
 * it), iseq_insn_info_entry without node_id (8 bytes); otherwise as 3.1. */
static const pp_rb_layout ruby30 = {
    .major = 3,
    .minor = 0,
    .root_ec = 520,
    .vm_main_ractor = 32,
    .vm_main_thread = 40,
    .ec_vm_stack = 0,
    .ec_vm_stack_size = 8,
    .ec_cfp = 16,
    .ec_thread = 56,
    .th_ec = 40,
    .th_nt = 0,
    .th_thread_id = 80,
    .th_root_fiber = 320,
    .cfp_size = 56,
    .cfp_pc = 0,
    .cfp_iseq = 16,
    .cfp_ep = 32,
    .iseq_body = 16,
    .body_iseq_size = 4,
    .body_iseq_encoded = 8,
    .body_pathobj = 64,
    .body_label = 80,
    .body_first_lineno = 88,
    .body_insns_body = 120,
    .body_insns_positions = 128,
    .body_insns_size = 136,
    .body_succ = 144,
    .insn_entry_size = 8,
    .string_kind = 0,
};

/* 2.6 and 2.7 (the same offsets but th_root_fiber): no ractor; the running context is the global
 * ruby_current_execution_context_ptr; vm->main_thread at 192 (after the GVL). */
#define RUBY26_OFFSETS                                                                             \
    .root_ec = -1, .vm_main_ractor = 0, .vm_main_thread = 192, .ec_vm_stack = 0,                   \
    .ec_vm_stack_size = 8, .ec_cfp = 16, .ec_thread = 56, .th_ec = 32, .th_nt = 0,                 \
    .th_thread_id = 72, .cfp_size = 56, .cfp_pc = 0, .cfp_iseq = 16, .cfp_ep = 32,                 \
    .iseq_body = 16, .body_iseq_size = 4, .body_iseq_encoded = 8, .body_pathobj = 64,              \
    .body_label = 80, .body_first_lineno = 88, .body_insns_body = 120,                             \
    .body_insns_positions = 128, .body_insns_size = 136, .body_succ = 144, .insn_entry_size = 8,   \
    .string_kind = 0

/* rb_thread_t.root_fiber is the one offset that differs within each pair */
static const pp_rb_layout ruby33 = {.major = 3, .minor = 3, RUBY33_OFFSETS, .th_root_fiber = 408};
static const pp_rb_layout ruby34 = {.major = 3, .minor = 4, RUBY33_OFFSETS, .th_root_fiber = 424};
static const pp_rb_layout ruby26 = {.major = 2, .minor = 6, RUBY26_OFFSETS, .th_root_fiber = 304};
static const pp_rb_layout ruby27 = {.major = 2, .minor = 7, RUBY26_OFFSETS, .th_root_fiber = 312};

static const pp_rb_layout *const layouts[] = {&ruby26, &ruby27, &ruby30, &ruby31,
                                              &ruby32, &ruby33, &ruby34};

const pp_rb_layout *pp_rb_layout_at(size_t i)
{
    return i < sizeof(layouts) / sizeof(layouts[0]) ? layouts[i] : NULL;
}

/* PP_RUBY_TEST_LAYOUT=untested (tests only): the table is treated as untested, so the
 * self-check decides; =wrong also breaks it (cfp_iseq off by one word), which the self-check
 * must refuse; =X.Y uses the table of Ruby X.Y, untested, whatever the process's version. */
static pp_rb_layout test_layout;

const pp_rb_layout *pp_rb_layout_for(int major, int minor)
{
    const char *t = getenv("PP_RUBY_TEST_LAYOUT");
    int tmaj, tmin;
    if (t && sscanf(t, "%d.%d", &tmaj, &tmin) == 2) {
        major = tmaj;
        minor = tmin;
    }
    for (size_t i = 0; pp_rb_layout_at(i); i++) {
        const pp_rb_layout *L = pp_rb_layout_at(i);
        if (L->major != major || L->minor != minor)
            continue;
        if (!t || !*t)
            return L;
        test_layout = *L;
        test_layout.tested = false;
        if (strcmp(t, "wrong") == 0)
            test_layout.cfp_iseq += 8;
        return &test_layout;
    }
    return NULL;
}
