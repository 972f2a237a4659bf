/* Unit tests for the pprof export (merge/pprof.c) and the plain collapsed text
 * (merge/collapsed.c, plain): the gzip is inflated and the protobuf decoded with protobuf-c,
 * both bounded, and every field the export promises is checked. */
#include "tests/unit/testutil.h"

#include <zlib.h>

#include "merge/collapsed.h"
#include "merge/pprof.h"
#include "merge/profile.h"
#include "pprof.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;

#define MAX_INFLATED (16u << 20)

/* Inflates gzip data (at most MAX_INFLATED bytes out) and decodes the profile. */
static pb_profile *decode(const unsigned char *gz, size_t len)
{
    z_stream z = {0};
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    unsigned char *out = malloc(MAX_INFLATED);
    cr_assert_not_null(out);
    z.next_in = (unsigned char *)gz;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = MAX_INFLATED;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "a whole gzip stream");
    size_t n = z.total_out;
    inflateEnd(&z);
    pb_profile *p = perftools__profiles__profile__unpack(NULL, n, out);
    free(out);
    cr_assert_not_null(p, "a valid profile.proto");
    return p;
}

static const char *str(const pb_profile *p, int64_t i)
{
    cr_assert(i >= 0 && (size_t)i < p->n_string_table, "string index %lld", (long long)i);
    return p->string_table[i];
}

static const char *fn_name(const pb_profile *p, uint64_t loc_id)
{
    for (size_t i = 0; i < p->n_location; i++) {
        if (p->location[i]->id != loc_id)
            continue;
        cr_assert_eq(p->location[i]->n_line, 1);
        uint64_t fid = p->location[i]->line[0]->function_id;
        for (size_t k = 0; k < p->n_function; k++)
            if (p->function[k]->id == fid)
                return str(p, p->function[k]->name);
    }
    cr_assert_fail("location %llu has no function", (unsigned long long)loc_id);
    return NULL;
}

/* The label key's string (NULL when absent); *num gets a numeric label's value. */
static const char *label(const pb_profile *p, const Perftools__Profiles__Sample *s, const char *key,
                         int64_t *num)
{
    for (size_t i = 0; i < s->n_label; i++) {
        if (strcmp(str(p, s->label[i]->key), key) != 0)
            continue;
        if (num)
            *num = s->label[i]->num;
        return str(p, s->label[i]->str);
    }
    return NULL;
}

/* Two processes: a system one, and one in a container with a runtime, an appid, a stack of
 * count 0, frames shared between stacks and a frame that is not UTF-8. */
static pp_profile *sample_profile(void)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *a = pp_profile_get(p, 7, true);
    a->comm = pp_profile_intern(p, "swapper");
    uint32_t idle[] = {pp_profile_intern(p, "start_kernel_[k]"),
                       pp_profile_intern(p, "do_idle_[k]")};
    pp_pid_add(a, idle, 2, 10);
    pp_pid_profile *b = pp_profile_get(p, 100, true);
    b->comm = pp_profile_intern(p, "py;thon");
    b->container = pp_profile_intern(p, "app1");
    b->appid = pp_profile_intern(p, "python: x.py");
    b->runtime = "python";
    uint32_t st[] = {pp_profile_intern(p, "main (x.py:1)_[p]"), pp_profile_intern(p, "f\xff_[p]")};
    pp_pid_add(b, st, 2, 3);
    pp_pid_add(b, st, 1, 0);
    uint32_t k[] = {st[0], idle[1]};
    pp_pid_add(b, k, 2, 4);
    return p;
}

Test(pprof, encodes_samples_types_and_totals)
{
    pp_profile *prof = sample_profile();
    pp_pprof_opts o = {
        .frequency = 99, .time_nanos = 5000000000LL, .duration_nanos = 60000000000LL};
    size_t len = 0;
    unsigned char *gz = pp_pprof_render(prof, &o, &len);
    cr_assert_not_null(gz);
    cr_assert(len > 18 && gz[0] == 0x1f && gz[1] == 0x8b, "gzip-compressed");
    pb_profile *p = decode(gz, len);

    cr_assert(p->n_string_table > 0);
    cr_expect_str_eq(p->string_table[0], "", "string 0 is empty, as pprof requires");
    cr_assert_eq(p->n_sample_type, 2);
    cr_expect_str_eq(str(p, p->sample_type[0]->type), "samples");
    cr_expect_str_eq(str(p, p->sample_type[0]->unit), "count");
    cr_expect_str_eq(str(p, p->sample_type[1]->type), "cpu");
    cr_expect_str_eq(str(p, p->sample_type[1]->unit), "nanoseconds");
    cr_assert_not_null(p->period_type);
    cr_expect_str_eq(str(p, p->period_type->type), "cpu");
    cr_expect_eq(p->period, 1000000000LL / 99);
    cr_expect_eq(p->time_nanos, 5000000000LL);
    cr_expect_eq(p->duration_nanos, 60000000000LL);

    cr_assert_eq(p->n_sample, 3, "one sample per stack of count > 0, got %zu", p->n_sample);
    int64_t total = 0;
    for (size_t i = 0; i < p->n_sample; i++) {
        cr_assert_eq(p->sample[i]->n_value, 2);
        total += p->sample[i]->value[0];
        cr_expect_eq(p->sample[i]->value[1], p->sample[i]->value[0] * (1000000000LL / 99));
    }
    cr_expect_eq(total, 17, "the profile's total, got %lld", (long long)total);

    /* One function and location per distinct frame: 4 frames */
    cr_expect_eq(p->n_function, 4);
    cr_expect_eq(p->n_location, 4);
    cr_expect_eq(p->n_mapping, 0);

    /* Stacks leaf first, frames as in the .col with their suffix, made UTF-8 */
    const Perftools__Profiles__Sample *s0 = p->sample[0], *s1 = p->sample[1], *s2 = p->sample[2];
    cr_assert_eq(s0->n_location_id, 2);
    cr_expect_str_eq(fn_name(p, s0->location_id[0]), "do_idle_[k]");
    cr_expect_str_eq(fn_name(p, s0->location_id[1]), "start_kernel_[k]");
    cr_expect_eq(s0->value[0], 10);
    cr_assert_eq(s1->n_location_id, 2);
    cr_expect_str_eq(fn_name(p, s1->location_id[0]), "f\xef\xbf\xbd_[p]");
    cr_expect_str_eq(fn_name(p, s1->location_id[1]), "main (x.py:1)_[p]");
    cr_expect_eq(s1->value[0], 3);
    cr_expect_eq(s2->location_id[0], s0->location_id[0], "do_idle_[k] is one location");
    cr_expect_eq(s2->value[0], 4);

    /* Labels */
    int64_t pid = 0;
    cr_expect_str_eq(label(p, s0, "pid", &pid), "");
    cr_expect_eq(pid, 7);
    cr_expect_str_eq(label(p, s0, "comm", NULL), "swapper");
    cr_expect_null(label(p, s0, "runtime", NULL), "no runtime label for the system sampler");
    cr_expect_null(label(p, s0, "container", NULL), "no container label outside containers");
    label(p, s1, "pid", &pid);
    cr_expect_eq(pid, 100);
    cr_expect_str_eq(label(p, s1, "comm", NULL), "py;thon", "comm as it is (no .col escaping)");
    cr_expect_str_eq(label(p, s1, "container", NULL), "app1");
    cr_expect_str_eq(label(p, s1, "runtime", NULL), "python");
    cr_expect_null(label(p, s1, "appid", NULL), "appid only when enabled");

    perftools__profiles__profile__free_unpacked(p, NULL);
    free(gz);
    o.appids_enabled = true;
    gz = pp_pprof_render(prof, &o, &len);
    p = decode(gz, len);
    cr_expect_str_eq(label(p, p->sample[1], "appid", NULL), "python: x.py");
    cr_expect_null(label(p, p->sample[0], "appid", NULL));
    perftools__profiles__profile__free_unpacked(p, NULL);
    free(gz);
    pp_profile_free(prof);
}

Test(pprof, empty_profile_is_valid)
{
    pp_profile *prof = pp_profile_new();
    pp_pprof_opts o = {.frequency = 11};
    size_t len = 0;
    unsigned char *gz = pp_pprof_render(prof, &o, &len);
    cr_assert_not_null(gz);
    pb_profile *p = decode(gz, len);
    cr_expect_eq(p->n_sample, 0);
    cr_expect_eq(p->n_sample_type, 2);
    cr_expect_eq(p->period, 1000000000LL / 11);
    perftools__profiles__profile__free_unpacked(p, NULL);
    free(gz);
    pp_profile_free(prof);
}

Test(pprof, plain_collapsed_has_comm_as_root_and_no_header)
{
    pp_profile *prof = sample_profile();
    pp_render_opts o = {.app_metadata_enabled = true, .plain = true};
    size_t len = 0;
    char *text = pp_col_render(prof, NULL, &o, &len);
    cr_assert_not_null(text);
    cr_assert_eq(strlen(text), len);
    cr_expect_str_eq(text, "swapper;start_kernel_[k];do_idle_[k] 10\n"
                           "py|thon;main (x.py:1)_[p];f\xef\xbf\xbd_[p] 3\n"
                           "py|thon;main (x.py:1)_[p];do_idle_[k] 4\n");
    free(text);
    o.appids_enabled = true;
    text = pp_col_render(prof, NULL, &o, &len);
    cr_expect(strstr(text, "\npy|thon;appid: python: x.py;main (x.py:1)_[p];do_idle_[k] 4\n"), "%s",
              text);
    free(text);
    pp_profile_free(prof);
}
