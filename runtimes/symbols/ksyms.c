/* /proc/kallsyms parsing: "ADDR TYPE NAME [MODULE]", text symbols only; the kernel's build-id
 * from its notes. */
#include "runtimes/symbols/symbols_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <elf.h>
#include <string.h>

int pp_ksyms_parse_line(const char *line, size_t len, pp_symtab *t)
{
    size_t i = 0;
    uint64_t addr = 0;
    int digits = 0;
    while (i < len && pp_hexval(line[i]) >= 0) {
        if (digits >= 16)
            return 0;
        addr = (addr << 4) | (uint64_t)pp_hexval(line[i]);
        i++;
        digits++;
    }
    if (digits == 0 || i + 3 > len || line[i] != ' ')
        return 0;
    char type = line[i + 1];
    if (line[i + 2] != ' ')
        return 0;
    i += 3;
    uint8_t flags;
    switch (type) {
    case 'T':
        flags = PP_SYM_FUNC | PP_SYM_GLOBAL;
        break;
    case 't':
        flags = PP_SYM_FUNC;
        break;
    case 'W':
    case 'w':
        flags = PP_SYM_FUNC | PP_SYM_WEAK;
        break;
    default:
        return 0;
    }
    size_t ns = i;
    while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\n')
        i++;
    if (i == ns || addr == 0) /* unprivileged readers see zero addresses */
        return 0;
    return pp_symtab_add(t, addr, 0, line + ns, i - ns, flags) == 0 ? 1 : 0;
}

long pp_ksyms_load(const char *path, pp_symtab *t)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long n = 0;
    while ((len = getline(&line, &cap, f)) > 0)
        n += pp_ksyms_parse_line(line, (size_t)len, t);
    free(line);
    fclose(f);
    /* the last symbol (end of module text) gets a modest span */
    pp_symtab_finish(t, 4096);
    return n;
}

int pp_ksyms_notes_build_id(const unsigned char *notes, size_t len, char *hex, size_t hexsz)
{
    hex[0] = '\0';
    /* Elf64_Nhdr and Elf32_Nhdr are the same three 4-byte words; name and desc 4-aligned */
    for (size_t off = 0; len >= 12 && off <= len - 12;) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, notes + off, 4);
        memcpy(&descsz, notes + off + 4, 4);
        memcpy(&type, notes + off + 8, 4);
        size_t name = off + 12, nlen = ((size_t)namesz + 3) & ~(size_t)3;
        size_t dlen = ((size_t)descsz + 3) & ~(size_t)3;
        if (nlen > len - name || dlen > len - name - nlen)
            return -1;
        size_t desc = name + nlen;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(notes + name, "GNU", 4) == 0) {
            if (descsz == 0 || descsz > PP_BUILD_ID_MAX || hexsz < 2 * (size_t)descsz + 1)
                return -1;
            for (size_t i = 0; i < descsz; i++)
                snprintf(hex + 2 * i, 3, "%02x", notes[desc + i]);
            return 0;
        }
        off = desc + dlen;
    }
    return -1;
}
