/* libFuzzer target for the text parsers that read other programs' output or files: .col files
 * (upload-file header merge, Pyroscope body, count splitting), /proc/<pid>/cgroup text, and
 * command lines (appid rules). The first byte selects the parser. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge/collapsed.h"
#include "orchestrator/containers.h"
#include "base/log.h"
#include "orchestrator/pyroscope.h"
#include "orchestrator/studio.h"
#include "runtimes/appid.h"
#include "runtimes/java/java.h"
#include "runtimes/node/node.h"
#include "runtimes/python/python.h"
#include "runtimes/ruby/ruby.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    if (size < 1)
        return 0;
    uint8_t sel = data[0] % 5;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char *s = malloc(len + 1); /* NUL-terminated copy for the C-string parsers */
    memcpy(s, text, len);
    s[len] = '\0';
    switch (sel) {
    case 0: {
        json_t *md = json_pack("{s:s}", "hostname", "h");
        time_t st = 0, en = 0;
        size_t outlen = 0;
        char err[256];
        char *out = pp_studio_merge_file(text, len, md, &st, &en, &outlen, err, sizeof(err));
        free(out);
        json_decref(md);
        break;
    }
    case 1: {
        pp_pyro_body b;
        if (pp_pyroscope_body(text, len, &b) == 0)
            pp_pyroscope_body_free(&b);
        break;
    }
    case 2: {
        size_t sl;
        unsigned long long c;
        for (char *line = s, *nl; line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            size_t ll = nl ? (size_t)(nl - line) : strlen(line);
            if (pp_col_split_count(line, ll, &sl, &c) == 0 && sl > ll)
                abort();
        }
        break;
    }
    case 3: {
        char id[65];
        if (pp_container_id_from_cgroup(s, id) == 0 && strlen(id) != 64)
            abort();
        break;
    }
    case 4: {
        int argc = 0;
        char **argv = pp_appid_split_cmdline(text, len, &argc);
        if (argv) {
            char *a[4] = {pp_appid_python(argv, argc, "/my/dir", "/nonexistent-root"),
                          pp_appid_java(argv, argc, "/my/dir", "/nonexistent-root"),
                          pp_appid_node(argv, argc, "/my/dir", "/nonexistent-root"),
                          pp_appid_ruby(argv, argc, "/my/dir", "/nonexistent-root")};
            for (int i = 0; i < 4; i++)
                free(a[i]);
            free(argv); /* one allocation holds the vector and its strings */
        }
        break;
    }
    }
    free(s);
    return 0;
}
