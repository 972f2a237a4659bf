/* Go's descriptor: perf-only (the system sampler walks Go's frame pointers); detected by an ELF
 * note (detect.c), a --go-maps-regex adds to it; metadata from the executable: golang_version,
 * stripped, link, libc (gProfiler §2.4). */
#include <stdio.h>
#include <string.h>

#include "base/elfinfo.h"
#include "runtimes/runtime.h"

static json_t *go_metadata(int pid)
{
    char exe[64];
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    pp_elfinfo ei;
    if (pp_elfinfo_read(exe, &ei) < 0)
        return json_pack("{s:s}", "golang_version", "error: ELFError");
    json_t *o = json_object();
    json_object_set_new(o, "golang_version",
                        ei.go_version[0] ? json_string(ei.go_version) : json_null());
    json_object_set_new(o, "stripped", json_boolean(!ei.has_symtab));
    json_object_set_new(o, "link", json_string(ei.has_interp ? "dynamic" : "static"));
    if (!ei.has_interp)
        json_object_set_new(o, "libc", json_null());
    else
        json_object_set_new(o, "libc", json_string(strstr(ei.interp, "musl") ? "musl" : "glibc"));
    return o;
}

extern const pp_detector pp_go_detector;

const pp_runtime pp_rt_go = {
    .name = "go",
    .label = "go",
    .match_on = PP_MATCH_MAPS,
    .regex_option = "maps-regex",
    .regex_help = "same as --java-maps-regex, detects Go in addition to the ELF note check",
    .detector = &pp_go_detector,
    .metadata = go_metadata,
};
