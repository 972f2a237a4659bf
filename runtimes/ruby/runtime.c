/* The Ruby runtime's descriptor (runtimes/runtime.h): detection and appid; no profiler yet
 * (any mode but disabled warns at start and Ruby processes get native frames). */
#include <stddef.h>

#include "runtimes/ruby/ruby.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {{"auto"},     {"builtin"},          {"rbspy"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};
static const char *const suffixes[] = {"_[rb]", NULL};

const pp_runtime pp_rt_ruby = {
    .name = "ruby",
    .label = "ruby",
    .match_on = PP_MATCH_MAPS,
    .default_regex = "(^.+/ruby[^/]*$)|(^.+/libruby[^/]*$)",
    .regex_option = "maps-regex",
    .regex_help = "same, to detect Ruby",
    .interpreter = true,
    .modes = modes,
    .default_mode = "auto",
    .mode_metavar = "{auto,builtin,rbspy,disabled}",
    .mode_help = "Ruby profiler: none yet, any mode but disabled warns at start and Ruby "
                 "processes get native frames (--no-ruby: disabled)",
    .suffixes = suffixes,
    .appid = pp_appid_ruby,
};
