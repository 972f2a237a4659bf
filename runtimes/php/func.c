/* Reading zend_functions, their names and lines out of a PHP process (php_int.h). Every read is
 * bounded and validated: a function whose fields do not look like one is refused, never named
 * with garbage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/php/walker_info.h"
#include "runtimes/php/php_int.h"

#define MAX_STR 1024       /* names and file names longer than this are cut */
#define MAX_OPS (1u << 20) /* op_array.last beyond this is garbage */
#define LINE_CHUNK 128u    /* opcodes read at once for their lines (4 KiB) */

int pp_php_zstr(pp_rmem *m, const pp_php_layout *L, uint64_t addr, char *out, size_t cap)
{
    uint64_t len = 0;
    out[0] = '\0';
    if (!pp_rmem_valid_ptr(addr, 8) || cap < 2 ||
        pp_rmem_read(m, addr + L->zs_len, &len, sizeof(len)) != 0 || len > (1u << 20))
        return -1;
    size_t n = len < cap - 1 ? (size_t)len : cap - 1;
    if (n && pp_rmem_read(m, addr + L->zs_val, out, n) != 0)
        return -1;
    out[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c == '\0')
            return -1; /* names and paths never hold NUL: not a zend_string */
        if (c < 0x20 || c == 0x7f)
            out[i] = '?';
    }
    return 0;
}

void pp_php_func_clear(pp_php_func *f)
{
    free(f->text);
    free(f->file);
    free(f->lines);
    memset(f, 0, sizeof(*f));
}

static char *dup_or_null(const char *s)
{
    return strdup(s);
}

int pp_php_func_check(pp_rmem *m, const pp_php_layout *L, uint64_t addr, uint32_t *check)
{
    uint8_t fb[256];
    size_t fl = L->op_line_end + 4;
    if (!pp_rmem_valid_ptr(addr, 8) || fl > sizeof(fb) || pp_rmem_read_cached(m, addr, fb, fl) != 0)
        return -1;
    uint8_t type = fb[0];
    uint64_t name, other;
    uint32_t line = 0;
    memcpy(&name, fb + L->fn_name, 8);
    if (type == 1) {
        memcpy(&other, fb + L->fn_scope, 8);
    } else if (type == PP_PHP_USER_FUNCTION || type == PP_PHP_EVAL_CODE) {
        memcpy(&other, fb + L->op_filename, 8);
        memcpy(&line, fb + L->op_line_start, 4);
    } else {
        return -1;
    }
    *check = pp_php_check(type, name, other, line);
    return 0;
}

int pp_php_func_read(pp_rmem *m, const pp_php_layout *L, uint64_t addr, pp_php_func *f)
{
    memset(f, 0, sizeof(*f));
    uint8_t fb[256];
    size_t fl = L->op_line_end + 4;
    if (!pp_rmem_valid_ptr(addr, 8) || fl > sizeof(fb))
        return -1;
    /* Read past the page cache (its pages may predate this function): functions and their
     * names are freed and reused as fast as a program evals code or makes closures. */
    bool full = pp_rmem_read(m, addr, fb, fl) == 0;
    if (!full && pp_rmem_read(m, addr, fb, 24) != 0)
        return -1;
    uint8_t type = fb[0];
    uint64_t name, scope;
    memcpy(&name, fb + L->fn_name, 8);
    memcpy(&scope, fb + L->fn_scope, 8);
    if (type != 1 && type != PP_PHP_USER_FUNCTION && type != PP_PHP_EVAL_CODE)
        return -1;
    char fname[MAX_STR], cname[MAX_STR] = "", buf[2 * MAX_STR + 8];
    if (name) {
        if (pp_php_zstr(m, L, name, fname, sizeof(fname)) != 0 || !fname[0])
            return -1;
    } else {
        snprintf(fname, sizeof(fname), "<main>");
    }
    if (scope) {
        uint64_t cn = 0;
        if (!pp_rmem_valid_ptr(scope, 8) || pp_rmem_read(m, scope + L->ce_name, &cn, 8) != 0 ||
            pp_php_zstr(m, L, cn, cname, sizeof(cname)) != 0 || !cname[0])
            return -1;
    }
    snprintf(buf, sizeof(buf), "%s%s%s", cname, cname[0] ? "::" : "", fname);
    f->addr = addr;
    f->type = type;
    f->user = type != 1;
    char file[MAX_STR] = "<internal>";
    if (f->user) {
        uint64_t filename;
        if (!full)
            return -1;
        memcpy(&filename, fb + L->op_filename, 8);
        memcpy(&f->line_start, fb + L->op_line_start, 4);
        memcpy(&f->line_end, fb + L->op_line_end, 4);
        memcpy(&f->last, fb + L->op_last, 4);
        memcpy(&f->opcodes, fb + L->op_opcodes, 8);
        if (pp_php_zstr(m, L, filename, file, sizeof(file)) != 0 || !file[0])
            return -1;
        f->check = pp_php_check(type, name, filename, f->line_start);
    } else {
        f->check = pp_php_check(type, name, scope, 0);
    }
    /* Still the same function after its names were read: else they may be another's. */
    uint8_t again[256];
    size_t al = full ? fl : 24;
    if (pp_rmem_read(m, addr, again, al) != 0 || again[0] != type ||
        memcmp(again + L->fn_name, fb + L->fn_name, 8) != 0 ||
        memcmp(again + L->fn_scope, fb + L->fn_scope, 8) != 0 ||
        (f->user && (memcmp(again + L->op_filename, fb + L->op_filename, 8) != 0 ||
                     memcmp(again + L->op_line_start, fb + L->op_line_start, 4) != 0)))
        return -1;
    f->text = dup_or_null(buf);
    f->file = dup_or_null(file);
    if (!f->text || !f->file) {
        pp_php_func_clear(f);
        return -1;
    }
    return 0;
}

int pp_php_func_plausible(const pp_php_func *f)
{
    if (!f->user)
        return 1;
    return f->line_start > 0 && f->line_end >= f->line_start && f->last > 0 && f->last <= MAX_OPS &&
           pp_rmem_valid_ptr(f->opcodes, 8) &&
           (f->file[0] == '/' || strstr(f->file, "eval()'d code") ||
            strcmp(f->file, "Standard input code") == 0 ||
            strcmp(f->file, "Command line code") == 0);
}

int pp_php_func_line(pp_rmem *m, const pp_php_layout *L, pp_php_func *f, uint32_t idx)
{
    if (!f->user || idx == PP_PHP_NO_OPLINE || idx >= f->last || f->last > MAX_OPS)
        return f->user ? (int)f->line_start : -1;
    if (!f->lines && !(f->lines = calloc(f->last, sizeof(*f->lines))))
        return (int)f->line_start;
    if (!f->lines[idx]) {
        uint32_t lo = idx - idx % LINE_CHUNK,
                 n = f->last - lo < LINE_CHUNK ? f->last - lo : LINE_CHUNK;
        static __thread uint8_t ops[LINE_CHUNK * 64];
        size_t sz = (size_t)n * L->zop_size;
        if (L->zop_size > 64 ||
            pp_rmem_read(m, f->opcodes + (uint64_t)lo * L->zop_size, ops, sz) != 0)
            return (int)f->line_start;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t ln;
            memcpy(&ln, ops + (size_t)i * L->zop_size + L->zop_lineno, 4);
            /* a line outside the function is garbage (a freed op_array): keep line_start */
            f->lines[lo + i] = ln >= f->line_start && ln <= f->line_end ? ln : f->line_start;
        }
    }
    return (int)f->lines[idx];
}

void pp_php_frame_text(const pp_php_func *f, int line, char *out, size_t cap)
{
    snprintf(out, cap, "%s %s:%d", f->text, f->file, line);
}

static int selfcheck_once(pp_rmem *m, const pp_php_layout *L, uint64_t eg)
{
    uint64_t ed = 0;
    if (pp_rmem_ptr(m, eg + L->eg_ced, &ed) != 0)
        return -1;
    int users = 0;
    for (int depth = 0; ed && depth < 64; depth++) {
        uint64_t func = 0, prev = 0;
        if (!pp_rmem_valid_ptr(ed, 8) || pp_rmem_ptr(m, ed + L->ed_func, &func) != 0 ||
            pp_rmem_ptr(m, ed + L->ed_prev, &prev) != 0)
            return -1;
        if (func) {
            pp_php_func f;
            if (pp_php_func_read(m, L, func, &f) != 0)
                return -1;
            int ok = pp_php_func_plausible(&f);
            if (ok && f.user) {
                users++;
                /* the first opline's line lies within the function */
                uint32_t ln = 0;
                ok = pp_rmem_read(m, f.opcodes + L->zop_lineno, &ln, 4) == 0 &&
                     ln >= f.line_start && ln <= f.line_end;
            }
            pp_php_func_clear(&f);
            if (!ok)
                return -1;
        }
        ed = prev;
    }
    return users ? 1 : 0;
}

/* A running process changes its frame chain while it is read: a right table can meet a frame
 * freed between two reads (-1 once), a wrong one never passes. So a few attempts, and any pass
 * counts. */
#define SELFCHECK_TRIES 5
int pp_php_layout_selfcheck(pp_rmem *m, const pp_php_layout *L, uint64_t eg)
{
    int best = -1;
    for (int i = 0; i < SELFCHECK_TRIES && best < 1; i++) {
        pp_rmem_begin_sample(m);
        int v = selfcheck_once(m, L, eg);
        if (v > best)
            best = v;
        if (m->gone)
            break;
    }
    return best;
}
