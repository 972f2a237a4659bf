/* The PHP runtime's internals (runtimes/php/ and its tests only): the layout tables, the
 * process reader that names frames, the in-sampler walker, the phpspy launcher. See docs/php.md. */
#ifndef PP_PHP_INT_H
#define PP_PHP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/remote_mem.h"
#include "merge/profile.h"
#include "runtimes/runtime.h"

/* ---- layout.c: offsets of the engine's structures per PHP version (x86_64, NTS) ---- */
typedef struct pp_php_layout {
    unsigned major, minor;
    bool tested;     /* checked against a real build here; else a self-check gates it */
    uint32_t eg_ced; /* executor_globals.current_execute_data */
    uint32_t ed_opline, ed_func, ed_prev; /* zend_execute_data */
    uint32_t fn_name, fn_scope;           /* zend_function.common */
    uint32_t op_last, op_opcodes;         /* zend_op_array */
    uint32_t op_filename, op_line_start, op_line_end;
    uint32_t ce_name;              /* zend_class_entry.name */
    uint32_t zs_len, zs_val;       /* zend_string */
    uint32_t zop_lineno, zop_size; /* zend_op */
} pp_php_layout;

/* The table of PHP major.minor, or NULL when polyprof has none. */
const pp_php_layout *pp_php_layout_for(unsigned major, unsigned minor);
/* Tests only: replaces the table of major.minor (NULL: restores the built-in one). */
void pp_php_layout_override(unsigned major, unsigned minor, const pp_php_layout *L);

/* ---- func.c: reading zend_functions and lines out of a process ---- */
typedef struct pp_php_func {
    uint64_t addr;
    uint32_t check; /* pp_php_check of what was read */
    uint8_t type;
    bool user;  /* user code or eval: file and lines */
    char *text; /* "Class::method" / "function" / "<main>" */
    char *file; /* the script, or "<internal>" */
    uint32_t line_start, line_end, last;
    uint64_t opcodes;
    uint32_t *lines; /* lazily read per chunk of opcodes; 0: not read */
} pp_php_func;

/* Reads the zend_function at addr with layout L: 0, or -1 when unreadable or implausible. f is
 * owned by the caller (pp_php_func_clear). */
int pp_php_func_read(pp_rmem *m, const pp_php_layout *L, uint64_t addr, pp_php_func *f);
/* The check value of the zend_function at addr (what pp_php_func_read would give it), from one
 * read of the function through the page cache, its names not read: to look up a function read
 * before. 0, or -1. */
int pp_php_func_check(pp_rmem *m, const pp_php_layout *L, uint64_t addr, uint32_t *check);
void pp_php_func_clear(pp_php_func *f);
/* The line of opline idx of f (reading its opcodes in m when needed); line_start when unknown. */
int pp_php_func_line(pp_rmem *m, const pp_php_layout *L, pp_php_func *f, uint32_t idx);
/* Reads a zend_string at addr into out (at most cap-1 bytes, NUL-terminated, printable ASCII
 * and UTF-8 only; other bytes become '?'). 0, or -1. */
int pp_php_zstr(pp_rmem *m, const pp_php_layout *L, uint64_t addr, char *out, size_t cap);
/* The frame text of f at line (phpspy's "Class::method /file.php:12"), without the suffix. */
void pp_php_frame_text(const pp_php_func *f, int line, char *out, size_t cap);
/* The self-check of an untested layout: walks the current frames (if any) of the process and
 * checks the user functions found, a few times (a running process changes its frames while they
 * are read). 1 passed, 0 nothing to check (no frame now), -1 failed. */
int pp_php_layout_selfcheck(pp_rmem *m, const pp_php_layout *L, uint64_t eg);
int pp_php_func_plausible(const pp_php_func *f);

/* ---- proc.c: finding the engine in a process ---- */
typedef struct pp_php_target {
    char version[32]; /* "8.2.36" */
    unsigned major, minor;
    uint64_t eg;           /* &executor_globals */
    uint64_t vm_lo, vm_hi; /* execute_ex's code */
    bool zts;
} pp_php_target;

typedef enum {
    PP_PHP_FOUND = 0,
    PP_PHP_NOT_PHP,
    PP_PHP_UNSUPPORTED,
    PP_PHP_GONE,
    PP_PHP_ERR
} pp_php_st;
/* Finds executor_globals and the version in pid (its executable or a libphp mapping). */
pp_php_st pp_php_find(int pid, pp_php_target *t, char *err, size_t errlen);
/* "X.Y.Z" of the PHP in pid (for metadata), 0 or -1. */
int pp_php_version_of(int pid, char *out, size_t cap);

/* ---- walker.c / backend.c / phpspy.c ---- */
extern const pp_inwalker pp_php_inwalker;
extern const pp_backend pp_php_builtin_backend, pp_php_phpspy_backend;
/* The processes whose layout failed its self-check at naming since the last call (pids and
 * reasons, at most cap). */
size_t pp_php_take_failed(int *pids, char (*why)[96], size_t cap);
/* Caches the functions of the stacks of the registered processes that run on a CPU now (the
 * backend's watcher calls it every WATCH_MS): a function freed before the drain (a request's
 * code in php-fpm without opcache, a request's copy of an opcache script's main op_array) is
 * then named from the family's cache (walker.c). */
void pp_php_prefetch(void);
/* Whether comm matches --php-proc-filter (an extended regex, as pgrep's pattern). */
bool pp_php_filter_match(const char *pattern, const char *comm);

/* phpspy's output (gProfiler's parser, spec: blocks of "<i> <frame>" lines ended by
 * "# pid = N", separated by blank lines) into out: each block one stack "php;<root>_[php];...".
 * Returns the number of blocks counted; *corrupt gets the blocks rejected. */
long pp_phpspy_parse(const char *text, size_t len, pp_profile *out, long *corrupt);

#endif
