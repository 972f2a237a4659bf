/* libFuzzer target for the symbolizer's parsers: the first byte selects the parser, the rest is
 * its input: ELF symbol tables from memory (incl. .gnu_debugdata and .gopclntab), perf-map
 * files/lines, raw .gopclntab images, kallsyms lines and /proc/<pid>/maps lines. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/symbols/symbols_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pp_log_set_stderr_level(PP_LOG_CRITICAL);
    return 0;
}

static void probe(pp_symtab *t)
{
    /* exercise lookups over the whole table and the demangling cache */
    for (size_t i = 0; i < t->n && i < 64; i++) {
        const pp_sym *s = pp_symtab_find(t, t->syms[i].addr);
        if (s)
            (void)pp_symtab_display_name(t, s);
    }
    char buf[64];
    if (t->n)
        pp_frame_write(buf, sizeof(buf), pp_symtab_name(t, &t->syms[0]), "_[k]");
}

static void lines(const uint8_t *d, size_t n, int kind, pp_symtab *t)
{
    size_t pos = 0;
    while (pos < n) {
        const uint8_t *nl = memchr(d + pos, '\n', n - pos);
        size_t ll = nl ? (size_t)(nl - (d + pos)) : n - pos;
        const char *line = (const char *)d + pos;
        if (kind == 0) {
            pp_ksyms_parse_line(line, ll, t);
        } else {
            pp_maps_line m;
            if (pp_maps_parse_line(line, ll, &m) == 0)
                (void)pp_maps_classify(m.path, m.pathlen);
        }
        pos += ll + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    data++;
    size--;
    pp_symtab t;
    pp_symtab_init(&t);
    switch (sel % 5) {
    case 0: {
        pp_elf_meta meta = {0};
        pp_elf_load_memory(data, size, &t, &meta);
        uint64_t va;
        pp_elf_offset_to_vaddr(&meta, size, &va);
        break;
    }
    case 1: {
        uint64_t a, s;
        const char *name;
        size_t nl;
        pp_perfmap_parse_line((const char *)data, size, &a, &s, &name, &nl);
        pp_perfmap m = {.max_bytes = 4096}; /* small: evictions too */
        pp_perfmap_parse(&m, (const char *)data, size);
        for (size_t i = 0; i + 8 <= size; i += 8) {
            uint64_t addr;
            memcpy(&addr, data + i, 8);
            pp_perfmap_find(&m, addr);
        }
        pp_perfmap_free(&m);
        break;
    }
    case 2:
        pp_gopclntab_parse(data, size, 0x401000, &t);
        pp_symtab_finish(&t, 16);
        break;
    case 3:
        lines(data, size, 0, &t);
        pp_symtab_finish(&t, 4096);
        break;
    default:
        lines(data, size, 1, &t);
        break;
    }
    probe(&t);
    pp_symtab_free(&t);
    return 0;
}
