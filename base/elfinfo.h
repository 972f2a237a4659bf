/* Facts read from an ELF file for application metadata (not symbolization): build id, machine,
 * interpreter, section contents, version strings. All reads are bounded; a malformed
 * file yields "unknown" answers, never a crash. */
#ifndef PP_ELFINFO_H
#define PP_ELFINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct pp_elfinfo {
    bool valid;       /* a readable ELF */
    char buildid[96]; /* "buildid:<hex>", "" when absent */
    char arch[16];    /* uname style: "x86_64", "aarch64", ... ("" if unknown) */
    bool has_symtab;  /* a .symtab section is present (not stripped) */
    bool has_interp;  /* PT_INTERP present (dynamically linked) */
    char interp[128]; /* the interpreter path */
} pp_elfinfo;

typedef struct Elf Elf;

/* The tables polyprof's ELF readers load whole (symbol, string and note sections) are at most
 * this large; a file claiming more is refused. */
#define PP_ELF_TABLE_MAX (64u << 20)

/* libelf over fd (ELF_C_READ: read, never mapped; docs/security.md), or NULL when fd is not an
 * ELF file or its section headers claim what the file cannot hold: a section past the end of
 * the file, or a symbol, string or note table over PP_ELF_TABLE_MAX. libelf reading a file
 * believes the sizes its headers give (it knows no file size), so a small or sparse file would
 * make it allocate and read gigabytes. Free with elf_end; fd stays open. */
Elf *pp_elf_begin_bounded(int fd);

/* Reads path (e.g. "/proc/<pid>/exe"). Returns 0 when it is an ELF file. */
int pp_elfinfo_read(const char *path, pp_elfinfo *out);

/* Copies the first cap bytes of the named section's contents (e.g. ".go.buildinfo") into buf.
 * Returns the bytes copied, or -1 when the file is not an ELF or has no such section. */
ssize_t pp_elf_section_read(const char *path, const char *section, void *buf, size_t cap);

/* Finds the first NUL-terminated string in the file's .rodata that starts with prefix, is
 * followed only by characters of accept (at most maxlen in all), and that valid() accepts (NULL:
 * any). When no such string exists, a tail of a longer string is accepted if it follows a byte
 * that is neither alphanumeric, '.', nor in accept (a linker may merge the literal "3.8.18" into
 * ".../Python-3.8.18"). Returns 0 and the string in out. Scans at most 256 MiB. */
int pp_elf_find_string(const char *path, const char *prefix, const char *accept, size_t maxlen,
                       int (*valid)(const char *s), char *out, size_t outlen);

/* Reads `size` bytes at the address of symbol `name` (from .dynsym or .symtab) from the file.
 * Returns 0 on success. */
int pp_elf_read_symbol(const char *path, const char *name, void *buf, size_t size);

/* Same, reading at most size bytes: fewer where the symbol's segment ends in the file. Returns
 * the bytes read, or -1. */
ssize_t pp_elf_read_symbol_upto(const char *path, const char *name, void *buf, size_t size);

/* Looks up several symbols at once (.dynsym, then .symtab): values[i] = st_value of names[i], 0
 * when absent. *first_load (may be NULL) = lowest PT_LOAD p_vaddr rounded down to a page, for
 * the load bias (map start of file offset 0 minus it). Returns symbols found, -1 if not an ELF. */
long pp_elf_symbol_values(const char *path, const char *const *names, size_t n, uint64_t *values,
                          uint64_t *first_load);

#endif
