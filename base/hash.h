/* The one hash family of polyprof's tables (base/hashtab.h): bytes are taken 8 at a time through
 * MurmurHash3's x64 step, then finished with its 64-bit mix (pp_hash_u64), so that the low bits
 * (used as table indexes) depend on every input byte; integer keys go through the finisher alone.
 * Not for security (no secret seed): a process that chooses keys (its symbol or file names) can
 * make them collide and slow lookups down; the tables bound their sizes. */
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
