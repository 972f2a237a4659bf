/* The kernel ABI of PROCMAP_QUERY (include/uapi/linux/fs.h, Linux 6.11): an ioctl on an open
 * /proc/<pid>/maps that returns one VMA at a time, with filters. Debian 12's headers predate it.
 * Kernels without it fail the ioctl with ENOTTY (or EINVAL). */
#ifndef PP_PROCMAP_QUERY_H
#define PP_PROCMAP_QUERY_H

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

#endif
