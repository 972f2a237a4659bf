/* Private to the CLI module: the option table shared by the parser (cli.c) and the table,
 * help and run_arguments code (cli_table.c). One row per option drives getopt_long, the
 * environment (POLYPROF_/GPROFILER_), the config file, --help and run_arguments. */
#ifndef PP_CLI_OPTS_H
#define PP_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/options.h"
#include "orchestrator/cli.h"

/* The whole option table: the CLI's rows and every runtime's (mode, regex and own rows), built
 * by pp_cli_table_init (idempotent, thread-safe), which every entry point calls first. */
extern const pp_opt *pp_opts;
extern size_t pp_nopts;
void pp_cli_table_init(void);

/* The field of cfg that row o is stored in; NULL for a row with no field (PP_OFF_NONE: stored by
 * name, or --help/--version). Code that walks every row takes fields through it: cfg +
 * PP_OFF_NONE would be a pointer before cfg (undefined behaviour, even when never used). */
static inline void *pp_opt_field(const pp_config *cfg, const pp_opt *o)
{
    return o->off == PP_OFF_NONE ? NULL : (char *)cfg + o->off;
}

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
