/* Bounded reads of another process's memory: process_vm_readv, falling back to pread() on
 * /proc/<pid>/mem when the syscall is unavailable or refused. Reads never write to or stop the
 * target. A small page cache (pp_rmem_read_cached) serves the many small structure reads of one
 * sample from whole-page copies; pp_rmem_begin_sample() drops it, so data is never older than
 * the current sample. Counters (reads, bytes) are kept for statistics.
 *
 * A test hook replaces the target: every read then goes to hook(), so parsers can be fed
 * arbitrary ("garbage") memory without a process. */
#ifndef PP_REMOTE_MEM_H
#define PP_REMOTE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PP_RMEM_MAX_READ (1u << 20) /* largest single read accepted */
/* Cache blocks: a read costs ~3 us of syscall overhead here (plus ~0.25 us per KiB copied), so
 * fewer, larger reads win: frames of 3.11+ sit contiguously in the thread's data stack. */
#ifndef PP_RMEM_PAGE
#define PP_RMEM_PAGE 16384u
#endif
#ifndef PP_RMEM_CACHE_PAGES
#define PP_RMEM_CACHE_PAGES 16u
#endif

typedef int (*pp_rmem_hook)(void *arg, uint64_t addr, void *buf, size_t len);

typedef struct pp_rmem_page {
    uint64_t addr; /* page address; valid when gen matches the reader's */
    unsigned long long gen;
    uint32_t lo, hi; /* valid bytes: data[lo, hi) (parts of a block may be unmapped) */
    uint8_t data[PP_RMEM_PAGE];
} pp_rmem_page;

typedef struct pp_rmem {
    int pid;
    int memfd;     /* /proc/<pid>/mem once the fallback is in use, else -1 */
    bool use_file; /* process_vm_readv refused: use memfd */
    bool gone;     /* the process exited (ESRCH seen) */
    unsigned gen;  /* current sample generation for the page cache */
    unsigned long long reads, read_bytes;
    pp_rmem_page *pages; /* PP_RMEM_CACHE_PAGES, allocated on first cached read */
    pp_rmem_hook hook;
    void *hook_arg;
} pp_rmem;

void pp_rmem_init(pp_rmem *m, int pid);
void pp_rmem_free(pp_rmem *m);
/* Reads exactly len bytes at addr (len <= PP_RMEM_MAX_READ, addr != 0). Returns 0, or -1 with
 * errno (ESRCH: the process exited, also recorded in m->gone; EFAULT: unmapped). */
int pp_rmem_read(pp_rmem *m, uint64_t addr, void *buf, size_t len);
/* Same through the page cache (for small reads of structures, len <= PP_RMEM_PAGE). */
int pp_rmem_read_cached(pp_rmem *m, uint64_t addr, void *buf, size_t len);
/* Reads n ranges (addrs[i], lens[i] <= PP_RMEM_PAGE bytes into bufs[i]) with as few syscalls as
 * possible (one process_vm_readv for up to 64 ranges; a range that fails is skipped and the
 * rest re-issued). ok[i] tells which ranges were read. Returns the number read. */
size_t pp_rmem_readv(pp_rmem *m, const uint64_t *addrs, const size_t *lens, uint8_t *const *bufs,
                     size_t n, bool *ok);
/* Starts a new sample: cached pages are dropped. */
void pp_rmem_begin_sample(pp_rmem *m);
/* Reads a pointer-sized value. */
static inline int pp_rmem_ptr(pp_rmem *m, uint64_t addr, uint64_t *out)
{
    return pp_rmem_read_cached(m, addr, out, sizeof(*out));
}
/* A plausible user-space pointer with the given alignment (power of two). */
static inline bool pp_rmem_valid_ptr(uint64_t p, uint64_t align)
{
    return p >= 4096 && p < (1ull << 47) && (p & (align - 1)) == 0;
}

#endif
