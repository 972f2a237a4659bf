/* ELF symbol sources (libelf): .symtab, .dynsym, external debug files (build-id, debuglink),
 * MiniDebugInfo (.gnu_debugdata, xz) and Go's .gopclntab. Files are read with ELF_C_READ (pread,
 * no mmap) so a file truncated under us cannot raise SIGBUS. */
#include "runtimes/symbols/symbols_internal.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/elfinfo.h"
#include "base/elfnotes.h"
#include "base/inroot.h"
#include "base/log.h"

#define MAX_SECTIONS (1u << 16)
#define DEBUGDATA_MAX_OUT (128u << 20)
#define ELF_LAST_SPAN 4096

static int elf_ready(void)
{
    static int ok = -1;
    if (ok < 0)
        ok = elf_version(EV_CURRENT) != EV_NONE;
    return ok;
}

static Elf_Scn *find_section(Elf *e, const char *name, GElf_Shdr *out)
{
    size_t shstrndx, shnum;
    if (elf_getshdrstrndx(e, &shstrndx) != 0 || elf_getshdrnum(e, &shnum) != 0)
        return NULL;
    Elf_Scn *scn = NULL;
    size_t guard = 0;
    while ((scn = elf_nextscn(e, scn)) != NULL && guard++ < MAX_SECTIONS) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *n = elf_strptr(e, shstrndx, sh.sh_name);
        if (n && strcmp(n, name) == 0) {
            if (out)
                *out = sh;
            return scn;
        }
    }
    return NULL;
}

static int build_id_note(void *arg, const char *name, size_t namesz, uint32_t type,
                         const unsigned char *desc, size_t descsz)
{
    pp_elf_meta *meta = arg;
    if (type != NT_GNU_BUILD_ID || !pp_elf_note_named(name, namesz, "GNU") || descsz == 0 ||
        descsz > PP_BUILD_ID_MAX)
        return 0;
    memcpy(meta->build_id, desc, descsz);
    meta->build_id_len = descsz;
    return 1;
}

int pp_elf_meta_read(Elf *e, pp_elf_meta *meta)
{
    memset(meta, 0, sizeof(*meta));
    GElf_Ehdr eh;
    if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
        return -1;
    size_t phnum = 0;
    if (elf_getphdrnum(e, &phnum) == 0) {
        for (size_t i = 0; i < phnum && i < 4096; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(e, (int)i, &ph))
                continue;
            if (ph.p_type == PT_LOAD && meta->nsegs < PP_ELF_MAX_SEGS) {
                pp_load_seg *s = &meta->segs[meta->nsegs++];
                s->offset = ph.p_offset;
                s->filesz = ph.p_filesz;
                s->vaddr = ph.p_vaddr;
            }
        }
    }
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        shstrndx = 0;
    Elf_Scn *scn = NULL;
    size_t guard = 0;
    while ((scn = elf_nextscn(e, scn)) != NULL && guard++ < MAX_SECTIONS) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *n = shstrndx ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
        if (sh.sh_type == SHT_SYMTAB && sh.sh_size > 0)
            meta->has_symtab = 1;
        else if (sh.sh_type == SHT_DYNSYM && sh.sh_size > 0)
            meta->has_dynsym = 1;
        if (!n)
            continue;
        if (strcmp(n, ".gnu_debugdata") == 0 && sh.sh_type != SHT_NOBITS)
            meta->has_debugdata = 1;
        else if ((strcmp(n, ".gopclntab") == 0 || strcmp(n, ".data.rel.ro.gopclntab") == 0) &&
                 sh.sh_type != SHT_NOBITS)
            meta->has_gopclntab = 1;
        else if (strcmp(n, ".gnu_debuglink") == 0 && sh.sh_type != SHT_NOBITS) {
            Elf_Data *d = elf_getdata(scn, NULL);
            if (!d || !d->d_buf || d->d_size < 6)
                continue;
            const char *p = d->d_buf;
            size_t nl = strnlen(p, d->d_size);
            if (nl == 0 || nl >= sizeof(meta->debuglink) || strchr(p, '/'))
                continue;
            size_t crc_off = (nl + 4) & ~(size_t)3;
            if (crc_off + 4 > d->d_size)
                continue;
            const uint8_t *c = (const uint8_t *)p + crc_off;
            if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
                meta->debuglink_crc =
                    (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
            else
                meta->debuglink_crc =
                    (uint32_t)c[3] << 24 | (uint32_t)c[2] << 16 | (uint32_t)c[1] << 8 | c[0];
            memcpy(meta->debuglink, p, nl);
            meta->debuglink[nl] = '\0';
        }
    }
    pp_elf_notes_walk(e, 0, build_id_note, meta);
    return 0;
}

long pp_elf_add_section_syms(Elf *e, unsigned sh_type, pp_symtab *t)
{
    size_t shnum;
    if (elf_getshdrnum(e, &shnum) != 0 || shnum == 0 || shnum > MAX_SECTIONS)
        return 0;
    Elf_Scn *scn = NULL, *symscn = NULL;
    GElf_Shdr symsh = {0};
    uint8_t *exec = calloc(shnum, 1);
    if (!exec)
        return 0;
    size_t guard = 0;
    while ((scn = elf_nextscn(e, scn)) != NULL && guard++ < MAX_SECTIONS) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        size_t idx = elf_ndxscn(scn);
        if (idx < shnum && (sh.sh_flags & SHF_EXECINSTR))
            exec[idx] = 1;
        if (sh.sh_type == sh_type && !symscn) {
            symscn = scn;
            symsh = sh;
        }
    }
    long n = 0;
    Elf_Data *d = symscn ? elf_getdata(symscn, NULL) : NULL;
    size_t entsz = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
    if (d && entsz) {
        size_t count = d->d_size / entsz;
        for (size_t i = 1; i < count; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(d, (int)i, &sym))
                break;
            int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
            if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || sym.st_name == 0)
                continue;
            uint8_t flags = 0;
            if (type == STT_FUNC || type == STT_GNU_IFUNC)
                flags = PP_SYM_FUNC;
            else if (type != STT_NOTYPE || sym.st_shndx >= shnum || !exec[sym.st_shndx])
                continue;
            if (bind == STB_GLOBAL)
                flags |= PP_SYM_GLOBAL;
            else if (bind == STB_WEAK)
                flags |= PP_SYM_WEAK;
            const char *name = elf_strptr(e, symsh.sh_link, sym.st_name);
            if (!name || !name[0] || name[0] == '$' || (name[0] == '.' && name[1] == 'L'))
                continue;
            if (pp_symtab_add(t, sym.st_value, sym.st_size, name, strlen(name), flags) == 0)
                n++;
        }
    }
    free(exec);
    return n;
}

/* xz-decompresses in[0..len) into a malloc'd buffer (bounded). */
static uint8_t *xz_decode(const uint8_t *in, size_t len, size_t *outlen)
{
    lzma_stream strm = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&strm, 256u << 20, 0) != LZMA_OK)
        return NULL;
    size_t cap = len * 4 + 4096, used = 0;
    uint8_t *out = malloc(cap);
    if (!out) {
        lzma_end(&strm);
        return NULL;
    }
    strm.next_in = in;
    strm.avail_in = len;
    lzma_ret r = LZMA_OK;
    for (int guard = 0; guard < 64; guard++) {
        strm.next_out = out + used;
        strm.avail_out = cap - used;
        r = lzma_code(&strm, LZMA_FINISH);
        used = cap - strm.avail_out;
        if (r != LZMA_OK)
            break;
        if (strm.avail_out == 0) {
            if (cap >= DEBUGDATA_MAX_OUT)
                break;
            size_t nc = cap * 2 > DEBUGDATA_MAX_OUT ? DEBUGDATA_MAX_OUT : cap * 2;
            uint8_t *no = realloc(out, nc);
            if (!no)
                break;
            out = no;
            cap = nc;
        } else if (strm.avail_in == 0) {
            break;
        }
    }
    lzma_end(&strm);
    if (r != LZMA_STREAM_END) {
        free(out);
        return NULL;
    }
    *outlen = used;
    return out;
}

long pp_elf_add_debugdata(Elf *e, pp_symtab *t)
{
    Elf_Scn *scn = find_section(e, ".gnu_debugdata", NULL);
    Elf_Data *d = scn ? elf_rawdata(scn, NULL) : NULL;
    if (!d || !d->d_buf || d->d_size == 0)
        return -1;
    size_t outlen = 0;
    uint8_t *buf = xz_decode(d->d_buf, d->d_size, &outlen);
    if (!buf)
        return -1;
    long n = -1;
    Elf *inner = elf_memory((char *)buf, outlen);
    if (inner) {
        if (elf_kind(inner) == ELF_K_ELF)
            n = pp_elf_add_section_syms(inner, SHT_SYMTAB, t);
        elf_end(inner);
    }
    free(buf);
    return n;
}

static long add_gopclntab(Elf *e, pp_symtab *t)
{
    Elf_Scn *scn = find_section(e, ".gopclntab", NULL);
    if (!scn)
        scn = find_section(e, ".data.rel.ro.gopclntab", NULL);
    Elf_Data *d = scn ? elf_rawdata(scn, NULL) : NULL;
    if (!d || !d->d_buf)
        return -1;
    GElf_Shdr text;
    uint64_t text_start = find_section(e, ".text", &text) ? text.sh_addr : 0;
    return pp_gopclntab_parse(d->d_buf, d->d_size, text_start, t);
}

int pp_file_crc32(int fd, uint32_t *crc)
{
    uLong c = crc32(0L, Z_NULL, 0);
    static __thread uint8_t buf[65536];
    off_t off = 0;
    for (;;) {
        ssize_t r = pread(fd, buf, sizeof(buf), off);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        c = crc32(c, buf, (uInt)r);
        off += r;
    }
    *crc = (uint32_t)c;
    return 0;
}

/* Opens a candidate debug file (path inside rootfd, a process's root, when rootfd >= 0; else in
 * polyprof's own root) and loads its .symtab when it matches. O_NONBLOCK: a FIFO planted at a
 * candidate's path must not block the open (it is then refused as not a regular file). */
static long try_debug_file(int rootfd, const char *path, const pp_elf_meta *meta, int check_crc,
                           pp_symtab *t)
{
    int fd = rootfd >= 0 ? pp_openat_in_root(rootfd, path, O_RDONLY | O_NONBLOCK)
                         : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    long n = -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        goto out;
    if (check_crc) {
        uint32_t crc;
        if (pp_file_crc32(fd, &crc) != 0 || crc != meta->debuglink_crc) {
            pp_debug("symbols: debuglink %s: CRC mismatch", path);
            goto out;
        }
    }
    Elf *e = pp_elf_begin_bounded(fd);
    if (!e)
        goto out;
    pp_elf_meta dm;
    if (pp_elf_meta_read(e, &dm) == 0 && dm.has_symtab &&
        !(meta->build_id_len && dm.build_id_len &&
          (dm.build_id_len != meta->build_id_len ||
           memcmp(dm.build_id, meta->build_id, dm.build_id_len) != 0))) {
        n = pp_elf_add_section_syms(e, SHT_SYMTAB, t);
        if (n > 0)
            pp_debug("symbols: using debug file %s%s (%ld symbols)", path,
                     rootfd >= 0 ? " (in the process's root)" : "", n);
    }
    elf_end(e);
out:
    close(fd);
    return n;
}

/* Searches the process's root (held descriptor, else /proc/<pid>/root opened for this lookup
 * only: a container's root is never held), then polyprof's own root. */
static long find_debug_file(const pp_debug_ctx *dbg, const pp_elf_meta *meta, pp_symtab *t)
{
    char path[PATH_MAX], dir[PATH_MAX];
    int opened = -1;
    if (dbg->rootfd < 0 && dbg->pid > 0) {
        snprintf(path, sizeof(path), "/proc/%d/root", dbg->pid);
        opened = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    int roots[2] = {dbg->rootfd >= 0 ? dbg->rootfd : opened, -1};
    int r0 = roots[0] >= 0 ? 0 : 1; /* no process root: polyprof's own only */
    long n = -1;
    if (meta->build_id_len >= 2) {
        char hex[2 * PP_BUILD_ID_MAX + 1];
        for (size_t i = 0; i < meta->build_id_len; i++)
            snprintf(hex + 2 * i, 3, "%02x", meta->build_id[i]);
        int k =
            snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
        for (int r = r0; r < 2 && k > 0 && (size_t)k < sizeof(path); r++) {
            n = try_debug_file(roots[r], path, meta, 0, t);
            if (n > 0)
                goto out;
        }
    }
    n = -1;
    if (!meta->debuglink[0] || !dbg->path || dbg->path[0] != '/')
        goto out;
    size_t dl = strlen(dbg->path);
    if (dl >= sizeof(dir))
        goto out;
    memcpy(dir, dbg->path, dl + 1);
    char *slash = strrchr(dir, '/');
    *slash = '\0'; /* dir is "" for files in / */
    const char *fmts[3] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
    for (int r = r0; r < 2; r++) {
        for (int f = 0; f < 3; f++) {
            int k = snprintf(path, sizeof(path), fmts[f], dir, meta->debuglink);
            if (k <= 0 || (size_t)k >= sizeof(path))
                continue;
            if (f == 0 && strcmp(path, dbg->path) == 0)
                continue; /* the binary itself */
            n = try_debug_file(roots[r], path, meta, 1, t);
            if (n > 0)
                goto out;
        }
    }
    n = -1;
out:
    if (opened >= 0)
        close(opened);
    return n;
}

int pp_elf_meta_potential(const pp_elf_meta *meta)
{
    if (meta->has_symtab || meta->debuglink[0])
        return PP_SYMQ_FULL;
    return meta->has_debugdata ? PP_SYMQ_MINIDEBUG : PP_SYMQ_DYNAMIC;
}

long pp_elf_load_all(Elf *e, const pp_elf_meta *meta, const pp_debug_ctx *dbg, pp_symtab *t,
                     int *quality)
{
    int q_dummy;
    if (!quality)
        quality = &q_dummy;
    *quality = PP_SYMQ_DYNAMIC;
    if (!elf_ready())
        return -1;
    long n;
    if (meta->has_symtab) {
        n = pp_elf_add_section_syms(e, SHT_SYMTAB, t);
        if (n > 0) {
            *quality = PP_SYMQ_FULL;
            return n;
        }
    }
    if (dbg && (meta->build_id_len || meta->debuglink[0])) {
        n = find_debug_file(dbg, meta, t);
        if (n > 0) {
            *quality = PP_SYMQ_FULL;
            return n;
        }
    }
    n = 0;
    if (meta->has_dynsym)
        n += pp_elf_add_section_syms(e, SHT_DYNSYM, t);
    if (meta->has_debugdata) {
        long k = pp_elf_add_debugdata(e, t);
        if (k > 0) {
            n += k;
            *quality = PP_SYMQ_MINIDEBUG;
        }
    }
    if (meta->has_gopclntab) {
        long k = add_gopclntab(e, t);
        if (k > 0)
            n += k;
    }
    return n;
}

long pp_elf_load_memory(const void *data, size_t len, pp_symtab *t, pp_elf_meta *meta_out)
{
    if (meta_out)
        memset(meta_out, 0, sizeof(*meta_out));
    if (!elf_ready() || !data || len == 0)
        return -1;
    char *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, data, len);
    long n = -1;
    Elf *e = elf_memory(copy, len);
    pp_elf_meta meta;
    if (e && pp_elf_meta_read(e, &meta) == 0) {
        n = pp_elf_load_all(e, &meta, NULL, t, NULL);
        pp_symtab_finish(t, ELF_LAST_SPAN);
        if (meta_out)
            *meta_out = meta;
    }
    if (e)
        elf_end(e);
    free(copy);
    return n;
}

int pp_elf_offset_to_vaddr(const pp_elf_meta *meta, uint64_t off, uint64_t *vaddr)
{
    for (int i = 0; i < meta->nsegs && i < PP_ELF_MAX_SEGS; i++) {
        const pp_load_seg *s = &meta->segs[i];
        if (off >= s->offset && off - s->offset < s->filesz) {
            *vaddr = off - s->offset + s->vaddr;
            return 0;
        }
    }
    return -1;
}
