/* Unit tests: --external-metadata (gProfiler's file: read, validated, merged into application
 * metadata) and --heartbeat-file (created and touched, never through a link). */
#include "tests/unit/testutil.h"

#include <jansson.h>
#include <limits.h>
#include <sys/time.h>

#include "orchestrator/extmeta.h"
#include "orchestrator/heartbeat.h"

TestSuite(extmeta, .init = pp_test_quiet_log);

static void write_at(const char *dir, const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    pp_test_write_file(path, text, strlen(text));
}

static json_t *load(const char *path, char *err, size_t errlen)
{
    return pp_extmeta_load(path, time(NULL), err, errlen);
}

Test(extmeta, valid_file_and_its_defaults)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[512];
    write_at(dir, "m.json",
             "{\"static\": {\"team\": \"db\"}, \"application\": {\"42\": {\"a\": 1}}}", path,
             sizeof(path));
    json_t *m = load(path, err, sizeof(err));
    cr_assert_not_null(m, "%s", err);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "static"), "team")),
                     "db");
    json_decref(m);
    write_at(dir, "empty.json", "{}", path, sizeof(path));
    m = load(path, err, sizeof(err));
    cr_assert_not_null(m, "%s", err);
    cr_assert(json_is_object(json_object_get(m, "static")) &&
              json_is_object(json_object_get(m, "application")));
    json_decref(m);
    pp_test_rmtree(dir);
}

Test(extmeta, bad_files_are_refused_with_a_reason)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[512];
    struct {
        const char *name, *text, *why;
    } bad[] = {
        {"syntax.json", "{\"static\": ", "not valid JSON"},
        {"array.json", "[1, 2]", "expected {\"static\""},
        {"static.json", "{\"static\": 3}", "expected {\"static\""},
        {"app.json", "{\"application\": []}", "expected {\"static\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_at(dir, bad[i].name, bad[i].text, path, sizeof(path));
        err[0] = '\0';
        cr_expect_null(load(path, err, sizeof(err)), "%s", bad[i].name);
        cr_expect(strstr(err, bad[i].why) && strstr(err, path), "%s: %s", bad[i].name, err);
    }
    snprintf(path, sizeof(path), "%s/missing.json", dir);
    cr_expect_null(load(path, err, sizeof(err)));
    cr_expect(strstr(err, "No such file") != NULL, "%s", err);
    /* a FIFO neither blocks nor counts */
    snprintf(path, sizeof(path), "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_expect_null(load(path, err, sizeof(err)));
    cr_expect(strstr(err, "not a regular file") != NULL, "%s", err);
    /* stale: modified more than 5 minutes ago (gProfiler's rule) */
    write_at(dir, "old.json", "{}", path, sizeof(path));
    struct timeval tv[2] = {{time(NULL) - 301, 0}, {time(NULL) - 301, 0}};
    cr_assert_eq(utimes(path, tv), 0);
    cr_expect_null(load(path, err, sizeof(err)));
    cr_expect(strstr(err, "stale") != NULL, "%s", err);
    tv[0].tv_sec = tv[1].tv_sec = time(NULL) - 200;
    cr_assert_eq(utimes(path, tv), 0);
    json_t *m = load(path, err, sizeof(err));
    cr_expect_not_null(m, "200 s old is fresh: %s", err);
    json_decref(m);
    pp_test_rmtree(dir);
}

Test(extmeta, application_entries_merge_into_a_copy)
{
    json_t *ext = json_loads("{\"static\": {}, \"application\": {\"7\": {\"exe\": \"ext\", "
                             "\"team\": \"db\"}, \"8\": {\"only\": true}, \"9\": 5}}",
                             0, NULL);
    cr_assert_not_null(ext);
    pp_profile *p = pp_profile_new();
    json_t *shared = json_pack("{s:s,s:s}", "python_version", "3.11", "exe", "/usr/bin/python3");
    pp_pid_profile *a = pp_profile_get(p, 7, true), *b = pp_profile_get(p, 8, true);
    pp_pid_profile *c = pp_profile_get(p, 9, true), *d = pp_profile_get(p, 10, true);
    a->app_metadata = json_incref(shared);
    d->app_metadata = json_incref(shared);
    pp_extmeta_apply(ext, p);
    char *s = json_dumps(a->app_metadata, JSON_PRESERVE_ORDER);
    cr_expect_str_eq(s, "{\"python_version\": \"3.11\", \"exe\": \"ext\", \"team\": \"db\"}",
                     "external keys win, order kept");
    free(s);
    s = json_dumps(b->app_metadata, 0);
    cr_expect_str_eq(s, "{\"only\": true}", "no metadata of its own: the external object");
    free(s);
    cr_expect_null(c->app_metadata, "an entry that is not an object is ignored");
    cr_expect_eq(d->app_metadata, shared, "other pids untouched");
    cr_expect_str_eq(json_string_value(json_object_get(shared, "exe")), "/usr/bin/python3",
                     "the shared object is not modified");
    json_decref(shared);
    json_decref(ext);
    pp_profile_free(p);
}

Test(extmeta, heartbeat_created_touched_never_through_a_link)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], target[PATH_MAX], link[PATH_MAX], err[512];
    snprintf(path, sizeof(path), "%s/hb", dir);
    cr_assert_eq(pp_heartbeat_touch(path, err, sizeof(err)), 0, "%s", err);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect(S_ISREG(st.st_mode) && (st.st_mode & 0777 & ~0644) == 0, "at most 0644");
    struct timeval old[2] = {{1000, 0}, {1000, 0}};
    cr_assert_eq(utimes(path, old), 0);
    cr_assert_eq(pp_heartbeat_touch(path, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_gt(st.st_mtime, time(NULL) - 60, "touched");

    /* A symbolic link is refused; its target is neither created nor touched. */
    snprintf(target, sizeof(target), "%s/target", dir);
    snprintf(link, sizeof(link), "%s/link", dir);
    cr_assert_eq(symlink(target, link), 0);
    cr_expect_eq(pp_heartbeat_touch(link, err, sizeof(err)), -1);
    cr_expect(strstr(err, "symbolic link") != NULL, "%s", err);
    cr_expect_eq(access(target, F_OK), -1, "link target not created");
    pp_test_write_file(target, "keep", 4);
    cr_assert_eq(utimes(target, old), 0);
    cr_expect_eq(pp_heartbeat_touch(link, err, sizeof(err)), -1);
    cr_assert_eq(stat(target, &st), 0);
    cr_expect_eq(st.st_mtime, 1000, "link target not touched");

    /* Neither a FIFO (without blocking) nor a directory. */
    snprintf(path, sizeof(path), "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_expect_eq(pp_heartbeat_touch(path, err, sizeof(err)), -1);
    cr_expect_eq(pp_heartbeat_touch(dir, err, sizeof(err)), -1);
    pp_test_rmtree(dir);
}
