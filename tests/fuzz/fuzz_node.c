/* libFuzzer target for what the Node attach and the symbolizer read from other processes:
 * /proc/<pid>/net/tcp{,6} texts, Node command lines and NODE_OPTIONS, DevTools replies and
 * /json/list bodies, and jitdump records. The first byte selects the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/appid.h"
#include "runtimes/node/node.h"
#include "runtimes/symbols/symbols_internal.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    if (size < 1)
        return 0;
    uint8_t sel = data[0] % 4;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char *s = malloc(len + 1);
    memcpy(s, text, len);
    s[len] = '\0';
    switch (sel) {
    case 0: {
        pp_node_listener l[16];
        for (int v6 = 0; v6 < 2; v6++) {
            size_t n = pp_node_parse_listeners(s, v6, l, 16);
            for (size_t i = 0; i < n; i++)
                if (l[i].port <= 0 || l[i].port > 65535 || !memchr(l[i].addr, 0, sizeof(l[i].addr)))
                    abort();
        }
        pp_node_sig_caught(s, 10);
        pp_node_nspid(s);
        break;
    }
    case 1: {
        int argc = 0;
        char **argv = pp_appid_split_cmdline(text, len, &argc);
        pp_node_flags f;
        pp_node_parse_flags(argv, argv ? argc : 0, s, &f);
        if (f.port < 0 || f.port > 65535)
            abort();
        free(argv);
        break;
    }
    case 2: {
        char path[256];
        bool match;
        if (pp_cdp_ws_path(text, len, path, sizeof(path)) == 0 && path[0] != '/')
            abort();
        free(pp_cdp_reply_value(text, len, 1, &match));
        break;
    }
    case 3: {
        pp_perfmap m = {0};
        uint64_t used;
        int closed;
        pp_jitdump_records(&m, text, len, len, &used, &closed);
        if (used > len)
            abort();
        pp_jitdump_header(text, len);
        pp_perfmap_free(&m);
        break;
    }
    }
    free(s);
    return 0;
}
