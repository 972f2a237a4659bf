/* The symbolizer's binary symbol-table cache (symbolizer_int.h): one table per file, found by
 * build-id or by device, inode, size and mtime, bounded in count and in bytes (with the other
 * per-binary facts that share the bound), least recently used dropped first. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "base/inroot.h"
#include "base/log.h"
#include "runtimes/symbols/symbolizer_int.h"

void pp_sym_binary_free(pp_binary *b)
{
    if (!b)
        return;
    pp_symtab_free(&b->tab);
    free(b);
}

int pp_sym_open_in_root(const pp_symbolizer *s, const pp_proc *p, const char *path, int flags)
{
    int rfd = p->root >= 0 ? pp_roots_fd(&s->roots, p->root) : -1;
    return rfd >= 0 ? pp_openat_in_root(rfd, path, flags)
                    : pp_open_in_proc_root(p->pid, path, flags);
}

/* ---- binary cache ---- */

static pp_binary *slot_find(pp_symbolizer *s, const struct stat *st, const pp_elf_meta *meta,
                            uint32_t *slot)
{
    for (size_t i = 0; i < s->max_binaries; i++) {
        pp_binary *b = s->slots[i].bin;
        if (!b)
            continue;
        int hit;
        if (meta) /* same build-id, and the new file offers no better symbols */
            hit = meta->build_id_len && b->meta.build_id_len == meta->build_id_len &&
                  memcmp(b->meta.build_id, meta->build_id, meta->build_id_len) == 0 &&
                  b->quality >= pp_elf_meta_potential(meta);
        else
            hit = b->dev == (uint64_t)st->st_dev && b->ino == (uint64_t)st->st_ino &&
                  b->size == (uint64_t)st->st_size && b->mtime_s == st->st_mtim.tv_sec &&
                  b->mtime_ns == st->st_mtim.tv_nsec;
        if (hit) {
            *slot = (uint32_t)i;
            return b;
        }
    }
    return NULL;
}

/* The least recently used cached table, other than slot skip; SIZE_MAX when there is none. */
static size_t lru_slot(const pp_symbolizer *s, size_t skip)
{
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < s->max_binaries; i++)
        if (s->slots[i].bin && i != skip &&
            (victim == SIZE_MAX || s->slots[i].last_used < s->slots[victim].last_used))
            victim = i;
    return victim;
}

static size_t table_bytes(const pp_binary *b)
{
    return sizeof(*b) + pp_symtab_memory(&b->tab);
}

/* Maps that pointed at an evicted table see its slot's generation change and load it again. */
static void slot_evict(pp_symbolizer *s, size_t i)
{
    pp_sym_binary_free(s->slots[i].bin);
    s->slots[i].bin = NULL;
    s->stats.binaries_evicted++;
}

/* Drops least recently used tables (never keep) until the cached tables fit the byte budget. */
static void evict_over_budget(pp_symbolizer *s, size_t keep)
{
    size_t total = 0;
    for (size_t i = 0; i < s->max_binaries; i++)
        if (s->slots[i].bin)
            total += table_bytes(s->slots[i].bin);
    size_t other = s->other_bytes ? s->other_bytes(s->other_arg) : 0;
    while (total + other > s->max_binary_bytes) {
        size_t victim = lru_slot(s, keep);
        if (victim == SIZE_MAX)
            break;
        total -= table_bytes(s->slots[victim].bin);
        slot_evict(s, victim);
    }
    s->stats.binary_bytes = total;
}

void pp_symbolizer_set_max_binary_bytes(pp_symbolizer *s, size_t bytes)
{
    s->max_binary_bytes = bytes;
}

void pp_symbolizer_share_budget(pp_symbolizer *s, size_t (*other)(void *arg), void *arg)
{
    s->other_bytes = other;
    s->other_arg = arg;
}

/* Puts b in a free slot, else in place of the least recently used table. */
static uint32_t slot_insert(pp_symbolizer *s, pp_binary *b)
{
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < s->max_binaries && victim == SIZE_MAX; i++)
        if (!s->slots[i].bin)
            victim = i;
    if (victim == SIZE_MAX) {
        victim = lru_slot(s, SIZE_MAX);
        slot_evict(s, victim);
    }
    binslot *sl = &s->slots[victim];
    sl->bin = b;
    sl->gen = s->next_gen++;
    sl->last_used = ++s->clock;
    evict_over_budget(s, victim);
    return (uint32_t)victim;
}

static int open_mapped_file(const pp_symbolizer *s, const pp_proc *p, const pp_map *m, char *clean,
                            size_t cleansz)
{
    size_t pl = strlen(m->path);
    if (m->deleted && pl >= 10)
        pl -= 10; /* " (deleted)" */
    if (pl >= cleansz)
        pl = cleansz - 1;
    memcpy(clean, m->path, pl);
    clean[pl] = '\0';
    char path[PATH_MAX + 64];
    int fd = -1;
    if (!m->deleted && clean[0] == '/')
        fd = pp_sym_open_in_root(s, p, clean, O_RDONLY);
    if (fd < 0) {
        snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, p->pid, m->start,
                 m->end);
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    return fd;
}

pp_binary *pp_sym_map_binary(pp_symbolizer *s, const pp_proc *p, pp_map *m, int *fresh)
{
    *fresh = 0;
    if (m->state == MAP_FAILED)
        return NULL;
    if (m->state == MAP_OK && m->slot < s->max_binaries && s->slots[m->slot].gen == m->gen &&
        s->slots[m->slot].bin) {
        s->slots[m->slot].last_used = ++s->clock;
        return s->slots[m->slot].bin;
    }
    m->state = MAP_FAILED;
    char clean[PATH_MAX];
    int fd = open_mapped_file(s, p, m, clean, sizeof(clean));
    if (fd < 0)
        return NULL;
    struct stat st;
    pp_binary *b = NULL;
    uint32_t slot = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        goto out;
    b = slot_find(s, &st, NULL, &slot);
    if (b)
        goto hit;
    Elf *e = pp_elf_begin_bounded(fd);
    if (!e)
        goto out;
    pp_elf_meta meta;
    if (pp_elf_meta_read(e, &meta) != 0) {
        elf_end(e);
        goto out;
    }
    b = slot_find(s, NULL, &meta, &slot);
    if (b) {
        elf_end(e);
        goto hit;
    }
    b = calloc(1, sizeof(*b));
    if (!b) {
        elf_end(e);
        goto out;
    }
    b->dev = (uint64_t)st.st_dev;
    b->ino = (uint64_t)st.st_ino;
    b->size = (uint64_t)st.st_size;
    b->mtime_s = st.st_mtim.tv_sec;
    b->mtime_ns = st.st_mtim.tv_nsec;
    b->meta = meta;
    pp_symtab_init(&b->tab);
    pp_debug_ctx dbg = {.rootfd = p->root >= 0 ? pp_roots_fd(&s->roots, p->root) : -1,
                        .pid = p->pid,
                        .path = clean};
    long n = pp_elf_load_all(e, &meta, &dbg, &b->tab, &b->quality);
    pp_symtab_finish(&b->tab, ELF_LAST_SPAN);
    elf_end(e);
    pp_debug("symbols: loaded %ld symbols for %s", n, m->path);
    s->stats.binaries_loaded++;
    slot = slot_insert(s, b);
    *fresh = 1;
hit:
    s->slots[slot].last_used = ++s->clock;
    m->state = MAP_OK;
    m->slot = slot;
    m->gen = s->slots[slot].gen;
out:
    close(fd);
    return m->state == MAP_OK ? b : NULL;
}
