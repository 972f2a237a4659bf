/* The PHP runtime's descriptor (runtimes/runtime.h): detection only; no profiler yet (any mode
 * but disabled warns at start). */
#include <stddef.h>

#include "runtimes/runtime.h"

static const pp_choice modes[] = {{"auto"},     {"builtin"},          {"phpspy"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};

static const pp_opt options[] = {
    {.name = "php-proc-filter",
     .kind = PP_OPT_NOOP_ARG,
     .off = PP_OFF_NONE,
     .def_str = "php-fpm",
     .driver_opt = true,
     .metavar = "NAME",
     .help = "process name filter for PHP (no effect until there is a PHP profiler)"},
};

static const char *const suffixes[] = {"_[php]", NULL};

const pp_runtime pp_rt_php = {
    .name = "php",
    .label = "php",
    .match_on = PP_MATCH_MAPS,
    .default_regex = "^.+/(php[0-9.]*|php-fpm[^/]*|php-cgi[^/]*|libphp[^/]*)( \\(deleted\\))?$",
    .regex_option = "maps-regex",
    .regex_help = "same, to detect PHP",
    .interpreter = true,
    .modes = modes,
    .default_mode = "disabled",
    .mode_metavar = "{auto,builtin,phpspy,disabled}",
    .mode_help = "PHP profiler: none yet, any mode but disabled warns at start (--no-php: "
                 "disabled)",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .suffixes = suffixes,
};
