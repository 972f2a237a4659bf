/* Go detection: the cached ELF check behind the Go descriptor's detector (go.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "base/elfnotes.h"
#include "base/execache.h"
#include "runtimes/go/go.h"
#include "runtimes/runtime.h"

#define NT_GO_BUILDID 4         /* the Go linker's build-id note, name "Go" */
#define GO_NOTE_MAX (64 * 1024) /* a Go build-id note is ~100 bytes; bound what we map */

/* ---- Go check ---- */

static int go_note(void *arg, const char *name, size_t namesz, uint32_t type,
                   const unsigned char *desc, size_t descsz)
{
    (void)arg, (void)desc, (void)descsz;
    /* The Go linker writes the name "Go" NUL-padded to 4 bytes (n_namesz 4). */
    return type == NT_GO_BUILDID && pp_elf_note_named(name, namesz, "Go");
}

static bool elf_is_go(Elf *e)
{
    if (pp_elf_notes_walk(e, GO_NOTE_MAX, go_note, NULL))
        return true;
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return false;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        if (name && strcmp(name, ".go.buildinfo") == 0)
            return true;
    }
    return false;
}

int pp_go_check_fd(int fd)
{
    Elf *e = pp_elf_begin_bounded(fd);
    if (!e)
        return -1;
    int r = elf_is_go(e) ? 1 : 0; /* pp_elf_begin_bounded gives only ELF files */
    elf_end(e);
    return r;
}

static int detect_check(void *state, int pid, bool *match)
{
    return pp_execache_check_pid(state, pid, pp_go_check_fd, match);
}

const pp_detector pp_go_detector = {
    .create = pp_execache_new,
    .destroy = pp_execache_delete,
    .check = detect_check,
    .files_parsed = pp_execache_opens,
};
