/* Unit tests: the HTML flame graph page. The profile is embedded as JSON inside a script
 * element: whatever a frame, a comm or the header holds, it must not end that element (no
 * "</script"), open an HTML comment ("<!--"), or change what the page reads back. */
#include "tests/unit/testutil.h"

#include <jansson.h>

#include "merge/html.h"
#include "tests/unit/pagedata.h"

TestSuite(html, .init = pp_test_quiet_log);

static const pp_render_opts v2 = {.app_metadata_enabled = true};

static size_t count_of(const char *s, size_t len, const char *needle)
{
    size_t n = 0, nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        n += memcmp(s + i, needle, nl) == 0;
    return n;
}

static char *render(const char *col, const pp_render_opts *o, size_t *len)
{
    char *page = pp_html_render(col, strlen(col), o, len);
    cr_assert_not_null(page);
    cr_assert_eq(strlen(page), *len);
    return page;
}

Test(html, hostile_strings_stay_inside_the_data)
{
    const char *col =
        "# {\"metadata\": {\"hostname\": \"h</script><script>alert(1)</script>\", "
        "\"x\": \"<!--<script>\"}, \"sampling_frequency\": 11}\n"
        "0;;</script>;main;a</ScRiPt><!--b;x&y>z 3\n"
        "1;ctr;comm;appid: \"q\\;\\u2028\xe2\x80\xa8;caf\xc3\xa9 \xf0\x9f\x98\x80;bad\xff\xc3 2";
    size_t len, elen;
    char *page = render(col, &v2, &len);
    char *empty = render("", &v2, &elen);
    /* The page's own markup only: as many script ends and comment starts as an empty page. */
    cr_assert_eq(count_of(page, len, "</script"), count_of(empty, elen, "</script"));
    cr_assert_eq(count_of(page, len, "</ScRiPt"), 0);
    cr_assert_eq(count_of(page, len, "<!--"), count_of(empty, elen, "<!--"));
    cr_assert_eq(count_of(page, len, "<script>alert"), 0);

    /* What the page reads back is what the .col holds (invalid UTF-8 as U+FFFD). */
    json_t *d = pp_test_page_data(page);
    json_t *h = json_object_get(d, "header");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(h, "metadata"), "hostname")),
                     "h</script><script>alert(1)</script>");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(h, "metadata"), "x")),
                     "<!--<script>");
    char buf[512];
    cr_assert_eq(json_array_size(json_object_get(d, "stacks")), 2);
    pp_test_page_stack(d, "stacks", 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "3:</script>;main;a</ScRiPt><!--b;x&y>z");
    pp_test_page_stack(d, "stacks", 1, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2:comm;appid: \"q\\;\\u2028\xe2\x80\xa8;caf\xc3\xa9 \xf0\x9f\x98\x80;"
                          "bad\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(d);
    free(page);
    free(empty);
}

Test(html, prefix_frames_follow_the_render_options)
{
    const char *col = "# {}\n"
                      "# a comment line\n"
                      "7;ctr;comm;f;g 5\n"
                      "7;ctr;comm;f 0\n"
                      "no count here\n"
                      "7;ctr 4";
    pp_render_opts v1 = {.v1 = true}, no_md = {.app_metadata_enabled = false};
    const pp_render_opts *opts[] = {&v2, &no_md, &v1};
    const char *want[] = {"5:comm;f;g", "5:ctr;comm;f;g", "5:7;ctr;comm;f;g"};
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        char *page = render(col, opts[i], &len);
        json_t *d = pp_test_page_data(page);
        char buf[256];
        pp_test_page_stack(d, "stacks", 0, buf, sizeof(buf));
        cr_expect_str_eq(buf, want[i]);
        /* zero counts, lines without a count and, with the prefix dropped, empty stacks go */
        cr_expect_eq(json_array_size(json_object_get(d, "stacks")), i == 0 ? 1 : 2, "opts %zu", i);
        json_decref(d);
        free(page);
    }
}

Test(html, header_that_does_not_parse_is_empty)
{
    size_t len;
    char *page = render("# {not json\n0;;c;f 1", &v2, &len);
    json_t *d = pp_test_page_data(page);
    cr_assert(json_is_object(json_object_get(d, "header")));
    cr_assert_eq(json_object_size(json_object_get(d, "header")), 0);
    cr_assert_eq(json_array_size(json_object_get(d, "stacks")), 1);
    json_decref(d);
    cr_assert(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    cr_assert_null(strstr(page, "{{POLYPROF_DATA}}"), "placeholder replaced");
    free(page);
}
