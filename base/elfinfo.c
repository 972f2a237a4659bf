#include "base/elfinfo.h"
#include "base/elfnotes.h"

#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files are read (pread), never mapped: a file its owner truncates while it is read (any user's
 * library in a profiled process) would raise SIGBUS in polyprof through a mapping. */
#define MAX_SCAN (64UL << 20) /* bytes of .rodata searched for a string */

Elf *pp_elf_begin_bounded(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return NULL;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    size_t shnum = 0;
    if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrnum(e, &shnum) != 0 || shnum > (1u << 16))
        goto refuse;
    uint64_t size = (uint64_t)st.st_size;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            goto refuse;
        if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
            continue;
        if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
            goto refuse;
        bool table = sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM ||
                     sh.sh_type == SHT_STRTAB || sh.sh_type == SHT_NOTE;
        if (table && sh.sh_size > PP_ELF_TABLE_MAX)
            goto refuse;
    }
    return e;
refuse:
    if (e)
        elf_end(e);
    return NULL;
}

static Elf *open_elf(const char *path, int *fd)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return NULL;
    Elf *e = pp_elf_begin_bounded(*fd);
    if (!e) {
        close(*fd);
        *fd = -1;
    }
    return e;
}

static const char *machine_name(unsigned m)
{
    switch (m) {
    case EM_X86_64:
        return "x86_64";
    case EM_AARCH64:
        return "aarch64";
    case EM_386:
        return "i386";
    case EM_ARM:
        return "arm";
    case EM_PPC64:
        return "ppc64le";
    case EM_S390:
        return "s390x";
    case EM_RISCV:
        return "riscv64";
    default:
        return "";
    }
}

/* Note callback: sets the build id. */
static int info_note(void *arg, const char *name, size_t namesz, uint32_t type,
                     const unsigned char *desc, size_t descsz)
{
    pp_elfinfo *out = arg;
    if (type == NT_GNU_BUILD_ID && pp_elf_note_named(name, namesz, "GNU") && !out->buildid[0] &&
        descsz <= 40) {
        size_t k = (size_t)snprintf(out->buildid, sizeof(out->buildid), "buildid:");
        for (size_t i = 0; i < descsz; i++)
            k += (size_t)snprintf(out->buildid + k, sizeof(out->buildid) - k, "%02x", desc[i]);
    }
    return 0;
}

int pp_elfinfo_read(const char *path, pp_elfinfo *out)
{
    memset(out, 0, sizeof(*out));
    int fd;
    Elf *e = open_elf(path, &fd);
    if (!e)
        return -1;
    GElf_Ehdr eh;
    if (!gelf_getehdr(e, &eh)) {
        elf_end(e);
        close(fd);
        return -1;
    }
    out->valid = true;
    snprintf(out->arch, sizeof(out->arch), "%s", machine_name(eh.e_machine));
    size_t shstrndx = 0;
    elf_getshdrstrndx(e, &shstrndx);
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        (void)name;
        if (sh.sh_type == SHT_SYMTAB)
            out->has_symtab = true;
    }
    pp_elf_notes_walk(e, 0, info_note, out);
    size_t nph = 0;
    elf_getphdrnum(e, &nph);
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_INTERP)
            continue;
        out->has_interp = true;
        if (ph.p_filesz < sizeof(out->interp) &&
            pread(fd, out->interp, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz)
            out->interp[ph.p_filesz] = '\0';
        else
            out->interp[0] = '\0';
    }
    elf_end(e);
    close(fd);
    return 0;
}

int pp_elf_find_string(const char *path, const char *prefix, const char *accept, size_t maxlen,
                       int (*valid)(const char *s), char *out, size_t outlen)
{
    int fd;
    Elf *e = open_elf(path, &fd);
    size_t plen = strlen(prefix);
    char *data = NULL;
    size_t size = 0;
    if (e) {
        size_t shstrndx = 0;
        elf_getshdrstrndx(e, &shstrndx);
        Elf_Scn *scn = NULL;
        while (!data && (scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            const char *name;
            if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
                (name = elf_strptr(e, shstrndx, sh.sh_name)) && strcmp(name, ".rodata") == 0) {
                size_t want = sh.sh_size < MAX_SCAN ? (size_t)sh.sh_size : MAX_SCAN;
                data = want ? malloc(want) : NULL;
                ssize_t got = data ? pread(fd, data, want, (off_t)sh.sh_offset) : -1;
                size = got > 0 ? (size_t)got : 0; /* a file shorter than it says: what is there */
            }
        }
    }
    int rc = -1;
    /* Pass 0: strings of their own. Pass 1: the tail of a longer string after a separator
     * (linkers merge a literal "3.8.18" into the tail of ".../Python-3.8.18"). */
    for (int pass = 0; data && rc < 0 && pass < 2; pass++) {
        for (const char *p = data; p + plen < data + size;) {
            const char *hit = memmem(p, (size_t)(data + size - p), prefix, plen);
            if (!hit)
                break;
            bool at_start = hit == data || hit[-1] == '\0' ||
                            (pass == 1 && !isalnum((unsigned char)hit[-1]) && hit[-1] != '.' &&
                             !strchr(accept, hit[-1]));
            size_t n = plen;
            while (hit + n < data + size && n < maxlen && hit[n] && strchr(accept, hit[n]))
                n++;
            if (at_start && hit + n < data + size && hit[n] == '\0' && n > plen && n < outlen) {
                memcpy(out, hit, n);
                out[n] = '\0';
                if (!valid || valid(out)) {
                    rc = 0;
                    break;
                }
            }
            p = hit + 1;
        }
    }
    free(data);
    if (e) {
        elf_end(e);
        close(fd);
    }
    return rc;
}

/* st_value of each of names[0..n) (0 when absent) from .dynsym, then .symtab. Returns found. */
static size_t find_symbols(Elf *e, const char *const *names, size_t n, uint64_t *values)
{
    size_t found = 0;
    memset(values, 0, n * sizeof(*values));
    Elf_Scn *scn = NULL;
    while (found < n && (scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
            !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t cnt = d ? d->d_size / sh.sh_entsize : 0;
        for (size_t i = 0; i < cnt && found < n; i++) {
            GElf_Sym s;
            const char *sn;
            if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value ||
                !(sn = elf_strptr(e, sh.sh_link, s.st_name)))
                continue;
            for (size_t k = 0; k < n; k++)
                if (!values[k] && strcmp(sn, names[k]) == 0) {
                    values[k] = s.st_value;
                    found++;
                    break;
                }
        }
    }
    return found;
}

ssize_t pp_elf_read_symbol_upto(const char *path, const char *name, void *buf, size_t size)
{
    int fd;
    Elf *e = open_elf(path, &fd);
    if (!e)
        return -1;
    ssize_t rc = -1;
    uint64_t addr = 0;
    bool found = find_symbols(e, &name, 1, &addr) == 1;
    size_t nph = 0;
    elf_getphdrnum(e, &nph);
    for (size_t i = 0; found && i < nph && rc < 0; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (addr >= ph.p_vaddr && addr - ph.p_vaddr < ph.p_filesz) {
            uint64_t left = ph.p_filesz - (addr - ph.p_vaddr); /* to the segment's end */
            size_t n = left < size ? (size_t)left : size;
            ssize_t got = pread(fd, buf, n, (off_t)(ph.p_offset + (addr - ph.p_vaddr)));
            if (got > 0) /* a file shorter than its segment: what is there */
                rc = got;
        }
    }
    elf_end(e);
    close(fd);
    return rc;
}

int pp_elf_read_symbol(const char *path, const char *name, void *buf, size_t size)
{
    return pp_elf_read_symbol_upto(path, name, buf, size) == (ssize_t)size ? 0 : -1;
}

long pp_elf_symbol_values(const char *path, const char *const *names, size_t n, uint64_t *values,
                          uint64_t *first_load)
{
    int fd;
    Elf *e = open_elf(path, &fd);
    if (!e)
        return -1;
    long found = (long)find_symbols(e, names, n, values);
    size_t nph = 0;
    uint64_t low = UINT64_MAX;
    elf_getphdrnum(e, &nph);
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < low)
            low = ph.p_vaddr;
    }
    if (first_load)
        *first_load = low == UINT64_MAX ? 0 : low & ~(uint64_t)0xfff;
    elf_end(e);
    close(fd);
    return found;
}

ssize_t pp_elf_section_read(const char *path, const char *section, void *buf, size_t cap)
{
    int fd;
    Elf *e = open_elf(path, &fd);
    if (!e)
        return -1;
    ssize_t r = -1;
    size_t shstrndx = 0;
    Elf_Scn *scn = NULL;
    if (elf_getshdrstrndx(e, &shstrndx) == 0)
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            const char *name;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
                !(name = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(name, section) != 0)
                continue;
            /* only what is asked for: the section may be large (a sparse file) */
            size_t n = sh.sh_size < cap ? (size_t)sh.sh_size : cap;
            r = n ? pread(fd, buf, n, (off_t)sh.sh_offset) : 0;
            break;
        }
    elf_end(e);
    close(fd);
    return r;
}
