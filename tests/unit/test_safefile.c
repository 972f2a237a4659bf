/* Unit tests for base/safefile.c (creating files without following planted links,
 * bounded input reads, message escaping) and the log file's opening and rotation (log.c). */
#include "tests/unit/testutil.h"

#include <dirent.h>
#include <limits.h>

#include "base/log.h"
#include "base/safefile.h"

TestSuite(safefile, .init = pp_test_quiet_log);
TestSuite(logfile, .init = pp_test_quiet_log, .fini = pp_log_close);

Test(safefile, unique_names_and_replace)
{
    char *dir = pp_test_mkdtemp();
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    char a[64], b[64];
    int fa = pp_create_unique_at(dfd, "x-", ".t", O_WRONLY, 0600, a, sizeof(a));
    int fb = pp_create_unique_at(dfd, "x-", ".t", O_WRONLY, 0600, b, sizeof(b));
    cr_assert(fa >= 0 && fb >= 0);
    cr_assert_str_neq(a, b);
    cr_assert_eq(strlen(a), 2 + 12 + 2, "%s", a);
    close(fa);
    close(fb);
    /* replace: a symlink at the name is replaced, its target untouched */
    char victim[PATH_MAX], link[PATH_MAX];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(link, sizeof(link), "%s/name", dir);
    pp_test_write_file(victim, "keep", 4);
    cr_assert_eq(symlink(victim, link), 0);
    cr_assert_eq(pp_replace_file_at(dfd, "name", "new", 3, 0644), 0);
    cr_assert_str_eq(pp_test_read_text(victim), "keep");
    cr_assert_str_eq(pp_test_read_text(link), "new");
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0644);
    close(dfd);
    pp_test_rmtree(dir);
}

/* A predictable name source (pp_safefile_set_name_source): the first `forced_calls` names are
 * all "AAAAAAAAAAAA" (the name an attacker planted something at), then "BBBBBBBBBBBB". */
static int forced_calls;
static void forced_name(char *out, size_t n)
{
    memset(out, forced_calls > 0 ? 'A' : 'B', n);
    out[n] = '\0';
    if (forced_calls > 0)
        forced_calls--;
}

static void reset_name_source(void)
{
    pp_safefile_set_name_source(NULL);
}

/* The O_EXCL|O_NOFOLLOW of pp_create_unique_at itself: whatever another user planted at the
 * name tried (a link to a file polyprof must not write, a dangling link, an existing file) is
 * skipped, never opened, followed or truncated, and the file is created under the next name. */
Test(safefile, planted_entry_at_the_name_is_skipped, .fini = reset_name_source)
{
    char *dir = pp_test_mkdtemp();
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    char victim[PATH_MAX], planted[PATH_MAX], dangling[PATH_MAX], name[64];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(dangling, sizeof(dangling), "%s/created-through-link", dir);
    snprintf(planted, sizeof(planted), "%s/x-AAAAAAAAAAAA.t", dir);
    pp_test_write_file(victim, "keep", 4);
    pp_safefile_set_name_source(forced_name);

    const char *targets[] = {victim, dangling, NULL};
    for (int i = 0; i < 3; i++) {
        unlink(planted);
        if (targets[i])
            cr_assert_eq(symlink(targets[i], planted), 0);
        else
            pp_test_write_file(planted, "old", 3); /* an existing file of someone else */
        forced_calls = 1;
        int fd = pp_create_unique_at(dfd, "x-", ".t", O_WRONLY | O_TRUNC, 0600, name, sizeof(name));
        cr_assert(fd >= 0, "case %d: %s", i, strerror(errno));
        cr_assert_str_eq(name, "x-BBBBBBBBBBBB.t", "case %d: the planted name was used", i);
        cr_assert_eq(pp_write_all(fd, "new", 3), 0);
        close(fd);
        cr_assert_str_eq(pp_test_read_text(victim), "keep", "case %d: written through a link", i);
        cr_assert_neq(access(dangling, F_OK), 0, "case %d: a dangling link was followed", i);
        struct stat st;
        cr_assert_eq(lstat(planted, &st), 0);
        if (targets[i])
            cr_assert(S_ISLNK(st.st_mode), "case %d: the planted link was replaced", i);
        else
            cr_assert_str_eq(pp_test_read_text(planted), "old", "the existing file was truncated");
        char made[PATH_MAX];
        snprintf(made, sizeof(made), "%s/%s", dir, name);
        cr_assert_str_eq(pp_test_read_text(made), "new");
        cr_assert_eq(unlink(made), 0);
    }

    /* every name tried is taken: EEXIST after the bounded tries, nothing opened */
    unlink(planted);
    cr_assert_eq(symlink(victim, planted), 0);
    forced_calls = 1000;
    errno = 0;
    cr_assert_eq(pp_create_unique_at(dfd, "x-", ".t", O_WRONLY | O_TRUNC, 0600, name, sizeof(name)),
                 -1);
    cr_assert_eq(errno, EEXIST, "%s", strerror(errno));
    cr_assert_str_eq(pp_test_read_text(victim), "keep");
    close(dfd);
    pp_test_rmtree(dir);
}

Test(safefile, private_dir_checks)
{
    char *dir = pp_test_mkdtemp();
    char p[PATH_MAX], l[PATH_MAX], err[512];
    snprintf(p, sizeof(p), "%s/priv", dir);
    int fd = pp_open_private_dir(p, 0700, err, sizeof(err));
    cr_assert(fd >= 0, "%s", err);
    close(fd);
    cr_assert_eq(chmod(p, 0777), 0);
    fd = pp_open_private_dir(p, 0700, err, sizeof(err));
    cr_assert(fd >= 0, "%s", err);
    close(fd);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "mode fixed");
    snprintf(l, sizeof(l), "%s/link", dir);
    cr_assert_eq(symlink(p, l), 0);
    cr_assert_eq(pp_open_private_dir(l, 0700, err, sizeof(err)), -1);
    cr_assert(strstr(err, "symbolic link"), "%s", err);
    cr_assert_eq(chown(p, 65534, 65534), 0);
    cr_assert_eq(pp_open_private_dir(p, 0700, err, sizeof(err)), -1);
    cr_assert(strstr(err, "owned by uid 65534"), "%s", err);
    pp_test_rmtree(dir);
}

Test(safefile, private_dir_creates_missing_parents)
{
    char *dir = pp_test_mkdtemp();
    char p[PATH_MAX], err[512];
    snprintf(p, sizeof(p), "%s/var/lib/polyprof/history", dir);
    int fd = pp_open_private_dir(p, 0700, err, sizeof(err));
    cr_assert(fd >= 0, "%s", err);
    close(fd);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "the directory itself is private");
    snprintf(p, sizeof(p), "%s/var/lib/polyprof", dir);
    cr_assert_eq(stat(p, &st), 0);
    cr_assert(S_ISDIR(st.st_mode), "the parents made as mkdir -p makes them");
    pp_test_rmtree(dir);
}

Test(safefile, input_files, .timeout = 20)
{
    char *dir = pp_test_mkdtemp();
    char p[PATH_MAX], err[512];
    size_t len;
    bool usage;
    snprintf(p, sizeof(p), "%s/ok", dir);
    pp_test_write_file(p, "hello", 5);
    char *b = pp_read_input_file(p, 5, "test file", &len, &usage, err, sizeof(err));
    cr_assert(b && len == 5 && !strcmp(b, "hello"));
    free(b);
    cr_assert_null(pp_read_input_file(p, 4, "test file", &len, &usage, err, sizeof(err)));
    cr_assert(usage && strstr(err, "too large (5 bytes; the limit is 4 bytes)"), "%s", err);
    snprintf(p, sizeof(p), "%s/fifo", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    cr_assert_null(pp_read_input_file(p, 100, "test file", &len, &usage, err, sizeof(err)));
    cr_assert(usage && strstr(err, "is a FIFO; give a regular file"), "%s", err);
    cr_assert_null(pp_read_input_file(dir, 100, "test file", &len, &usage, err, sizeof(err)));
    cr_assert(usage && strstr(err, "is a directory"), "%s", err);
    cr_assert_null(
        pp_read_input_file("/dev/zero", 100, "test file", &len, &usage, err, sizeof(err)));
    cr_assert(usage && strstr(err, "is a character device"), "%s", err);
    snprintf(p, sizeof(p), "%s/missing", dir);
    cr_assert_null(pp_read_input_file(p, 100, "test file", &len, &usage, err, sizeof(err)));
    cr_assert(!usage && errno == ENOENT && strstr(err, "No such file"), "%s", err);
    pp_test_rmtree(dir);
}

Test(safefile, escape)
{
    char out[64];
    pp_escape_text("a\x1b[1mb\xff\n", out, sizeof(out));
    cr_assert_str_eq(out, "a\\x1b[1mb\\xff\\x0a");
    pp_escape_text("\x01\x02\x03", out, 9); /* never a partial escape */
    cr_assert_str_eq(out, "\\x01\\x02");
}

/* ---- the log file ---- */

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

Test(logfile, rotates_by_size_and_keeps_n_backups)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], p[PATH_MAX + 16], err[256];
    snprintf(path, sizeof(path), "%s/pp.log", dir);
    pp_log_rotation rot = {1000, 2};
    cr_assert_eq(pp_log_init(0, path, &rot, err, sizeof(err)), 0, "%s", err);
    for (int i = 0; i < 100; i++)
        pp_debug("line %03d %s", i, "0123456789012345678901234567890123456789");
    pp_log_close();
    struct stat st;
    int total = 0;
    for (int k = 0; k <= 2; k++) {
        if (k)
            snprintf(p, sizeof(p), "%s.%d", path, k);
        else
            snprintf(p, sizeof(p), "%s", path);
        cr_assert_eq(stat(p, &st), 0, "%s missing", p);
        cr_assert(st.st_size > 0 && st.st_size < 1000, "%s: %lld bytes", p, (long long)st.st_size);
        total += count_lines(pp_test_read_text(p));
    }
    snprintf(p, sizeof(p), "%s.3", path);
    cr_assert_eq(access(p, F_OK), -1, "only 2 backups");
    cr_assert(strstr(pp_test_read_text(path), "line 099"),
              "the newest lines are in the file itself");
    cr_assert(total < 100 && total > 10);
    pp_test_rmtree(dir);
}

Test(logfile, links_and_foreign_files_are_refused, .timeout = 20)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], victim[PATH_MAX], err[256];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    pp_test_write_file(victim, "keep", 4);
    snprintf(path, sizeof(path), "%s/sym.log", dir);
    cr_assert_eq(symlink(victim, path), 0);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), -1);
    cr_assert(strstr(err, "symbolic link"), "%s", err);
    snprintf(path, sizeof(path), "%s/hard.log", dir);
    cr_assert_eq(link(victim, path), 0);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), -1);
    cr_assert(strstr(err, "other hard links"), "%s", err);
    snprintf(path, sizeof(path), "%s/other.log", dir);
    pp_test_write_file(path, "", 0);
    cr_assert_eq(chown(path, 65534, 65534), 0);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), -1);
    cr_assert(strstr(err, "owned by uid 65534"), "%s", err);
    snprintf(path, sizeof(path), "%s/fifo.log", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), -1, "a FIFO never blocks");
    pp_debug("nothing to write it to");
    cr_assert_str_eq(pp_test_read_text(victim), "keep");
    pp_test_rmtree(dir);
}
