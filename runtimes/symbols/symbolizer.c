/* Symbolizer: per-pid mappings, binary symbol-table cache (bounded LRU), kernel and JIT frames. */
#include "runtimes/symbols/symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/child.h"
#include "base/inroot.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/symbols/jitnames.h"
#include "runtimes/symbols/pmreader.h"
#include "runtimes/symbols/symbols_internal.h"

#include "runtimes/symbols/symbolizer_int.h"

static void perfmap_refresh(pp_symbolizer *s, pp_proc *p);
static bool has_anon(const pp_proc *p);

/* ---- lifecycle ---- */

pp_symbolizer *pp_symbolizer_new(size_t max_binaries)
{
    pp_symbolizer *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->max_binaries = max_binaries ? max_binaries : DEFAULT_MAX_BINARIES;
    s->max_binary_bytes = DEFAULT_MAX_BINARY_BYTES;
    s->slots = calloc(s->max_binaries, sizeof(binslot));
    s->kallsyms_path = strdup("/proc/kallsyms");
    s->pmr = pp_pmreader_new();
    if (!s->slots || !s->kallsyms_path || !s->pmr) {
        pp_pmreader_free(s->pmr, 0);
        free(s->slots);
        free(s->kallsyms_path);
        free(s);
        return NULL;
    }
    s->pass = 1;
    s->next_gen = 1;
    s->inline_left = PP_PMREAD_INLINE_PER_PASS;
    return s;
}

static void maps_free(pp_map *maps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(maps[i].path);
    free(maps);
}

static void proc_free(pp_symbolizer *s, pp_proc *p)
{
    pp_roots_put(&s->roots, p->root);
    p->root = -1;
    maps_free(p->maps, p->nmaps);
    if (p->pm) {
        pp_pmsrc_stats st;
        pp_pmsrc_get_stats(p->pm, &st);
        s->pm_dropped_gone += st.dropped;
        pp_pmsrc_put(p->pm); /* a read of it still running ends on its own */
    }
    free(p);
}

void pp_symbolizer_free(pp_symbolizer *s)
{
    if (!s)
        return;
    /* a read of a large perf map ends at its next chunk (a few ms): waited for briefly, so
     * that it does not outlive the exit's checks; one that does ends on its own */
    pp_pmreader_stop(s->pmr);
    pp_pmreader_wait_idle(s->pmr, pp_mono_now() + 0.5);
    for (size_t i = 0; i < s->max_binaries; i++)
        pp_sym_binary_free(s->slots[i].bin);
    free(s->slots);
    for (size_t b = 0; b < PID_BUCKETS; b++) {
        pp_proc *p = s->buckets[b];
        while (p) {
            pp_proc *n = p->next;
            proc_free(s, p);
            p = n;
        }
    }
    pp_symtab_free(&s->ksyms);
    pp_kcache_free(s->kcache);
    pp_symtab_free(&s->vdso);
    free(s->kallsyms_path);
    pp_pmreader_free(s->pmr, 0);
    free(s);
}

void pp_symbolizer_begin_pass(pp_symbolizer *s)
{
    if (!s)
        return;
    s->pass++;
    s->inline_left = PP_PMREAD_INLINE_PER_PASS;
    pp_pmreader_pause(s->pmr, true); /* the drain's lookups wait for one chunk at most */
    /* Dropped: processes whose maps could not be read (exited); processes unused for two
     * passes that are gone; any process unused for IDLE_PASSES. A later lookup re-creates them,
     * reading maps at most once per pass. This bounds the table to live, recently seen
     * processes, however many short-lived ones a host runs. */
    for (size_t b = 0; b < PID_BUCKETS; b++) {
        pp_proc **pp = &s->buckets[b];
        while (*pp) {
            pp_proc *p = *pp;
            uint64_t idle = s->pass - p->used_pass;
            /* a dead entry stays one more pass: samples taken after a drain's flip are named
             * at the next drain */
            if ((p->dead && idle >= 2) || idle >= IDLE_PASSES ||
                (idle >= 2 && pp_pid_gone(p->pid))) {
                *pp = p->next;
                proc_free(s, p);
            } else {
                pp = &p->next;
            }
        }
    }
}

void pp_symbolizer_get_stats(const pp_symbolizer *s, pp_symbolizer_stats *out)
{
    if (!out)
        return;
    if (!s) {
        memset(out, 0, sizeof(*out));
        return;
    }
    *out = s->stats;
    out->perfmap_entries_dropped = s->pm_dropped_gone;
    for (size_t b = 0; b < PID_BUCKETS; b++)
        for (const pp_proc *p = s->buckets[b]; p; p = p->next) {
            if (p->pm) {
                pp_pmsrc_stats st;
                pp_pmsrc_get_stats(p->pm, &st);
                out->perfmap_entries_dropped += st.dropped;
                out->perfmap_bytes += st.bytes;
                out->perfmap_reading += st.reading;
            }
            out->procs++;
        }
}

void pp_symbolizer_set_kallsyms_path(pp_symbolizer *s, const char *path)
{
    char *p = strdup(path ? path : "/proc/kallsyms");
    if (!p)
        return;
    free(s->kallsyms_path);
    s->kallsyms_path = p;
    pp_symtab_free(&s->ksyms);
    s->ksyms_loaded = 0;
}

/* ---- kernel ---- */

void pp_symbolizer_set_kernel_namer(pp_symbolizer *s, pp_kernel_namer fn, void *arg)
{
    if (!s)
        return;
    if (fn && !s->kcache)
        s->kcache = pp_kcache_new(0);
    s->namer = s->kcache ? fn : NULL;
    s->namer_arg = arg;
}

/* The namer's name for ip ("" when the kernel has none), cached; NULL when it cannot answer.
 * tmp (len bytes) holds a fresh answer. */
static const char *kernel_by_namer(pp_symbolizer *s, uint64_t ip, char *tmp, size_t len)
{
    const char *name;
    if (pp_kcache_get(s->kcache, ip, &name))
        return name;
    int rc = s->namer(s->namer_arg, ip, tmp, len);
    if (rc < 0)
        return NULL;
    s->stats.kernel_named++;
    if (rc != 0)
        tmp[0] = '\0';
    pp_kcache_put(s->kcache, ip, tmp); /* failing (OOM) only means asking again next time */
    return tmp;
}

/* kallsyms' name for ip ("" when none), loading the file once. */
static const char *kernel_by_kallsyms(pp_symbolizer *s, uint64_t ip)
{
    if (!s->ksyms_loaded) {
        s->ksyms_loaded = 1;
        long n = pp_ksyms_load(s->kallsyms_path, &s->ksyms);
        if (n <= 0)
            pp_warn("symbols: no kernel symbols from %s", s->kallsyms_path);
        else
            pp_debug("symbols: %ld kernel symbols", n);
    }
    const pp_sym *sym = pp_symtab_find(&s->ksyms, ip);
    return sym ? pp_symtab_name(&s->ksyms, sym) : "";
}

/* The running kernel's build-id, read once (at most 4 KiB of /sys/kernel/notes). */
static const char *kernel_build_id(pp_symbolizer *s)
{
    if (!s->kernel_build_id_read) {
        s->kernel_build_id_read = 1;
        unsigned char notes[4096];
        ssize_t n = pp_read_small_file("/sys/kernel/notes", (char *)notes, sizeof(notes));
        if (n <= 0 || pp_ksyms_notes_build_id(notes, (size_t)n, s->kernel_build_id,
                                              sizeof(s->kernel_build_id)) < 0)
            pp_debug("symbols: no build-id in /sys/kernel/notes");
    }
    return s->kernel_build_id;
}

size_t pp_symbolize_kernel_file(pp_symbolizer *s, uint64_t ip, char *buf, size_t bufsz,
                                pp_frame_file *file)
{
    if (file) {
        file->path = "[kernel.kallsyms]";
        snprintf(file->build_id, sizeof(file->build_id), "%s", s ? kernel_build_id(s) : "");
    }
    if (!s)
        return pp_frame_write(buf, bufsz, "[unknown]", "_[k]");
    char tmp[256];
    const char *name = s->namer ? kernel_by_namer(s, ip, tmp, sizeof(tmp)) : NULL;
    if (!name)
        name = kernel_by_kallsyms(s, ip);
    if (!name[0]) {
        s->stats.unknown_frames++;
        return pp_frame_write(buf, bufsz, "[unknown]", "_[k]");
    }
    return pp_frame_write(buf, bufsz, name, "_[k]");
}

size_t pp_symbolize_kernel(pp_symbolizer *s, uint64_t ip, char *buf, size_t bufsz)
{
    return pp_symbolize_kernel_file(s, ip, buf, bufsz, NULL);
}

/* ---- processes and mappings ---- */

static pp_proc **proc_slot(pp_symbolizer *s, int pid)
{
    pp_proc **pp = &s->buckets[(unsigned)pid % PID_BUCKETS];
    while (*pp && (*pp)->pid != pid)
        pp = &(*pp)->next;
    return pp;
}

static int read_nspid(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return pid;
    char line[512]; /* NSpid: at most 32 levels of 10 digits */
    int ns = pid;
    while (fgets(line, sizeof(line), f)) { /* by line: a long Groups line does not hide it */
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        int v = strchr(line, '\n') ? pp_status_nspid(line, NULL) : -1; /* whole, not cut */
        if (v > 0)
            ns = v;
        break;
    }
    fclose(f);
    return ns;
}

static int cmp_map(const void *a, const void *b)
{
    const pp_map *x = a, *y = b;
    return x->start < y->start ? -1 : (x->start > y->start ? 1 : 0);
}

static const pp_map *find_map_in(const pp_map *maps, size_t n, uint64_t ip)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ip < maps[mid].start)
            hi = mid;
        else if (ip >= maps[mid].end)
            lo = mid + 1;
        else
            return &maps[mid];
    }
    return NULL;
}

typedef struct maps_acc {
    pp_map *maps;
    size_t n, cap;
} maps_acc;

static int add_map(void *arg, const pp_maps_line *ml)
{
    maps_acc *a = arg;
    if (a->n >= MAX_MAPS_PER_PID)
        return 1;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 32;
        pp_map *nm = realloc(a->maps, nc * sizeof(pp_map));
        if (!nm)
            return 1;
        a->maps = nm;
        a->cap = nc;
    }
    pp_map *m = &a->maps[a->n];
    memset(m, 0, sizeof(*m));
    m->path = strndup(ml->path, ml->pathlen);
    if (!m->path)
        return 1;
    m->start = ml->start;
    m->end = ml->end;
    m->offset = ml->offset;
    m->kind = (uint8_t)pp_maps_classify(ml->path, ml->pathlen);
    m->deleted = (uint8_t)ml->deleted;
    a->n++;
    return 0;
}

/* (Re-)reads the executable mappings of p, keeping resolutions of unchanged mappings. */
static void proc_read_maps(pp_symbolizer *s, pp_proc *p)
{
    p->maps_pass = s->pass;
    s->stats.maps_reads++;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    maps_acc a = {0};
    /* No executable mapping at all: a zombie or a process tearing down its memory (the maps
     * text of such a process reads as empty, not as an error) */
    bool ok = fd >= 0 && pp_maps_read_exec(fd, &s->no_query, add_map, &a) == 0 && a.n > 0;
    if (fd >= 0)
        close(fd);
    if (!ok) {
        /* gone: keep the mappings read earlier (at its first sample, or at an earlier pass),
         * they still name what it ran; dropped at the next pass */
        maps_free(a.maps, a.n);
        p->dead = 1;
        pp_debug("symbols: cannot read maps of pid %d", p->pid);
        return;
    }
    pp_map *maps = a.maps;
    size_t n = a.n;
    if (n > 1)
        qsort(maps, n, sizeof(pp_map), cmp_map);
    for (size_t i = 0; i < n; i++) {
        const pp_map *old = find_map_in(p->maps, p->nmaps, maps[i].start);
        if (old && old->start == maps[i].start && old->end == maps[i].end &&
            old->offset == maps[i].offset && strcmp(old->path, maps[i].path) == 0) {
            maps[i].state = old->state;
            maps[i].slot = old->slot;
            maps[i].gen = old->gen;
        }
    }
    maps_free(p->maps, p->nmaps);
    p->maps = maps;
    p->nmaps = n;
    p->dead = 0;
}

/* pp_maps_covers_exec on pid's maps: 1, 0, or -1 (cannot tell). */
static int maps_cover(int pid, uint64_t ip)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = pp_maps_covers_exec(fd, ip);
    close(fd);
    return r;
}

static pp_proc *get_proc(pp_symbolizer *s, int pid)
{
    pp_proc **pp = proc_slot(s, pid);
    if (*pp) {
        (*pp)->used_pass = s->pass;
        return *pp;
    }
    pp_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->pid = pid;
    p->nspid = read_nspid(pid);
    p->used_pass = s->pass;
    p->root = pp_roots_get(&s->roots, pid);
    proc_read_maps(s, p);
    *pp = p;
    return p;
}

void pp_symbolizer_note_pid(pp_symbolizer *s, int pid)
{
    if (!s || pid <= 0)
        return;
    pp_proc **pp = proc_slot(s, pid);
    if (*pp && (*pp)->dead) {
        /* announced again after its entry failed a read: a new process with a recycled pid */
        pp_proc *p = *pp;
        *pp = p->next;
        proc_free(s, p);
    } else if (*pp) {
        /* a new image (exec) or a new process with a recycled pid */
        pp_proc *p = *pp;
        p->used_pass = s->pass;
        p->nspid = read_nspid(pid);
        pp_roots_put(&s->roots, p->root);
        p->root = pp_roots_get(&s->roots, pid);
        proc_read_maps(s, p);
        return;
    }
    pp_proc *p = get_proc(s, pid);
    if (p && has_anon(p))
        perfmap_refresh(s, p); /* a large map starts being read now, not at the session end */
}

void pp_symbolizer_forget_pid(pp_symbolizer *s, int pid)
{
    if (!s)
        return;
    pp_proc **pp = proc_slot(s, pid);
    if (!*pp)
        return;
    pp_proc *p = *pp;
    *pp = p->next;
    proc_free(s, p);
}

/* ---- vdso: the host kernel's vdso image is the same in every 64-bit process ---- */

static void load_vdso(pp_symbolizer *s)
{
    s->vdso_state = -1;
    unsigned long base = getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
        return;
    uint64_t len = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum && i < 64; i++)
        if (ph[i].p_offset + ph[i].p_filesz > len)
            len = ph[i].p_offset + ph[i].p_filesz;
    if (len == 0 || len > (1u << 20))
        return;
    if (pp_elf_load_memory((const void *)base, len, &s->vdso, &s->vdso_meta) > 0) {
        s->vdso_state = 1;
        long pg = sysconf(_SC_PAGESIZE);
        s->vdso_len = pg > 0 ? (len + (uint64_t)pg - 1) / (uint64_t)pg * (uint64_t)pg : len;
    }
}

/* ---- perf maps ---- */

/* The jitdump a JIT of p maps (jit-<nspid>.dump, perf's convention), or NULL. */
static const char *jitdump_path(const pp_proc *p)
{
    char want[32];
    int wl = snprintf(want, sizeof(want), "/jit-%d.dump", p->nspid);
    for (size_t i = 0; i < p->nmaps; i++) {
        size_t l = strlen(p->maps[i].path);
        if (!p->maps[i].deleted && l > (size_t)wl && !strcmp(p->maps[i].path + l - wl, want))
            return p->maps[i].path;
    }
    return NULL;
}

static void perfmap_refresh(pp_symbolizer *s, pp_proc *p)
{
    if (p->perfmap_pass == s->pass)
        return;
    p->perfmap_pass = s->pass;
    if (!p->pm && !(p->pm = pp_pmsrc_new(s->pmr)))
        return;
    char name[64];
    snprintf(name, sizeof(name), "/tmp/perf-%d.map", p->nspid);
    int fd = pp_sym_open_in_root(s, p, name, O_RDONLY | O_NONBLOCK);
    const char *jitdump = fd < 0 ? jitdump_path(p) : NULL;
    if (jitdump)
        fd = pp_sym_open_in_root(s, p, jitdump, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        pp_pmsrc_clear(p->pm);
        p->perfmap_present = 0;
        return;
    }
    /* read here when little is new, else by the reader's worker (never a large file on the
     * path of a drain or of the session's end) */
    long n = pp_pmsrc_refresh(p->pm, fd, jitdump != NULL, &s->inline_left);
    p->perfmap_present = n >= 0;
    pp_pmsrc_stats st;
    pp_pmsrc_get_stats(p->pm, &st);
    if (n > 0)
        pp_debug("symbols: perf map %s of pid %d: %ld new entries, %zu held (%zu KiB)",
                 jitdump ? jitdump : name, p->pid, n, st.entries, st.bytes >> 10);
    if (st.dropped && !st.cap_logged) {
        pp_pmsrc_set_cap_logged(p->pm);
        pp_info("symbols: the perf map of pid %d needs more than its memory bound: keeping the "
                "most recently used entries (%llu dropped so far; counted in the profile "
                "header as perf_map_entries_dropped)",
                p->pid, (unsigned long long)st.dropped);
    }
}

static bool has_anon(const pp_proc *p)
{
    for (size_t i = 0; i < p->nmaps; i++)
        if (p->maps[i].kind == PP_MAP_ANON)
            return true;
    return false;
}

void pp_symbolizer_end_pass(pp_symbolizer *s)
{
    if (s)
        pp_pmreader_pause(s->pmr, false);
}

void pp_symbolizer_begin_session(pp_symbolizer *s, double seconds)
{
    if (!s)
        return;
    pp_pmreader_begin_session(s->pmr, seconds);
    /* maps left in part by the last session's budget go on being read now */
    for (size_t b = 0; b < PID_BUCKETS; b++)
        for (pp_proc *p = s->buckets[b]; p; p = p->next) {
            pp_pmsrc_stats st;
            if (!p->pm)
                continue;
            pp_pmsrc_get_stats(p->pm, &st);
            if (!st.complete && !st.reading) {
                p->perfmap_pass = 0;
                perfmap_refresh(s, p);
            }
        }
}

void pp_symbolizer_stop_reading(pp_symbolizer *s)
{
    if (s)
        pp_pmreader_stop(s->pmr);
}

bool pp_symbolizer_wait_reads(pp_symbolizer *s, double deadline)
{
    return !s || pp_pmreader_wait_idle(s->pmr, deadline);
}

/* ---- user frames ---- */

static size_t unnamed(pp_symbolizer *s, char *buf, size_t bufsz, const char *dso)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof(tmp), "(%s)", dso);
    s->stats.unknown_frames++;
    return pp_frame_write(buf, bufsz, tmp, NULL);
}

/* A named frame: the symbol, with " (<dso>)" after it under --insert-dso-name. */
static size_t named(const pp_symbolizer *s, char *buf, size_t bufsz, const char *sym,
                    const char *dso)
{
    char tmp[PATH_MAX + 8];
    if (!s->dso_names)
        return pp_frame_write(buf, bufsz, sym, NULL);
    snprintf(tmp, sizeof(tmp), " (%s)", dso);
    return pp_frame_write(buf, bufsz, sym, tmp);
}

void pp_symbolizer_set_dso_names(pp_symbolizer *s, bool on)
{
    s->dso_names = on;
}

/* Tells file (when not NULL) the path and build-id (meta's, when it has one). */
static void set_file(pp_frame_file *file, const char *path, const pp_elf_meta *meta)
{
    if (!file)
        return;
    file->path = path;
    file->build_id[0] = '\0';
    for (size_t i = 0; meta && i < meta->build_id_len && 2 * i + 2 < sizeof(file->build_id); i++)
        snprintf(file->build_id + 2 * i, 3, "%02x", meta->build_id[i]);
}

size_t pp_symbolize_user(pp_symbolizer *s, int pid, uint64_t ip, char *buf, size_t bufsz)
{
    return pp_symbolize_user_file(s, pid, ip, buf, bufsz, NULL);
}

size_t pp_symbolize_user_file(pp_symbolizer *s, int pid, uint64_t ip, char *buf, size_t bufsz,
                              pp_frame_file *file)
{
    set_file(file, NULL, NULL);
    pp_proc *p = s ? get_proc(s, pid) : NULL;
    if (!p) {
        if (s)
            s->stats.unknown_frames++;
        return pp_frame_write(buf, bufsz, PP_FRAME_UNMAPPED, NULL);
    }
    const pp_map *cm = find_map_in(p->maps, p->nmaps, ip);
    if (!cm && p->maps_pass != s->pass) {
        /* Re-read the mappings only when one now covers ip: a process without frame pointers
         * gives garbage return addresses every drain, and re-reading its maps for each was
         * most of polyprof's steady-state CPU. */
        if (s->no_query || maps_cover(p->pid, ip) != 0)
            proc_read_maps(s, p);
        else
            p->maps_pass = s->pass;
        cm = find_map_in(p->maps, p->nmaps, ip);
    }
    if (!cm) {
        s->stats.unknown_frames++;
        return pp_frame_write(buf, bufsz, PP_FRAME_UNMAPPED, NULL);
    }
    pp_map *m = (pp_map *)cm;
    switch ((pp_map_kind)m->kind) {
    case PP_MAP_ANON: {
        perfmap_refresh(s, p);
        char jit[PP_SYM_MAX_NAME + 1];
        bool found = p->perfmap_present && p->pm && pp_pmsrc_find(p->pm, ip, jit, sizeof(jit));
        if (!found) /* names a runtime's own client handed over in memory */
            found = pp_jitnames_find(pid, ip, jit, sizeof(jit));
        char dso[64];
        snprintf(dso, sizeof(dso), "/tmp/perf-%d.map", pid);
        if (found)
            return named(s, buf, bufsz, jit, dso);
        return unnamed(s, buf, bufsz, dso);
    }
    case PP_MAP_VDSO: {
        if (s->vdso_state == 0)
            load_vdso(s);
        set_file(file, "[vdso]", s->vdso_state > 0 ? &s->vdso_meta : NULL);
        uint64_t va;
        const pp_sym *sym = NULL;
        if (s->vdso_state > 0 && m->end - m->start == s->vdso_len &&
            pp_elf_offset_to_vaddr(&s->vdso_meta, ip - m->start, &va) == 0)
            sym = pp_symtab_find(&s->vdso, va);
        if (sym)
            return named(s, buf, bufsz, pp_symtab_name(&s->vdso, sym), "vdso");
        return unnamed(s, buf, bufsz, "vdso");
    }
    case PP_MAP_OTHER: {
        char dso[256];
        size_t l = strlen(m->path);
        if (l >= 2 && m->path[0] == '[' && m->path[l - 1] == ']')
            snprintf(dso, sizeof(dso), "%.*s", (int)(l - 2), m->path + 1);
        else
            snprintf(dso, sizeof(dso), "%s", m->path);
        return unnamed(s, buf, bufsz, dso);
    }
    case PP_MAP_FILE:
    default:
        break;
    }
    int fresh;
    pp_binary *b = pp_sym_map_binary(s, p, m, &fresh);
    set_file(file, m->path, b ? &b->meta : NULL);
    uint64_t va;
    if (!b || pp_elf_offset_to_vaddr(&b->meta, ip - m->start + m->offset, &va) != 0)
        return unnamed(s, buf, bufsz, m->path);
    if (!fresh)
        s->stats.binaries_cached++;
    const pp_sym *sym = pp_symtab_find(&b->tab, va);
    if (!sym)
        return unnamed(s, buf, bufsz, m->path);
    return named(s, buf, bufsz, pp_symtab_display_name(&b->tab, sym), m->path);
}
