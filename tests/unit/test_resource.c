/* The resource search path (base/resource.h): its order, what a match must be, and that the
 * external-tool launchers use it. */
#include <limits.h>

#include "base/resource.h"
#include "runtimes/java/asprof.h"
#include "runtimes/python/python_int.h"
#include "testutil.h"

static void put(const char *root, const char *rel, mode_t mode)
{
    char path[PATH_MAX], cmd[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
    cr_assert_eq(system(cmd), 0);
    pp_test_write_file(path, "#!/bin/sh\n", 10);
    cr_assert_eq(chmod(path, mode), 0);
}

static void drop(const char *root, const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    cr_assert_eq(unlink(path), 0, "%s", path);
}

static void expect(const pp_resource_env *env, const char *rel, bool tool, const char *root,
                   const char *want)
{
    char out[PATH_MAX], full[PATH_MAX];
    cr_assert_eq(pp_resource_lookup(env, rel, tool, out, sizeof(out)), 0, "%s not found", rel);
    snprintf(full, sizeof(full), "%s/%s", root, want);
    cr_assert_str_eq(out, full);
}

/* A tree with the tool at every place of the path; removing each match in turn reveals the
 * next one, in the documented order. */
Test(resource, search_order)
{
    char *d = pp_test_mkdtemp();
    char exe[PATH_MAX], env_dirs[2 * PATH_MAX], path_dirs[PATH_MAX];
    snprintf(exe, sizeof(exe), "%s/prefix/bin/polyprof", d);
    snprintf(env_dirs, sizeof(env_dirs), "relative/x::%s/env1:%s/env2", d, d);
    snprintf(path_dirs, sizeof(path_dirs), "bin:%s/pathdir", d);
    const char *places[] = {"env1/x/tool",
                            "env2/x/tool",
                            "prefix/bin/resources/x/tool",
                            "prefix/share/polyprof/resources/x/tool",
                            "prefix/resources/x/tool",
                            "pathdir/tool"};
    size_t n = sizeof(places) / sizeof(places[0]);
    for (size_t i = 0; i < n; i++)
        put(d, places[i], 0755);
    put(d, "relative/x/tool", 0755); /* relative entries are never used, even from cwd */
    put(d, "bin/tool", 0755);
    pp_resource_env env = {.exe = exe, .resources = env_dirs, .path = path_dirs};
    cr_assert_eq(chdir(d), 0);
    for (size_t i = 0; i < n; i++) {
        expect(&env, "x/tool", true, d, places[i]);
        drop(d, places[i]);
    }
    char out[PATH_MAX];
    cr_assert_eq(pp_resource_lookup(&env, "x/tool", true, out, sizeof(out)), -1);
    cr_assert_eq(chdir("/"), 0);
    pp_test_rmtree(d);
}

/* Without $POLYPROF_RESOURCES the binary's directories come first; PATH is for tools only. */
Test(resource, no_override_and_data_files)
{
    char *d = pp_test_mkdtemp();
    char exe[PATH_MAX], path_dirs[PATH_MAX];
    snprintf(exe, sizeof(exe), "%s/build/polyprof", d);
    snprintf(path_dirs, sizeof(path_dirs), "%s/pathdir", d);
    put(d, "resources/x/tool", 0755);
    put(d, "pathdir/tool", 0755);
    put(d, "resources/x/data.json", 0644);
    put(d, "pathdir/data.json", 0644);
    pp_resource_env env = {.exe = exe, .path = path_dirs};
    expect(&env, "x/tool", true, d, "resources/x/tool");
    expect(&env, "x/data.json", false, d, "resources/x/data.json");
    drop(d, "resources/x/data.json");
    char out[PATH_MAX];
    cr_assert_eq(pp_resource_lookup(&env, "x/data.json", false, out, sizeof(out)), -1,
                 "a data file is never looked up on PATH");
    pp_test_rmtree(d);
}

/* A tool must be an executable regular file; a match is canonical; a path that does not fit
 * the caller's buffer is no match. */
Test(resource, what_a_match_is)
{
    char *d = pp_test_mkdtemp();
    char exe[PATH_MAX], env_dirs[3 * PATH_MAX], link[PATH_MAX], target[PATH_MAX];
    snprintf(exe, sizeof(exe), "%s/bin/polyprof", d);
    snprintf(env_dirs, sizeof(env_dirs), "%s/noexec:%s/isdir:%s/linked", d, d, d);
    put(d, "noexec/x/tool", 0644);
    put(d, "isdir/x/tool/placeholder", 0755);
    put(d, "real/tool", 0755);
    put(d, "linked/x/placeholder", 0644);
    snprintf(link, sizeof(link), "%s/linked/x/tool", d);
    snprintf(target, sizeof(target), "%s/real/tool", d);
    cr_assert_eq(symlink(target, link), 0);
    pp_resource_env env = {.exe = exe, .resources = env_dirs};
    expect(&env, "x/tool", true, d, "real/tool");
    char small[8];
    cr_assert_eq(pp_resource_lookup(&env, "x/tool", true, small, sizeof(small)), -1);
    /* not a tool, but a readable file */
    expect(&env, "x/tool", false, d, "noexec/x/tool");
    pp_test_rmtree(d);
}

Test(resource, describe_lists_the_places_in_order)
{
    pp_resource_env env = {.exe = "/opt/pp/bin/polyprof", .resources = "/mnt/tools:rel"};
    char out[1024];
    pp_resource_describe(&env, "python/py-spy", true, out, sizeof(out));
    cr_assert_str_eq(out, "/mnt/tools/python/py-spy, /opt/pp/bin/resources/python/py-spy, "
                          "/opt/pp/share/polyprof/resources/python/py-spy, "
                          "/opt/pp/resources/python/py-spy or py-spy on PATH");
    char tiny[24];
    pp_resource_describe(&env, "python/py-spy", false, tiny, sizeof(tiny));
    cr_assert_eq(strlen(tiny), sizeof(tiny) - 1, "truncated, terminated");
    pp_resource_env root = {.exe = "/polyprof"};
    pp_resource_describe(&root, "t", false, out, sizeof(out));
    cr_assert_str_eq(out, "/resources/t, /share/polyprof/resources/t, /resources/t");
}

/* The launchers take their tools from the search path: $POLYPROF_RESOURCES before PATH. */
Test(resource, launchers_use_the_search_path)
{
    char *d = pp_test_mkdtemp();
    char env_dir[PATH_MAX], path_dir[PATH_MAX], out[PATH_MAX], want[PATH_MAX + 32];
    snprintf(env_dir, sizeof(env_dir), "%s/res", d);
    snprintf(path_dir, sizeof(path_dir), "%s/bin", d);
    put(d, "res/java/async-profiler.jar", 0644);
    put(d, "res/python/py-spy", 0755);
    put(d, "bin/py-spy", 0755);
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", path_dir, 1);
    setenv("POLYPROF_RESOURCES", env_dir, 1);
    cr_assert_eq(pp_asprof_find(out, sizeof(out)), 0);
    snprintf(want, sizeof(want), "%s/java/async-profiler.jar", env_dir);
    cr_expect_str_eq(out, want);
    cr_assert_eq(pp_pyspy_find(out, sizeof(out)), 0);
    snprintf(want, sizeof(want), "%s/python/py-spy", env_dir);
    cr_expect_str_eq(out, want);
    unsetenv("POLYPROF_RESOURCES");
    cr_assert_eq(pp_pyspy_find(out, sizeof(out)), 0);
    /* then the resources beside this binary (none for build/tests/: `make` puts the real
     * py-spy), and PATH only when they have none */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    cr_assert_gt(n, 0);
    exe[n] = '\0';
    pp_resource_env beside = {.exe = exe};
    if (pp_resource_lookup(&beside, "python/py-spy", true, want, sizeof(want)) != 0)
        snprintf(want, sizeof(want), "%s/py-spy", path_dir);
    cr_expect_str_eq(out, want);
    if (old_path)
        setenv("PATH", old_path, 1);
    free(old_path);
    pp_test_rmtree(d);
}
