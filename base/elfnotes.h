/* One walker over the notes of an ELF file (build ids, runtimes' notes), shared by the
 * symbolizer, the application-metadata reader and the runtimes' detectors. */
#ifndef PP_ELFNOTES_H
#define PP_ELFNOTES_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Called per note; a non-zero return stops the walk. desc is desc_size bytes. */
typedef int (*pp_elf_note_cb)(void *arg, const char *name, size_t namesz, uint32_t type,
                              const unsigned char *desc, size_t descsz);

/* Walks the notes of PT_NOTE segments (first: they survive stripped section headers), then of
 * SHT_NOTE sections (a note may be seen twice). Regions larger than max_region bytes (0 = 1 MiB)
 * are skipped; at most 256 segments, 4096 sections and 1024 notes per region. Returns the
 * callback's non-zero value, or 0 when every note was seen. */
int pp_elf_notes_walk(Elf *e, size_t max_region, pp_elf_note_cb cb, void *arg);

/* The note's name is want ("GNU", "Go"), NUL-terminated and possibly NUL-padded to 4 bytes. */
bool pp_elf_note_named(const char *name, size_t namesz, const char *want);

#endif
