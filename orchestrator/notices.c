#include "orchestrator/notices.h"

#include <stdbool.h>
#include <string.h>

#include "orchestrator/discovery.h"
#include "base/log.h"
#include "runtimes/runtime.h"

#define DEFAULT_API_SERVER "https://api.granulate.io"

void pp_log_startup_notices(const pp_config *cfg)
{
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        const char *mode = cfg->runtime_mode[k];
        if (!mode || strcmp(mode, "disabled") == 0 || rt->backends)
            continue;
        bool by_hooks = false;
        for (const char *const *m = rt->hook_modes; m && *m; m++)
            by_hooks |= strcmp(*m, mode) == 0;
        if (by_hooks)
            continue;
        pp_warn("--%s-mode %s is not implemented: polyprof has no %s runtime profiler yet, so "
                "%s processes get the system sampler's native frames only (--no-%s silences "
                "this)",
                rt->label, mode, rt->label, rt->label, rt->label);
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
