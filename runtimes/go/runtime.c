/* Go's descriptor: perf-only (the system sampler walks Go's frame pointers); detected by an ELF
 * note (detect.c), a --go-maps-regex adds to it; metadata from the executable: golang_version,
 * stripped, link, libc (gProfiler §2.4). */
#include <stdio.h>
#include <string.h>

#include "base/elfinfo.h"
#include "runtimes/runtime.h"

/* The Go version from .go.buildinfo: the "\xff Go buildinf:" magic, pointer size, flags; with
 * flags & 2 (Go 1.18+) the version follows at offset 32 as a varint-length-prefixed string
 * (before 1.18 the layout stores pointers and the version stays unknown). */
static void go_version(const char *exe, char *out, size_t outlen)
{
    static const char magic[] = "\xff Go buildinf:";
    unsigned char b[128];
    out[0] = '\0';
    ssize_t n = pp_elf_section_read(exe, ".go.buildinfo", b, sizeof(b));
    if (n < 33 || memcmp(b, magic, 14) != 0 || !(b[15] & 2))
        return;
    size_t off = 32, len = 0;
    int shift = 0;
    while (off < (size_t)n && shift < 28) {
        unsigned char c = b[off++];
        len |= (size_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            break;
        shift += 7;
    }
    if (len > 0 && len < outlen && off + len <= (size_t)n) {
        memcpy(out, b + off, len);
        out[len] = '\0';
    }
}

static json_t *go_metadata(int pid)
{
    char exe[64];
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    pp_elfinfo ei;
    if (pp_elfinfo_read(exe, &ei) < 0)
        return json_pack("{s:s}", "golang_version", "error: ELFError");
    json_t *o = json_object();
    char ver[32];
    go_version(exe, ver, sizeof(ver));
    json_object_set_new(o, "golang_version", ver[0] ? json_string(ver) : json_null());
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
