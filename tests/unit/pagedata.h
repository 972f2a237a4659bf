/* Reading back the data of a flame graph page (merge/html.c) in unit tests: the JSON in its
 * pp-data element and its stacks as text. */
#ifndef PP_TEST_PAGEDATA_H
#define PP_TEST_PAGEDATA_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define PP_TEST_DATA_OPEN "<script type=\"application/json\" id=\"pp-data\">"

/* The JSON in the pp-data element of page (new reference), checking it is plain ASCII. */
static inline json_t *pp_test_page_data(const char *page)
{
    const char *open = strstr(page, PP_TEST_DATA_OPEN);
    cr_assert_not_null(open);
    open += strlen(PP_TEST_DATA_OPEN);
    const char *close = strstr(open, "</script>");
    cr_assert_not_null(close);
    for (const char *p = open; p < close; p++)
        cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "byte %#x at %zd",
                  (unsigned char)*p, p - open);
    json_error_t err;
    json_t *d = json_loadb(open, (size_t)(close - open), 0, &err);
    cr_assert_not_null(d, "%s", err.text);
    return d;
}

/* Stack i of the page data's array key ("stacks", "base_stacks") as "count:frame;frame;...". */
static inline void pp_test_page_stack(json_t *d, const char *key, size_t i, char *buf, size_t len)
{
    json_t *st = json_array_get(json_object_get(d, key), i);
    json_t *names = json_object_get(d, "names");
    cr_assert(json_is_array(st), "%s[%zu]", key, i);
    size_t n = (size_t)snprintf(buf, len, "%lld:", json_integer_value(json_array_get(st, 0)));
    for (size_t k = 1; k < json_array_size(st); k++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", k > 1 ? ";" : "",
                              json_string_value(json_array_get(
                                  names, (size_t)json_integer_value(json_array_get(st, k)))));
}

#endif
