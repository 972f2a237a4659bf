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

/* The mapping of location loc_id (NULL: none). */
static const Perftools__Profiles__Mapping *loc_mapping(const pb_profile *p, uint64_t loc_id)
{
    for (size_t i = 0; i < p->n_location; i++) {
        if (p->location[i]->id != loc_id)
            continue;
        uint64_t mid = p->location[i]->mapping_id;
        if (!mid)
            return NULL;
        for (size_t k = 0; k < p->n_mapping; k++)
            if (p->mapping[k]->id == mid)
                return p->mapping[k];
        cr_assert_fail("location %llu names mapping %llu, which is not in the profile",
                       (unsigned long long)loc_id, (unsigned long long)mid);
    }
    cr_assert_fail("no location %llu", (unsigned long long)loc_id);
    return NULL;
}

/* Two processes whose executables both have a "main" (other files, other build-ids), a kernel
 * frame every process shares, a runtime frame without a file, and a file without a build-id. */
Test(pprof, mappings_carry_build_ids_and_locations_link_them)
{
    pp_profile *prof = pp_profile_new();
    uint32_t ma = pp_profile_mapping(prof, "/usr/bin/a", "aa01");
    uint32_t mb = pp_profile_mapping(prof, "/srv/b (deleted)", "bb02");
    uint32_t mk = pp_profile_mapping(prof, "[kernel.kallsyms]", "cc03");
    uint32_t mn = pp_profile_mapping(prof, "/lib/libnoid.so", "");
    cr_assert_eq(pp_profile_mapping(prof, "/usr/bin/a", "aa01"), ma, "interned once");
    cr_assert(ma && mb && mk && mn && ma != mb && mb != mk && mk != mn);
    uint32_t fmain = pp_profile_intern(prof, "main"), fk = pp_profile_intern(prof, "sys_read_[k]");
    uint32_t frt = pp_profile_intern(prof, "run (x.py:1)_[p]"), fl = pp_profile_intern(prof, "lf");
    pp_pid_profile *a = pp_profile_get(prof, 10, true), *b = pp_profile_get(prof, 20, true);
    a->comm = pp_profile_intern(prof, "a");
    b->comm = pp_profile_intern(prof, "b");
    cr_assert_eq(pp_profile_set_frame_mapping(prof, 10, fmain, ma), 0);
    cr_assert_eq(pp_profile_set_frame_mapping(prof, 10, fl, mn), 0);
    cr_assert_eq(pp_profile_set_frame_mapping(prof, 20, fmain, mb), 0);
    cr_assert_eq(pp_profile_set_frame_mapping(prof, PP_ANY_PID, fk, mk), 0);
    cr_assert_eq(pp_profile_set_frame_mapping(prof, 20, fmain, ma), 0);
    cr_assert_eq(pp_profile_frame_mapping(prof, 20, fmain), mb, "the first mapping stays");
    uint32_t sa[] = {fmain, fl, fk}, sb[] = {fmain, frt, fk};
    pp_pid_add(a, sa, 3, 5);
    pp_pid_add(b, sb, 3, 7);
    pp_pprof_opts o = {.frequency = 100};
    size_t len = 0;
    unsigned char *gz = pp_pprof_render(prof, &o, &len);
    cr_assert_not_null(gz);
    pb_profile *p = decode(gz, len);

    cr_assert_eq(p->n_mapping, 4, "one mapping per (file, build-id) used, got %zu", p->n_mapping);
    for (size_t i = 0; i < p->n_mapping; i++) {
        cr_expect_eq(p->mapping[i]->id, i + 1);
        cr_expect(p->mapping[i]->has_functions, "locations are named: pprof must not re-symbolize");
    }
    cr_assert_eq(p->n_sample, 2);
    const Perftools__Profiles__Sample *s0 = p->sample[0], *s1 = p->sample[1];
    cr_assert_eq(s0->n_location_id, 3);
    cr_assert_eq(s1->n_location_id, 3);
    /* leaf first: kernel, then lf / the runtime frame, then main */
    const Perftools__Profiles__Mapping *m;
    cr_assert_not_null(m = loc_mapping(p, s0->location_id[2]));
    cr_expect_str_eq(str(p, m->filename), "/usr/bin/a");
    cr_expect_str_eq(str(p, m->build_id), "aa01");
    cr_assert_not_null(m = loc_mapping(p, s1->location_id[2]));
    cr_expect_str_eq(str(p, m->filename), "/srv/b (deleted)");
    cr_expect_str_eq(str(p, m->build_id), "bb02");
    cr_expect_neq(s0->location_id[2], s1->location_id[2], "main of two files: two locations");
    cr_expect_str_eq(fn_name(p, s0->location_id[2]), "main");
    cr_expect_str_eq(fn_name(p, s1->location_id[2]), "main");
    cr_expect_eq(p->n_function, 4, "one function per frame name, got %zu", p->n_function);
    cr_assert_not_null(m = loc_mapping(p, s0->location_id[1]));
    cr_expect_str_eq(str(p, m->filename), "/lib/libnoid.so");
    cr_expect_str_eq(str(p, m->build_id), "", "a file without a build-id has none");
    cr_expect_null(loc_mapping(p, s1->location_id[1]), "a runtime frame has no mapping");
    cr_expect_eq(s0->location_id[0], s1->location_id[0], "the kernel frame is one location");
    cr_assert_not_null(m = loc_mapping(p, s0->location_id[0]));
    cr_expect_str_eq(str(p, m->filename), "[kernel.kallsyms]");
    cr_expect_str_eq(str(p, m->build_id), "cc03");

    perftools__profiles__profile__free_unpacked(p, NULL);
    free(gz);
    pp_profile_free(prof);
}

/* pp_pid_add_all (the merge's copy between profiles) keeps each frame's mapping, per process
 * and for every process. */
Test(pprof, copied_stacks_keep_their_mappings)
{
    pp_profile *src = pp_profile_new(), *dst = pp_profile_new();
    pp_profile_intern(dst, "other"); /* dst's ids differ from src's */
    uint32_t f = pp_profile_intern(src, "work"), k = pp_profile_intern(src, "irq_[k]");
    pp_profile_set_frame_mapping(src, 5, f, pp_profile_mapping(src, "/bin/w", "0123"));
    pp_profile_set_frame_mapping(src, PP_ANY_PID, k,
                                 pp_profile_mapping(src, "[kernel.kallsyms]", ""));
    uint32_t st[] = {f, k};
    pp_pid_add(pp_profile_get(src, 5, true), st, 2, 1);
    pp_pid_profile *d = pp_profile_get(dst, 5, true);
    cr_assert_eq(pp_pid_add_all(dst, d, src, pp_profile_get(src, 5, false)), 0);
    size_t n;
    const uint32_t *df = pp_pid_stack(d, 0, &n, NULL);
    cr_assert_eq(n, 2);
    uint32_t file, bid, m = pp_profile_frame_mapping(dst, 5, df[0]);
    cr_assert(m, "the frame's mapping was copied");
    pp_profile_mapping_get(dst, m, &file, &bid);
    cr_expect_str_eq(pp_profile_str(dst, file), "/bin/w");
    cr_expect_str_eq(pp_profile_str(dst, bid), "0123");
    cr_expect_eq(pp_profile_frame_mapping(dst, 6, df[0]), 0, "per process");
    m = pp_profile_frame_mapping(dst, 6, df[1]);
    cr_assert(m, "a kernel frame's mapping holds for every process");
    pp_profile_mapping_get(dst, m, &file, &bid);
    cr_expect_str_eq(pp_profile_str(dst, file), "[kernel.kallsyms]");
    pp_profile_free(src);
    pp_profile_free(dst);
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
