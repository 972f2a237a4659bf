/* libFuzzer target for the nettrace stream parser (runtimes/dotnet/nettrace.c): any bytes, pushed
 * whole and again in pieces of a size the input picks, must give the same outcome and the same
 * method callbacks, never a crash, a hang or a huge allocation; an error always says what went
 * wrong, and every name is valid UTF-8 without control characters. Seeds: a stream captured from
 * the .NET Core 3.1 runtime, its first 4 KiB, a stream of one method event built by hand. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "runtimes/dotnet/dotnet.h"

static uint64_t mix(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static void check(void *arg, const pp_net_method *m)
{
    uint64_t *h = arg;
    const char *parts[3] = {m->ns, m->name, m->sig};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(parts[i]);
        if (n >= PP_NET_NAME_MAX || !pp_utf8_valid(parts[i], n))
            abort();
        for (size_t k = 0; k < n; k++)
            if ((uint8_t)parts[i][k] < 0x20 || parts[i][k] == 0x7f)
                abort();
        *h = mix(*h, parts[i]);
    }
    *h = (*h ^ m->start ^ ((uint64_t)m->size << 32) ^ (uint64_t)m->kind) * 0x100000001b3ull;
}

static int run(const uint8_t *data, size_t size, size_t step, uint64_t *h, bool *done)
{
    pp_nettrace *p = pp_nettrace_new(check, h);
    if (!p)
        abort();
    int rc = 0;
    for (size_t i = 0; i < size && rc == 0; i += step)
        rc = pp_nettrace_push(p, data + i, size - i < step ? size - i : step);
    if (rc < 0 && pp_nettrace_error(p)[0] == '\0')
        abort();
    *done = pp_nettrace_done(p);
    pp_nettrace_free(p);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t h1 = 1, h2 = 1;
    bool d1, d2;
    int r1 = run(data, size, size ? size : 1, &h1, &d1);
    size_t step = size ? 1 + data[size - 1] % 61 : 1;
    int r2 = run(data, size, step, &h2, &d2);
    /* an error found in one piece may be met later in the other: only a clean run must agree */
    if (r1 == 0 && r2 == 0 && (h1 != h2 || d1 != d2))
        abort();
    return 0;
}
