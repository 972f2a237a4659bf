/* .NET appids: the main assembly (docs/containers-and-appids.md). gProfiler has none for .NET;
 * polyprof names the assembly the host runs: `dotnet [exec] [host options] App.dll [args]`
 * gives the first argument ending in .dll or .exe that is not an option's value; an apphost or
 * single-file app (the executable is the app) gives the executable. */
#include <stdbool.h>
#include <string.h>

#include "runtimes/appid.h"
#include "runtimes/dotnet/dotnet.h"

/* `dotnet exec` / `dotnet` options that take a value (the .NET host's muxer). */
static bool takes_value(const char *a)
{
    static const char *const opts[] = {"--additionalprobingpath",
                                       "--additional-deps",
                                       "--depsfile",
                                       "--runtimeconfig",
                                       "--fx-version",
                                       "--roll-forward",
                                       "--roll-forward-on-no-candidate-fx"};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        if (strcmp(a, opts[i]) == 0)
            return true;
    return false;
}

char *pp_appid_dotnet(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!argv || argc < 1 || !argv[0][0])
        return NULL;
    if (strcmp(pp_appid_base_name(argv[0]), "dotnet") != 0)
        return pp_appid_with_file("dotnet", argv[0], root, cwd); /* an apphost: the app itself */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i == 1 && strcmp(a, "exec") == 0)
            continue;
        if (takes_value(a)) {
            i++;
            continue;
        }
        if (a[0] == '-')
            continue;
        if (pp_appid_ends_with(a, ".dll") || pp_appid_ends_with(a, ".exe"))
            return pp_appid_with_file("dotnet", a, root, cwd);
        return NULL; /* an SDK command (`dotnet run`, `dotnet build`): no assembly named */
    }
    return NULL;
}
