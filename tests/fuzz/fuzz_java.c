/* libFuzzer target for the text the JVM (or whatever listens on its attach socket) sends back:
 * attach replies, /proc/<pid>/status, `VM.flags -all` and `VM.system_properties` output, and
 * /dev/kmsg records, and JAR manifests. The first byte selects the parser. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/java/attach.h"
#include "runtimes/java/jvminfo.h"
#include "runtimes/java/manifest.h"
#include "runtimes/java/safemode.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pp_fuzz_quiet();
    if (size < 1)
        return 0;
    uint8_t sel = data[0] % 6;
    size_t len = size - 1;
    char *s = malloc(len + 1); /* NUL-terminated, as the attach client hands replies over */
    memcpy(s, data + 1, len);
    s[len] = '\0';
    switch (sel) {
    case 0: {
        int code;
        const char *body;
        if (pp_jattach_parse_reply(s, len, &code, &body) == 0 && (body < s || body > s + len))
            abort();
        break;
    }
    case 1: {
        pp_jattach_status st;
        pp_jattach_parse_status(s, &st);
        break;
    }
    case 2:
        json_decref(pp_jvm_flags_parse(s, (pp_jvm_flags_mode)(len % 3)));
        break;
    case 3:
        free(pp_java_version_from_props(s));
        pp_java_major(s);
        break;
    case 4: {
        pp_jar_manifest m;
        pp_jar_manifest_parse(s, len, &m);
        if (!memchr(m.start_class, '\0', sizeof(m.start_class)))
            abort();
        break;
    }
    default:
        pp_java_kmsg_oom(s, (int)(len % 100000));
        break;
    }
    free(s);
    return 0;
}
