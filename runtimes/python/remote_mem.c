/* Remote memory reader (see remote_mem.h). */
#include "runtimes/python/remote_mem.h"

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

void pp_rmem_begin_sample(pp_rmem *m)
{
    if (++m->gen == 0) { /* wrapped: make every slot stale */
        if (m->pages)
            for (unsigned i = 0; i < PP_RMEM_CACHE_PAGES; i++)
                m->pages[i].gen = 0;
        m->gen = 1;
    }
}

static const uint8_t *page(pp_rmem *m, uint64_t pa)
{
    if (!m->pages) {
        m->pages = calloc(PP_RMEM_CACHE_PAGES, sizeof(*m->pages));
        if (!m->pages)
            return NULL;
    }
    /* Direct-mapped by page number. */
    pp_rmem_page *pg = &m->pages[(pa / PP_RMEM_PAGE) % PP_RMEM_CACHE_PAGES];
    if (pg->gen == m->gen && pg->addr == pa)
        return pg->data;
    pg->gen = 0;
    if (pp_rmem_read(m, pa, pg->data, PP_RMEM_PAGE) != 0)
        return NULL;
    pg->addr = pa;
    pg->gen = m->gen;
    return pg->data;
}

int pp_rmem_read_cached(pp_rmem *m, uint64_t addr, void *buf, size_t len)
{
    if (len > PP_RMEM_PAGE || addr == 0 || addr + len < addr)
        return pp_rmem_read(m, addr, buf, len);
    uint8_t *out = buf;
    while (len) {
        uint64_t pa = addr & ~(uint64_t)(PP_RMEM_PAGE - 1);
        size_t off = (size_t)(addr - pa), n = PP_RMEM_PAGE - off;
        if (n > len)
            n = len;
        const uint8_t *d = page(m, pa);
        if (!d) {
            if (m->gone)
                return -1;
            /* The page may be partly unmapped for a read at its end: try the exact range. */
            return pp_rmem_read(m, addr, out, len);
        }
        memcpy(out, d + off, n);
        out += n;
        addr += n;
        len -= n;
    }
    return 0;
}
