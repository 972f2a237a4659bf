/* The kernel ABI of PROCMAP_QUERY (include/uapi/linux/fs.h, Linux 6.11): an ioctl on an open
 * /proc/<pid>/maps that returns one VMA at a time, with filters. Debian 12's headers predate it.
 * Kernels without it fail the ioctl with ENOTTY (or EINVAL). */
#ifndef PP_PROCMAP_QUERY_H
#define PP_PROCMAP_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

struct pp_procmap_query {
    uint64_t size;
    uint64_t query_flags;
    uint64_t query_addr;
    uint64_t vma_start;
    uint64_t vma_end;
    uint64_t vma_flags;
    uint64_t vma_page_size;
    uint64_t vma_offset;
    uint64_t inode;
    uint32_t dev_major;
    uint32_t dev_minor;
    uint32_t vma_name_size;
    uint32_t build_id_size;
    uint64_t vma_name_addr;
    uint64_t build_id_addr;
};
#define PP_PROCMAP_QUERY _IOWR('f', 17, struct pp_procmap_query)
#define PP_QUERY_VMA_READABLE 0x01
#define PP_QUERY_VMA_WRITABLE 0x02
#define PP_QUERY_VMA_EXECUTABLE 0x04
#define PP_QUERY_VMA_SHARED 0x08
#define PP_QUERY_COVERING_OR_NEXT_VMA 0x10
#define PP_QUERY_FILE_BACKED_VMA 0x20

/* Calls fn(arg, q, name, namelen) for each VMA matching flags (PP_QUERY_VMA_* and
 * PP_QUERY_FILE_BACKED_VMA), in address order. name is "" (namelen 0) for a VMA without one,
 * and for one whose path does not fit PATH_MAX (that VMA only, not the walk). fn returns
 * non-zero to stop. Returns 0, or -1 with errno: ENOTTY/EINVAL on a kernel without the ioctl
 * (before anything was passed to fn), anything else when the process exited. */
int pp_procmap_each(int fd, uint64_t flags,
                    int (*fn)(void *arg, const struct pp_procmap_query *q, const char *name,
                              size_t namelen),
                    void *arg);

#endif
