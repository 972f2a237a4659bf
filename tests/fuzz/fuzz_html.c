/* libFuzzer target for the flame graph page (merge/html.c): any .col text (header line, stack
 * lines, with any bytes in them) renders, and whatever it holds stays inside the page's data
 * element as JSON the page can parse. The first byte picks the render options. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge/html.h"

#define DATA_OPEN "<script type=\"application/json\" id=\"pp-data\">"

static size_t count_of(const char *s, size_t len, const char *needle)
{
    size_t n = 0, nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        n += memcmp(s + i, needle, nl) == 0;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static size_t script_ends = (size_t)-1, comments;
    pp_render_opts o = {.app_metadata_enabled = true};
    size_t len;
    if (script_ends == (size_t)-1) {
        char *empty = pp_html_render("", 0, &o, &len);
        if (!empty)
            abort();
        script_ends = count_of(empty, len, "</script");
        comments = count_of(empty, len, "<!--");
        free(empty);
    }
    if (size < 1)
        return 0;
    o.v1 = data[0] & 1;
    o.app_metadata_enabled = data[0] & 2;
    char *page = pp_html_render((const char *)data + 1, size - 1, &o, &len);
    if (!page)
        return 0; /* out of memory */
    if (count_of(page, len, "</script") != script_ends || count_of(page, len, "<!--") != comments)
        abort(); /* the data escaped its element */
    const char *open = strstr(page, DATA_OPEN);
    const char *close = open ? strstr(open, "</script>") : NULL;
    if (!close)
        abort();
    open += strlen(DATA_OPEN);
    for (const char *p = open; p < close; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            abort(); /* not plain ASCII */
    /* Read as the page's JSON.parse reads it: \u0000 is valid, and every number is a double (a
     * .col count may be any uint64, beyond jansson's int64 integers) */
    json_t *d =
        json_loadb(open, (size_t)(close - open), JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
    if (!d || !json_is_array(json_object_get(d, "stacks")) ||
        !json_is_array(json_object_get(d, "names")))
        abort();
    json_decref(d);
    free(page);
    return 0;
}
