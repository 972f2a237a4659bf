/* Ruby structure offsets by version (x86_64; docs/ruby.md gives the source of each). */
#include <stddef.h>
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

static const pp_rb_layout *const layouts[] = {&ruby31};

/* PP_RUBY_TEST_LAYOUT=untested (tests only): the 3.1 table is treated as untested, so the
 * self-check decides; =wrong also breaks it (cfp_iseq off by one word), which the self-check
 * must refuse. */
static pp_rb_layout test_layout;

const pp_rb_layout *pp_rb_layout_for(int major, int minor)
{
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        if (layouts[i]->major != major || layouts[i]->minor != minor)
            continue;
        const char *t = getenv("PP_RUBY_TEST_LAYOUT");
        if (!t || !*t)
            return layouts[i];
        test_layout = *layouts[i];
        test_layout.tested = false;
        if (strcmp(t, "wrong") == 0)
            test_layout.cfp_iseq += 8;
        return &test_layout;
    }
    return NULL;
}
