/* Offsets of the Zend engine's structures per PHP version, x86_64 NTS (docs/php.md, "Layout
 * tables", gives the source of each). Only 8.2 is checked against a real build here; the others
 * are gated by a self-check when a process is first read. */
#include <stddef.h>

#include "runtimes/php/php_int.h"

/* Fields every supported version has at the same place. */
#define COMMON                                                                                     \
    .eg_ced = 488, .ed_opline = 0, .ed_func = 24, .ed_prev = 48, .fn_name = 8, .fn_scope = 16,     \
    .ce_name = 8, .zs_len = 16, .zs_val = 24, .zop_lineno = 24, .zop_size = 32

static const pp_php_layout builtin[] = {
    {.major = 7,
     .minor = 4,
     COMMON,
     .op_last = 60,
     .op_opcodes = 64,
     .op_filename = 136,
     .op_line_start = 144,
     .op_line_end = 148},
    {.major = 8,
     .minor = 0,
     COMMON,
     .op_last = 68,
     .op_opcodes = 72,
     .op_filename = 144,
     .op_line_start = 152,
     .op_line_end = 156},
    {.major = 8,
     .minor = 1,
     COMMON,
     .op_last = 68,
     .op_opcodes = 72,
     .op_filename = 144,
     .op_line_start = 152,
     .op_line_end = 156},
    {.major = 8,
     .minor = 2,
     .tested = true,
     COMMON,
     .op_last = 80,
     .op_opcodes = 88,
     .op_filename = 152,
     .op_line_start = 160,
     .op_line_end = 164},
    {.major = 8,
     .minor = 3,
     COMMON,
     .op_last = 76,
     .op_opcodes = 80,
     .op_filename = 144,
     .op_line_start = 152,
     .op_line_end = 156},
    {.major = 8,
     .minor = 4,
     COMMON,
     .op_last = 96,
     .op_opcodes = 104,
     .op_filename = 168,
     .op_line_start = 176,
     .op_line_end = 180},
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

static pp_php_layout overrides[NBUILTIN];
static bool overridden[NBUILTIN];

const pp_php_layout *pp_php_layout_for(unsigned major, unsigned minor)
{
    for (size_t i = 0; i < NBUILTIN; i++)
        if (builtin[i].major == major && builtin[i].minor == minor)
            return overridden[i] ? &overrides[i] : &builtin[i];
    return NULL;
}

void pp_php_layout_override(unsigned major, unsigned minor, const pp_php_layout *L)
{
    for (size_t i = 0; i < NBUILTIN; i++)
        if (builtin[i].major == major && builtin[i].minor == minor) {
            overridden[i] = L != NULL;
            if (L)
                overrides[i] = *L;
        }
}
