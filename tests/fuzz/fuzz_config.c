/* libFuzzer target for the files polyprof is told to read and parses itself: the INI config file
 * (--config, with the command line and run_arguments built from it) and the --external-metadata
 * JSON file (loaded, then merged into a profile's processes). The first byte selects the parser;
 * the rest is the file, written to a private temp file (both readers take a path and check it is
 * a regular file). */
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "merge/profile.h"
#include "orchestrator/cli.h"
#include "orchestrator/extmeta.h"

static char path[64];

/* The input file, rewritten for each input. */
static int put_file(const uint8_t *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (len) {
        ssize_t w = write(fd, data, len);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        data += w;
        len -= (size_t)w;
    }
    close(fd);
    return 0;
}

static void remove_file(void)
{
    unlink(path);
}

static void config(void)
{
    char *argv[] = {"polyprof", "--config", path, "-o", "/nonexistent/pp-fuzz", NULL};
    char *envp[] = {NULL};
    pp_config cfg = {0};
    char err[512];
    FILE *out = fopen("/dev/null", "w");
    int rc = pp_cli_parse(5, argv, envp, out, &cfg, err, sizeof(err));
    if (rc == PP_CLI_OK) {
        json_t *ra = pp_config_run_arguments(&cfg);
        char *s = json_dumps(ra, 0);
        free(s);
        json_decref(ra);
    }
    pp_config_free(&cfg);
    if (out)
        fclose(out);
}

static void extmeta(void)
{
    char err[512];
    json_t *ext = pp_extmeta_load(path, time(NULL), err, sizeof(err));
    if (!ext)
        return;
    pp_profile *p = pp_profile_new();
    json_t *md = json_pack("{s:s}", "exe", "/usr/bin/x");
    for (int pid = 1; pid <= 12; pid++) {
        pp_pid_profile *pp = pp_profile_get(p, pid, true);
        if (pp && pid % 2)
            pp->app_metadata = json_incref(md);
    }
    pp_extmeta_apply(ext, p);
    json_decref(md);
    json_decref(ext);
    pp_profile_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        pp_log_set_stderr_level(PP_LOG_CRITICAL);
        pp_cli_default_config_path = "/nonexistent/polyprof-fuzz/config.ini";
        pp_cli_gprofiler_config_path = "/nonexistent/polyprof-fuzz/gprofiler.ini";
        snprintf(path, sizeof(path), "/tmp/pp-fuzz-config-XXXXXX");
        int fd = mkstemp(path);
        if (fd < 0)
            abort();
        close(fd);
        atexit(remove_file);
    }
    if (size < 1 || put_file(data + 1, size - 1) < 0)
        return 0;
    if (data[0] % 2 == 0)
        config();
    else
        extmeta();
    return 0;
}
