/* Ruby: appid for now (§7.4); metadata and the runtime profiler are another issue's work. */
#include "runtimes/appid.h"
#include "runtimes/runtime.h"

static char *ruby_appid(int pid)
{
    return pp_appid_for_pid(pid, "ruby");
}

const pp_runtime_driver pp_ruby_driver = {
    .name = "ruby",
    .kind = PP_KIND_RUBY,
    .cli_runtime = PP_RT_RUBY,
    .appid = ruby_appid,
};
