/* See hash.h. */
#include "base/hash.h"

#include <string.h>

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* MurmurHash3's x64 body step: one 8-byte word into the state. */
static inline uint64_t step(uint64_t h, uint64_t k)
{
    k *= 0x87c37b91114253d5ULL;
    k = rotl(k, 31);
    k *= 0x4cf5ad432745937fULL;
    h ^= k;
    h = rotl(h, 27);
    return h * 5 + 0x52dce729;
}

uint64_t pp_hash_bytes(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    size_t n = len;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t k;
        memcpy(&k, p, 8);
        h = step(h, k);
    }
    if (n) {
        uint64_t k = 0;
        memcpy(&k, p, n);
        h = step(h, k);
    }
    return pp_hash_u64(h ^ len);
}
