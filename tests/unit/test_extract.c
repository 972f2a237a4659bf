/* extract-resources (orchestrator/extract.h): the files of the resources directories, first
 * match wins, copied into the destination without following anything planted there. */
#include <limits.h>
#include <sys/stat.h>

#include "orchestrator/extract.h"
#include "testutil.h"

static char *d;
static char exe[PATH_MAX], envdir[PATH_MAX], dest[PATH_MAX - 64];
static char errbuf[1024];

static void put(const char *rel, const char *text, mode_t mode)
{
    char path[PATH_MAX], cmd[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", d, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
    cr_assert_eq(system(cmd), 0);
    pp_test_write_file(path, text, strlen(text));
    cr_assert_eq(chmod(path, mode), 0);
}

static char *in_dest(const char *rel)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dest, rel);
    return path;
}

static void expect_file(const char *rel, const char *text, mode_t mode)
{
    struct stat st;
    cr_assert_eq(lstat(in_dest(rel), &st), 0, "%s not copied", rel);
    cr_expect(S_ISREG(st.st_mode), "%s is not a regular file", rel);
    cr_expect_eq(st.st_mode & 07777, mode, "%s: mode %o", rel, st.st_mode & 07777);
    cr_expect_str_eq(pp_test_read_text(in_dest(rel)), text, "%s", rel);
}

static int run(void)
{
    pp_resource_env env = {.exe = exe, .resources = envdir, .path = "/usr/bin:/bin"};
    return pp_extract_resources(&env, dest, NULL, errbuf, sizeof(errbuf));
}

/* A build-tree-like layout: POLYPROF_RESOURCES, <bin>/resources (tools) and ../resources
 * (the Node addon), the same tool in two of them. */
static void setup(void)
{
    d = pp_test_mkdtemp();
    snprintf(exe, sizeof(exe), "%s/tree/build/polyprof", d);
    snprintf(envdir, sizeof(envdir), "%s/env", d);
    snprintf(dest, sizeof(dest), "%s/out", d);
    put("tree/build/polyprof", "ELF", 0755);
    put("env/python/py-spy", "override", 0755);
    put("tree/build/resources/python/py-spy", "staged", 0755);
    put("tree/build/resources/java/async-profiler.jar", "jar", 0644);
    put("tree/resources/node/linux-perf/glibc/20/linux-perf.node", "addon", 0644);
    put("tree/resources/.keep", "", 0644);
    put("cache/rbspy", "rbspy", 0755);
    char link[PATH_MAX], target[PATH_MAX];
    snprintf(link, sizeof(link), "%s/tree/build/resources/ruby", d);
    cr_assert_eq(mkdir(link, 0755), 0);
    snprintf(link, sizeof(link), "%s/tree/build/resources/ruby/rbspy", d);
    snprintf(target, sizeof(target), "%s/cache/rbspy", d);
    cr_assert_eq(symlink(target, link), 0);
}

static void teardown(void)
{
    pp_test_rmtree(d);
}

TestSuite(extract, .init = setup, .fini = teardown);

Test(extract, copies_the_first_match_of_every_file)
{
    cr_assert_eq(run(), 4, "%s", errbuf);
    expect_file("python/py-spy", "override", 0755); /* POLYPROF_RESOURCES wins, as in a lookup */
    expect_file("java/async-profiler.jar", "jar", 0644);
    expect_file("ruby/rbspy", "rbspy", 0755); /* a link to a file: the file */
    expect_file("node/linux-perf/glibc/20/linux-perf.node", "addon", 0644);
    cr_expect_neq(access(in_dest(".keep"), F_OK), 0, "dot files are not copied");
    /* again, into the filled directory: replaced, same result */
    cr_assert_eq(run(), 4, "%s", errbuf);
    expect_file("python/py-spy", "override", 0755);
}

Test(extract, a_link_planted_in_the_destination_is_replaced_not_written_through)
{
    put("victim", "untouched", 0644);
    char victim[PATH_MAX], victim_dir[PATH_MAX];
    snprintf(victim, sizeof(victim), "%s/victim", d);
    cr_assert_eq(mkdir(dest, 0755), 0);
    cr_assert_eq(mkdir(in_dest("java"), 0755), 0);
    cr_assert_eq(symlink(victim, in_dest("java/async-profiler.jar")), 0);
    cr_assert_eq(run(), 4, "%s", errbuf);
    expect_file("java/async-profiler.jar", "jar", 0644);
    cr_expect_str_eq(pp_test_read_text(victim), "untouched");

    /* a directory of the destination replaced by a link elsewhere: refused, nothing written
     * there */
    snprintf(victim_dir, sizeof(victim_dir), "%s/victim_dir", d);
    cr_assert_eq(mkdir(victim_dir, 0755), 0);
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", in_dest("python"));
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(symlink(victim_dir, in_dest("python")), 0);
    cr_assert_eq(run(), -1);
    cr_expect(strstr(errbuf, "python/py-spy") && strstr(errbuf, "symbolic link"), "%s", errbuf);
    snprintf(cmd, sizeof(cmd), "%s/py-spy", victim_dir);
    cr_expect_neq(access(cmd, F_OK), 0, "written through the planted link");
}

Test(extract, a_destination_inside_a_resources_directory_is_not_copied_into_itself)
{
    snprintf(dest, sizeof(dest), "%s/tree/build/resources/out", d);
    cr_assert_eq(run(), 4, "%s", errbuf);
    cr_expect_neq(access(in_dest("out"), F_OK), 0);
    cr_assert_eq(run(), 4, "%s", errbuf); /* its own files are not resources to copy */
}

Test(extract, a_missing_parent_is_an_error)
{
    snprintf(dest, sizeof(dest), "%s/no/such/dir", d);
    cr_assert_eq(run(), -1);
    cr_expect(strstr(errbuf, "cannot create --resources-dest") &&
                  strstr(errbuf, "parent directory must exist"),
              "%s", errbuf);
}
