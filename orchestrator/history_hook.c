/* The history store in a profiling run (history_hook.h). */
#include "orchestrator/history_hook.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "orchestrator/history_store.h"

struct pp_history_sink {
    pp_history *h;
    int frequency;
    bool full_warned; /* the WARNING of a full disk was given and no session was stored since */
};

pp_history_sink *pp_history_sink_open(const pp_config *cfg, char *err, size_t errlen)
{
    err[0] = '\0';
    if (!cfg->history_dir)
        return NULL;
    pp_history_limits lim = {.max_bytes = cfg->history_max_bytes,
                             .fine_age = cfg->history_fine_age,
                             .max_age = cfg->history_max_age};
    pp_history_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->frequency = cfg->frequency;
    if (!(s->h = pp_history_open(cfg->history_dir, true, &lim, err, errlen))) {
        free(s);
        return NULL;
    }
    return s;
}

void pp_history_sink_session(pp_history_sink *s, const pp_profile *prof, time_t start, time_t end,
                             const json_t *host_md)
{
    if (!s)
        return;
    char host[256] = "";
    const char *hn = json_string_value(json_object_get(host_md, "hostname"));
    if (hn)
        snprintf(host, sizeof(host), "%s", hn);
    else
        gethostname(host, sizeof(host) - 1);
    char err[1024];
    double t0 = pp_mono_now();
    int rc = pp_history_add(s->h, prof, start, end, host, s->frequency, err, sizeof(err));
    if (rc == 0) {
        s->full_warned = false;
        pp_debug("session kept in the history (%.1f ms)", (pp_mono_now() - t0) * 1000);
    } else if (rc == PP_HISTORY_FULL) {
        if (!s->full_warned)
            pp_warn("history: the disk is full (%s): sessions are not kept in the history until "
                    "there is room again; profiling goes on. Free space there or lower "
                    "--history-max-bytes",
                    err);
        s->full_warned = true;
    } else if (rc == PP_HISTORY_RETAIN_FAILED) {
        s->full_warned = false;
        pp_error("history: the session is kept in the history but retention failed (%s): old "
                 "sessions stay until the next session's retention succeeds; if this repeats, "
                 "check the disk and the database",
                 err);
    } else {
        pp_error("history: %s; this session is not kept in the history", err);
    }
}

void pp_history_sink_close(pp_history_sink *s)
{
    if (!s)
        return;
    pp_history_close(s->h);
    free(s);
}
