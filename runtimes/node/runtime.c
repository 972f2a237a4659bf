/* Node.js's descriptor: its frames come from the system sampler, JIT frames named from the
 * process's perf map; --nodejs-mode attach-maps makes running processes write one (attach.c,
 * through the session hooks); metadata node_version (from the executable, no process started),
 * link and libc (gProfiler §2.4), and the appid (§7.4). */
#include <stdio.h>
#include <string.h>

#include "runtimes/node/node.h"
#include "base/elfinfo.h"
#include "runtimes/runtime.h"

static json_t *node_metadata(int pid)
{
    char exe[64], ver[32];
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    pp_elfinfo ei;
    json_t *o = json_object();
    bool ok = pp_elfinfo_read(exe, &ei) == 0;
    if (ok && pp_node_exe_version(pid, ver, sizeof(ver)) == 0)
        json_object_set_new(o, "node_version", json_string(ver));
    else
        json_object_set_new(o, "node_version", json_null());
    json_object_set_new(o, "link", json_string(ok && !ei.has_interp ? "static" : "dynamic"));
    json_object_set_new(o, "libc",
                        !ok || !ei.has_interp
                            ? json_null()
                            : json_string(strstr(ei.interp, "musl") ? "musl" : "glibc"));
    return o;
}

static const pp_choice modes[] = {{"auto"},     {"attach-maps"},      {"perf"},
                                  {"disabled"}, {"none", "disabled"}, {NULL}};
/* perf needs nothing from polyprof but the symbolizer's perf maps and jitdumps */
static const char *const hook_modes[] = {"auto", "attach-maps", "perf", NULL};
static const char *const suffixes[] = {"_[js]", NULL};
/* V8's names of JIT frames: perf maps of --perf-basic-prof ("JS:*f file:line:col") and older
 * Nodes ("LazyCompile:..."), the attach's addon ("Function:f file:line"). */
static const char *const prefixes[] = {
    "JS:", "LazyCompile:", "InterpretedFunction:", "Function:", "Eval:", NULL};

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
    .mode_metavar = "{auto,attach-maps,perf,disabled}",
    .mode_help = "NodeJS JIT frames for the system sampler: attach-maps (or auto) makes running "
                 "Node processes write /tmp/perf-<pid>.map through their inspector (SIGUSR1) and "
                 "removes it at exit; perf reads the maps and jitdumps of processes started with "
                 "--perf-basic-prof or --perf-prof (read in every mode) (--no-nodejs: disabled)",
    .hook_modes = hook_modes,
    .suffixes = suffixes,
    .frame_prefixes = prefixes,
    .metadata = node_metadata,
    .appid = pp_appid_node,
    .session_begin = pp_node_session_begin,
    .at_exit = pp_node_at_exit,
    .hook_stacks = pp_node_hook_stacks,
};
