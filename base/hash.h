/* The one hash family of polyprof's tables: 64-bit FNV-1a over bytes, finished with a
 * murmur3-style mix so that the low bits (used as table indexes) depend on every input byte,
 * and the same finisher alone for integer keys. Not for security (no secret seed): tables that
 * hold attacker-influenced keys bound their probe length instead. */
#ifndef PP_HASH_H
#define PP_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t pp_hash_bytes(const void *data, size_t len, uint64_t seed);

/* The finisher alone: a bijective mix of one 64-bit key. */
static inline uint64_t pp_hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
