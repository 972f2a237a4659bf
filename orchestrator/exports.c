#include "orchestrator/exports.h"

#include <stdlib.h>

#include "base/log.h"
#include "merge/pprof.h"
#include "orchestrator/output.h"

static int save(const pp_config *cfg, const char *col_path, const char *ext, const char *lname,
                const char *what, const void *data, size_t len)
{
    char path[4096], err[512];
    if (pp_output_write_beside(cfg->output_dir, col_path, ext, lname, data, len,
                               cfg->rotating_output, path, sizeof(path), err, sizeof(err)) < 0) {
        pp_error("%s", err);
        return -1;
    }
    pp_info("Saved %s to %s", what, path);
    return 0;
}

int pp_write_exports(const pp_config *cfg, const pp_profile *prof, const char *col_path,
                     time_t start, time_t end, const pp_render_opts *ro)
{
    int rc = 0;
    if (cfg->output_pprof) {
        pp_pprof_opts po = {
            .frequency = cfg->frequency,
            .time_nanos = (int64_t)start * 1000000000LL,
            .duration_nanos = (int64_t)(end > start ? end - start : 0) * 1000000000LL,
            .appids_enabled = ro->appids_enabled,
        };
        size_t len = 0;
        unsigned char *gz = pp_pprof_render(prof, &po, &len);
        if (!gz) {
            pp_error("out of memory while rendering the pprof profile");
            rc = -1;
        } else if (save(cfg, col_path, ".pb.gz", "last_profile.pb.gz", "pprof profile", gz, len) <
                   0) {
            rc = -1;
        }
        free(gz);
    }
    if (cfg->output_plain) {
        pp_render_opts po = *ro;
        po.plain = true;
        size_t len = 0;
        char *text = pp_col_render(prof, NULL, &po, &len);
        if (!text) {
            pp_error("out of memory while rendering the plain collapsed stacks");
            rc = -1;
        } else if (save(cfg, col_path, ".folded", "last_profile.folded", "plain collapsed stacks",
                        text, len) < 0) {
            rc = -1;
        }
        free(text);
    }
    return rc;
}
