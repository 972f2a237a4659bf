/* Option rows: the one description of a command-line option (long name, kind, default,
 * range, help) from which the CLI drives getopt_long, the environment, the config file, --help
 * and the header's run_arguments. The CLI's own rows live in orchestrator/cli_table.c; each
 * runtime declares its rows in its descriptor (runtimes/runtime.h). Rows of a runtime have no
 * field in pp_config (off = PP_OFF_NONE): their values are stored by name and read by the
 * runtime with pp_runtime_opt. */
#ifndef PP_OPTIONS_H
#define PP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    PP_OPT_FLAG,        /* bool: true when given (false with .inv) */
    PP_OPT_NEGFLAG,     /* bool: --X sets true, --<neg> sets false */
    PP_OPT_COUNT,       /* int: incremented per occurrence (-v) */
    PP_OPT_INT,         /* int with optional range */
    PP_OPT_STR,         /* char * */
    PP_OPT_CHOICE,      /* char *, value mapped through .choices; --<neg> sets "disabled" */
    PP_OPT_PERF,        /* pp_perf_mode + perf_mode_given; --<neg> sets disabled */
    PP_OPT_INTLIST,     /* int * + size_t count: comma lists, repeatable, extend */
    PP_OPT_STRLIST,     /* char ** + size_t count: repeatable, append */
    PP_OPT_NOOP_FLAG,   /* flag stored by name (no pp_config field): a gProfiler flag accepted
                           without effect, or a runtime's own flag (.driver_opt) */
    PP_OPT_NOOP_ARG,    /* same, with a value (.def_str: the value when not given) */
    PP_OPT_NOOP_OPTARG, /* same, value optional (argparse nargs='?') */
    PP_OPT_HELP,
    PP_OPT_VERSION,
} pp_opt_kind;

/* Where an option exists on the command line: the main parser, the upload-file subcommand. */
enum { PP_SCOPE_MAIN = 1, PP_SCOPE_SUB = 2, PP_SCOPE_BOTH = 3 };

#define PP_OFF_NONE ((size_t)-1)

typedef struct pp_choice {
    const char *in;     /* accepted text */
    const char *out;    /* stored value (NULL: same as in) */
    const char *notice; /* pp_info line logged when chosen, or NULL */
} pp_choice;

typedef struct pp_opt {
    const char *name;  /* long name without dashes */
    const char *alias; /* second long name (same meaning), or NULL */
    const char *neg;   /* negative long name ("no-flamegraph", "no-java"), or NULL */
    char shortopt;     /* short letter or 0 */
    pp_opt_kind kind;
    const char *dest; /* gProfiler dest name (run_arguments key); NULL: name with '_' */
    size_t off;       /* offset of the field in the CLI's pp_config, PP_OFF_NONE for none */
    size_t cnt_off;   /* lists: offset of the size_t count */
    bool inv;         /* FLAG: given stores false */
    bool json_inv;    /* run_arguments shows the negation of the field */
    bool nullable;    /* INT: 0 means "not given" (run_arguments null) */
    bool secret;      /* never shown: run_arguments null */
    bool ranged;      /* INT / NOOP_ARG: check [min, max] */
    bool multi;       /* NOOP_ARG: repeated values are comma-joined */
    long min, max;
    int def_int;
    const char *def_str;
    const pp_choice *choices; /* terminated by {NULL} */
    unsigned scope;
    /* NOOP kinds that a runtime reads (pp_runtime_opt): no "has no effect" notice. */
    bool driver_opt;
    const char *section; /* help section header printed before the first row of a section */
    const char *metavar;
    const char *help;
} pp_opt;

/* Row shorthands for options stored by name. */
#define PP_NOTIMPL "(gProfiler compatibility; no effect)"
#define PP_OPT_NOOPF(n, h)                                                                         \
    {                                                                                              \
        .name = n, .kind = PP_OPT_NOOP_FLAG, .off = PP_OFF_NONE, .help = h                         \
    }
#define PP_OPT_NOOPA(n, mv, h)                                                                     \
    {                                                                                              \
        .name = n, .kind = PP_OPT_NOOP_ARG, .off = PP_OFF_NONE, .metavar = mv, .help = h           \
    }
#define PP_OPT_NOOPI(n, lo, hi, h)                                                                 \
    {                                                                                              \
        .name = n, .kind = PP_OPT_NOOP_ARG, .off = PP_OFF_NONE, .ranged = true, .min = lo,         \
        .max = hi, .metavar = "N", .help = h                                                       \
    }

/* An option stored by name (the NOOP kinds): its long name and its value as given (repeated
 * values comma-joined for .multi rows), NULL for a flag. */
typedef struct pp_opt_value {
    char *name;
    char *value;
} pp_opt_value;

#endif
