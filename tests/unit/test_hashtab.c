/* Unit tests: the open-addressing hash table (base/hashtab.h) and its u64 map. */
#include "tests/unit/testutil.h"

#include "base/hashtab.h"

TestSuite(hashtab, .init = pp_test_quiet_log);

typedef struct {
    uint64_t key;
    uint32_t val;
} u64ent;

/* A hash that makes every key collide (same tag, same home slot) unless spread is set. */
static uint64_t hash_of(uint64_t key, bool spread)
{
    return spread ? pp_hash_u64(key) : 0x1234500000000ull;
}

static u64ent *find(const pp_htab *t, uint64_t key, bool spread)
{
    pp_htab_probe p;
    for (u64ent *e = pp_htab_first(t, hash_of(key, spread), &p); e; e = pp_htab_next(t, &p))
        if (e->key == key)
            return e;
    return NULL;
}

static void put(pp_htab *t, uint64_t key, uint32_t val, bool spread)
{
    u64ent *e = find(t, key, spread);
    if (!e) {
        e = pp_htab_add(t, hash_of(key, spread));
        cr_assert_not_null(e);
        e->key = key;
    }
    e->val = val;
}

/* Every key in [0, n) with keep(key) is present with value key * 3, no other is. */
static void check_keys(const pp_htab *t, uint64_t n, bool (*keep)(uint64_t), bool spread)
{
    size_t want = 0;
    for (uint64_t k = 0; k < n; k++) {
        u64ent *e = find(t, k, spread);
        if (keep(k)) {
            want++;
            cr_assert_not_null(e, "key %llu missing", (unsigned long long)k);
            cr_assert_eq(e->val, k * 3);
        } else {
            cr_assert_null(e, "key %llu still present", (unsigned long long)k);
        }
    }
    cr_assert_eq(pp_htab_count(t), want);
}

static bool all(uint64_t k)
{
    (void)k;
    return true;
}

static bool odd(uint64_t k)
{
    return k & 1;
}

static bool not_multiple_of_3(uint64_t k)
{
    return k % 3 != 0;
}

Test(hashtab, grows_and_keeps_every_entry)
{
    pp_htab t;
    PP_HTAB_INIT(&t, u64ent, 50);
    cr_assert_null(find(&t, 1, true)); /* empty, nothing allocated */
    for (uint64_t k = 0; k < 100000; k++) {
        put(&t, k, (uint32_t)k * 3, true);
        cr_assert_leq(t.n * 100, t.cap * 50, "load above 50%% at %zu/%zu", t.n, t.cap);
    }
    cr_assert_eq(t.cap, 262144);
    check_keys(&t, 100000, all, true);
    put(&t, 5, 15, true); /* replacing adds nothing */
    cr_assert_eq(pp_htab_count(&t), 100000);
    cr_assert_eq(t.stride, 8 + sizeof(u64ent)); /* the tag, then the 8-aligned entry */
    cr_assert_eq(pp_htab_bytes(&t), 262144 * t.stride);
    pp_htab_free(&t);
    cr_assert_eq(pp_htab_count(&t), 0);
    cr_assert_null(find(&t, 5, true));
    put(&t, 5, 15, true); /* usable again after free */
    cr_assert_eq(pp_htab_count(&t), 1);
    cr_assert_eq(find(&t, 5, true)->val, 15);
    pp_htab_free(&t);
}

Test(hashtab, many_collisions_probe_past_each_other)
{
    pp_htab t;
    PP_HTAB_INIT(&t, u64ent, 75);
    for (uint64_t k = 0; k < 500; k++)
        put(&t, k, (uint32_t)k * 3, false);
    check_keys(&t, 500, all, false);
    for (uint64_t k = 0; k < 500; k += 2)
        pp_htab_remove(&t, find(&t, k, false));
    check_keys(&t, 500, odd, false);
    pp_htab_free(&t);
}

/* Deleting without tombstones: after many adds and removes in one region of the table, every
 * probe sequence still reaches its entry, and removed slots are really free (the table does not
 * fill up with deleted marks). */
Test(hashtab, removal_shifts_back_without_tombstones)
{
    pp_htab t;
    PP_HTAB_INIT(&t, u64ent, 50);
    cr_assert_eq(pp_htab_reserve(&t, 1000), 0);
    size_t cap = t.cap;
    for (int round = 0; round < 50; round++) {
        for (uint64_t k = 0; k < 1000; k++)
            put(&t, k + (uint64_t)round * 1000, (uint32_t)(k + (uint64_t)round * 1000) * 3, true);
        for (uint64_t k = 0; k < 1000; k++) {
            if (k % 3 != 0) {
                u64ent *e = find(&t, k + (uint64_t)round * 1000, true);
                cr_assert_not_null(e);
                pp_htab_remove(&t, e);
            }
        }
        for (uint64_t k = 0; k < 1000; k += 3)
            pp_htab_remove(&t, find(&t, k + (uint64_t)round * 1000, true));
        cr_assert_eq(pp_htab_count(&t), 0);
    }
    cr_assert_eq(t.cap, cap, "the table grew: removals left slots taken");
    size_t pos = 0;
    cr_assert_null(pp_htab_each(&t, &pos), "a removed entry's slot is still taken");
    /* Removal in the middle of runs that wrap around the end of the slots. */
    for (uint64_t k = 0; k < 900; k++)
        put(&t, k, (uint32_t)k * 3, true);
    for (uint64_t k = 0; k < 900; k++)
        if (!not_multiple_of_3(k))
            pp_htab_remove(&t, find(&t, k, true));
    check_keys(&t, 900, not_multiple_of_3, true);
    pp_htab_free(&t);
}

typedef struct {
    size_t calls;
    uint64_t seen_sum;
} filter_arg;

static bool keep_odd(void *ent, void *arg)
{
    filter_arg *a = arg;
    u64ent *e = ent;
    a->calls++;
    a->seen_sum += e->key;
    return e->key & 1;
}

Test(hashtab, filter_sees_each_entry_once)
{
    for (int spread = 0; spread < 2; spread++) {
        pp_htab t;
        PP_HTAB_INIT(&t, u64ent, 90);
        uint64_t sum = 0;
        for (uint64_t k = 0; k < 300; k++) {
            put(&t, k, (uint32_t)k * 3, spread);
            sum += k;
        }
        filter_arg a = {0};
        cr_assert_eq(pp_htab_filter(&t, keep_odd, &a), 150);
        cr_assert_eq(a.calls, 300);
        cr_assert_eq(a.seen_sum, sum);
        check_keys(&t, 300, odd, spread);
        pp_htab_free(&t);
    }
}

Test(hashtab, iteration_visits_every_entry)
{
    pp_htab t;
    PP_HTAB_INIT(&t, u64ent, 50);
    size_t pos = 0;
    cr_assert_null(pp_htab_each(&t, &pos));
    for (uint64_t k = 1; k <= 1000; k++)
        put(&t, k, (uint32_t)k * 3, true);
    uint64_t sum = 0;
    size_t n = 0;
    pos = 0;
    for (u64ent *e; (e = pp_htab_each(&t, &pos));) {
        sum += e->key;
        n++;
    }
    cr_assert_eq(n, 1000);
    cr_assert_eq(sum, 1000 * 1001 / 2);
    pp_htab_clear(&t);
    cr_assert_eq(pp_htab_count(&t), 0);
    cr_assert_null(find(&t, 7, true));
    pos = 0;
    cr_assert_null(pp_htab_each(&t, &pos));
    pp_htab_free(&t);
}

Test(hashtab, full_tells_when_the_next_add_grows)
{
    pp_htab t;
    PP_HTAB_INIT(&t, u64ent, 75);
    cr_assert(pp_htab_full(&t)); /* no slots yet */
    cr_assert_eq(pp_htab_reserve(&t, 12), 0);
    cr_assert_eq(t.cap, 16);
    for (uint64_t k = 0; k < 12; k++) {
        cr_assert_not(pp_htab_full(&t));
        put(&t, k, (uint32_t)k * 3, true);
    }
    cr_assert(pp_htab_full(&t));
    cr_assert_eq(t.cap, 16);
    put(&t, 12, 36, true);
    cr_assert_eq(t.cap, 32);
    pp_htab_free(&t);
}

/* Byte keys: strings kept in an array of the caller's, the table holds their indexes (as the
 * string table does). */
typedef struct {
    const char *strs[4096];
    size_t n;
    pp_htab idx;
} strset;

static uint32_t intern(strset *s, const char *str)
{
    uint64_t h = pp_hash_bytes(str, strlen(str), 0);
    pp_htab_probe p;
    for (uint32_t *id = pp_htab_first(&s->idx, h, &p); id; id = pp_htab_next(&s->idx, &p))
        if (strcmp(s->strs[*id], str) == 0)
            return *id;
    uint32_t *id = pp_htab_add(&s->idx, h);
    cr_assert_not_null(id);
    s->strs[s->n] = str;
    *id = (uint32_t)s->n++;
    return *id;
}

Test(hashtab, byte_keys_index_an_array)
{
    static strset s;
    static char bufs[2000][24];
    PP_HTAB_INIT(&s.idx, uint32_t, 50);
    cr_assert_eq(s.idx.stride, 8); /* a 4-byte entry beside its tag */
    for (int i = 0; i < 2000; i++) {
        snprintf(bufs[i], sizeof(bufs[i]), "frame%d", i);
        cr_assert_eq(intern(&s, bufs[i]), (uint32_t)i);
    }
    char again[24];
    for (int i = 0; i < 2000; i++) {
        snprintf(again, sizeof(again), "frame%d", i);
        cr_assert_eq(intern(&s, again), (uint32_t)i, "ids stay dense and stable");
    }
    cr_assert_eq(pp_htab_count(&s.idx), 2000);
    pp_htab_free(&s.idx);
}

Test(hashtab, u64map_put_get_replace)
{
    pp_u64map m = {0};
    cr_assert_null(pp_u64map_get(&m, 0));
    for (uint64_t k = 0; k < 5000; k++)
        cr_assert_eq(pp_u64map_put(&m, k * 0x100000000ull, k + 1), 0);
    for (uint64_t k = 0; k < 5000; k++) {
        uint64_t *v = pp_u64map_get(&m, k * 0x100000000ull);
        cr_assert_not_null(v);
        cr_assert_eq(*v, k + 1);
    }
    cr_assert_null(pp_u64map_get(&m, 1));
    cr_assert_eq(pp_u64map_put(&m, 0, 42), 0);
    cr_assert_eq(*pp_u64map_get(&m, 0), 42);
    cr_assert_eq(pp_htab_count(&m.t), 5000);
    pp_u64map_free(&m);
    cr_assert_null(pp_u64map_get(&m, 0));
    cr_assert_eq(pp_u64map_put(&m, UINT64_MAX, 1), 0);
    cr_assert_eq(*pp_u64map_get(&m, UINT64_MAX), 1);
    pp_u64map_free(&m);
}
