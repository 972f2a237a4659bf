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

#include "base/elfnotes.h"
#include "base/hash.h"
#include "runtimes/go/go.h"
#include "runtimes/runtime.h"

#define NT_GO_BUILDID 4         /* the Go linker's build-id note, name "Go" */
#define GO_NOTE_MAX (64 * 1024) /* a Go build-id note is ~100 bytes; bound what we map */
#define GO_CACHE_MAX 65536      /* distinct executables; beyond this the cache starts over */

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
    static bool inited;
    if (!inited) {
        elf_version(EV_CURRENT);
        inited = true;
    }
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!e)
        return -1;
    int r = -1;
    if (elf_kind(e) == ELF_K_ELF)
        r = elf_is_go(e) ? 1 : 0;
    elf_end(e);
    return r;
}

static uint64_t go_hash(const struct stat *st)
{
    uint64_t k[5] = {st->st_dev, st->st_ino, (uint64_t)st->st_mtim.tv_sec,
                     (uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_size};
    return pp_hash_bytes(k, sizeof(k), 0);
}

static bool go_same(const pp_go_entry *g, const struct stat *st)
{
    return g->dev == st->st_dev && g->ino == st->st_ino && g->mtime_sec == st->st_mtim.tv_sec &&
           g->mtime_nsec == st->st_mtim.tv_nsec && g->size == (long long)st->st_size;
}

int pp_go_check_pid(pp_go_cache *c, int pid, bool *is_go)
{
    char path[48];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    if (stat(path, &st) != 0)
        return -1;
    uint64_t h = go_hash(&st);
    pp_htab_probe p;
    for (pp_go_entry *g = pp_htab_first(&c->tab, h, &p); g; g = pp_htab_next(&c->tab, &p)) {
        if (go_same(g, &st)) {
            *is_go = g->is_go;
            return 0;
        }
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    c->elf_opens++;
    int r = pp_go_check_fd(fd);
    close(fd);
    /* Cache "not Go" for non-ELF or unreadable files as well: the answer will not change for
     * this identity. */
    if (!c->tab.esize)
        PP_HTAB_INIT(&c->tab, pp_go_entry, 50);
    if (pp_htab_count(&c->tab) >= GO_CACHE_MAX) /* start over rather than grow without bound */
        pp_htab_clear(&c->tab);
    pp_go_entry *g = pp_htab_add(&c->tab, h);
    if (g)
        *g = (pp_go_entry){.dev = st.st_dev,
                           .ino = st.st_ino,
                           .mtime_sec = st.st_mtim.tv_sec,
                           .mtime_nsec = st.st_mtim.tv_nsec,
                           .size = (long long)st.st_size,
                           .is_go = r == 1};
    *is_go = r == 1;
    return 0;
}

void pp_go_cache_free(pp_go_cache *c)
{
    pp_htab_free(&c->tab);
    c->elf_opens = 0;
}

static void *detect_create(void)
{
    return calloc(1, sizeof(pp_go_cache));
}

static void detect_destroy(void *state)
{
    if (!state)
        return;
    pp_go_cache_free(state);
    free(state);
}

static int detect_check(void *state, int pid, bool *match)
{
    return pp_go_check_pid(state, pid, match);
}

static unsigned long detect_files(const void *state)
{
    return ((const pp_go_cache *)state)->elf_opens;
}

const pp_detector pp_go_detector = {
    .create = detect_create,
    .destroy = detect_destroy,
    .check = detect_check,
    .files_parsed = detect_files,
};
