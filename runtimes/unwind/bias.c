#include "runtimes/unwind/bias.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_PHDRS 128

bool pp_unwind_load_bias(int pid, uint64_t start, uint64_t end, uint64_t offset, uint64_t *bias)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)start,
             (unsigned long long)end);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    Elf64_Ehdr eh;
    Elf64_Phdr ph[MAX_PHDRS];
    bool ok = false;
    if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
        memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum <= MAX_PHDRS) {
        size_t sz = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
        if (pread(fd, ph, sz, (off_t)eh.e_phoff) == (ssize_t)sz) {
            for (size_t i = 0; i < eh.e_phnum && !ok; i++) {
                const Elf64_Phdr *h = &ph[i];
                uint64_t align_off = h->p_offset & ~(uint64_t)0xfff;
                if (h->p_type != PT_LOAD || !(h->p_flags & PF_X) || offset < align_off ||
                    offset >= h->p_offset + h->p_filesz)
                    continue;
                /* runtime = start + (file offset - offset); vaddr = p_vaddr + (file offset -
                 * p_offset) */
                *bias = start - offset - (h->p_vaddr - h->p_offset);
                ok = true;
            }
        }
    }
    close(fd);
    return ok;
}
