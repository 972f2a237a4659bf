/* The Ruby runtime's descriptor (runtimes/runtime.h): detection, appid, and the builtin backend
 * (the BPF sampler's in-sampler walker, docs/ruby.md). */
#include <stddef.h>

#include "runtimes/ruby/ruby.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {{"auto"},     {"builtin"},          {"rbspy"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};
static const char *const suffixes[] = {"_[rb]", NULL};
/* rbspy's C-function frame has no suffix */
static const char *const frame_prefixes[] = {"(unknown) [c function] - ", NULL};

extern const pp_backend pp_ruby_builtin_backend, pp_ruby_rbspy_placeholder;
static const pp_backend *const backends[] = {&pp_ruby_builtin_backend, &pp_ruby_rbspy_placeholder,
                                             NULL};
extern const pp_inwalker pp_ruby_inwalker;

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
    .mode_help = "Ruby profiler: builtin walks Ruby frames in the BPF sampler (--no-ruby: "
                 "disabled)",
    .suffixes = suffixes,
    .frame_prefixes = frame_prefixes,
    .appid = pp_appid_ruby,
    .backends = backends,
    .walker = &pp_ruby_inwalker,
};
