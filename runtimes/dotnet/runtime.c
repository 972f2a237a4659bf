/* The .NET runtime's descriptor (runtimes/runtime.h): detection (the maps regex, and the bundle
 * marker of single-file apps: bundle.c), metadata (metadata.c) and
 * --dotnet-mode builtin (builtin.c: JIT-compiled method names for the system sampler through
 * polyprof's own diagnostics client). dotnet-trace is accepted and warns at start (not run here).
 */
#include <stddef.h>

#include "runtimes/dotnet/dotnet.h"
#include "runtimes/runtime.h"

extern const pp_detector pp_net_bundle_detector;

static const pp_choice modes[] = {{"auto", "builtin"}, {"builtin"},          {"dotnet-trace"},
                                  {"disabled"},        {"none", "disabled"}, {NULL}};
static const char *const hook_modes[] = {"builtin", NULL};
static const char *const suffixes[] = {"_[net]", NULL};

const pp_runtime pp_rt_dotnet = {
    .name = "dotnet",
    .label = "dotnet",
    .match_on = PP_MATCH_MAPS,
    .default_regex = "(^.+/dotnet[^/]*$)|(^.+/libcoreclr\\.so( \\(deleted\\))?$)",
    .regex_option = "maps-regex",
    .regex_help = "same, to detect .NET (single-file apps are detected by their bundle marker "
                  "as well)",
    .detector = &pp_net_bundle_detector,
    .interpreter = true,
    .modes = modes,
    .default_mode = "disabled",
    .mode_metavar = "{auto,builtin,dotnet-trace,disabled}",
    .mode_help = ".NET JIT frames for the system sampler: builtin (or auto) names the methods of "
                 "running .NET Core 3+ processes through their diagnostics socket (an EventPipe "
                 "session: rundown, then JIT events), Namespace.Class.Method(args)_[net]; "
                 "dotnet-trace is not implemented (warns at start) (--no-dotnet: disabled)",
    .hook_modes = hook_modes,
    .suffixes = suffixes,
    .appid = pp_appid_dotnet,
    .metadata = pp_dotnet_metadata,
    .at_start = pp_dotnet_at_start,
    .session_begin = pp_dotnet_session_begin,
    .at_exit = pp_dotnet_at_exit,
};
