/* Placeholder until the uploaders land: refuses -u and upload-file with a clear message. */
#include "orchestrator/upload.h"

#include <stdio.h>

#include "orchestrator/log.h"

int pp_uploader_start(const pp_config *cfg, pp_uploader **out, char *err, size_t errlen)
{
    *out = NULL;
    if (cfg->upload || cfg->pyroscope_server) {
        snprintf(err, errlen, "uploading is not available in this polyprof build yet; use -o DIR");
        return -1;
    }
    return 0;
}

void pp_uploader_submit(pp_uploader *u, const pp_session_result *r)
{
    (void)u;
    (void)r;
}

void pp_uploader_stop(pp_uploader *u)
{
    (void)u;
}

int pp_upload_file(const pp_config *cfg)
{
    (void)cfg;
    pp_critical("upload-file is not available in this polyprof build yet");
    return 1;
}
