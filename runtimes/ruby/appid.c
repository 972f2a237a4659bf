/* Ruby appids (docs/containers-and-appids.md). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/appid.h"
#include "runtimes/ruby/ruby.h"

char *pp_appid_ruby(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!argv)
        return NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (pp_appid_starts_with(a, "-r")) {
            if (strlen(a) <= 2)
                i++;
            continue;
        }
        if (pp_appid_ends_with(a, ".rb"))
            return pp_appid_with_file("ruby", a, root, cwd);
    }
    return NULL;
}
