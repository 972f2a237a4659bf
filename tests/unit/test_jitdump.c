/* Unit tests: jitdump files (runtimes/symbols/jitdump.c): the header, code-load records named
 * like perf map entries, code moves, records cut at a chunk or at the file's end, a close
 * record, garbage; and a file appended to between two reads. */
#include "tests/unit/testutil.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtimes/symbols/symbols_internal.h"

TestSuite(jitdump, .init = pp_test_quiet_log);

typedef struct {
    unsigned char b[65536];
    size_t n;
} buf;

static void put(buf *x, const void *p, size_t l)
{
    memcpy(x->b + x->n, p, l);
    x->n += l;
}

static void put32(buf *x, uint32_t v)
{
    put(x, &v, 4);
}

static void put64(buf *x, uint64_t v)
{
    put(x, &v, 8);
}

static void header(buf *x)
{
    put32(x, 0x4A695444u); /* magic */
    put32(x, 1);           /* version */
    put32(x, 40);          /* header size */
    put32(x, 62);          /* EM_X86_64 */
    put32(x, 0);
    put32(x, 1234); /* pid */
    put64(x, 0);    /* timestamp */
    put64(x, 0);    /* flags */
}

static void load(buf *x, uint64_t addr, uint64_t size, const char *name, size_t code)
{
    size_t nl = strlen(name) + 1;
    put32(x, 0);
    put32(x, (uint32_t)(16 + 40 + nl + code));
    put64(x, 0);
    put32(x, 1234);
    put32(x, 1234);
    put64(x, addr); /* vma */
    put64(x, addr); /* code_addr */
    put64(x, size);
    put64(x, 7); /* code_index */
    put(x, name, nl);
    memset(x->b + x->n, 0xcc, code);
    x->n += code;
}

static void move(buf *x, uint64_t from, uint64_t to, uint64_t size)
{
    put32(x, 1);
    put32(x, 16 + 48);
    put64(x, 0);
    put32(x, 1234);
    put32(x, 1234);
    put64(x, to);
    put64(x, from);
    put64(x, to);
    put64(x, size);
    put64(x, 8);
}

static void other(buf *x, uint32_t id, size_t body)
{
    put32(x, id);
    put32(x, (uint32_t)(16 + body));
    put64(x, 0);
    memset(x->b + x->n, 0, body);
    x->n += body;
}

Test(jitdump, header)
{
    buf x = {0};
    header(&x);
    cr_expect_eq(pp_jitdump_header(x.b, x.n), 40);
    cr_expect_eq(pp_jitdump_header(x.b, 39), -1, "short");
    x.b[0] ^= 1;
    cr_expect_eq(pp_jitdump_header(x.b, x.n), -1, "magic");
}

Test(jitdump, records)
{
    buf x = {0};
    load(&x, 0x1000, 0x100, "JS:*alpha /app/a.js:1:14", 0x100);
    other(&x, 2, 40); /* debug info */
    load(&x, 0x2000, 0x80, "JS:~beta /app/a.js:5:1", 0x80);
    move(&x, 0x1000, 0x3000, 0x100);
    pp_perfmap m = {0};
    uint64_t used;
    int closed;
    cr_assert_eq(pp_jitdump_records(&m, x.b, x.n, x.n, &used, &closed), 3);
    cr_expect_eq(used, x.n);
    cr_expect_eq(closed, 0);
    cr_expect_str_eq(pp_perfmap_find(&m, 0x1010), "JS:*alpha /app/a.js:1:14");
    cr_expect_str_eq(pp_perfmap_find(&m, 0x207f), "JS:~beta /app/a.js:5:1");
    cr_expect_null(pp_perfmap_find(&m, 0x2080));
    cr_expect_str_eq(pp_perfmap_find(&m, 0x30ff), "JS:*alpha /app/a.js:1:14", "moved code");
    pp_perfmap_free(&m);
}

Test(jitdump, partial_and_close)
{
    buf x = {0};
    load(&x, 0x1000, 0x10, "a", 0x10);
    size_t first = x.n;
    load(&x, 0x2000, 0x10, "b", 0x10);
    pp_perfmap m = {0};
    uint64_t used;
    int closed;
    /* the second record is not all in the file yet */
    cr_expect_eq(pp_jitdump_records(&m, x.b, x.n - 1, x.n - 1, &used, &closed), 1);
    cr_expect_eq(used, first);
    /* in the file, but its name beyond this chunk: read again from its start */
    cr_expect_eq(pp_jitdump_records(&m, x.b + first, 20, x.n - first, &used, &closed), 0);
    cr_expect_eq(used, 0);
    other(&x, 3, 0); /* close */
    load(&x, 0x4000, 0x10, "after close", 0);
    cr_expect_eq(pp_jitdump_records(&m, x.b + first, x.n - first, x.n - first, &used, &closed), 1);
    cr_expect_eq(closed, 1);
    cr_expect_null(pp_perfmap_find(&m, 0x4000));
    /* a record shorter than its own header is garbage: nothing after it is read */
    buf g = {0};
    put32(&g, 0);
    put32(&g, 3);
    put64(&g, 0);
    cr_expect_eq(pp_jitdump_records(&m, g.b, g.n, g.n, &used, &closed), 0);
    cr_expect_eq(closed, 1);
    pp_perfmap_free(&m);
}

Test(jitdump, names_bounded)
{
    buf x = {0};
    char name[6000];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    load(&x, 0x1000, 0x10, name, 0);
    load(&x, 0x2000, 0x10, "two\nlines", 0);
    pp_perfmap m = {0};
    uint64_t used;
    int closed;
    cr_expect_eq(pp_jitdump_records(&m, x.b, x.n, x.n, &used, &closed), 2);
    cr_expect_leq(strlen(pp_perfmap_find(&m, 0x1000)), PP_SYM_MAX_NAME);
    cr_expect_str_eq(pp_perfmap_find(&m, 0x2000), "two");
    pp_perfmap_free(&m);
}

/* A file read, appended to, and read again: only the new records are parsed. */
Test(jitdump, update_appended_file)
{
    char path[] = "/tmp/pp_jitdump_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    buf x = {0};
    header(&x);
    load(&x, 0x1000, 0x10, "JS:first /a.js:1:1", 64);
    cr_assert_eq(write(fd, x.b, x.n), (ssize_t)x.n);
    pp_perfmap m = {0};
    cr_expect_eq(pp_jitdump_update(&m, fd), 1);
    cr_expect_eq(pp_jitdump_update(&m, fd), 0, "unchanged");
    buf y = {0};
    load(&y, 0x2000, 0x10, "JS:second /a.js:2:1", 64);
    cr_assert_eq(write(fd, y.b, y.n), (ssize_t)y.n);
    cr_expect_eq(pp_jitdump_update(&m, fd), 1, "the appended record only");
    cr_expect_str_eq(pp_perfmap_find(&m, 0x1000), "JS:first /a.js:1:1");
    cr_expect_str_eq(pp_perfmap_find(&m, 0x2000), "JS:second /a.js:2:1");
    pp_perfmap_free(&m);
    close(fd);
    /* not a jitdump */
    fd = open("/proc/self/exe", O_RDONLY);
    cr_expect_eq(pp_jitdump_update(&m, fd), -1);
    close(fd);
}
