#include "orchestrator/runtime_modes.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/textbuf.h"
#include "runtimes/runtime.h"

enum { PROFILED, UNPROFILED, DISABLED };

static int state(const pp_config *cfg, const bool profiled[PP_KIND_COUNT], int k)
{
    const char *mode = cfg->runtime_mode[k];
    if (!mode || strcmp(mode, "disabled") == 0)
        return DISABLED;
    return profiled[k] ? PROFILED : UNPROFILED;
}

void pp_runtime_modes_format(const pp_config *cfg, const bool profiled[PP_KIND_COUNT], char *out,
                             size_t len)
{
    static const char *const heads[] = {
        "runtime profilers:", "without a profiler (system sampler frames only):", "disabled:"};
    size_t o = 0;
    out[0] = '\0';
    for (int st = PROFILED; st <= DISABLED; st++) {
        bool any = false;
        for (int k = 1; k < PP_KIND_COUNT; k++) {
            const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
            if (!rt->modes || state(cfg, profiled, k) != st)
                continue;
            if (!any)
                pp_textbuf_add(out, len, &o, "%s%s", o ? "; " : "", heads[st]);
            pp_textbuf_add(out, len, &o, "%s %s", any ? "," : "", rt->label);
            if (st == PROFILED) {
                char why[512];
                const pp_backend *b =
                    pp_runtime_backend(rt, cfg->runtime_mode[k], why, sizeof(why));
                const char *name = b ? b->name : "none available";
                if (strcmp(name, cfg->runtime_mode[k]) != 0)
                    pp_textbuf_add(out, len, &o, " (%s: %s)", cfg->runtime_mode[k], name);
                else
                    pp_textbuf_add(out, len, &o, " (%s)", name);
            } else if (st == UNPROFILED) {
                pp_textbuf_add(out, len, &o, " (%s)", cfg->runtime_mode[k]);
            }
            any = true;
        }
        if (st == PROFILED && !any)
            pp_textbuf_add(out, len, &o, "%s none", heads[st]);
    }
}

void pp_log_runtime_modes(const pp_config *cfg, const bool profiled[PP_KIND_COUNT])
{
    char line[1024];
    pp_runtime_modes_format(cfg, profiled, line, sizeof(line));
    pp_info("%s", line);
}
