/* Unit tests: string interning, per-pid stack tables, .col rendering and the header. */
#include "tests/unit/testutil.h"

#include <jansson.h>

#include "merge/collapsed.h"
#include "merge/header.h"
#include "merge/profile.h"
#include "merge/strtab.h"
#include "base/utf8.h"

TestSuite(merge, .init = pp_test_quiet_log);

Test(merge, strtab_interns_once)
{
    pp_strtab *t = pp_strtab_new();
    cr_assert_eq(pp_strtab_intern_cstr(t, ""), 0);
    uint32_t a = pp_strtab_intern_cstr(t, "main");
    uint32_t b = pp_strtab_intern_cstr(t, "foo");
    cr_assert_neq(a, b);
    cr_assert_eq(pp_strtab_intern_cstr(t, "main"), a);
    cr_assert_str_eq(pp_strtab_get(t, b), "foo");
    cr_assert_eq(pp_strtab_len(t, a), 4);
    /* Growth past the initial index keeps every id stable. */
    char buf[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(buf, sizeof(buf), "f%d", i);
        pp_strtab_intern_cstr(t, buf);
    }
    cr_assert_eq(pp_strtab_count(t), 20003);
    cr_assert_eq(pp_strtab_intern_cstr(t, "main"), a);
    cr_assert_str_eq(pp_strtab_get(t, pp_strtab_intern_cstr(t, "f12345")), "f12345");
    cr_assert_str_eq(pp_strtab_get(t, 999999), "");
    pp_strtab_free(t);
}

Test(merge, identical_stacks_are_summed_in_first_seen_order)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 42, true);
    cr_assert_not_null(pp);
    cr_assert_eq(pp_profile_get(p, 42, false), pp);
    cr_assert_null(pp_profile_get(p, 43, false));
    uint32_t a = pp_profile_intern(p, "a"), b = pp_profile_intern(p, "b");
    uint32_t s1[] = {a, b}, s2[] = {a};
    pp_pid_add(pp, s1, 2, 3);
    pp_pid_add(pp, s2, 1, 1);
    pp_pid_add(pp, s1, 2, 4);
    cr_assert_eq(pp_pid_nstacks(pp), 2);
    cr_assert_eq(pp_pid_total(pp), 8);
    size_t n;
    uint64_t c;
    const uint32_t *f = pp_pid_stack(pp, 0, &n, &c);
    cr_assert_eq(n, 2);
    cr_assert_eq(c, 7);
    cr_assert_eq(f[1], b);
    pp_pid_set_count(pp, 0, 2);
    cr_assert_eq(pp_pid_total(pp), 3);
    pp_profile_free(p);
}

Test(merge, many_pids_and_removal_keep_order)
{
    pp_profile *p = pp_profile_new();
    for (int pid = 1; pid <= 500; pid++)
        cr_assert_not_null(pp_profile_get(p, pid * 7, true));
    cr_assert_eq(pp_profile_npids(p), 500);
    pp_profile_remove(p, 7 * 10);
    cr_assert_eq(pp_profile_npids(p), 499);
    cr_assert_null(pp_profile_get(p, 70, false));
    cr_assert_eq(pp_profile_at(p, 9)->pid, 77);
    cr_assert_eq(pp_profile_get(p, 77, false), pp_profile_at(p, 9));
    pp_profile_free(p);
}

Test(merge, add_all_reinterns_between_profiles)
{
    pp_profile *src = pp_profile_new(), *dst = pp_profile_new();
    pp_profile_intern(dst, "unrelated");
    pp_pid_profile *s = pp_profile_get(src, 1, true);
    uint32_t st[] = {pp_profile_intern(src, "x"), pp_profile_intern(src, "y")};
    pp_pid_add(s, st, 2, 5);
    pp_pid_profile *d = pp_profile_get(dst, 1, true);
    cr_assert_eq(pp_pid_add_all(dst, d, src, s), 0);
    size_t n;
    uint64_t c;
    const uint32_t *f = pp_pid_stack(d, 0, &n, &c);
    cr_assert_eq(c, 5);
    cr_assert_str_eq(pp_profile_str(dst, f[0]), "x");
    cr_assert_str_eq(pp_profile_str(dst, f[1]), "y");
    pp_profile_free(src);
    pp_profile_free(dst);
}

static pp_profile *sample_profile(void)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *a = pp_profile_get(p, 0, true);
    a->comm = pp_profile_intern(p, "swapper");
    uint32_t idle[] = {pp_profile_intern(p, "do_idle_[k]")};
    pp_pid_add(a, idle, 1, 10);
    pp_pid_profile *b = pp_profile_get(p, 100, true);
    b->comm = pp_profile_intern(p, "py;thon");
    b->container = pp_profile_intern(p, "app1");
    b->appid = pp_profile_intern(p, "python: x.py (/x.py)");
    b->app_metadata = json_pack("{s:s}", "python_version", "Python 3.11.2");
    uint32_t st[] = {pp_profile_intern(p, "main (x.py:1)_[p]"),
                     pp_profile_intern(p, "f(Ljava/lang/String;)V\n_[j]")};
    pp_pid_add(b, st, 2, 3);
    uint32_t zero[] = {st[0]};
    pp_pid_add(b, zero, 1, 0);
    pp_pid_profile *c = pp_profile_get(p, 101, true);
    c->comm = pp_profile_intern(p, "python");
    c->app_metadata = json_pack("{s:s}", "python_version", "Python 3.11.2");
    pp_pid_add(c, zero, 1, 2);
    return p;
}

Test(merge, render_col_format)
{
    pp_profile *p = sample_profile();
    pp_header_info hi = {.profiling_mode = "cpu",
                         .frequency = 11,
                         .current_time = 0,
                         .container_names_enabled = true,
                         .app_metadata_enabled = true};
    json_t *h = pp_header_build(&hi);
    pp_render_opts o = {.app_metadata_enabled = true, .appids_enabled = true};
    size_t len;
    char *text = pp_col_render(p, h, &o, &len);
    cr_assert_not_null(text);
    cr_assert_eq(strlen(text), len);
    cr_assert_neq(text[len - 1], '\n', "no trailing newline");
    char *nl = strchr(text, '\n');
    cr_assert_not_null(nl);
    cr_assert(
        strncmp(text, "# {\"containers\": [\"app1\"], \"container_names_enabled\": true", 58) == 0);
    cr_assert_str_eq(nl + 1, "0;;swapper;do_idle_[k] 10\n"
                             "1;app1;py|thon;appid: python: x.py (/x.py);main (x.py:1)_[p];"
                             "f(Ljava/lang/String|)V?_[j] 3\n"
                             "1;;python;main (x.py:1)_[p] 2");
    json_error_t je;
    *nl = '\0';
    json_t *parsed = json_loads(text + 2, 0, &je);
    cr_assert_not_null(parsed, "header parses: %s", je.text);
    json_t *apps = json_object_get(parsed, "application_metadata");
    cr_assert_eq(json_array_size(apps), 2);
    cr_assert(json_is_null(json_array_get(apps, 0)));
    const char *keys[] = {"containers",
                          "container_names_enabled",
                          "metadata",
                          "metrics",
                          "application_metadata",
                          "application_metadata_enabled",
                          "profiling_mode",
                          "hwmetrics",
                          "htmlblob",
                          "flamegraph_html",
                          "sampling_event",
                          "sampling_mode",
                          "sampling_frequency"};
    const char *k;
    json_t *v;
    size_t i = 0;
    json_object_foreach(parsed, k, v)
    {
        if (i < sizeof(keys) / sizeof(*keys))
            cr_assert_str_eq(k, keys[i], "key %zu is %s", i, k);
        i++;
    }
    cr_assert_eq(i, sizeof(keys) / sizeof(*keys));
    json_decref(parsed);
    free(text);
    json_decref(h);
    pp_profile_free(p);
}

Test(merge, render_v1_and_disabled_identifiers)
{
    pp_profile *p = sample_profile();
    pp_header_info hi = {.profiling_mode = "cpu", .frequency = 11};
    json_t *h = pp_header_build(&hi);
    pp_render_opts o = {.v1 = true, .app_metadata_enabled = true, .appids_enabled = false};
    size_t len;
    char *text = pp_col_render(p, h, &o, &len);
    cr_assert_str_eq(strchr(text, '\n') + 1,
                     "swapper;do_idle_[k] 10\n"
                     "py|thon;main (x.py:1)_[p];f(Ljava/lang/String|)V?_[j] 3\n"
                     "python;main (x.py:1)_[p] 2");
    free(text);
    o = (pp_render_opts){.app_metadata_enabled = false, .appids_enabled = true};
    text = pp_col_render(p, h, &o, &len);
    cr_assert(strstr(text, "\n;swapper;do_idle_[k] 10\n") != NULL);
    free(text);
    json_decref(h);
    pp_profile_free(p);
}

Test(merge, header_metrics_null_when_disabled)
{
    pp_header_info hi = {.profiling_mode = "cpu", .frequency = 99, .metrics_enabled = false};
    json_t *h = pp_header_build(&hi);
    char *s = pp_header_dump(json_object_get(h, "metrics"));
    cr_assert_str_eq(s, "{\"cpu_avg\": null, \"mem_avg\": null}");
    free(s);
    json_t *md = json_object_get(h, "metadata");
    cr_assert_str_eq(json_string_value(json_object_get(md, "current_time")), "1970-01-01T00:00:00");
    cr_assert_eq(json_integer_value(json_object_get(md, "sampling_frequency")), 99);
    json_decref(h);
}

Test(merge, split_count_takes_last_token)
{
    size_t sl;
    unsigned long long c;
    const char *l = "a;b c;d 12\n";
    cr_assert_eq(pp_col_split_count(l, strlen(l), &sl, &c), 0);
    cr_assert_eq(c, 12);
    cr_assert_eq(sl, 7);
    cr_assert_eq(pp_col_split_count("abc", 3, &sl, &c), -1);
    cr_assert_eq(pp_col_split_count("a b", 3, &sl, &c), -1);
    cr_assert_eq(pp_col_split_count("a 99999999999999999999999", 25, &sl, &c), -1);
    cr_assert_eq(pp_col_split_count("a ", 2, &sl, &c), -1);
    /* a line that is only a count has no stack: refused (a split at 0 would make its length -1) */
    cr_assert_eq(pp_col_split_count("12", 2, &sl, &c), -1);
}

Test(merge, render_writes_each_stack_once)
{
    pp_profile *p = pp_profile_new();
    uint32_t f[2] = {pp_profile_intern(p, "main"), pp_profile_intern(p, "work")};
    uint32_t g[1] = {pp_profile_intern(p, "a;b")};
    uint32_t h[1] = {pp_profile_intern(p, "a|b")}; /* escapes to the same text as g */
    for (int pid = 10; pid < 14; pid++) {          /* four workers of one program */
        pp_pid_profile *pp = pp_profile_get(p, pid, true);
        pp->comm = pp_profile_intern(p, "worker");
        pp_pid_add(pp, f, 2, (uint64_t)pid);
        pp_pid_add(pp, pid % 2 ? g : h, 1, 1);
    }
    pp_pid_profile *other = pp_profile_get(p, 20, true);
    other->comm = pp_profile_intern(p, "other");
    pp_pid_add(other, f, 2, 5);
    pp_header_info hi = {.profiling_mode = "cpu", .frequency = 11};
    json_t *hd = pp_header_build(&hi);
    pp_render_opts o = {.app_metadata_enabled = true, .appids_enabled = true};
    size_t len;
    char *text = pp_col_render(p, hd, &o, &len);
    cr_assert_not_null(text);
    cr_assert_str_eq(strchr(text, '\n') + 1, "0;;worker;main;work 46\n"
                                             "0;;worker;a|b 4\n"
                                             "0;;other;main;work 5");
    free(text);
    json_decref(hd);
    pp_profile_free(p);
}

Test(merge, render_col_is_utf8_whatever_the_bytes)
{
    /* comm, container and frames are bytes other processes chose (a comm of 0xff bytes, a
     * truncated sequence, an overlong form, a surrogate): each invalid byte becomes U+FFFD,
     * valid characters stay */
    pp_profile *p = pp_profile_new();
    pp_pid_profile *a = pp_profile_get(p, 7, true);
    a->comm = pp_profile_intern(p, "\xff\xfe"
                                   "bad\xc3");
    a->container = pp_profile_intern(p, "c\x80");
    uint32_t st[] = {pp_profile_intern(p, "f\xe2\x82\xac\xc0\xaf_[p]"),
                     pp_profile_intern(p, "g\xed\xa0\x80;\xe2\x82")};
    pp_pid_add(a, st, 2, 4);
    pp_header_info hi = {.profiling_mode = "cpu", .frequency = 11, .container_names_enabled = true};
    json_t *h = pp_header_build(&hi);
    pp_render_opts o = {0};
    size_t len;
    char *text = pp_col_render(p, h, &o, &len);
    cr_assert_not_null(text);
    char *nl = strchr(text, '\n');
    cr_assert_not_null(nl);
    cr_assert_str_eq(nl + 1, "c\xef\xbf\xbd;\xef\xbf\xbd\xef\xbf\xbd"
                             "bad\xef\xbf\xbd;f\xe2\x82\xac\xef\xbf\xbd\xef\xbf\xbd_[p];"
                             "g\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd 4");
    cr_assert(pp_utf8_valid(text, len), "the whole .col is UTF-8");
    *nl = '\0';
    json_t *parsed = json_loads(text + 2, 0, NULL);
    cr_assert_not_null(parsed);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(parsed, "containers"), 0)),
                     "c\xef\xbf\xbd", "the header's container names too");
    json_decref(parsed);
    free(text);
    json_decref(h);
    pp_profile_free(p);
}
