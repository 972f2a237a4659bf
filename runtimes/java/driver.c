/* Java: application metadata (java_version, libjvm_elfid, jvm_flags) and appid. The version
 * comes from the JDK's `release` file next to the mapped libjvm (no JVM is started); jvm_flags
 * needs the attach client (another issue's work) and is empty until then. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/appid.h"
#include "runtimes/elfinfo.h"
#include "runtimes/procfiles.h"
#include "runtimes/runtime.h"

/* Value of KEY="..." in a JDK release file. */
static int release_value(const char *text, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=' && p[kl + 1] == '"') {
            const char *v = p + kl + 2, *e = strchr(v, '"');
            if (!e || (size_t)(e - v) >= len)
                return -1;
            memcpy(out, v, (size_t)(e - v));
            out[e - v] = '\0';
            return 0;
        }
    }
    return -1;
}

static json_t *java_metadata(int pid)
{
    char lib[PATH_MAX], path[PATH_MAX + 64], release[PATH_MAX + 64], text[8192];
    json_t *o = json_object();
    json_t *version = NULL, *elfid = json_null();
    if (pp_find_mapping(pid, "/libjvm.so", lib, sizeof(lib)) == 0) {
        snprintf(path, sizeof(path), "/proc/%d/root%s", pid, lib);
        pp_elfinfo li;
        if (pp_elfinfo_read(path, &li) == 0 && li.buildid[0])
            elfid = json_string(li.buildid);
        /* <java home>/lib/server/libjvm.so -> <java home>/release */
        snprintf(release, sizeof(release), "%s", path);
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(release, '/');
            if (slash)
                *slash = '\0';
        }
        strncat(release, "/release", sizeof(release) - strlen(release) - 1);
        char v[64], date[32];
        if (pp_read_small_file(release, text, sizeof(text)) > 0 &&
            release_value(text, "JAVA_VERSION", v, sizeof(v)) == 0) {
            char line[160];
            if (release_value(text, "JAVA_VERSION_DATE", date, sizeof(date)) == 0)
                snprintf(line, sizeof(line), "openjdk version \"%s\" %s", v, date);
            else
                snprintf(line, sizeof(line), "openjdk version \"%s\"", v);
            version = json_string(line);
        }
    }
    json_object_set_new(o, "java_version", version ? version : json_string("/java not found"));
    json_object_set_new(o, "libjvm_elfid", elfid);
    json_object_set_new(o, "jvm_flags", json_array());
    return o;
}

static char *java_appid(int pid)
{
    return pp_appid_for_pid(pid, "java");
}

const pp_runtime_driver pp_java_driver = {
    .name = "java",
    .kind = PP_KIND_JAVA,
    .cli_runtime = PP_RT_JAVA,
    .metadata = java_metadata,
    .appid = java_appid,
};
