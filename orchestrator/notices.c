#include "orchestrator/notices.h"

#include <stdbool.h>
#include <string.h>

#include "orchestrator/discovery.h"
#include "base/log.h"
#include "runtimes/runtime.h"

#define DEFAULT_API_SERVER "https://api.granulate.io"

/* True when some driver profiles runtime rt (has a start()). */
static bool has_runtime_profiler(pp_runtime_id rt)
{
    for (int k = 0; k < PP_KIND_COUNT; k++) {
        const pp_runtime_driver *d = pp_runtime_for_kind((pp_proc_kind)k);
        if (d && d->start && d->cli_runtime == (int)rt)
            return true;
    }
    return false;
}

void pp_log_startup_notices(const pp_config *cfg)
{
    for (int rt = 0; rt < PP_RT_COUNT; rt++) {
        const char *mode = cfg->runtime_mode[rt];
        if (!mode || strcmp(mode, "disabled") == 0 || has_runtime_profiler((pp_runtime_id)rt))
            continue;
        pp_warn("--%s-mode %s is not implemented: polyprof has no %s runtime profiler yet, so "
                "%s processes get the system sampler's native frames only (--no-%s silences "
                "this)",
                pp_runtime_name((pp_runtime_id)rt), mode, pp_runtime_name((pp_runtime_id)rt),
                pp_runtime_name((pp_runtime_id)rt), pp_runtime_name((pp_runtime_id)rt));
    }
    bool would_send = cfg->upload && !cfg->profile_api_version && !cfg->dont_send_logs;
    bool api_given = cfg->api_server && strcmp(cfg->api_server, DEFAULT_API_SERVER) != 0;
    if (would_send || api_given || cfg->dont_send_logs)
        pp_info("polyprof does not send its logs to a server (gProfiler sends them to "
                "--api-server when uploading): --api-server/--glogger-server and "
                "--dont-send-logs have no effect; logs go to stderr and --log-file");
    if (cfg->napp_id_args_filter)
        pp_info("option --app-id-args-filter has no effect in polyprof yet: Java appids are "
                "not extended with JVM arguments");
}
