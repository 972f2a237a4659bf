/* The stack traces the BPF sampler hands over once each (keyed by a 64-bit hash of the trace),
 * kept by user space so that a counts entry names its stacks by hash alone.
 *
 * Two generations: the BPF side registers a hash in its `known` map when it first sends the
 * trace, and sends it again only once the hash is gone from that map. When the current
 * generation is full, user space empties `known` and rotates: the current generation becomes
 * the old one, still consulted for the counts recorded before the rotation (drained at the next
 * drain), then dropped. So no hash the kernel considers known is ever missing here. */
#ifndef PP_STACKCACHE_H
#define PP_STACKCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pp_stackcache pp_stackcache;

/* max_entries: traces in the current generation before pp_stackcache_full says so. */
pp_stackcache *pp_stackcache_new(size_t max_entries);
void pp_stackcache_free(pp_stackcache *c);

/* Adds a trace to the current generation (a hash already there is kept). 0, or -1 without
 * memory. n is capped at PP_STACKCACHE_MAX_DEPTH words. */
#define PP_STACKCACHE_MAX_DEPTH 481 /* the longest record: a runtime trace, PP_RT_MAX_WORDS */
int pp_stackcache_add(pp_stackcache *c, uint64_t hash, const uint64_t *ips, size_t n);

/* The trace of hash (current generation first, then the old one), its length in *n; NULL when
 * unknown. Valid until the next add, rotate or drop. */
const uint64_t *pp_stackcache_get(const pp_stackcache *c, uint64_t hash, size_t *n);

/* True when the current generation holds max_entries traces or more. */
bool pp_stackcache_full(const pp_stackcache *c);
/* Drops the old generation and makes the current one old. */
void pp_stackcache_rotate(pp_stackcache *c);
/* Drops the old generation. */
void pp_stackcache_drop_old(pp_stackcache *c);
/* Traces in the current and old generations. */
size_t pp_stackcache_count(const pp_stackcache *c);

#endif
