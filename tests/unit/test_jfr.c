/* Unit tests of the native JFR parser against recordings made by real JVMs (OpenJDK 17 and
 * Temurin 25; tests/fixtures/jfr/make.sh), whose expected collapsed output was computed
 * independently from `jfr print --json` by tests/fixtures/jfr/collapse.py; plus thread
 * filtering, multi-chunk files and malformed input. */
#include "tests/unit/testutil.h"

#include <errno.h>

#include "merge/profile.h"
#include "runtimes/java/jfr.h"

#define FIX "tests/fixtures/jfr/"

TestSuite(jfr, .init = pp_test_quiet_log);

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    b[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "frame;...;leaf count\n" lines of pp, sorted (byte order, like Python's sorted()). */
static char *render(pp_profile *prof, pp_pid_profile *pp)
{
    size_t ns = pp_pid_nstacks(pp), total = 1;
    char **lines = calloc(ns + 1, sizeof(char *));
    for (size_t i = 0; i < ns; i++) {
        size_t n;
        uint64_t count;
        const uint32_t *f = pp_pid_stack(pp, i, &n, &count);
        char *line = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&line, &len);
        for (size_t k = 0; k < n; k++)
            fprintf(m, "%s%s", k ? ";" : "", pp_profile_str(prof, f[k]));
        fprintf(m, " %llu\n", (unsigned long long)count);
        fclose(m);
        lines[i] = line;
        total += len;
    }
    qsort(lines, ns, sizeof(char *), cmp_str);
    char *out = malloc(total);
    out[0] = '\0';
    for (size_t i = 0; i < ns; i++) {
        strcat(out, lines[i]);
        free(lines[i]);
    }
    free(lines);
    return out;
}

static uint64_t count_sum(const char *text)
{
    uint64_t s = 0;
    for (const char *p = text; (p = strchr(p, '\n')); p++) {
        const char *sp = p;
        while (sp > text && sp[-1] != ' ')
            sp--;
        s += strtoull(sp, NULL, 10);
    }
    return s;
}

/* Sum of the counts of the lines that start with "[truncated];". */
static uint64_t count_truncated(const char *text)
{
    uint64_t s = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        if (strncmp(line, "[truncated];", 12) == 0) {
            const char *sp = nl;
            while (sp > line && sp[-1] != ' ')
                sp--;
            s += strtoull(sp, NULL, 10);
        }
        line = nl + 1;
    }
    return s;
}

static void check_fixture(const char *name, int want_truncated)
{
    char path[256], exp_path[256], err[256];
    snprintf(path, sizeof(path), FIX "%s.jfr", name);
    snprintf(exp_path, sizeof(exp_path), FIX "%s.expected", name);
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 7, true);
    pp_jfr_stats st;
    cr_assert_eq(pp_jfr_parse_file(path, NULL, prof, pp, &st, err, sizeof(err)), 0, "%s: %s", name,
                 err);
    char *got = render(prof, pp), *want = slurp(exp_path, NULL);
    cr_assert_str_eq(got, want, "%s: parser output differs from jfr print", name);
    cr_assert_eq(st.chunks, 1);
    cr_assert_eq(st.samples, count_sum(want));
    cr_assert_eq(st.bad, 0);
    cr_assert(st.events >= st.samples);
    if (want_truncated)
        cr_assert(st.truncated > 0 && strstr(got, "[truncated];JfrHot.deep(I)J"));
    else
        cr_assert(st.truncated == 0 && !strstr(got, "[truncated]"));
    cr_assert_eq(st.truncated, count_truncated(want));
    cr_assert(strstr(got, "JfrHot.main([Ljava/lang/String|)V_[0];JfrHot.middle()J_["));
    free(got);
    free(want);
    pp_profile_free(prof);
}

Test(jfr, jdk17_matches_jfr_print)
{
    check_fixture("jdk17", 1);
}

Test(jfr, jdk25_matches_jfr_print)
{
    check_fixture("jdk25", 0);
}

/* settings=profile: every default event type, all skipped generically */
Test(jfr, profile_settings_match_jfr_print)
{
    check_fixture("jdk17-profile", 1);
    check_fixture("jdk25-profile", 1);
}

/* Synthetic chunks (tests/fixtures/jfr/mini.py), checked against `jfr print` too: every string
 * encoding, linked constant pools, padded varints, unresolved stacks and methods; mini_fixed
 * holds the same with fixed-width integers (header feature bit 0 clear). */
Test(jfr, synthetic_chunks)
{
    const char *names[] = {FIX "mini.jfr", FIX "mini_fixed.jfr"};
    char *want = slurp(FIX "mini.expected", NULL), err[256];
    for (int i = 0; i < 2; i++) {
        pp_profile *prof = pp_profile_new();
        pp_pid_profile *pp = pp_profile_get(prof, 7, true);
        pp_jfr_stats st;
        cr_assert_eq(pp_jfr_parse_file(names[i], NULL, prof, pp, &st, err, sizeof(err)), 0,
                     "%s: %s", names[i], err);
        char *got = render(prof, pp);
        cr_assert_str_eq(got, want, "%s", names[i]);
        cr_assert_eq(st.samples, 3);
        cr_assert_eq(st.bad, 2);
        cr_assert_eq(st.truncated, 1);
        cr_assert_eq(st.events, 9); /* 5 samples, 1 other, metadata, 2 constant pools */
        free(got);
        pp_profile_free(prof);
    }
    free(want);
}

static int keep_only(void *arg, long tid)
{
    return tid == *(long *)arg;
}

Test(jfr, keep_tid_filters_threads)
{
    const char *names[] = {"jdk17", "jdk25", "jdk17-profile", "jdk25-profile"};
    for (int i = 0; i < 4; i++) {
        char path[256], err[256];
        snprintf(path, sizeof(path), FIX "%s.tid", names[i]);
        char *t = slurp(path, NULL);
        long tid = strtol(t, NULL, 10);
        free(t);
        snprintf(path, sizeof(path), FIX "%s.tid.expected", names[i]);
        char *want = slurp(path, NULL);
        snprintf(path, sizeof(path), FIX "%s.jfr", names[i]);
        pp_jfr_opts o = {.keep_tid = keep_only, .arg = &tid};
        pp_profile *prof = pp_profile_new();
        pp_pid_profile *pp = pp_profile_get(prof, 7, true);
        cr_assert_eq(pp_jfr_parse_file(path, &o, prof, pp, NULL, err, sizeof(err)), 0, "%s", err);
        char *got = render(prof, pp);
        cr_assert(want[0] != '\0');
        cr_assert_str_eq(got, want, "%s: samples of tid %ld differ", names[i], tid);
        free(got);
        free(want);
        pp_profile_free(prof);
    }
}

static uint32_t plus_1000(void *arg, long tid)
{
    (void)arg;
    return (uint32_t)tid + 1000;
}

/* per_thread: each stack carries its sample's thread (mapped by sampler_tid); without the
 * threads the profile is the plain one. */
Test(jfr, per_thread_records_threads)
{
    const char *names[] = {"jdk17", "jdk25"};
    for (int i = 0; i < 2; i++) {
        char path[256], err[256];
        snprintf(path, sizeof(path), FIX "%s.tid", names[i]);
        char *t = slurp(path, NULL);
        long tid = strtol(t, NULL, 10);
        free(t);
        snprintf(path, sizeof(path), FIX "%s.jfr", names[i]);
        pp_profile *plain = pp_profile_new(), *prof = pp_profile_new();
        pp_pid_profile *pl = pp_profile_get(plain, 7, true), *pp = pp_profile_get(prof, 7, true);
        cr_assert_eq(pp_jfr_parse_file(path, NULL, plain, pl, NULL, err, sizeof(err)), 0);
        pp_jfr_opts o = {.per_thread = true, .sampler_tid = plus_1000};
        cr_assert_eq(pp_jfr_parse_file(path, &o, prof, pp, NULL, err, sizeof(err)), 0, "%s", err);
        cr_assert(pp_pid_has_tids(pp));
        bool seen = false;
        size_t distinct = 0;
        uint32_t tids[64];
        for (size_t k = 0; k < pp_pid_nstacks(pp); k++) {
            uint32_t x = pp_pid_stack_tid(pp, k);
            cr_assert_gt(x, 1000, "%s: a stack without its thread", names[i]);
            seen |= x == (uint32_t)tid + 1000;
            bool known = false;
            for (size_t m = 0; m < distinct; m++)
                known |= tids[m] == x;
            if (!known && distinct < 64)
                tids[distinct++] = x;
        }
        cr_assert(seen, "%s: the busy thread %ld is there", names[i], tid);
        cr_assert_geq(distinct, 3, "%s: JfrHot's three busy threads", names[i]);
        cr_assert_eq(pp_pid_total(pp), pp_pid_total(pl));
        cr_assert_eq(pp_profile_drop_tids(prof), 0);
        char *want = render(plain, pl), *got = render(prof, pp);
        cr_assert_str_eq(got, want, "%s: the same profile once threads are dropped", names[i]);
        free(want);
        free(got);
        pp_profile_free(plain);
        pp_profile_free(prof);
    }
}

Test(jfr, two_chunks_add_up)
{
    size_t l1, l2;
    char *a = slurp(FIX "jdk17.jfr", &l1), *b = slurp(FIX "jdk25.jfr", &l2), err[256];
    uint8_t *cat = malloc(l1 + l2);
    memcpy(cat, a, l1);
    memcpy(cat + l1, b, l2);
    /* reference: the two files parsed one after the other into one entry */
    pp_profile *p1 = pp_profile_new();
    pp_pid_profile *e1 = pp_profile_get(p1, 1, true);
    cr_assert_eq(pp_jfr_parse_buf((uint8_t *)a, l1, NULL, p1, e1, NULL, err, sizeof(err)), 0);
    cr_assert_eq(pp_jfr_parse_buf((uint8_t *)b, l2, NULL, p1, e1, NULL, err, sizeof(err)), 0);
    pp_profile *p2 = pp_profile_new();
    pp_pid_profile *e2 = pp_profile_get(p2, 1, true);
    pp_jfr_stats st;
    cr_assert_eq(pp_jfr_parse_buf(cat, l1 + l2, NULL, p2, e2, &st, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(st.chunks, 2);
    cr_assert_eq(st.samples, pp_pid_total(e1));
    char *r1 = render(p1, e1), *r2 = render(p2, e2);
    cr_assert_str_eq(r1, r2);
    free(r1);
    free(r2);
    pp_profile_free(p2);
    /* a truncated second chunk: an error, but the first chunk's samples stay */
    p2 = pp_profile_new();
    e2 = pp_profile_get(p2, 1, true);
    cr_assert_eq(pp_jfr_parse_buf(cat, l1 + l2 / 2, NULL, p2, e2, &st, err, sizeof(err)), -1);
    cr_assert(strstr(err, "truncated chunk at offset"), "%s", err);
    cr_assert_eq(st.chunks, 1);
    cr_assert(pp_pid_total(e2) > 0);
    pp_profile_free(p2);
    pp_profile_free(p1);
    free(cat);
    free(a);
    free(b);
}

static int parse(const uint8_t *buf, size_t len, char *err, size_t errlen, pp_jfr_stats *st)
{
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    int rc = pp_jfr_parse_buf(buf, len, NULL, prof, pp, st, err, errlen);
    cr_assert_eq(pp_pid_total(pp), st->samples);
    pp_profile_free(prof);
    return rc;
}

Test(jfr, malformed_input_is_an_error)
{
    char err[256];
    pp_jfr_stats st;
    cr_assert_eq(parse(NULL, 0, err, sizeof(err), &st), -1);
    cr_assert(strstr(err, "not a JFR file"), "%s", err);
    cr_assert_eq(parse((const uint8_t *)"PK\3\4xxxxxxxx", 12, err, sizeof(err), &st), -1);
    cr_assert(strstr(err, "not a JFR file"), "%s", err);
    char path[] = "/nonexistent/x.jfr";
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    cr_assert_eq(pp_jfr_parse_file(path, NULL, prof, pp, NULL, err, sizeof(err)), -1);
    cr_assert(strstr(err, "cannot open /nonexistent/x.jfr"), "%s", err);
    pp_profile_free(prof);

    size_t len;
    uint8_t *buf = (uint8_t *)slurp(FIX "jdk17.jfr", &len);
    /* an unsupported version */
    uint8_t *copy = malloc(len);
    memcpy(copy, buf, len);
    copy[5] = 3;
    cr_assert_eq(parse(copy, len, err, sizeof(err), &st), -1);
    cr_assert_str_eq(err, "unsupported JFR version 3.1 (polyprof reads 2.x)");
    /* truncated at several offsets, including inside the header, the metadata and the pools */
    size_t cuts[] = {4, 10, 67, 68, 100, 5000, 9000, len / 2, len - 100, len - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        cr_assert_eq(parse(buf, cuts[i], err, sizeof(err), &st), -1, "cut at %zu", cuts[i]);
        cr_assert(strstr(err, "truncated chunk at offset 0"), "cut %zu: %s", cuts[i], err);
    }
    /* a chunk size that is shorter than the offsets it declares */
    memcpy(copy, buf, len);
    memset(copy + 8, 0, 7);
    copy[15] = 80;
    cr_assert_eq(parse(copy, len, err, sizeof(err), &st), -1);
    cr_assert(strstr(err, "corrupt chunk header"), "%s", err);
    /* corrupted bytes everywhere (deterministic): an error or fewer samples, never a crash */
    unsigned seed = 12345;
    int errors = 0;
    for (int round = 0; round < 300; round++) {
        memcpy(copy, buf, len);
        for (int k = 0; k < 1 + round % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = 68 + (seed >> 8) % (len - 68);
            seed = seed * 1103515245u + 12345u;
            copy[at] ^= (uint8_t)(1 + (seed >> 16) % 255);
        }
        if (parse(copy, len, err, sizeof(err), &st) < 0) {
            errors++;
            cr_assert(err[0] != '\0');
        }
    }
    cr_assert(errors > 0);
    free(copy);
    free(buf);
}

/* Only the events asked for are counted: the fixtures hold ExecutionSample events (and the
 * profile-settings ones NativeMethodSample events too), no CPUTimeSample. */
Test(jfr, events_mask_selects_sample_types)
{
    const char *names[] = {"jdk17", "jdk25", "jdk17-profile", "jdk25-profile"};
    for (int i = 0; i < 4; i++) {
        char path[256], err[256];
        snprintf(path, sizeof(path), FIX "%s.jfr", names[i]);
        pp_jfr_stats st[3];
        unsigned masks[3] = {PP_JFR_EXECUTION, PP_JFR_CPUTIME, PP_JFR_EXECUTION | PP_JFR_NATIVE};
        for (int k = 0; k < 3; k++) {
            pp_jfr_opts o = {.events = masks[k]};
            pp_profile *prof = pp_profile_new();
            pp_pid_profile *pp = pp_profile_get(prof, 7, true);
            cr_assert_eq(pp_jfr_parse_file(path, &o, prof, pp, &st[k], err, sizeof(err)), 0, "%s",
                         err);
            pp_profile_free(prof);
        }
        cr_assert_gt(st[0].samples, 0, "%s", names[i]);
        cr_assert_eq(st[1].samples, 0, "%s: no CPUTimeSample events", names[i]);
        cr_assert_geq(st[2].samples, st[0].samples, "%s", names[i]);
    }
}
