/* The .NET runtime's descriptor (runtimes/runtime.h): detection only; no profiler yet (any mode
 * but disabled warns at start). */
#include <stddef.h>

#include "runtimes/runtime.h"

static const pp_choice modes[] = {
    {"auto"}, {"dotnet-trace"}, {"disabled"}, {"none", "disabled"}, {NULL}};
static const char *const suffixes[] = {"_[net]", NULL};

const pp_runtime pp_rt_dotnet = {
    .name = "dotnet",
    .label = "dotnet",
    .match_on = PP_MATCH_MAPS,
    .default_regex = "(^.+/dotnet[^/]*$)|(^.+/libcoreclr\\.so( \\(deleted\\))?$)",
    .regex_option = "maps-regex",
    .regex_help = "same, to detect .NET",
    .interpreter = true,
    .modes = modes,
    .default_mode = "disabled",
    .mode_metavar = "{auto,dotnet-trace,disabled}",
    .mode_help = ".NET profiler: none yet, any mode but disabled warns at start (--no-dotnet: "
                 "disabled)",
    .suffixes = suffixes,
};
