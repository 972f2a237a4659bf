/* /proc/kallsyms parsing: "ADDR TYPE NAME [MODULE]", text symbols only. */
#include "runtimes/symbols/symbols_internal.h"

#include <stdio.h>
#include <stdlib.h>
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
