/* Node.js appids (docs/containers-and-appids.md). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/appid.h"
#include "runtimes/node/node.h"

char *pp_appid_node(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!argv)
        return NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (pp_appid_starts_with(a, "--require="))
            continue;
        if (strcmp(a, "--require") == 0 || strcmp(a, "-r") == 0) {
            i++;
            continue;
        }
        if (pp_appid_ends_with(a, ".js"))
            return pp_appid_with_file("nodejs", a, root, cwd);
    }
    return NULL;
}
