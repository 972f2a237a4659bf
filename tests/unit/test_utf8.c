/* Unit tests: UTF-8 validation and repair (base/utf8.c), the one scheme of every output. */
#include "tests/unit/testutil.h"

#include "base/utf8.h"

#define R "\xef\xbf\xbd"

Test(utf8, valid_text_is_kept_and_each_invalid_byte_becomes_u_fffd)
{
    /* 0xff, a truncated 2-byte sequence, an overlong '/', a surrogate, above U+10FFFF */
    const char *in =
        "ok\xff\xc3(\xe2\x82\xac\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80" R "\xf0\x9f\x98\x80";
    cr_assert_not(pp_utf8_valid(in, strlen(in)));
    size_t len;
    char *out = pp_utf8_sanitized(in, strlen(in), &len);
    cr_assert_str_eq(out, "ok" R R "(\xe2\x82\xac" R R R R R R R R R R "\xf0\x9f\x98\x80");
    cr_assert_eq(len, strlen(out));
    cr_assert(pp_utf8_valid(out, len));
    free(out);
    cr_assert(pp_utf8_valid("plain \xc3\xa9t\xc3\xa9", 11));
    cr_assert_not(pp_utf8_valid("\xe2\x82", 2), "truncated at the end");
}

Test(utf8, bounded_copy_never_splits_a_character)
{
    char out[6];
    cr_assert_eq(pp_utf8_copy(out, sizeof(out), "ab\xe2\x82\xac", 5), 5);
    cr_assert_str_eq(out, "ab\xe2\x82\xac");
    cr_assert_eq(pp_utf8_copy(out, sizeof(out), "abc\xe2\x82\xac", 6), 3, "the euro does not fit");
    cr_assert_str_eq(out, "abc");
    cr_assert_eq(pp_utf8_copy(out, sizeof(out), "a\xff", 2), 4);
    cr_assert_str_eq(out, "a" R);
}

Test(utf8, cut_moves_back_to_the_start_of_a_character)
{
    const char *s = "ab\xe2\x82\xac"
                    "c";
    cr_assert_eq(pp_utf8_cut(s, 6, 10), 6);
    cr_assert_eq(pp_utf8_cut(s, 6, 5), 5);
    cr_assert_eq(pp_utf8_cut(s, 6, 4), 2);
    cr_assert_eq(pp_utf8_cut(s, 6, 3), 2);
    cr_assert_eq(pp_utf8_cut(s, 6, 2), 2);
}
