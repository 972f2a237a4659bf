/* Unit tests: the nettrace stream parser (runtimes/dotnet/nettrace.c), on a stream captured from
 * the real .NET Core 3.1.23 runtime (tests/unit/data/dotnet/netcore31_late.nettrace: a 2 s
 * session of Microsoft-Windows-DotNETRuntime, JIT|Loader keywords at level 5, on
 * tests/integration/apps/NetHot.cs run as `NetHot.exe late 1500`, so that HotLate was compiled
 * inside the session; the rundown came at its stop) and on streams built here. */
#include "tests/unit/testutil.h"

#include "runtimes/dotnet/dotnet.h"

/* the captured stream, compiled in (the tests run in a scratch directory) */
__asm__(".section .rodata\n"
        ".global nt31_start\n"
        "nt31_start:\n"
        ".incbin \"tests/unit/data/dotnet/netcore31_late.nettrace\"\n"
        ".global nt31_end\n"
        "nt31_end:\n"
        ".previous\n");
extern const uint8_t nt31_start[], nt31_end[];
#define NT31_LEN ((size_t)(nt31_end - nt31_start))

typedef struct seen {
    int n, load, unload, rundown;
    char text[64 * 1024]; /* every callback, one line each */
    size_t len;
} seen;

static void record(void *arg, const pp_net_method *m)
{
    seen *s = arg;
    s->n++;
    s->load += m->kind == PP_NET_METHOD_LOAD;
    s->unload += m->kind == PP_NET_METHOD_UNLOAD;
    s->rundown += m->kind == PP_NET_METHOD_RUNDOWN;
    if (s->len < sizeof(s->text))
        s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len,
                                   "%d %llx %u %s|%s|%s\n", m->kind, (unsigned long long)m->start,
                                   m->size, m->ns, m->name, m->sig);
}

static pp_nettrace *parse_in_steps(const uint8_t *b, size_t n, size_t step, seen *s)
{
    pp_nettrace *p = pp_nettrace_new(record, s);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        if (pp_nettrace_push(p, b + i, k) < 0)
            break;
    }
    return p;
}

/* The line of the method ns|name in s's text, or NULL. */
static const char *line_of(const seen *s, int kind, const char *what)
{
    char needle[128];
    for (const char *l = s->text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        snprintf(needle, sizeof(needle), "%d ", kind);
        const char *nl = strchr(l, '\n');
        if (strncmp(l, needle, strlen(needle)) == 0 && strstr(l, what) &&
            (!nl || strstr(l, what) < nl))
            return l;
    }
    return NULL;
}

Test(nettrace, real_31_stream_names_the_rundown_methods_and_the_one_compiled_in_the_session)
{
    static seen s;
    memset(&s, 0, sizeof(s));
    pp_nettrace *p = parse_in_steps(nt31_start, NT31_LEN, NT31_LEN, &s);
    cr_assert_str_eq(pp_nettrace_error(p), "");
    cr_assert(pp_nettrace_done(p), "the end tag was read");
    const pp_nettrace_stats *st = pp_nettrace_get_stats(p);
    cr_assert_eq(st->bytes, NT31_LEN);
    cr_assert_eq(st->pointer_size, 8);
    cr_assert_eq(st->malformed, 0);
    cr_assert_eq(st->methods, (uint64_t)s.n);
    cr_assert_gt(s.rundown, 200, "the runtime's rundown: %d methods", s.rundown);
    cr_assert_eq(s.load, 1, "only HotLate was compiled inside the session (%d loads)", s.load);
    const char *late = line_of(&s, PP_NET_METHOD_LOAD, "PolyNet.Hot|HotLate|void  (int32)");
    cr_assert_not_null(late, "%s", s.text);
    cr_assert_not_null(line_of(&s, PP_NET_METHOD_RUNDOWN, "PolyNet.Hot|HotA|void  (int32)"));
    cr_assert_not_null(line_of(&s, PP_NET_METHOD_RUNDOWN, "PolyNet.Hot|HotB|void  (int32)"));
    cr_assert_not_null(
        line_of(&s, PP_NET_METHOD_RUNDOWN, "PolyNet.Hot|Main|void  (class System.String[])"));
    /* the rundown at the stop names HotLate at the address its load event gave */
    unsigned long long a1, a2;
    unsigned s1, s2;
    cr_assert_eq(sscanf(late, "%*d %llx %u", &a1, &s1), 2);
    const char *rd = line_of(&s, PP_NET_METHOD_RUNDOWN, "PolyNet.Hot|HotLate|");
    cr_assert_not_null(rd);
    cr_assert_eq(sscanf(rd, "%*d %llx %u", &a2, &s2), 2);
    cr_assert_eq(a1, a2);
    cr_assert_eq(s1, s2);
    cr_assert_gt(a1, 0x10000);
    cr_assert_gt(s1, 0);
    pp_nettrace_free(p);
}

Test(nettrace, any_split_of_the_stream_gives_the_same_methods)
{
    static seen whole, bytes, odd;
    memset(&whole, 0, sizeof(whole));
    memset(&bytes, 0, sizeof(bytes));
    memset(&odd, 0, sizeof(odd));
    pp_nettrace *p1 = parse_in_steps(nt31_start, NT31_LEN, NT31_LEN, &whole);
    pp_nettrace *p2 = parse_in_steps(nt31_start, NT31_LEN, 1, &bytes);
    pp_nettrace *p3 = parse_in_steps(nt31_start, NT31_LEN, 4093, &odd);
    cr_assert(pp_nettrace_done(p2) && pp_nettrace_done(p3), "%s %s", pp_nettrace_error(p2),
              pp_nettrace_error(p3));
    cr_assert_gt(whole.n, 0);
    cr_assert_str_eq(bytes.text, whole.text);
    cr_assert_str_eq(odd.text, whole.text);
    pp_nettrace_free(p1);
    pp_nettrace_free(p2);
    pp_nettrace_free(p3);
}

Test(nettrace, a_cut_stream_waits_for_more_and_is_not_an_error)
{
    static seen s;
    memset(&s, 0, sizeof(s));
    pp_nettrace *p = parse_in_steps(nt31_start, NT31_LEN / 2, 1000, &s);
    cr_assert_str_eq(pp_nettrace_error(p), "");
    cr_assert_not(pp_nettrace_done(p));
    cr_assert_lt(pp_nettrace_get_stats(p)->bytes, NT31_LEN / 2 + 1);
    pp_nettrace_free(p);
}

/* ---- streams built here ---- */

typedef struct out {
    uint8_t b[8192];
    size_t n;
} out;

static void put(out *o, const void *d, size_t k)
{
    cr_assert_leq(o->n + k, sizeof(o->b));
    memcpy(o->b + o->n, d, k);
    o->n += k;
}
static void put8(out *o, uint8_t v)
{
    put(o, &v, 1);
}
static void put32(out *o, uint32_t v)
{
    put(o, &v, 4); /* little-endian host */
}
static void put64(out *o, uint64_t v)
{
    put(o, &v, 8);
}
static void put_u16z(out *o, const char *ascii)
{
    for (; *ascii; ascii++) {
        put8(o, (uint8_t)*ascii);
        put8(o, 0);
    }
    put8(o, 0);
    put8(o, 0);
}

static void begin_stream(out *o)
{
    put(o, "Nettrace", 8);
    put32(o, 20);
    put(o, "!FastSerialization.1", 20);
    uint8_t t[] = {5, 5, 1};
    put(o, t, 3);
    put32(o, 4);
    put32(o, 4);
    put32(o, 5);
    put(o, "Trace", 5);
    put8(o, 6);
    uint8_t zero[32] = {0};
    put(o, zero, 32);
    put32(o, 8);    /* pointer size */
    put32(o, 1234); /* pid */
    put32(o, 2);
    put32(o, 1000);
    put8(o, 6);
}

/* A block object holding content[0..n) (header included). */
static void put_block(out *o, const char *name, const uint8_t *content, uint32_t n)
{
    uint8_t t[] = {5, 5, 1};
    put(o, t, 3);
    put32(o, 2);
    put32(o, 2);
    put32(o, (uint32_t)strlen(name));
    put(o, name, strlen(name));
    put8(o, 6);
    put32(o, n);
    while (o->n % 4)
        put8(o, 0);
    put(o, content, n);
    put8(o, 6);
}

/* Block content: the 20-byte header (compressed), then events with metadata id and size. */
static void block_header(out *c)
{
    uint8_t h[20] = {20, 0, 1, 0};
    put(c, h, 20);
}
static void event(out *c, uint32_t metaid, const out *payload)
{
    put8(c, 0x01 | 0x80);
    put8(c, (uint8_t)metaid); /* < 128: one varint byte */
    put8(c, 0);               /* timestamp delta */
    cr_assert_lt(payload->n, 128);
    put8(c, (uint8_t)payload->n);
    put(c, payload->b, payload->n);
}

static void method_stream(out *o, const out *method_payload)
{
    begin_stream(o);
    out md = {0}, m = {0};
    block_header(&md);
    put32(&m, 7);
    put_u16z(&m, "Microsoft-Windows-DotNETRuntime");
    put32(&m, 143);
    put_u16z(&m, "");
    event(&md, 0, &m);
    put_block(o, "MetadataBlock", md.b, (uint32_t)md.n);
    out ev = {0};
    block_header(&ev);
    event(&ev, 7, method_payload);
    put_block(o, "EventBlock", ev.b, (uint32_t)ev.n);
    put8(o, 1);
}

Test(nettrace, a_method_event_built_here_is_decoded_and_a_malformed_one_skipped)
{
    static seen s;
    memset(&s, 0, sizeof(s));
    out pl = {0}, o = {0};
    put64(&pl, 1);
    put64(&pl, 2);
    put64(&pl, 0x7f0000001000ull);
    put32(&pl, 64);
    put32(&pl, 0);
    put32(&pl, 0);
    put_u16z(&pl, "N.C");
    put_u16z(&pl, "M");
    put_u16z(&pl, "void  ()");
    method_stream(&o, &pl);
    pp_nettrace *p = parse_in_steps(o.b, o.n, o.n, &s);
    cr_assert(pp_nettrace_done(p), "%s", pp_nettrace_error(p));
    cr_assert_str_eq(s.text, "1 7f0000001000 64 N.C|M|void  ()\n");
    pp_nettrace_free(p);

    /* the signature's NUL missing: skipped and counted, the stream still read to its end */
    memset(&s, 0, sizeof(s));
    pl.n -= 2;
    o.n = 0;
    method_stream(&o, &pl);
    p = parse_in_steps(o.b, o.n, o.n, &s);
    cr_assert(pp_nettrace_done(p), "%s", pp_nettrace_error(p));
    cr_assert_eq(s.n, 0);
    cr_assert_eq(pp_nettrace_get_stats(p)->malformed, 1);
    pp_nettrace_free(p);
}

Test(nettrace, malformed_streams_fail_with_a_message)
{
    out o = {0};
    put(&o, "Nettracx", 8);
    pp_nettrace *p = pp_nettrace_new(NULL, NULL);
    cr_assert_eq(pp_nettrace_push(p, o.b, o.n), -1);
    cr_assert(strstr(pp_nettrace_error(p), "not a nettrace stream"), "%s", pp_nettrace_error(p));
    cr_assert_eq(pp_nettrace_push(p, "x", 1), -1, "an error stays");
    pp_nettrace_free(p);

    /* a block larger than the limit */
    o.n = 0;
    begin_stream(&o);
    uint8_t t[] = {5, 5, 1};
    put(&o, t, 3);
    put32(&o, 2);
    put32(&o, 2);
    put32(&o, 10);
    put(&o, "EventBlock", 10);
    put8(&o, 6);
    put32(&o, PP_NETTRACE_MAX_BLOCK + 1);
    p = pp_nettrace_new(NULL, NULL);
    cr_assert_eq(pp_nettrace_push(p, o.b, o.n), -1);
    cr_assert(strstr(pp_nettrace_error(p), "larger than the limit"), "%s", pp_nettrace_error(p));
    pp_nettrace_free(p);

    /* an event whose payload runs past its block */
    o.n = 0;
    begin_stream(&o);
    out ev = {0}, pl = {0};
    block_header(&ev);
    put64(&pl, 1);
    event(&ev, 7, &pl);
    ev.b[ev.n - 9] = 100; /* the payload size byte */
    put_block(&o, "EventBlock", ev.b, (uint32_t)ev.n);
    p = pp_nettrace_new(NULL, NULL);
    cr_assert_eq(pp_nettrace_push(p, o.b, o.n), -1);
    cr_assert(strstr(pp_nettrace_error(p), "runs past the block"), "%s", pp_nettrace_error(p));
    pp_nettrace_free(p);

    /* NetTrace V6 (.NET 10) is refused by name */
    o.n = 0;
    begin_stream(&o);
    memcpy(o.b + 8 + 4 + 20 + 3, "\x06\0\0\0\x06\0\0\0", 8);
    p = pp_nettrace_new(NULL, NULL);
    cr_assert_eq(pp_nettrace_push(p, o.b, o.n), -1);
    cr_assert(strstr(pp_nettrace_error(p), "only NetTrace V4 and V5"), "%s", pp_nettrace_error(p));
    pp_nettrace_free(p);
}

Test(nettrace, utf16_names_become_sanitised_bounded_utf8)
{
    /* "a", U+1F600 as a pair, a lone high surrogate, a tab, U+00E9 */
    const uint8_t s[] = {'a', 0, 0x3d, 0xd8, 0x00, 0xde, 0x3d, 0xd8, '\t', 0, 0xe9, 0};
    char out[32];
    size_t n = pp_net_utf16_to_utf8(s, sizeof(s), out, sizeof(out));
    cr_assert_str_eq(out, "a\xf0\x9f\x98\x80\xef\xbf\xbd?\xc3\xa9");
    cr_assert_eq(n, strlen(out));
    /* cut before the emoji: never half a character */
    n = pp_net_utf16_to_utf8(s, sizeof(s), out, 4);
    cr_assert_str_eq(out, "a");
    cr_assert_eq(n, 1);
}

Test(nettrace, frame_text_is_namespace_class_method_and_the_signatures_arguments)
{
    char b[128];
    pp_net_method m = {.ns = "PolyNet.Hot", .name = "HotA", .sig = "void  (int32)"};
    cr_assert_eq(pp_net_frame_name(&m, b, sizeof(b)), strlen("PolyNet.Hot.HotA(int32)_[net]"));
    cr_assert_str_eq(b, "PolyNet.Hot.HotA(int32)_[net]");
    pp_net_method g = {.ns = "", .name = "F", .sig = "no parenthesis"};
    pp_net_frame_name(&g, b, sizeof(b));
    cr_assert_str_eq(b, "F()_[net]", "no namespace, no argument list");
    cr_assert_eq(pp_net_frame_name(&m, b, 8), 7);
    cr_assert_str_eq(b, "PolyNet");
}

Test(nettrace, dotnet_version_is_the_directory_of_libcoreclr)
{
    char v[65];
    cr_assert(pp_net_version_from_path(
        "/opt/dotnet/shared/Microsoft.NETCore.App/3.1.23/libcoreclr.so", v, sizeof(v)));
    cr_assert_str_eq(v, "3.1.23");
    cr_assert(pp_net_version_from_path("/d/Microsoft.NETCore.App/5.0.0-preview.1/libcoreclr.so", v,
                                       sizeof(v)));
    cr_assert_str_eq(v, "5.0.0-preview.1");
    cr_assert_not(pp_net_version_from_path("/app/libcoreclr.so", v, sizeof(v)), "not a version");
    cr_assert_not(pp_net_version_from_path("/x/3.1 x/libcoreclr.so", v, sizeof(v)));
    cr_assert_not(pp_net_version_from_path("/x/3.1/libother.so", v, sizeof(v)));
    cr_assert_not(pp_net_version_from_path("libcoreclr.so", v, sizeof(v)));
    char small[4];
    cr_assert_not(pp_net_version_from_path("/x/3.1.23/libcoreclr.so", small, sizeof(small)),
                  "too long for the buffer");
}

/* Appends a StackBlock (not decoded) of n zero bytes to b at *at (the stream's offset). */
static void stack_block(uint8_t *b, size_t *at, uint32_t n)
{
    out o = {0};
    uint8_t t[] = {5, 5, 1};
    put(&o, t, 3);
    put32(&o, 2);
    put32(&o, 2);
    put32(&o, 10);
    put(&o, "StackBlock", 10);
    put8(&o, 6);
    put32(&o, n);
    while ((*at + o.n) % 4)
        put8(&o, 0);
    memcpy(b + *at, o.b, o.n);
    *at += o.n;
    memset(b + *at, 0, n);
    *at += n;
    b[(*at)++] = 6;
}

Test(nettrace, a_block_near_the_limit_arriving_in_chunks_is_read_and_the_buffer_shrinks_after)
{
    /* a block of nearly PP_NETTRACE_MAX_BLOCK bytes, then one of 60,000, then the end, pushed
     * in 64 KiB chunks: the chunk ending the first block brings much of the second, the first
     * block's declared size is legal however the chunks fall */
    out o = {0};
    begin_stream(&o);
    size_t cap = o.n + PP_NETTRACE_MAX_BLOCK + 61000, total = o.n;
    uint8_t *b = calloc(1, cap);
    cr_assert_not_null(b);
    memcpy(b, o.b, o.n);
    stack_block(b, &total, PP_NETTRACE_MAX_BLOCK - 64);
    stack_block(b, &total, 60000);
    b[total++] = 1; /* the stream's end */
    cr_assert_leq(total, cap);
    pp_nettrace *p = pp_nettrace_new(NULL, NULL);
    size_t peak = 0;
    for (size_t i = 0; i < total; i += 65536) {
        size_t k = total - i < 65536 ? total - i : 65536;
        cr_assert_eq(pp_nettrace_push(p, b + i, k), 0, "at %zu: %s", i, pp_nettrace_error(p));
        if (pp_nettrace_get_stats(p)->buffer > peak)
            peak = pp_nettrace_get_stats(p)->buffer;
    }
    cr_assert(pp_nettrace_done(p), "%s", pp_nettrace_error(p));
    cr_assert_eq(pp_nettrace_get_stats(p)->blocks, 2);
    cr_assert_gt(peak, PP_NETTRACE_MAX_BLOCK - 64, "the block was held whole");
    cr_assert_leq(peak, 2 * PP_NETTRACE_MAX_BLOCK, "one block and a chunk at most");
    cr_assert_eq(pp_nettrace_get_stats(p)->buffer, 65536, "back to 64 KiB after the block");
    pp_nettrace_free(p);
    /* all of it in one push: the same */
    p = pp_nettrace_new(NULL, NULL);
    cr_assert_eq(pp_nettrace_push(p, b, total), 0, "%s", pp_nettrace_error(p));
    cr_assert(pp_nettrace_done(p));
    cr_assert_eq(pp_nettrace_get_stats(p)->blocks, 2);
    cr_assert_eq(pp_nettrace_get_stats(p)->buffer, 65536);
    pp_nettrace_free(p);
    free(b);
}

Test(nettrace, the_targets_object_type_name_reaches_the_message_escaped)
{
    out o = {0};
    begin_stream(&o);
    const char *name = "X\x1b[2JBlock";
    uint8_t t[] = {5, 5, 1};
    put(&o, t, 3);
    put32(&o, 2);
    put32(&o, 2);
    put32(&o, (uint32_t)strlen(name));
    put(&o, name, strlen(name));
    put8(&o, 5); /* not the end tag 6: an error quoting the name */
    pp_nettrace *p = pp_nettrace_new(NULL, NULL);
    cr_assert_eq(pp_nettrace_push(p, o.b, o.n), -1);
    const char *e = pp_nettrace_error(p);
    cr_assert(strstr(e, "X\\x1b[2JBlock"), "%s", e);
    cr_assert_null(strchr(e, '\x1b'), "no raw escape byte in: %s", e);
    pp_nettrace_free(p);
}

Test(nettrace, metadata_ids_past_64ki_are_not_kept)
{
    seen *s = calloc(1, sizeof(*s));
    out o = {0}, md = {0}, m = {0};
    begin_stream(&o);
    block_header(&md);
    put32(&m, 1u << 16);
    put_u16z(&m, "Microsoft-Windows-DotNETRuntime");
    put32(&m, 143);
    put_u16z(&m, "");
    event(&md, 0, &m);
    put_block(&o, "MetadataBlock", md.b, (uint32_t)md.n);
    put8(&o, 1);
    pp_nettrace *p = parse_in_steps(o.b, o.n, o.n, s);
    cr_assert(pp_nettrace_done(p), "%s", pp_nettrace_error(p));
    cr_assert_eq(pp_nettrace_get_stats(p)->malformed, 1, "id 65536 refused");
    pp_nettrace_free(p);
    free(s);
}
