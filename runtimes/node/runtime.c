/* Node.js's descriptor: perf-only for now; metadata node_version (from the executable, no process
 * started), link and libc (gProfiler §2.4), and the appid (§7.4). */
#include <stdio.h>
#include <string.h>

#include "runtimes/node/node.h"
#include "base/elfinfo.h"
#include "runtimes/runtime.h"

/* Node embeds its version in the "node.js/vX.Y.Z" user-agent literal. */
static int node_version_literal(const char *s)
{
    unsigned a, b, c;
    char tail;
    return sscanf(s, "node.js/v%u.%u.%u%c", &a, &b, &c, &tail) == 3 && a >= 4 && a < 100;
}

static json_t *node_metadata(int pid)
{
    char exe[64], ver[32];
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    pp_elfinfo ei;
    json_t *o = json_object();
    bool ok = pp_elfinfo_read(exe, &ei) == 0;
    if (ok && pp_elf_find_string(exe, "node.js/v", "0123456789.", 24, node_version_literal, ver,
                                 sizeof(ver)) == 0)
        json_object_set_new(o, "node_version", json_string(ver + strlen("node.js/")));
    else
        json_object_set_new(o, "node_version", json_null());
    json_object_set_new(o, "link", json_string(ok && !ei.has_interp ? "static" : "dynamic"));
    json_object_set_new(o, "libc",
                        !ok || !ei.has_interp
                            ? json_null()
                            : json_string(strstr(ei.interp, "musl") ? "musl" : "glibc"));
    return o;
}

static const pp_choice modes[] = {{"auto"},     {"inspector"},        {"attach-maps"}, {"perf"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};
static const char *const suffixes[] = {"_[js]", NULL};
/* V8's names of JIT frames in perf maps (--perf-prof / --perf-basic-prof). */
static const char *const prefixes[] = {"LazyCompile", "InterpretedFunction", NULL};

const pp_runtime pp_rt_node = {
    .name = "node",
    .label = "nodejs",
    .match_on = PP_MATCH_EXE,
    .default_regex = "/node(js)?[-_]?[0-9.]*( \\(deleted\\))?$",
    .regex_option = "exe-regex",
    .regex_help = "PCRE2 matched against the executable's path to detect Node.js",
    .interpreter = true,
    .modes = modes,
    .default_mode = "disabled",
    .mode_metavar = "{auto,inspector,attach-maps,perf,disabled}",
    .mode_help = "NodeJS profiler: none yet, any mode but disabled warns at start; Node processes "
                 "get the system sampler's frames (JIT frames named from /tmp/perf-<pid>.map when "
                 "node runs with --perf-prof) (--no-nodejs: disabled)",
    .suffixes = suffixes,
    .frame_prefixes = prefixes,
    .metadata = node_metadata,
    .appid = pp_appid_node,
};
