#include "merge/pprof.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/hashtab.h"
#include "base/utf8.h"
#include "pprof.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;

enum { LABEL_MAX = 5 }; /* pid, comm, container, runtime, appid */

/* Everything one rendering allocates, freed at once. */
typedef struct builder {
    pp_strtab *strs; /* the pprof string table (id 0 is "", as pprof wants) */
    uint64_t *fn_of; /* profile frame id -> function id (0: none yet) */
    size_t nfn_of;
    pb_function *fns; /* function i has id i + 1 */
    size_t nfns, cap_fns;
    pp_u64map loc_of;  /* frame id << 32 | profile mapping id -> location id */
    pb_location *locs; /* location i has id i + 1, its line lines[i] */
    pb_line *lines;
    pb_line **line_ptrs;
    size_t nlocs, cap_locs;
    uint64_t *map_of; /* profile mapping id -> pprof mapping id (0: none yet) */
    pb_mapping *maps; /* pprof mapping i has id i + 1 */
    size_t nmaps;
    pb_label *labels; /* LABEL_MAX per pid */
    pb_label **label_ptrs;
    pb_sample *samples;
    pb_sample **sample_ptrs;
    uint64_t *loc_ids; /* all samples' location ids, leaf first per sample */
    int64_t *values;   /* two per sample */
} builder;

/* The pprof string id of s[0..len) made valid UTF-8; -1 on OOM. */
static int64_t str_id(builder *b, const char *s, size_t len)
{
    if (pp_utf8_valid(s, len)) {
        uint32_t id = pp_strtab_intern(b->strs, s, len);
        return id == UINT32_MAX ? -1 : (int64_t)id;
    }
    size_t sl;
    char *c = pp_utf8_sanitized(s, len, &sl);
    if (!c)
        return -1;
    uint32_t id = pp_strtab_intern(b->strs, c, sl);
    free(c);
    return id == UINT32_MAX ? -1 : (int64_t)id;
}

static int64_t cstr_id(builder *b, const char *s)
{
    return str_id(b, s, strlen(s));
}

/* The function id of the profile's frame fid; 0 on OOM. */
static uint64_t function_of(builder *b, const pp_profile *p, uint32_t fid)
{
    if (fid < b->nfn_of && b->fn_of[fid])
        return b->fn_of[fid];
    if (fid >= b->nfn_of) {
        size_t n = pp_strtab_count(pp_profile_strings((pp_profile *)p));
        if (fid >= n)
            return 0;
        uint64_t *m = realloc(b->fn_of, n * sizeof(*m));
        if (!m)
            return 0;
        memset(m + b->nfn_of, 0, (n - b->nfn_of) * sizeof(*m));
        b->fn_of = m;
        b->nfn_of = n;
    }
    if (b->nfns == b->cap_fns) {
        size_t nc = b->cap_fns ? b->cap_fns * 2 : 256;
        pb_function *f = realloc(b->fns, nc * sizeof(*f));
        if (!f)
            return 0;
        b->fns = f;
        b->cap_fns = nc;
    }
    int64_t name =
        str_id(b, pp_profile_str(p, fid), pp_strtab_len(pp_profile_strings((pp_profile *)p), fid));
    if (name < 0)
        return 0;
    pb_function fn = PERFTOOLS__PROFILES__FUNCTION__INIT;
    fn.id = b->nfns + 1;
    fn.name = name;
    fn.system_name = name;
    b->fns[b->nfns++] = fn;
    return b->fn_of[fid] = fn.id;
}

/* The pprof mapping id of the profile's mapping m (> 0); 0 on OOM. Every mapping has functions:
 * each location names its frame, so pprof never symbolizes them again. */
static uint64_t mapping_of(builder *b, const pp_profile *p, uint32_t m)
{
    if (!b->map_of) {
        size_t n = pp_profile_nmappings(p) + 1;
        b->map_of = calloc(n, sizeof(*b->map_of));
        b->maps = calloc(n, sizeof(*b->maps));
        if (!b->map_of || !b->maps)
            return 0;
    }
    if (b->map_of[m])
        return b->map_of[m];
    uint32_t file, build_id;
    pp_profile_mapping_get(p, m, &file, &build_id);
    pb_mapping mp = PERFTOOLS__PROFILES__MAPPING__INIT;
    mp.id = b->nmaps + 1;
    mp.filename = cstr_id(b, pp_profile_str(p, file));
    mp.build_id = cstr_id(b, pp_profile_str(p, build_id));
    mp.has_functions = true;
    /* no addresses: a range of its own per mapping all the same, none touching another, else
     * pprof's reader merges "adjacent" mappings (limit == start) whose files or build-ids agree
     * or are empty, and names frames of one file after the other */
    mp.memory_start = (uint64_t)mp.id << 32;
    mp.memory_limit = mp.memory_start + 1;
    if (mp.filename < 0 || mp.build_id < 0)
        return 0;
    b->maps[b->nmaps++] = mp;
    return b->map_of[m] = mp.id;
}

/* The location id of frame fid in process pid: one location per (frame, mapping), so that a
 * name found in two files (main of two executables) is two locations of one function; 0 on
 * OOM. */
static uint64_t location_of(builder *b, const pp_profile *p, int pid, uint32_t fid)
{
    uint32_t m = pp_profile_frame_mapping(p, pid, fid);
    uint64_t key = (uint64_t)fid << 32 | m;
    uint64_t *v = pp_u64map_get(&b->loc_of, key);
    if (v)
        return *v;
    uint64_t fn = function_of(b, p, fid), mid = m ? mapping_of(b, p, m) : 0;
    if (!fn || (m && !mid))
        return 0;
    if (b->nlocs == b->cap_locs) {
        size_t nc = b->cap_locs ? b->cap_locs * 2 : 256;
        pb_location *l = realloc(b->locs, nc * sizeof(*l));
        if (!l)
            return 0;
        b->locs = l;
        pb_line *ln = realloc(b->lines, nc * sizeof(*ln));
        if (!ln)
            return 0;
        b->lines = ln;
        b->cap_locs = nc;
    }
    uint64_t id = b->nlocs + 1;
    if (pp_u64map_put(&b->loc_of, key, id) < 0)
        return 0;
    pb_line ln = PERFTOOLS__PROFILES__LINE__INIT;
    ln.function_id = fn;
    b->lines[b->nlocs] = ln;
    pb_location loc = PERFTOOLS__PROFILES__LOCATION__INIT;
    loc.id = id;
    loc.mapping_id = mid;
    b->locs[b->nlocs++] = loc;
    return id;
}

/* Sets the labels of pid entry pp at b->labels[i * LABEL_MAX]; returns how many, -1 on OOM. */
static int pid_labels(builder *b, const pp_profile *p, const pp_pid_profile *pp, size_t i,
                      const pp_pprof_opts *o)
{
    pb_label *l = b->labels + i * LABEL_MAX;
    pb_label **lp = b->label_ptrs + i * LABEL_MAX;
    const char *cont = pp_profile_str(p, pp->container);
    const char *appid = pp_profile_str(p, pp->appid);
    struct {
        const char *key, *val;
    } strs[] = {
        {"comm", pp_profile_str(p, pp->comm)},
        {"container", *cont ? cont : NULL},
        {"runtime", pp->runtime}, /* NULL: the system sampler's stacks (with in-sampler walkers'
                                     frames), whose suffixes name the runtime */
        {"appid", o->appids_enabled && *appid ? appid : NULL},
    };
    int n = 0;
    pb_label pid = PERFTOOLS__PROFILES__LABEL__INIT;
    if ((pid.key = cstr_id(b, "pid")) < 0)
        return -1;
    pid.num = pp->pid;
    l[n++] = pid;
    for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++) {
        if (!strs[k].val)
            continue;
        pb_label s = PERFTOOLS__PROFILES__LABEL__INIT;
        if ((s.key = cstr_id(b, strs[k].key)) < 0 || (s.str = cstr_id(b, strs[k].val)) < 0)
            return -1;
        l[n++] = s;
    }
    for (int k = 0; k < n; k++)
        lp[k] = &l[k];
    return n;
}

static int build(builder *b, const pp_profile *p, const pp_pprof_opts *o, pb_profile *out)
{
    size_t npids = pp_profile_npids(p), nsamples = 0, nframes = 0;
    for (size_t i = 0; i < npids; i++) {
        pp_pid_profile *pp = pp_profile_at(p, i);
        for (size_t s = 0; s < pp_pid_nstacks(pp); s++) {
            size_t nf;
            uint64_t count;
            pp_pid_stack(pp, s, &nf, &count);
            if (count) {
                nsamples++;
                nframes += nf;
            }
        }
    }
    b->labels = calloc(npids ? npids * LABEL_MAX : 1, sizeof(*b->labels));
    b->label_ptrs = calloc(npids ? npids * LABEL_MAX : 1, sizeof(*b->label_ptrs));
    b->samples = calloc(nsamples ? nsamples : 1, sizeof(*b->samples));
    b->sample_ptrs = calloc(nsamples ? nsamples : 1, sizeof(*b->sample_ptrs));
    b->loc_ids = calloc(nframes ? nframes : 1, sizeof(*b->loc_ids));
    b->values = calloc(nsamples ? nsamples * 2 : 1, sizeof(*b->values));
    if (!b->labels || !b->label_ptrs || !b->samples || !b->sample_ptrs || !b->loc_ids || !b->values)
        return -1;

    int64_t period = 1000000000LL / (o->frequency > 0 ? o->frequency : 1);
    size_t si = 0, fi = 0;
    for (size_t i = 0; i < npids; i++) {
        pp_pid_profile *pp = pp_profile_at(p, i);
        int nl = pid_labels(b, p, pp, i, o);
        if (nl < 0)
            return -1;
        for (size_t s = 0; s < pp_pid_nstacks(pp); s++) {
            size_t nf;
            uint64_t count;
            const uint32_t *fr = pp_pid_stack(pp, s, &nf, &count);
            if (!count)
                continue;
            pb_sample smp = PERFTOOLS__PROFILES__SAMPLE__INIT;
            smp.n_location_id = nf;
            smp.location_id = b->loc_ids + fi;
            for (size_t k = 0; k < nf; k++) /* the stack is root first, pprof's leaf first */
                if (!(b->loc_ids[fi + k] = location_of(b, p, pp->pid, fr[nf - 1 - k])))
                    return -1;
            fi += nf;
            smp.n_value = 2;
            smp.value = b->values + 2 * si;
            smp.value[0] = (int64_t)count;
            smp.value[1] = (int64_t)count * period;
            smp.n_label = (size_t)nl;
            smp.label = b->label_ptrs + i * LABEL_MAX;
            b->samples[si] = smp;
            b->sample_ptrs[si] = &b->samples[si];
            si++;
        }
    }
    /* The arrays may have moved while growing: pointers are taken now. */
    pb_function **fp = calloc(b->nfns ? b->nfns : 1, sizeof(*fp));
    pb_location **lp = calloc(b->nlocs ? b->nlocs : 1, sizeof(*lp));
    pb_mapping **mp = calloc(b->nmaps ? b->nmaps : 1, sizeof(*mp));
    b->line_ptrs = calloc(b->nlocs ? b->nlocs : 1, sizeof(*b->line_ptrs));
    if (!fp || !lp || !mp || !b->line_ptrs) {
        free(fp);
        free(lp);
        free(mp);
        return -1;
    }
    for (size_t k = 0; k < b->nfns; k++)
        fp[k] = &b->fns[k];
    for (size_t k = 0; k < b->nlocs; k++) {
        lp[k] = &b->locs[k];
        b->line_ptrs[k] = &b->lines[k];
        b->locs[k].n_line = 1;
        b->locs[k].line = &b->line_ptrs[k];
    }
    for (size_t k = 0; k < b->nmaps; k++)
        mp[k] = &b->maps[k];
    out->n_function = b->nfns;
    out->function = fp;
    out->n_location = b->nlocs;
    out->location = lp;
    out->n_mapping = b->nmaps;
    out->mapping = mp;
    out->n_sample = nsamples;
    out->sample = b->sample_ptrs;
    return 0;
}

/* gzip of data[0..len): malloc'd, NULL on OOM. */
static unsigned char *gzip(const unsigned char *data, size_t len, size_t *out_len)
{
    z_stream z = {0};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, len);
    unsigned char *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return NULL;
    }
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = len > UINT32_MAX || cap > UINT32_MAX ? Z_BUF_ERROR : deflate(&z, Z_FINISH);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    *out_len = z.total_out;
    return out;
}

unsigned char *pp_pprof_render(const pp_profile *p, const pp_pprof_opts *o, size_t *len)
{
    builder b = {.strs = pp_strtab_new()};
    pb_profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
    pb_value_type st[2] = {PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
                           PERFTOOLS__PROFILES__VALUE_TYPE__INIT};
    pb_value_type *stp[2] = {&st[0], &st[1]};
    pb_value_type period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    char **table = NULL;
    unsigned char *packed = NULL, *gz = NULL;
    if (!b.strs)
        goto out;
    st[0].type = cstr_id(&b, "samples");
    st[0].unit = cstr_id(&b, "count");
    st[1].type = period.type = cstr_id(&b, "cpu");
    st[1].unit = period.unit = cstr_id(&b, "nanoseconds");
    if (st[0].type < 0 || st[0].unit < 0 || st[1].type < 0 || st[1].unit < 0)
        goto out;
    if (build(&b, p, o, &prof) < 0)
        goto out;
    prof.n_sample_type = 2;
    prof.sample_type = stp;
    prof.period_type = &period;
    prof.period = 1000000000LL / (o->frequency > 0 ? o->frequency : 1);
    prof.time_nanos = o->time_nanos;
    prof.duration_nanos = o->duration_nanos;
    size_t ns = pp_strtab_count(b.strs);
    if (!(table = calloc(ns, sizeof(*table))))
        goto out;
    for (size_t i = 0; i < ns; i++)
        table[i] = (char *)pp_strtab_get(b.strs, (uint32_t)i);
    prof.n_string_table = ns;
    prof.string_table = table;
    size_t plen = perftools__profiles__profile__get_packed_size(&prof);
    if (!(packed = malloc(plen ? plen : 1)))
        goto out;
    perftools__profiles__profile__pack(&prof, packed);
    gz = gzip(packed, plen, len);
out:
    free(packed);
    free(table);
    free(prof.function);
    free(prof.location);
    free(prof.mapping);
    free(b.fn_of);
    free(b.fns);
    pp_u64map_free(&b.loc_of);
    free(b.map_of);
    free(b.maps);
    free(b.locs);
    free(b.lines);
    free(b.line_ptrs);
    free(b.labels);
    free(b.label_ptrs);
    free(b.samples);
    free(b.sample_ptrs);
    free(b.loc_ids);
    free(b.values);
    pp_strtab_free(b.strs);
    return gz;
}
