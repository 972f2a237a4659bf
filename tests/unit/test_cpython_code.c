/* The code-object cache names a code object from its target's memory as it is when read, never
 * from an older copy: code objects and their name strings are freed and their addresses reused
 * as fast as a program makes functions (exec in a loop), and a name read through the page cache
 * (pages copied earlier in the same drain) paired one function's name with another's first line
 * (test_python_bpf's address-reuse test: fn_16 at line 47, fn_46's). Synthetic objects with
 * 3.11's layout in this process's own memory, read through the real reader. */
#include <stdalign.h>
#include <unistd.h>

#include "base/remote_mem.h"
#include "runtimes/python/cpython_int.h"
#include "testutil.h"

/* three reader pages: strings and line table; the first code objects; the later one */
static alignas(PP_RMEM_PAGE) uint8_t arena[3 * PP_RMEM_PAGE];

static pp_py_layout layout(void)
{
    const pp_py_layout *l = pp_py_layout_for(11);
    cr_assert(l);
    pp_py_layout L = *l;
    L.code_type = L.unicode_type = L.bytes_type = 0; /* not checked: no real type objects */
    L.shim_code = 0;
    return L;
}

/* A compact ASCII str object at p. */
static void put_str(const pp_py_layout *L, uint8_t *p, const char *s)
{
    memset(p, 0, L->u_ascii_data + 16);
    int64_t len = (int64_t)strlen(s);
    uint32_t state = (1u << 2) | 0x20 | 0x40 | 0x80; /* kind 1, compact, ascii, ready */
    memcpy(p + L->u_length, &len, 8);
    memcpy(p + L->u_state, &state, 4);
    memcpy(p + L->u_ascii_data, s, (size_t)len + 1);
}

static void put_code(const pp_py_layout *L, uint8_t *p, const uint8_t *file, const uint8_t *name,
                     const uint8_t *table, int first)
{
    memset(p, 0, 512);
    uint64_t f = (uint64_t)(uintptr_t)file, n = (uint64_t)(uintptr_t)name,
             t = (uint64_t)(uintptr_t)table;
    memcpy(p + L->co_filename, &f, 8);
    memcpy(p + L->co_name, &n, 8);
    memcpy(p + L->co_qualname, &n, 8);
    memcpy(p + L->co_linetable, &t, 8);
    memcpy(p + L->co_firstlineno, &first, 4);
}

Test(cpython_code, a_reused_name_is_read_as_it_is_now)
{
    pp_py_layout L = layout();
    uint8_t *strs = arena, *codes = arena + PP_RMEM_PAGE, *later = arena + 2 * PP_RMEM_PAGE;
    uint8_t *steady = strs, *fname = strs + 256, *file = strs + 512, *table = strs + 768;
    put_str(&L, steady, "steady");
    put_str(&L, fname, "fn_16");
    put_str(&L, file, "<throwaway>");
    memset(table, 0, 64); /* an empty bytes object */
    put_code(&L, codes, file, steady, table, 4);
    put_code(&L, codes + 1024, file, fname, table, 17);

    pp_rmem m;
    pp_rmem_init(&m, getpid());
    pp_rmem_begin_sample(&m);
    pp_py_code_cache c = {0};
    pp_py_code *co = pp_py_code_get(&c, &m, &L, (uintptr_t)codes);
    cr_assert(co && strcmp(co->name, "steady") == 0 && co->firstlineno == 4);
    co = pp_py_code_get(&c, &m, &L, (uintptr_t)(codes + 1024));
    cr_assert(co && strcmp(co->name, "fn_16") == 0 && co->firstlineno == 17);

    /* In the same drain, fn_16 is freed, its name's memory holds fn_46's name and fn_46's code
     * object is made elsewhere: it is named fn_46, not from a copy of the page taken above. */
    put_str(&L, fname, "fn_46");
    put_code(&L, later, file, fname, table, 47);
    co = pp_py_code_get(&c, &m, &L, (uintptr_t)later);
    cr_assert(co, "a code object in a page not read before is readable");
    cr_expect_str_eq(co->name, "fn_46");
    cr_expect_eq(co->firstlineno, 47);

    /* The code object replaced in place is reloaded the same way. */
    put_str(&L, fname, "fn_47");
    put_code(&L, later, file, fname, table, 48);
    pp_rmem_begin_sample(&m);
    co = pp_py_code_get(&c, &m, &L, (uintptr_t)later);
    cr_assert(co);
    cr_expect_str_eq(co->name, "fn_47");
    cr_expect_eq(co->firstlineno, 48);

    pp_py_code_cache_free(&c);
    pp_rmem_free(&m);
}

/* The code object is freed while it is read, after its header: its name's memory now holds the
 * name of the code object made at the same address (another first line). */
typedef struct reuse {
    const pp_py_layout *L;
    uint8_t *name, *code;
    bool done;
} reuse;

static int reuse_on_name(void *arg, uint64_t addr, void *buf, size_t len)
{
    reuse *r = arg;
    if (!r->done && addr == (uintptr_t)r->name + r->L->u_ascii_data) {
        r->done = true;
        put_str(r->L, r->name, "fn_46");
        int first = 47;
        memcpy(r->code + r->L->co_firstlineno, &first, 4);
    }
    memcpy(buf, (const void *)(uintptr_t)addr, len); /* this process's own memory */
    return 0;
}

Test(cpython_code, a_code_object_reused_while_read_is_not_named)
{
    pp_py_layout L = layout();
    uint8_t *strs = arena, *codes = arena + PP_RMEM_PAGE;
    uint8_t *fname = strs + 256, *file = strs + 512, *table = strs + 768;
    put_str(&L, fname, "fn_16");
    put_str(&L, file, "<throwaway>");
    memset(table, 0, 64);
    put_code(&L, codes, file, fname, table, 17);
    reuse r = {.L = &L, .name = fname, .code = codes};
    pp_rmem m;
    pp_rmem_init(&m, getpid());
    m.hook = reuse_on_name;
    m.hook_arg = &r;
    pp_rmem_begin_sample(&m);
    pp_py_code_cache c = {0};
    pp_py_code *co = pp_py_code_get(&c, &m, &L, (uintptr_t)codes);
    cr_assert(r.done, "the name was read");
    cr_expect_null(co, "named %s with first line %d", co ? co->name : "", co ? co->firstlineno : 0);
    pp_rmem_begin_sample(&m); /* the next drain: the new code object, as it is now */
    co = pp_py_code_get(&c, &m, &L, (uintptr_t)codes);
    cr_assert(co);
    cr_expect_str_eq(co->name, "fn_46");
    cr_expect_eq(co->firstlineno, 47);
    m.hook = NULL;
    pp_py_code_cache_free(&c);
    pp_rmem_free(&m);
}
