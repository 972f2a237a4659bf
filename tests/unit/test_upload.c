/* Uploads without a network: the spool (order, bounds, restart), request building for
 * Performance Studio and Pyroscope, upload-file's header merge, redaction. */
#include <math.h>
#include <sys/stat.h>
#include <zlib.h>

#include "orchestrator/http.h"
#include "orchestrator/pyroscope.h"
#include "orchestrator/spool.h"
#include "orchestrator/studio.h"
#include "orchestrator/upload_item.h"
#include "base/utf8.h"
#include "tests/unit/testutil.h"

static json_t *meta_for(int start)
{
    pp_upload_item it = {.start = start,
                         .end = start + 60,
                         .spawn = 1,
                         .cpu_avg = 1.5,
                         .mem_avg = NAN,
                         .frequency = 11};
    return pp_upload_item_meta(&it);
}

static pp_spool *open_sp(const char *dir, unsigned long long bytes, long long age, size_t files)
{
    pp_spool_limits l = {.max_bytes = bytes, .max_age_s = age, .max_files = files};
    char err[256];
    pp_spool *sp = pp_spool_open(dir, "Test", &l, err, sizeof(err));
    cr_assert(sp, "%s", err);
    return sp;
}

static void put(pp_spool *sp, int start, const char *text)
{
    json_t *m = meta_for(start);
    char err[256];
    cr_assert_eq(pp_spool_put(sp, m, text, strlen(text), err, sizeof(err)), 0, "%s", err);
    json_decref(m);
}

static int oldest_start(pp_spool *sp, char **text)
{
    char **names;
    size_t n = pp_spool_list(sp, &names);
    cr_assert(n > 0);
    json_t *m;
    size_t len;
    cr_assert_eq(pp_spool_read(sp, names[0], &m, text, &len), 0);
    pp_upload_item it;
    cr_assert_eq(pp_upload_item_from_meta(m, &it), 0);
    json_decref(m);
    pp_spool_names_free(names, n);
    return (int)it.start;
}

Test(spool, order_roundtrip_and_permissions, .init = pp_test_quiet_log)
{
    char *root = pp_test_mkdtemp();
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/a/b/studio", root);
    pp_spool *sp = open_sp(dir, 1 << 20, 3600, 100);
    struct stat st;
    cr_assert_eq(stat(dir, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700);
    for (int i = 0; i < 50; i++) {
        char t[64];
        snprintf(t, sizeof(t), "# {}\n0;;c;f%d 1", i);
        put(sp, 1000 + i, t);
    }
    char **names;
    size_t n = pp_spool_list(sp, &names);
    cr_assert_eq(n, 50);
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0600);
        json_t *m;
        char *text;
        size_t len;
        cr_assert_eq(pp_spool_read(sp, names[i], &m, &text, &len), 0);
        pp_upload_item it;
        cr_assert_eq(pp_upload_item_from_meta(m, &it), 0);
        cr_assert_eq(it.start, 1000 + (int)i, "submission order kept");
        cr_assert_eq(it.end, 1060 + (int)i);
        cr_assert_eq(it.frequency, 11);
        cr_assert_float_eq(it.cpu_avg, 1.5, 1e-9);
        cr_assert(isnan(it.mem_avg));
        char want[64];
        snprintf(want, sizeof(want), "# {}\n0;;c;f%zu 1", i);
        cr_assert_eq(len, strlen(want));
        cr_assert_str_eq(text, want);
        json_decref(m);
        free(text);
    }
    pp_spool_names_free(names, n);
    pp_spool_close(sp);
    pp_test_rmtree(root);
}

Test(spool, restart_keeps_entries_and_removes_temp_files, .init = pp_test_quiet_log)
{
    char *dir = pp_test_mkdtemp();
    pp_spool *sp = open_sp(dir, 1 << 20, 3600, 100);
    put(sp, 1, "one");
    put(sp, 2, "two");
    pp_spool_close(sp);
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s/.tmp-123.spool", dir);
    pp_test_write_file(tmp, "partial", 7);
    snprintf(tmp, sizeof(tmp), "%s/unrelated.txt", dir);
    pp_test_write_file(tmp, "x", 1);

    sp = open_sp(dir, 1 << 20, 3600, 100);
    cr_assert_eq(pp_spool_count(sp, NULL), 2);
    char t[600];
    snprintf(t, sizeof(t), "%s/.tmp-123.spool", dir);
    cr_assert_neq(access(t, F_OK), 0, "temp file of a crashed write removed");
    char *text;
    cr_assert_eq(oldest_start(sp, &text), 1);
    cr_assert_str_eq(text, "one");
    free(text);
    /* new entries sort after the old ones */
    put(sp, 3, "three");
    char **names;
    size_t n = pp_spool_list(sp, &names);
    cr_assert_eq(n, 3);
    pp_spool_remove(sp, names[0]);
    pp_spool_names_free(names, n);
    cr_assert_eq(oldest_start(sp, &text), 2);
    free(text);
    pp_spool_close(sp);
    pp_test_rmtree(dir);
}

Test(spool, bounds_drop_oldest_first, .init = pp_test_quiet_log)
{
    char *dir = pp_test_mkdtemp();
    /* count */
    pp_spool *sp = open_sp(dir, 1 << 20, 3600, 3);
    for (int i = 0; i < 5; i++)
        put(sp, i, "x");
    cr_assert_eq(pp_spool_count(sp, NULL), 3);
    char *text;
    cr_assert_eq(oldest_start(sp, &text), 2, "the two oldest were dropped");
    free(text);
    pp_spool_close(sp);

    /* size: each entry is ~1 KiB of payload plus its meta line */
    char big[1024];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    sp = open_sp(dir, 2600, 3600, 100);
    unsigned long long bytes;
    cr_assert_eq(pp_spool_count(sp, &bytes), 3, "3 small entries fit");
    put(sp, 10, big);
    put(sp, 11, big);
    cr_assert_eq(pp_spool_count(sp, &bytes), 5);
    put(sp, 12, big); /* over 2600 bytes: the small ones go, then the first big one */
    cr_assert_eq(pp_spool_count(sp, &bytes), 2);
    cr_assert(bytes <= 2600);
    cr_assert_eq(oldest_start(sp, &text), 11);
    free(text);

    /* age: an hour later everything is too old */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pp_spool_enforce(sp, (long long)(ts.tv_sec + 3602) * 1000000000LL);
    cr_assert_eq(pp_spool_count(sp, NULL), 0);
    pp_spool_close(sp);
    pp_test_rmtree(dir);
}

Test(spool, corrupt_entry_is_reported, .init = pp_test_quiet_log)
{
    char *dir = pp_test_mkdtemp();
    pp_spool *sp = open_sp(dir, 1 << 20, 3600, 100);
    char p[600];
    snprintf(p, sizeof(p), "%s/1700000000000000000-000000.spool", dir);
    pp_test_write_file(p, "garbage", 7);
    char **names;
    size_t n = pp_spool_list(sp, &names);
    cr_assert_eq(n, 1);
    json_t *m;
    char *text;
    size_t len;
    cr_assert_eq(pp_spool_read(sp, names[0], &m, &text, &len), -1);
    cr_assert_eq(pp_spool_entry_time(names[0]), 1700000000000000000LL);
    pp_spool_names_free(names, n);
    pp_spool_close(sp);
    pp_test_rmtree(dir);
}

Test(spool, unwritable_directory_fails_cleanly, .init = pp_test_quiet_log)
{
    char *dir = pp_test_mkdtemp();
    char f[600], sub[700], err[256];
    snprintf(f, sizeof(f), "%s/file", dir);
    pp_test_write_file(f, "x", 1);
    snprintf(sub, sizeof(sub), "%s/file/spool", dir);
    cr_assert_null(pp_spool_open(sub, "Test", NULL, err, sizeof(err)));
    cr_assert(strstr(err, "cannot create the upload spool"), "%s", err);
    pp_test_rmtree(dir);
}

/* A spool path planted as a symlink (to a directory polyprof must not touch) is refused: the
 * target keeps its mode and gets no entry. */
Test(spool, symlinked_directory_is_refused, .init = pp_test_quiet_log)
{
    char *dir = pp_test_mkdtemp();
    char target[600], link[600], err[512];
    snprintf(target, sizeof(target), "%s/elsewhere", dir);
    snprintf(link, sizeof(link), "%s/spool", dir);
    cr_assert_eq(mkdir(target, 0755), 0);
    cr_assert_eq(symlink(target, link), 0);
    pp_spool *sp = pp_spool_open(link, "Test", NULL, err, sizeof(err));
    if (sp) {
        put(sp, 1, "x");
        pp_spool_close(sp);
    }
    struct stat st;
    cr_assert_eq(stat(target, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0755, "the link target's mode was changed");
    cr_expect_null(sp, "a symlinked spool was used");
    cr_expect(strstr(err, "symbolic link"), "%s", err);
    pp_test_rmtree(dir);
}

/* ---- Performance Studio request building ---- */

Test(studio, url_has_gprofiler_query_parameters)
{
    char *u = pp_studio_url("http://h:8080/prefix//", "v2", "/profiles", "t&k=y", "my svc", "host",
                            0, true);
    cr_assert_str_eq(u, "http://h:8080/prefix/api/v2/profiles?key=t%26k%3Dy&service=my%20svc"
                        "&hostname=host&timestamp=1970-01-01T00%3A00%3A00&version=1.57.1");
    char red[512];
    pp_redact_url(u, red, sizeof(red));
    cr_assert_str_eq(red, "http://h:8080/prefix/api/v2/profiles?key=***&service=my%20svc"
                          "&hostname=host&timestamp=1970-01-01T00%3A00%3A00&version=1.57.1");
    free(u);
    u = pp_studio_url("https://s", "v1", "/health_check", "k", "s", "h", 86400, false);
    cr_assert_str_eq(u, "https://s/api/v1/health_check?key=k&service=s&hostname=h"
                        "&timestamp=1970-01-02T00%3A00%3A00");
    free(u);
}

static char *gunzip(const unsigned char *in, size_t len, size_t *outlen)
{
    z_stream z = {0};
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    size_t cap = 1 << 20;
    char *out = malloc(cap);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
    *outlen = z.total_out;
    inflateEnd(&z);
    return out;
}

Test(studio, body_fields_gzip_roundtrip)
{
    const char *col = "# {\"metadata\": {}}\n0;;bash;main \xc3\xa9t\xc3\xa9 3\n1;c1;java;f_[j] 2";
    pp_upload_item it = {.start = 60,
                         .end = 120,
                         .spawn = 30,
                         .cpu_avg = 12.5,
                         .mem_avg = NAN,
                         .frequency = 11,
                         .text = col,
                         .len = strlen(col)};
    json_t *gpid = json_integer(42);
    size_t len;
    char *body = pp_studio_body(&it, "host1", gpid, &len);
    size_t zlen, ulen;
    unsigned char *gz = pp_gzip(body, len, 6, &zlen);
    cr_assert(gz && zlen > 18 && gz[0] == 0x1f && gz[1] == 0x8b);
    char *plain = gunzip(gz, zlen, &ulen);
    cr_assert_eq(ulen, len);
    cr_assert_eq(memcmp(plain, body, len), 0);
    json_t *o = json_loadb(plain, ulen, 0, NULL);
    cr_assert(json_is_object(o));
    const char *keys[] = {"start_time", "end_time", "hostname",   "profile",
                          "cpu_avg",    "mem_avg",  "spawn_time", "gpid"};
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) cr_assert_str_eq(k, keys[i++], "key order");
    cr_assert_eq(i, 8);
    cr_assert_str_eq(json_string_value(json_object_get(o, "start_time")), "1970-01-01T00:01:00");
    cr_assert_str_eq(json_string_value(json_object_get(o, "end_time")), "1970-01-01T00:02:00");
    cr_assert_str_eq(json_string_value(json_object_get(o, "spawn_time")), "1970-01-01T00:00:30");
    cr_assert_str_eq(json_string_value(json_object_get(o, "hostname")), "host1");
    cr_assert_str_eq(json_string_value(json_object_get(o, "profile")), col);
    cr_assert_float_eq(json_real_value(json_object_get(o, "cpu_avg")), 12.5, 1e-9);
    cr_assert(json_is_null(json_object_get(o, "mem_avg")));
    cr_assert_eq(json_integer_value(json_object_get(o, "gpid")), 42);
    cr_assert(strstr(body, "\xc3\xa9t\xc3\xa9"), "raw UTF-8, as ensure_ascii=False");
    json_decref(o);
    json_decref(gpid);
    free(plain);
    free(gz);
    free(body);
}

Test(studio, invalid_utf8_is_replaced)
{
    /* upload-file sends a file's bytes: each invalid one becomes U+FFFD, as in the .col */
    const char *col = "# {}\nok\xff\xc3(\xe2\x82\xac\xed\xa0\x80z 1";
    pp_upload_item it = {.start = 60, .end = 120, .text = col, .len = strlen(col)};
    size_t len;
    char *body = pp_studio_body(&it, "host1", NULL, &len);
    cr_assert_not_null(body);
    cr_assert(pp_utf8_valid(body, len));
    json_t *o = json_loadb(body, len, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(o, "profile")),
                     "# {}\nok\xef\xbf\xbd\xef\xbf\xbd(\xe2\x82\xac\xef\xbf\xbd\xef\xbf\xbd"
                     "\xef\xbf\xbdz 1");
    json_decref(o);
    free(body);
}

Test(pyroscope, body_and_labels_are_utf8)
{
    /* an upload-file's .col may hold any bytes: the body is UTF-8 (U+FFFD) */
    const char *col = "# {\"application_metadata_enabled\": true}\n0;;\xff"
                      "comm;f\xc3 3";
    pp_pyro_body b;
    cr_assert_eq(pp_pyroscope_body(col, strlen(col), &b), 0);
    cr_assert_str_eq(b.text, "\xef\xbf\xbd"
                             "comm;f\xef\xbf\xbd 3\n");
    cr_assert_str_eq(b.comm, "\xef\xbf\xbd"
                             "comm");
    pp_pyroscope_body_free(&b);
    /* a label value cut to 256 bytes is not cut inside a character */
    char v[300];
    memset(v, 'a', 255);
    memcpy(v + 255, "\xe2\x82\xac", 3);
    char *lv = pp_pyroscope_label_value(v, 258);
    cr_assert_eq(strlen(lv), 255);
    free(lv);
}

Test(studio, redact_secret_and_excerpt)
{
    char s[128] = "bad key secret123 in secret123!";
    pp_redact_secret(s, "secret123");
    cr_assert_str_eq(s, "bad key *** in ***!");
    char out[16];
    pp_http_excerpt("  <h1>\n413</h1>\r\n  ", 20, out, sizeof(out));
    cr_assert_str_eq(out, "<h1> 413</h1>");
    cr_assert_eq(pp_http_classify(200), PP_HTTP_OK);
    cr_assert_eq(pp_http_classify(0), PP_HTTP_RETRY);
    cr_assert_eq(pp_http_classify(500), PP_HTTP_RETRY);
    cr_assert_eq(pp_http_classify(429), PP_HTTP_RETRY);
    cr_assert_eq(pp_http_classify(408), PP_HTTP_RETRY);
    cr_assert_eq(pp_http_classify(413), PP_HTTP_TOO_LARGE);
    cr_assert_eq(pp_http_classify(400), PP_HTTP_REJECTED);
    cr_assert_eq(pp_http_classify(422), PP_HTTP_REJECTED);
    cr_assert_eq(pp_http_classify(411), PP_HTTP_REJECTED);
}

/* ---- upload-file ---- */

Test(upload_file, header_merge_as_gprofiler)
{
    const char *file = "# {\"metadata\": {\"hostname\": \"old\", \"x\": 1}, \"run_arguments\": "
                       "{\"a\": 1}, \"start_time\": \"2024-01-02T03:04:05\", \"end_time\": "
                       "\"2024-01-02T03:05:05.123456\", \"hostname\": \"filehost\"}\n"
                       "0;;bash;main 5  \r\n\n0;;sh;x 2\t\n";
    json_t *fresh = json_pack("{s:s,s:s,s:{s:s,s:i,s:s},s:{s:i}}", "hostname", "fresh",
                              "agent_version", "1.57.1", "run_arguments", "func", "<fn>", "b", 2,
                              "c", "keep", "metadata", "y", 2);
    time_t start = 7, end = 7;
    size_t len;
    char err[256];
    char *out =
        pp_studio_merge_file(file, strlen(file), fresh, &start, &end, &len, err, sizeof(err));
    cr_assert(out, "%s", err);
    cr_assert_eq(len, strlen(out));
    cr_assert_eq(start, 1704164645);
    cr_assert_eq(end, 1704164705);
    char *nl = strchr(out, '\n');
    cr_assert_str_eq(nl, "\n0;;bash;main 5\n\n0;;sh;x 2", "stack lines right-stripped");
    cr_assert_eq(strncmp(out, "# {", 3), 0);
    json_t *h = json_loadb(out + 2, (size_t)(nl - out - 2), 0, NULL);
    cr_assert(json_is_object(h));
    cr_assert_str_eq(json_string_value(json_object_get(h, "hostname")), "filehost", "file wins");
    cr_assert_str_eq(json_string_value(json_object_get(h, "agent_version")), "1.57.1");
    json_t *ra = json_object_get(h, "run_arguments");
    cr_assert_null(json_object_get(ra, "func"), "run_arguments.func removed");
    cr_assert_eq(json_integer_value(json_object_get(ra, "a")), 1);
    cr_assert_eq(json_integer_value(json_object_get(ra, "b")), 2, "deep merge");
    json_t *md = json_object_get(h, "metadata");
    cr_assert_eq(json_integer_value(json_object_get(md, "x")), 1);
    cr_assert_eq(json_integer_value(json_object_get(md, "y")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(md, "hostname")), "old");
    /* gProfiler's json.dumps separators */
    cr_assert(strstr(out, "\"hostname\": \"fresh\"") == NULL);
    cr_assert(strstr(out, "\"agent_version\": \"1.57.1\", "));
    json_decref(h);
    free(out);

    /* not a .col */
    cr_assert_null(
        pp_studio_merge_file("0;;a 1\n", 7, fresh, &start, &end, &len, err, sizeof(err)));
    cr_assert(strstr(err, "header"), "%s", err);
    cr_assert_null(pp_studio_merge_file("#{bad\n", 6, fresh, &start, &end, &len, err, sizeof(err)));
    /* no times in the file: left alone */
    start = end = 9;
    out = pp_studio_merge_file("# {}", 4, fresh, &start, &end, &len, err, sizeof(err));
    cr_assert(out);
    cr_assert_eq(start, 9);
    free(out);
    json_decref(fresh);
}

/* ---- Pyroscope ---- */

Test(pyroscope, names_and_labels)
{
    char *a = pp_pyroscope_app_name("my.svc");
    cr_assert_str_eq(a, "my.svc.cpu");
    free(a);
    a = pp_pyroscope_app_name("team a/b:c{}");
    cr_assert_str_eq(a, "team_a/b_c__.cpu");
    free(a);
    a = pp_pyroscope_app_name(NULL);
    cr_assert_str_eq(a, "polyprof.cpu");
    free(a);
    char *v = pp_pyroscope_label_value("  k8s_a,b}{c=d\"e\n ", 18);
    cr_assert_str_eq(v, "k8s_a_b__c_d_e");
    free(v);
}

Test(pyroscope, one_body_per_session_comm_root_frame_container_above_it)
{
    const char *col =
        "# {\"application_metadata_enabled\": true, \"metadata\": {\"run_arguments\": "
        "{\"profile_api_version\": null}}}\n"
        "0;;bash;main;work 5\n"
        "1;web,1;java;Main.run_[j];x 7\n"
        "0;;bash;main;other 2\n"
        "1;web,1;java;GC;native 1\n"
        "2;;py;a_[p] 0\n"
        "bad line\n"
        "3;;sh 4";
    pp_pyro_body b;
    cr_assert_eq(pp_pyroscope_body(col, strlen(col), &b), 0);
    cr_assert_str_eq(b.text, "bash;main;work 5\n"
                             "web,1;java;Main.run_[j];x 7\n"
                             "bash;main;other 2\n"
                             "web,1;java;GC;native 1\n"
                             "sh 4\n");
    cr_assert_eq(b.len, strlen(b.text));
    cr_assert_eq(b.lines, 5);
    cr_assert_eq(b.samples, 19);
    cr_assert_null(b.comm, "several comms: no comm label");
    cr_assert_null(b.container, "several containers (and none): no container label");
    char *url = pp_pyroscope_url("http://p:4040", "my.svc.cpu", "h1", &b, 100, 160, 11);
    cr_assert_str_eq(url, "http://p:4040/ingest?name=my.svc.cpu%7Bhostname%3Dh1%7D&from=100"
                          "&until=160&sampleRate=11&spyName=polyprof&format=folded");
    free(url);
    pp_pyroscope_body_free(&b);

    /* one comm in one container: both become labels (the body is the same shape) */
    const char *one = "# {\"application_metadata_enabled\": true}\n"
                      "4;web,1;java;Main.run_[j];x 7\n"
                      "5;web,1;java;GC 1\n";
    cr_assert_eq(pp_pyroscope_body(one, strlen(one), &b), 0);
    cr_assert_str_eq(b.text, "web,1;java;Main.run_[j];x 7\nweb,1;java;GC 1\n");
    cr_assert_str_eq(b.comm, "java");
    cr_assert_str_eq(b.container, "web,1");
    url = pp_pyroscope_url("http://p:4040", "s.cpu", "h1", &b, 100, 160, 11);
    cr_assert(strstr(url, "name=s.cpu%7Bhostname%3Dh1%2Ccomm%3Djava%2Ccontainer%3Dweb_1%7D&"), "%s",
              url);
    free(url);
    pp_pyroscope_body_free(&b);

    /* v1 profile: no prefix frames; one comm outside containers: a comm label only */
    const char *v1 = "# {\"application_metadata_enabled\": true, \"metadata\": {\"run_arguments\": "
                     "{\"profile_api_version\": \"v1\"}}}\nbash;main 3\nbash;x 1";
    cr_assert_eq(pp_pyroscope_body(v1, strlen(v1), &b), 0);
    cr_assert_str_eq(b.text, "bash;main 3\nbash;x 1\n");
    cr_assert_str_eq(b.comm, "bash");
    cr_assert_null(b.container);
    pp_pyroscope_body_free(&b);

    /* no stacks: an empty body, nothing to send */
    const char *none = "# {}\n0;;idle 0\n";
    cr_assert_eq(pp_pyroscope_body(none, strlen(none), &b), 0);
    cr_assert_eq(b.len, 0);
    cr_assert_null(b.text);
    pp_pyroscope_body_free(&b);
}

Test(pyroscope, long_stacks_are_cut_below_64k)
{
    size_t frames = 20000;
    char *col = malloc(frames * 4 + 64);
    size_t o = (size_t)sprintf(col, "0;;c");
    for (size_t i = 0; i < frames; i++)
        o += (size_t)sprintf(col + o, ";f%zu", i % 10);
    o += (size_t)sprintf(col + o, " 9");
    pp_pyro_body b;
    cr_assert_eq(pp_pyroscope_body(col, o, &b), 0);
    cr_assert(b.len < 65536);
    cr_assert(strstr(b.text, ";[truncated] 9\n"));
    pp_pyroscope_body_free(&b);
    free(col);
}

Test(pyroscope, stacks_that_differ_only_in_the_stripped_prefix_are_summed)
{
    /* Two workers of one program with different application metadata: two .col lines, one
     * folded stack once the index frame is stripped. */
    const char *col = "# {\"application_metadata_enabled\": true}\n"
                      "1;;gunicorn;main;work 5\n"
                      "2;;gunicorn;main;work 3\n"
                      "1;;gunicorn;main;idle 1";
    pp_pyro_body b;
    cr_assert_eq(pp_pyroscope_body(col, strlen(col), &b), 0);
    cr_assert_str_eq(b.text, "gunicorn;main;work 8\ngunicorn;main;idle 1\n");
    cr_assert_eq(b.samples, 9);
    pp_pyroscope_body_free(&b);
}
