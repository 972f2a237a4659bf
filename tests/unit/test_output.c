/* Unit tests: atomic .col files, last_profile.col link, rotation, bad output paths. */
#include "tests/unit/testutil.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>

#include "orchestrator/output.h"

TestSuite(output, .init = pp_test_quiet_log);

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' || strncmp(e->d_name, ".polyprof", 9) == 0)
            n++;
    closedir(d);
    return n;
}

Test(output, writes_file_and_link)
{
    char *dir = pp_test_mkdtemp();
    char sub[1024], path[PATH_MAX], err[256], link[PATH_MAX + 64];
    snprintf(sub, sizeof(sub), "%s/a/b", dir);
    cr_assert_eq(pp_output_prepare(sub, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(
        pp_output_write(sub, 86400, "# {}\nx 1", 8, false, path, sizeof(path), err, sizeof(err)), 0,
        "%s", err);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "%s/profile_1970-01-02T00:00:00.col", sub);
    cr_assert_str_eq(path, want);
    snprintf(link, sizeof(link), "%s/last_profile.col", sub);
    char target[256];
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    cr_assert_gt(n, 0);
    target[n] = '\0';
    cr_assert_str_eq(target, "profile_1970-01-02T00:00:00.col", "relative link");
    FILE *f = fopen(link, "r");
    char buf[32] = "";
    cr_assert_eq(fread(buf, 1, sizeof(buf), f), 8);
    fclose(f);
    cr_assert_str_eq(buf, "# {}\nx 1");
    /* A second file without rotation keeps both; with rotation the old one goes. */
    cr_assert_eq(pp_output_write(sub, 86401, "b", 1, false, path, sizeof(path), err, sizeof(err)),
                 0);
    cr_assert_eq(count_entries(sub), 3);
    cr_assert_eq(pp_output_write(sub, 86402, "c", 1, true, path, sizeof(path), err, sizeof(err)),
                 0);
    cr_assert_eq(count_entries(sub), 3, "rotation deleted the previous target only");
    struct stat st;
    cr_assert_eq(stat(want, &st), 0);
    /* Same end second as an existing file: a suffixed name, nothing overwritten. */
    cr_assert_eq(pp_output_write(sub, 86400, "d", 1, false, path, sizeof(path), err, sizeof(err)),
                 0);
    cr_assert(strstr(path, "profile_1970-01-02T00:00:00_1.col") != NULL, "%s", path);
    FILE *f2 = fopen(want, "r");
    char first[8] = "";
    cr_assert_eq(fread(first, 1, sizeof(first), f2), 8);
    fclose(f2);
    pp_test_rmtree(dir);
}

Test(output, rejects_a_file_and_cleans_temp_files)
{
    char *dir = pp_test_mkdtemp();
    char file[PATH_MAX], err[256], tmp[PATH_MAX];
    snprintf(file, sizeof(file), "%s/plain", dir);
    pp_test_write_file(file, "x", 1);
    cr_assert_eq(pp_output_prepare(file, err, sizeof(err)), -1);
    cr_assert(strstr(err, "is not a directory") != NULL, "%s", err);
    snprintf(tmp, sizeof(tmp), "%s/.polyprof-tmp-1-profile_x.col", dir);
    pp_test_write_file(tmp, "partial", 7);
    cr_assert_eq(pp_output_prepare(dir, err, sizeof(err)), 0);
    cr_assert_eq(access(tmp, F_OK), -1, "leftover temp file removed");
    pp_test_rmtree(dir);
}

static void expect_link(const char *dir, const char *link, const char *target)
{
    char path[PATH_MAX + 64], got[256];
    snprintf(path, sizeof(path), "%s/%s", dir, link);
    ssize_t n = readlink(path, got, sizeof(got) - 1);
    cr_assert_gt(n, 0, "%s", link);
    got[n] = '\0';
    cr_expect_str_eq(got, target);
}

Test(output, flamegraph_beside_its_profile)
{
    char *dir = pp_test_mkdtemp();
    char col[PATH_MAX], html[PATH_MAX], err[256], want[PATH_MAX + 64];
    cr_assert_eq(pp_output_write(dir, 86400, "a", 1, true, col, sizeof(col), err, sizeof(err)), 0);
    cr_assert_eq(
        pp_output_write_html(dir, col, "<p>", 3, true, html, sizeof(html), err, sizeof(err)), 0,
        "%s", err);
    snprintf(want, sizeof(want), "%s/profile_1970-01-02T00:00:00.html", dir);
    cr_assert_str_eq(html, want);
    expect_link(dir, "last_flamegraph.html", "profile_1970-01-02T00:00:00.html");
    expect_link(dir, "last_profile.col", "profile_1970-01-02T00:00:00.col");
    /* A suffixed .col (same end second) gets the same suffix; rotation drops the old pair. */
    cr_assert_eq(pp_output_write(dir, 86400, "b", 1, true, col, sizeof(col), err, sizeof(err)), 0);
    cr_assert_eq(
        pp_output_write_html(dir, col, "<q>", 3, true, html, sizeof(html), err, sizeof(err)), 0);
    cr_assert(strstr(html, "/profile_1970-01-02T00:00:00_1.html") != NULL, "%s", html);
    expect_link(dir, "last_flamegraph.html", "profile_1970-01-02T00:00:00_1.html");
    cr_expect_eq(access(want, F_OK), -1, "rotated away");
    cr_expect_eq(count_entries(dir), 4, "two files, two links, no temp file");
    FILE *f = fopen(html, "r");
    char buf[8] = "";
    cr_assert_eq(fread(buf, 1, sizeof(buf), f), 3);
    fclose(f);
    cr_expect_str_eq(buf, "<q>");
    /* Only a .col's name makes a flame graph name. */
    cr_expect_eq(
        pp_output_write_html(dir, "/x/notes.txt", "x", 1, false, NULL, 0, err, sizeof(err)), -1);
    pp_test_rmtree(dir);
}

/* Another user who can write in the output directory plants symlinks to a file polyprof (root)
 * must not write, under every name the old code used (temp files named by pid and end time, the
 * last_profile.col temp link) and under the profile's own name: none is written through, the
 * profile still lands. */
Test(output, planted_links_are_never_followed)
{
    char *dir = pp_test_mkdtemp();
    char out[PATH_MAX], victim[PATH_MAX], link[PATH_MAX + 128], path[PATH_MAX], err[256];
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    pp_test_write_file(victim, "precious", 8);
    cr_assert_eq(pp_output_prepare(out, err, sizeof(err)), 0, "%s", err);
    const char *names[] = {".polyprof-tmp-%d-profile_1970-01-02T00:00:00.col",
                           ".polyprof-tmp-%d-profile_1970-01-02T00:00:00_1.col",
                           ".polyprof-tmp-%d-last_profile.col", "profile_1970-01-02T00:00:00.col"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char name[128];
        snprintf(name, sizeof(name), names[i], (int)getpid());
        snprintf(link, sizeof(link), "%s/%s", out, name);
        cr_assert_eq(symlink(victim, link), 0, "%s", link);
    }
    cr_assert_eq(
        pp_output_write(out, 86400, "# {}\nx 1", 8, true, path, sizeof(path), err, sizeof(err)), 0,
        "%s", err);
    char buf[16] = "";
    FILE *f = fopen(victim, "r");
    cr_assert_eq(fread(buf, 1, sizeof(buf), f), 8);
    fclose(f);
    cr_assert_str_eq(buf, "precious", "the planted link was written through");
    /* the planted profile name is skipped, not replaced: the profile gets the next name */
    cr_assert(strstr(path, "profile_1970-01-02T00:00:00_1.col") != NULL, "%s", path);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode) && st.st_size == 8);
    /* rotation never deletes a file the link was made to name by someone else */
    snprintf(link, sizeof(link), "%s/last_profile.col", out);
    cr_assert_eq(unlink(link), 0);
    cr_assert_eq(symlink("../victim", link), 0);
    cr_assert_eq(pp_output_write(out, 86401, "y", 1, true, path, sizeof(path), err, sizeof(err)), 0,
                 "%s", err);
    cr_assert_eq(access(victim, F_OK), 0);
    pp_test_rmtree(dir);
}
