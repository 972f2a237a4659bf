/* The Ruby runtime's descriptor (runtimes/runtime.h): detection, metadata, appid and the
 * profilers behind --ruby-mode (docs/ruby.md). */
#include <stddef.h>

#include "runtimes/ruby/rbspy.h"
#include "runtimes/ruby/ruby.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {{"auto"},     {"builtin"},          {"rbspy"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};
static const char *const suffixes[] = {"_[rb]", NULL};

/* in "auto" preference order */
static const pp_backend *const backends[] = {&pp_ruby_rbspy_backend, NULL};

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
    .mode_help = "Ruby profiler: rbspy runs the external rbspy per process; auto takes the "
                 "first available (--no-ruby: disabled)",
    .suffixes = suffixes,
    .metadata = pp_ruby_metadata,
    .appid = pp_appid_ruby,
    .backends = backends,
};
