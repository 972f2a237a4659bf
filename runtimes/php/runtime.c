/* The PHP runtime's descriptor (runtimes/runtime.h): detection, modes and the proc filter,
 * frames, metadata (php_version) and the two backends: "builtin" (the system sampler's PHP
 * walker, walker.c) and "phpspy" (phpspy.c). See docs/php.md. */
#include <stddef.h>

#include "runtimes/php/php_int.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {{"auto"},     {"builtin"},          {"phpspy"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};

static const pp_opt options[] = {
    {.name = "php-proc-filter",
     .kind = PP_OPT_NOOP_ARG,
     .off = PP_OFF_NONE,
     .driver_opt = true,
     .metavar = "NAME",
     .help = "PHP processes to profile, by name (an extended regex, as pgrep's): phpspy's -P "
             "(default php-fpm, as gProfiler); the builtin mode profiles every PHP process "
             "unless this is given"},
};

static const char *const suffixes[] = {"_[php]", NULL};

/* gProfiler has no PHP application metadata (its phpspy profiler gives none); polyprof gives
 * php_version, and no appid (gProfiler has no PHP appid rule either). */
static json_t *php_metadata(int pid)
{
    char v[32];
    json_t *o = json_object();
    if (o && pp_php_version_of(pid, v, sizeof(v)) == 0)
        json_object_set_new(o, "php_version", json_string(v));
    return o;
}

static const pp_backend *const backends[] = {&pp_php_builtin_backend, &pp_php_phpspy_backend, NULL};

const pp_runtime pp_rt_php = {
    .name = "php",
    .label = "php",
    .match_on = PP_MATCH_MAPS,
    .default_regex = "^.+/(php[0-9.]*|php-fpm[^/]*|php-cgi[^/]*|libphp[^/]*)( \\(deleted\\))?$",
    .regex_option = "maps-regex",
    .regex_help = "same, to detect PHP",
    .interpreter = true,
    .modes = modes,
    .default_mode = "auto",
    .mode_metavar = "{auto,builtin,phpspy,disabled}",
    .mode_help = "PHP profiler: builtin walks PHP frames in the BPF sampler, phpspy runs phpspy; "
                 "auto: builtin, else phpspy when installed (--no-php: disabled)",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .suffixes = suffixes,
    .metadata = php_metadata,
    .backends = backends,
    .walker = &pp_php_inwalker,
};
