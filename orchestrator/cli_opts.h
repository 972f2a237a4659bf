/* Private to the CLI module: the option table shared by the parser (cli.c) and the table,
 * help and run_arguments code (cli_table.c). One row per option drives getopt_long, the
 * environment (POLYPROF_/GPROFILER_), the config file, --help and run_arguments. */
#ifndef PP_CLI_OPTS_H
#define PP_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "orchestrator/cli.h"

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
    PP_OPT_NOOP_FLAG,   /* gProfiler flag accepted without effect */
    PP_OPT_NOOP_ARG,    /* gProfiler option with a value accepted without effect */
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
    size_t off;       /* offset of the field in pp_config, PP_OFF_NONE for none */
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
    /* NOOP kinds that a runtime driver reads from pp_config.noop_options (the async-profiler
     * launcher): no "has no effect" notice. */
    bool driver_opt;
    const char *section; /* help section header printed before the first row of a section */
    const char *metavar;
    const char *help;
} pp_opt;

extern const pp_opt pp_opts[];
extern const size_t pp_nopts;

/* The dest name of o: o->dest, or the long name with '-' turned into '_' (written to buf). */
const char *pp_opt_dest(const pp_opt *o, char *buf, size_t len);
/* "-f/--profiling-frequency" style name for messages. */
void pp_opt_display(const pp_opt *o, char *buf, size_t len);
void pp_cli_print_help(FILE *out);
/* Sets every option of a zeroed cfg to its default. */
void pp_cli_set_defaults(pp_config *cfg);

/* True when the option kind consumes a value (--opt VALUE). */
bool pp_opt_takes_value(const pp_opt *o);

#endif
