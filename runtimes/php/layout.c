/* Offsets of the Zend engine's structures per PHP version, x86_64 NTS (docs/php.md, "Layout
 * tables", gives the source of each). Only 8.2 is checked against a real build here; the others
 * are gated by a self-check when a process is first read. */
#include <stddef.h>

#include "runtimes/php/php_int.h"

/* One version's table: the zend_op_array fields that move (last, opcodes, filename, line_start;
 * line_end follows line_start), the others at the places every supported version has them. */
#define ROW(maj, min, is_tested, last, opcodes, filename, line_start)                              \
    {                                                                                              \
        .major = maj, .minor = min, .tested = is_tested, .eg_ced = 488, .ed_opline = 0,            \
        .ed_func = 24, .ed_prev = 48, .fn_name = 8, .fn_scope = 16, .op_last = last,               \
        .op_opcodes = opcodes, .op_filename = filename, .op_line_start = line_start,               \
        .op_line_end = (line_start) + 4, .ce_name = 8, .zs_len = 16, .zs_val = 24,                 \
        .zop_lineno = 24, .zop_size = 32                                                           \
    }

static const pp_php_layout builtin[] = {
    ROW(7, 4, false, 60, 64, 136, 144), ROW(8, 0, false, 68, 72, 144, 152),
    ROW(8, 1, false, 68, 72, 144, 152), ROW(8, 2, true, 80, 88, 152, 160),
    ROW(8, 3, false, 76, 80, 144, 152), ROW(8, 4, false, 96, 104, 168, 176),
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
