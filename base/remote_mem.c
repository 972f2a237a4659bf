/* Remote memory reader (see remote_mem.h). */
#include "base/remote_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

void pp_rmem_init(pp_rmem *m, int pid)
{
    memset(m, 0, sizeof(*m));
    m->pid = pid;
    m->memfd = -1;
    m->gen = 1;
}

void pp_rmem_free(pp_rmem *m)
{
    if (m->memfd >= 0)
        close(m->memfd);
    m->memfd = -1;
    free(m->pages);
    m->pages = NULL;
}

/* Whether the process still exists (a failed read of an unmapped address is EFAULT/EIO, of an
 * exited process ESRCH; /proc/<pid>/mem reports an exited process as a 0-byte read). */
static bool alive(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    return access(path, F_OK) == 0;
}

static int read_file(pp_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (m->memfd < 0) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/mem", m->pid);
        m->memfd = open(path, O_RDONLY | O_CLOEXEC);
        if (m->memfd < 0) {
            if (errno == ENOENT)
                errno = ESRCH;
            return -1;
        }
    }
    ssize_t n = pread(m->memfd, buf, len, (off_t)addr);
    if (n == (ssize_t)len)
        return 0;
    errno = n < 0 && errno != EIO ? errno : EFAULT;
    if (!alive(m->pid))
        errno = ESRCH;
    return -1;
}

int pp_rmem_read(pp_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (addr == 0 || len > PP_RMEM_MAX_READ || addr + len < addr) {
        errno = EFAULT;
        return -1;
    }
    m->reads++;
    int rc;
    if (m->hook) {
        rc = m->hook(m->hook_arg, addr, buf, len);
        if (rc != 0)
            errno = EFAULT;
    } else if (m->gone) {
        errno = ESRCH;
        rc = -1;
    } else if (m->use_file) {
        rc = read_file(m, addr, buf, len);
    } else {
        struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_readv(m->pid, &l, 1, &r, 1, 0);
        if (n == (ssize_t)len) {
            rc = 0;
        } else if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
            m->use_file = true;
            rc = read_file(m, addr, buf, len);
        } else {
            if (n >= 0)
                errno = EFAULT;
            rc = -1;
        }
    }
    if (rc == 0)
        m->read_bytes += len;
    else if (errno == ESRCH)
        m->gone = true;
    return rc;
}

size_t pp_rmem_readv(pp_rmem *m, const uint64_t *addrs, const size_t *lens, uint8_t *const *bufs,
                     size_t n, bool *ok)
{
    size_t got = 0;
    for (size_t i = 0; i < n; i++)
        ok[i] = false;
    if (m->hook || m->use_file || m->gone) {
        for (size_t i = 0; i < n; i++)
            if ((ok[i] = pp_rmem_read(m, addrs[i], bufs[i], lens[i]) == 0))
                got++;
        return got;
    }
    struct iovec l[64], r[64];
    for (size_t i = 0; i < n && !m->gone;) {
        size_t k = 0;
        for (; k < 64 && i + k < n; k++) {
            l[k] = (struct iovec){bufs[i + k], lens[i + k]};
            r[k] = (struct iovec){(void *)(uintptr_t)addrs[i + k], lens[i + k]};
        }
        m->reads++;
        ssize_t rd = process_vm_readv(m->pid, l, k, r, k, 0);
        if (rd < 0) {
            if (errno == ESRCH) {
                m->gone = true;
                break;
            }
            if (errno == ENOSYS || errno == EPERM) { /* fall back to /proc/<pid>/mem */
                m->use_file = true;
                return got + pp_rmem_readv(m, addrs + i, lens + i, bufs + i, n - i, ok + i);
            }
            rd = 0;
        }
        m->read_bytes += (size_t)rd;
        /* Ranges fully read form a prefix; the next one failed (skip it) unless all were read. */
        size_t done = 0;
        while (done < k && (size_t)rd >= lens[i + done]) {
            rd -= (ssize_t)lens[i + done];
            ok[i + done++] = true;
            got++;
        }
        i += done < k ? done + 1 : k;
    }
    return got;
}

void pp_rmem_begin_sample(pp_rmem *m)
{
    m->gen++;
}

/* One raw read of up to len bytes; returns the bytes read (a prefix), -1 on failure. */
static ssize_t read_prefix(pp_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (m->hook || m->use_file || m->gone)
        return pp_rmem_read(m, addr, buf, len) == 0 ? (ssize_t)len : -1;
    m->reads++;
    struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(m->pid, &l, 1, &r, 1, 0);
    if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
        m->reads--;
        m->use_file = true;
        return pp_rmem_read(m, addr, buf, len) == 0 ? (ssize_t)len : -1;
    }
    if (n < 0 && errno == ESRCH)
        m->gone = true;
    if (n > 0)
        m->read_bytes += (size_t)n;
    return n;
}

/* The cached block holding addr, with *avail bytes valid from addr; NULL if unreadable. */
static const uint8_t *block(pp_rmem *m, uint64_t addr, size_t *avail)
{
    if (!m->pages) {
        m->pages = calloc(PP_RMEM_CACHE_PAGES, sizeof(*m->pages));
        if (!m->pages)
            return NULL;
    }
    uint64_t pa = addr & ~(uint64_t)(PP_RMEM_PAGE - 1);
    uint32_t off = (uint32_t)(addr - pa);
    /* Direct-mapped by block number. */
    pp_rmem_page *pg = &m->pages[(pa / PP_RMEM_PAGE) % PP_RMEM_CACHE_PAGES];
    if (pg->gen != m->gen || pg->addr != pa || off < pg->lo || off >= pg->hi) {
        pg->gen = 0;
        /* The whole block, else from addr's 4 KiB page on (the block may start unmapped). */
        uint32_t lo = 0;
        ssize_t n = read_prefix(m, pa, pg->data, PP_RMEM_PAGE);
        if (n <= (ssize_t)off && !m->gone && (lo = off & ~4095u) > 0)
            n = read_prefix(m, pa + lo, pg->data + lo, PP_RMEM_PAGE - lo);
        else
            lo = 0;
        if (n <= 0 || lo + (uint32_t)n <= off)
            return NULL;
        pg->addr = pa;
        pg->lo = lo;
        pg->hi = lo + (uint32_t)n;
        pg->gen = m->gen;
    }
    *avail = pg->hi - off;
    return pg->data + off;
}

int pp_rmem_read_cached(pp_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (len > PP_RMEM_PAGE || addr == 0 || addr + len < addr)
        return pp_rmem_read(m, addr, buf, len);
    uint8_t *out = buf;
    while (len) {
        size_t avail;
        const uint8_t *d = block(m, addr, &avail);
        if (!d) {
            if (m->gone)
                return -1;
            /* The block may be partly unmapped before addr: try the exact range. */
            return pp_rmem_read(m, addr, out, len);
        }
        size_t n = avail < len ? avail : len;
        memcpy(out, d, n);
        out += n;
        addr += n;
        len -= n;
    }
    return 0;
}
