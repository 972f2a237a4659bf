/* Unit tests: `polyprof diff` (merge/diff.c, orchestrator/diff_cmd.c). Two collapsed profiles
 * are compared by each function's share of its own profile's samples (inclusive, a stack
 * counted once however often it recurses); the app-metadata index is ignored, the container
 * and comm kept; anything that is not a profile is refused with the line and the reason. */
#include "tests/unit/testutil.h"

#include <jansson.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge/diff.h"
#include "orchestrator/diff_cmd.h"
#include "tests/unit/pagedata.h"

TestSuite(diff, .init = pp_test_quiet_log);

#define V2 "# {\"application_metadata_enabled\": true}\n"

static pp_stackset *parse(const char *col)
{
    pp_stackset *s = pp_stackset_new();
    char err[512] = "";
    cr_assert_not_null(s);
    int rc = pp_stackset_parse_col(s, col, strlen(col), err, sizeof(err));
    cr_assert_eq(rc, 0, "parse: %d %s", rc, err);
    return s;
}

/* Two profiles and their comparison. */
typedef struct compared {
    pp_stackset *b, *t;
    pp_diff *d;
} compared;

static compared compare(const char *base, const char *target)
{
    compared c = {parse(base), parse(target), NULL};
    c.d = pp_diff_compute(c.b, c.t);
    cr_assert_not_null(c.d);
    return c;
}

static void compared_free(compared *c)
{
    pp_diff_free(c->d);
    pp_stackset_free(c->b);
    pp_stackset_free(c->t);
}

/* Every byte of an error is printable ASCII (it is printed on a terminal). */
static bool printable_ascii(const char *e)
{
    for (; *e; e++)
        if ((unsigned char)*e < 0x20 || (unsigned char)*e >= 0x7f)
            return false;
    return true;
}

/* The parse error of the C string col (which must be refused as not a profile). */
#define REFUSED(col, want) refused(col, sizeof(col) - 1, want)

/* The parse error of col (which must be refused as not a profile). */
static void refused(const char *col, size_t len, const char *want)
{
    pp_stackset *s = pp_stackset_new();
    char err[512] = "";
    int rc = pp_stackset_parse_col(s, col, len, err, sizeof(err));
    cr_assert_eq(rc, -2, "accepted %.*s", (int)len, col);
    cr_assert(strstr(err, want), "error %s, wanted %s", err, want);
    cr_assert(printable_ascii(err), "error not printable: %s", err);
    pp_stackset_free(s);
}

/* The row of name in rows[0..n), or NULL. */
static const pp_diff_row *row(const pp_diff_row *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* The count of stack in s (0 when absent). */
static uint64_t stack_count(const pp_stackset *s, const char *stack)
{
    for (size_t i = 0; i < pp_stackset_size(s); i++) {
        size_t len;
        uint64_t c;
        const char *st = pp_stackset_get(s, i, &len, &c);
        if (strcmp(st, stack) == 0)
            return c;
    }
    return 0;
}

Test(diff, shares_and_deltas_normalised_by_each_total)
{
    /* base: 100 samples, hot_a 50 %, hot_b 50 %; target: 1000, hot_a 90 %, hot_b 10 % */
    compared c = compare(V2 "0;;app;main;hot_a 50\n0;;app;main;hot_b 50",
                         V2 "0;;app;main;hot_a 900\n0;;app;main;hot_b 100");
    pp_diff *d = c.d;
    cr_assert_eq(pp_stackset_total(c.b), 100);
    cr_assert_eq(pp_stackset_total(c.t), 1000);
    cr_assert_not_null(d);
    size_t ng, ns;
    const pp_diff_row *g = pp_diff_grew(d, 10, &ng), *s = pp_diff_shrank(d, 10, &ns);
    cr_assert_eq(ng, 1);
    cr_assert_eq(ns, 1);
    cr_assert_str_eq(g[0].name, "hot_a");
    cr_assert_eq(g[0].base, 50);
    cr_assert_eq(g[0].target, 900);
    cr_assert_float_eq(g[0].base_share, 0.5, 1e-12);
    cr_assert_float_eq(g[0].target_share, 0.9, 1e-12);
    cr_assert_float_eq(g[0].delta, 0.4, 1e-12);
    cr_assert_str_eq(s[0].name, "hot_b");
    cr_assert_float_eq(s[0].delta, -0.4, 1e-12);
    /* main: 100 % on both sides, no change: in neither table; app (the comm) is no function */
    cr_assert_null(row(g, ng, "main"));
    cr_assert_null(row(s, ns, "main"));
    cr_assert_null(row(g, ng, "app"));
    compared_free(&c);
}

Test(diff, same_proportions_at_other_totals_change_nothing)
{
    compared c = compare(V2 "0;;app;f;g 3\n0;;app;f;h 1", V2 "0;;app;f;g 300\n0;;app;f;h 100");
    pp_diff *d = c.d;
    size_t ng, ns;
    pp_diff_grew(d, 10, &ng);
    pp_diff_shrank(d, 10, &ns);
    cr_assert_eq(ng + ns, 0, "a function changed share: %zu grew, %zu shrank", ng, ns);
    compared_free(&c);
}

Test(diff, inclusive_share_counts_a_recursive_stack_once)
{
    compared c =
        compare(V2 "0;;app;rec;rec;rec 10\n0;;app;other 10", V2 "0;;app;rec 10\n0;;app;other 30");
    pp_diff *d = c.d;
    size_t ns;
    const pp_diff_row *s = pp_diff_shrank(d, 10, &ns);
    const pp_diff_row *r = row(s, ns, "rec");
    cr_assert_not_null(r);
    cr_assert_eq(r->base, 10, "rec counted %llu times in 10 samples", (unsigned long long)r->base);
    cr_assert_float_eq(r->base_share, 0.5, 1e-12);
    cr_assert_float_eq(r->target_share, 0.25, 1e-12);
    compared_free(&c);
}

Test(diff, tables_ordered_by_change_then_name_and_cut_at_top)
{
    /* base 100 samples: a 10, b 10, c 10, d 10, e 10, f 40, g 10; target 100: a 25, b 20,
     * c 20, d 5, e 0, f 25, g 5 */
    compared c =
        compare(V2 "0;;p;a 10\n0;;p;b 10\n0;;p;c 10\n0;;p;d 10\n0;;p;e 10\n0;;p;f 40\n0;;p;g 10",
                V2 "0;;p;a 25\n0;;p;c 20\n0;;p;b 20\n0;;p;g 5\n0;;p;d 5\n0;;p;f 25");
    pp_diff *d = c.d;
    size_t ng, ns;
    const pp_diff_row *g = pp_diff_grew(d, 10, &ng), *s = pp_diff_shrank(d, 10, &ns);
    cr_assert_eq(ng, 3);
    cr_assert_str_eq(g[0].name, "a"); /* +15 */
    cr_assert_str_eq(g[1].name, "b"); /* +10, tie with c: by name */
    cr_assert_str_eq(g[2].name, "c");
    cr_assert_eq(ns, 4);
    cr_assert_str_eq(s[0].name, "f"); /* -15 */
    cr_assert_str_eq(s[1].name, "e"); /* -10 */
    cr_assert_str_eq(s[2].name, "d"); /* -5, tie with g: by name */
    cr_assert_str_eq(s[3].name, "g");
    cr_assert_float_eq(s[1].delta, -0.1, 1e-12);
    pp_diff_grew(d, 2, &ng);
    pp_diff_shrank(d, 1, &ns);
    cr_assert_eq(ng, 2);
    cr_assert_eq(ns, 1);
    compared_free(&c);
}

Test(diff, app_metadata_index_ignored_container_and_comm_kept)
{
    pp_stackset *s = parse(V2 "0;;app;f 1\n7;;app;f 2\n12;c1;app;f 4\n3;c2;app;f 8\n0;;other;f 16");
    cr_assert_eq(pp_stackset_size(s), 4, "stacks: %zu", pp_stackset_size(s));
    cr_assert_eq(stack_count(s, ";app;f"), 3, "lines differing by index only are one stack");
    cr_assert_eq(stack_count(s, "c1;app;f"), 4);
    cr_assert_eq(stack_count(s, "c2;app;f"), 8);
    cr_assert_eq(stack_count(s, ";other;f"), 16);
    cr_assert_eq(pp_stackset_total(s), 31);
    cr_assert(strstr(pp_stackset_header(s), "application_metadata_enabled"));
    pp_stackset_free(s);

    /* Without the index (application_metadata_enabled false) the first field is the container */
    s = parse("# {\"application_metadata_enabled\": false}\n7;app;f 2");
    cr_assert_eq(stack_count(s, "7;app;f"), 2);
    pp_stackset_free(s);
}

Test(diff, v1_and_plain_text_have_no_container)
{
    pp_stackset *s = parse("# {\"application_metadata_enabled\": true, \"metadata\": "
                           "{\"run_arguments\": {\"profile_api_version\": \"v1\"}}}\napp;f 2");
    cr_assert_eq(stack_count(s, ";app;f"), 2);
    pp_stackset_free(s);
    s = parse("app;f;g 3\napp;f 1\n");
    cr_assert_eq(stack_count(s, ";app;f;g"), 3);
    cr_assert_eq(stack_count(s, ";app;f"), 1);
    cr_assert_str_eq(pp_stackset_header(s), "");
    pp_stackset_free(s);
}

Test(diff, garbage_refused_with_the_line_and_why)
{
    REFUSED(V2 "0;;app;f 1\nthis is not a stack", "line 3");
    REFUSED(V2 "0;;app;f 1\nthis is not a stack", "no sample count");
    REFUSED("# not json\napp;f 1", "header line is not");
    REFUSED("# [1, 2]\napp;f 1", "header line is not");
    REFUSED(V2 "app;f 1", "no app-metadata index");
    REFUSED(V2 "12345678901234567890123;;app;f 1", "no app-metadata index");
    REFUSED("# {}\nnocontainer 1", "no ';' after the container");
    REFUSED(V2 "0;;a 9007199254740992\n0;;a 1", "more than");
    REFUSED(V2 "0;;a 99999999999999999999999", "no sample count");
    /* binary bytes: an ELF header, NULs included */
    static const char elf[] = "\x7f"
                              "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\x01\0\0\0";
    refused(elf, sizeof(elf) - 1, "line 1 (\"\\x7fELF");
}

Test(diff, names_made_valid_utf8_without_control_characters)
{
    static const char col[] = V2 "0;;a\xff"
                                 "pp;f\x1b[31m;g\0h\x7f 2";
    pp_stackset *s = pp_stackset_new();
    char err[256];
    cr_assert_eq(pp_stackset_parse_col(s, col, sizeof(col) - 1, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(stack_count(s, ";a\xef\xbf\xbdpp;f?[31m;g?h?"), 2);
    pp_stackset_free(s);
}

Test(diff, table_text_lists_grew_then_shrank)
{
    compared c = compare(V2 "0;;app;main;hot_a 50\n0;;app;main;hot_b 50",
                         V2 "0;;app;main;hot_a 75\n0;;app;main;hot_b 25");
    pp_diff *d = c.d;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pp_diff_write_table(d, 5, f);
    fclose(f);
    const char *grew = strstr(text, "Grew (top 5):"), *shrank = strstr(text, "Shrank (top 5):");
    cr_assert(grew && shrank && grew < shrank, "%s", text);
    const char *a = strstr(text, "50.00%    75.00%    +25.00  hot_a\n");
    const char *bb = strstr(text, "50.00%    25.00%    -25.00  hot_b\n");
    cr_assert(a && a > grew && a < shrank, "%s", text);
    cr_assert(bb && bb > shrank, "%s", text);
    cr_assert(strstr(text, "base 100 samples, target 100 samples"), "%s", text);
    free(text);
    compared_free(&c);
}

Test(diff, page_holds_both_profiles_and_the_tables)
{
    compared c = compare(V2 "0;;app;main;hot_a 50\n3;ctr;app;main;hot_b 50",
                         V2 "0;;app;main;hot_a 90\n0;;app;main;</script><!--x 10");
    pp_diff *d = c.d;
    size_t len;
    char *page = pp_diff_render_html(c.b, c.t, d, 3, &len);
    cr_assert_not_null(page);
    cr_assert_eq(strlen(page), len);
    json_t *j = pp_test_page_data(page);
    char buf[256];
    /* the container is dropped as on the normal page; names are shared by both sides */
    pp_test_page_stack(j, "stacks", 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "90:app;main;hot_a");
    pp_test_page_stack(j, "stacks", 1, buf, sizeof(buf));
    cr_assert_str_eq(buf, "10:app;main;</script><!--x");
    pp_test_page_stack(j, "base_stacks", 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "50:app;main;hot_a");
    pp_test_page_stack(j, "base_stacks", 1, buf, sizeof(buf));
    cr_assert_str_eq(buf, "50:app;main;hot_b");
    json_t *df = json_object_get(j, "diff");
    cr_assert_eq(json_integer_value(json_object_get(df, "top")), 3);
    cr_assert_eq(json_integer_value(json_object_get(df, "base_total")), 100);
    cr_assert_eq(json_integer_value(json_object_get(df, "target_total")), 100);
    json_t *g0 = json_array_get(json_object_get(df, "grew"), 0);
    cr_assert_str_eq(json_string_value(json_array_get(g0, 0)), "hot_a");
    cr_assert_eq(json_integer_value(json_array_get(g0, 1)), 50);
    cr_assert_eq(json_integer_value(json_array_get(g0, 2)), 90);
    json_t *s0 = json_array_get(json_object_get(df, "shrank"), 0);
    cr_assert_str_eq(json_string_value(json_array_get(s0, 0)), "hot_b");
    json_decref(j);
    /* the hostile frame never ends the data element: one "</script" per script element */
    size_t ends = 0;
    for (const char *p = page; (p = strstr(p, "</script")); p++)
        ends++;
    cr_assert_eq(ends, 2);
    free(page);
    compared_free(&c);
}

/* pp_diff_main with its output silenced; returns the exit code. */
static int run_diff(const char *a1, const char *a2, const char *a3, const char *a4)
{
    char *argv[] = {"diff", (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
    int argc = 1;
    while (argv[argc])
        argc++;
    fflush(stdout);
    int saved = dup(1), saved_err = dup(2), devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    int rc = pp_diff_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved, 1);
    dup2(saved_err, 2);
    close(saved);
    close(saved_err);
    close(devnull);
    return rc;
}

Test(diff, command_exit_codes_and_page)
{
    char *dir = pp_test_mkdtemp();
    char base[256], target[256], garbage[256], empty[256], out[256], missing[256];
    snprintf(base, sizeof(base), "%s/base.col", dir);
    snprintf(target, sizeof(target), "%s/target.col", dir);
    snprintf(garbage, sizeof(garbage), "%s/garbage.col", dir);
    snprintf(empty, sizeof(empty), "%s/empty.col", dir);
    snprintf(out, sizeof(out), "%s/out.html", dir);
    snprintf(missing, sizeof(missing), "%s/missing.col", dir);
    static const char b[] = V2 "0;;app;f 5", t[] = V2 "0;;app;g 5", e[] = V2;
    pp_test_write_file(base, b, sizeof(b) - 1);
    pp_test_write_file(target, t, sizeof(t) - 1);
    pp_test_write_file(garbage,
                       "\x7f"
                       "ELF\x02\x01",
                       6);
    pp_test_write_file(empty, e, sizeof(e) - 1);
    char huge[256];
    snprintf(huge, sizeof(huge), "%s/huge.col", dir);
    pp_test_write_file(huge, b, sizeof(b) - 1);
    cr_assert_eq(truncate(huge, (off_t)PP_DIFF_MAX_FILE + 1), 0); /* sparse */

    cr_assert_eq(run_diff(base, target, "-o", out), 0);
    char *page = pp_test_read_text(out);
    cr_assert(strstr(page, "\"diff\":{"), "no diff data in the page");
    struct stat ost;
    cr_assert_eq(stat(out, &ost), 0);
    cr_assert_eq(ost.st_mode & 0777, 0600, "the page is private to its writer: %o",
                 (unsigned)(ost.st_mode & 0777));
    cr_assert_eq(run_diff(base, target, "--top", "5"), 0);
    cr_assert_eq(run_diff(base, garbage, NULL, NULL), 2, "garbage is a usage error");
    cr_assert_eq(run_diff(base, "/dev/zero", NULL, NULL), 2, "a device is refused");
    cr_assert_eq(run_diff(huge, target, NULL, NULL), 2, "a huge file is refused");
    cr_assert_eq(run_diff(base, missing, NULL, NULL), 1, "a missing file cannot be read");
    cr_assert_eq(run_diff(base, empty, NULL, NULL), 1, "nothing to compare");
    cr_assert_eq(run_diff(base, NULL, NULL, NULL), 2);
    cr_assert_eq(run_diff(base, target, "--top", "0"), 2);
    cr_assert_eq(run_diff(base, target, "--bogus", NULL), 2);
    cr_assert_eq(run_diff(base, target, target, NULL), 2);
    pp_test_rmtree(dir);
}
