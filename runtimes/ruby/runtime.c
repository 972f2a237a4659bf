/* The Ruby runtime's descriptor (runtimes/runtime.h): detection, metadata, appid and the
 * profilers behind --ruby-mode (docs/ruby.md). */
#include <stddef.h>
#include <stdio.h>

#include "runtimes/ruby/rbspy.h"
#include "runtimes/ruby/ruby.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {{"auto"},     {"builtin"},          {"rbspy"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};
static const char *const suffixes[] = {"_[rb]", NULL};

/* Placeholder until the built-in walker (issue 13) lands: --ruby-mode builtin says it is not
 * built and its processes get an error stack; auto skips it. */
static bool builtin_missing(char *why, size_t len)
{
    snprintf(why, len, "the built-in Ruby profiler is not in this build; use --ruby-mode rbspy");
    return false;
}
static void *builtin_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n,
                           double deadline)
{
    (void)ctx, (void)procs, (void)n, (void)deadline;
    return NULL;
}
static int builtin_collect(void *s, pp_profile *out)
{
    (void)s, (void)out;
    return 0;
}
static void builtin_free(void *s)
{
    (void)s;
}
static const char *const builtin_modes[] = {"builtin", NULL};
static const pp_backend builtin_pending = {.name = "builtin",
                                           .modes = builtin_modes,
                                           .available = builtin_missing,
                                           .start = builtin_start,
                                           .collect = builtin_collect,
                                           .free = builtin_free};

/* in "auto" preference order */
static const pp_backend *const backends[] = {&builtin_pending, &pp_ruby_rbspy_backend, NULL};

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
