/* Walking a process's VMAs with PROCMAP_QUERY (see procmap_query.h). */
#include "base/procmap_query.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#define MAX_VMAS (1u << 20) /* a bound on the walk, far above any real process */

int pp_procmap_each(int fd, uint64_t flags,
                    int (*fn)(void *arg, const struct pp_procmap_query *q, const char *name,
                              size_t namelen),
                    void *arg)
{
    char name[PATH_MAX + 16];
    /* The kernel fills name through a pointer inside the query; tools that only see the
     * ioctl's own struct (valgrind) would call it uninitialised. Once per walk, not per VMA. */
    memset(name, 0, sizeof(name));
    uint64_t addr = 0;
    for (unsigned n = 0; n < MAX_VMAS; n++) {
        struct pp_procmap_query q = {
            .size = sizeof(q),
            .query_flags = PP_QUERY_COVERING_OR_NEXT_VMA | flags,
            .query_addr = addr,
            .vma_name_addr = (uint64_t)(uintptr_t)name,
            .vma_name_size = sizeof(name),
        };
        if (ioctl(fd, PP_PROCMAP_QUERY, &q) < 0) {
            if (errno == ENOENT)
                return 0; /* no VMA at or after addr */
            if (errno == EINTR)
                continue;
            if (errno != ENAMETOOLONG)
                return -1;
            /* a path longer than PATH_MAX: that VMA without its name, not the whole walk */
            q.vma_name_size = 0;
            q.vma_name_addr = 0;
            if (ioctl(fd, PP_PROCMAP_QUERY, &q) < 0)
                return errno == ENOENT ? 0 : -1;
        }
        if (q.vma_end <= addr || q.vma_end <= q.vma_start)
            return 0; /* never go backwards */
        addr = q.vma_end;
        name[sizeof(name) - 1] = '\0';
        size_t nl = q.vma_name_size ? strnlen(name, sizeof(name)) : 0;
        if (!nl)
            name[0] = '\0';
        if (fn(arg, &q, name, nl))
            return 0;
    }
    return 0;
}
