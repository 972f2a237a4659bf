/* The Ruby runtime's descriptor (runtimes/runtime.h): detection, metadata, appid and the
 * profilers behind --ruby-mode: builtin (the BPF sampler's in-sampler walker) and rbspy
 * (docs/ruby.md). */
#include <stddef.h>

#include "runtimes/ruby/rbspy.h"
#include "runtimes/ruby/ruby.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {{"auto"},     {"builtin"},          {"rbspy"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};
static const char *const suffixes[] = {"_[rb]", NULL};
/* rbspy's C-function frame has no suffix */
static const char *const frame_prefixes[] = {"(unknown) [c function] - ", NULL};

extern const pp_backend pp_ruby_builtin_backend;
/* in "auto" preference order (builtin itself hands to rbspy what it cannot walk) */
static const pp_backend *const backends[] = {&pp_ruby_builtin_backend, &pp_ruby_rbspy_backend,
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
    .mode_help = "Ruby profiler: builtin walks Ruby frames in the BPF sampler, rbspy runs the "
                 "external rbspy per process; auto: builtin, rbspy for what it cannot walk "
                 "(--no-ruby: disabled)",
    .suffixes = suffixes,
    .frame_prefixes = frame_prefixes,
    .metadata = pp_ruby_metadata,
    .appid = pp_appid_ruby,
    .backends = backends,
    .walker = &pp_ruby_inwalker,
};
