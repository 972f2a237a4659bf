/* Java appids (docs/containers-and-appids.md). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/appid.h"
#include "runtimes/java/java.h"

char *pp_appid_java(char *const *argv, int argc, const char *cwd, const char *root)
{
    (void)cwd;
    (void)root;
    static const char *const with_value[] = {
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--add-modules",
        "--upgrade-module-path",
        "--limit-modules",
        "--add-reads",
        "--add-exports",
        "--add-opens",
        "--patch-module",
        "--source",
        "-d",
        "--enable-native-access",
        "--describe-module",
    };
    if (!argv)
        return NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-jar") == 0 || strcmp(a, "-m") == 0 || strcmp(a, "--module") == 0)
            return i + 1 < argc && argv[i + 1][0] ? pp_appid_fmt("java: %s", argv[i + 1]) : NULL;
        if (pp_appid_starts_with(a, "--module="))
            return a[9] ? pp_appid_fmt("java: %s", a + 9) : NULL;
        if (a[0] == '@')
            continue;
        if (a[0] == '-') {
            for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
                if (strcmp(a, with_value[k]) == 0) {
                    i++;
                    break;
                }
            continue;
        }
        if (a[0])
            return pp_appid_fmt("java: %s", a);
    }
    return NULL;
}
