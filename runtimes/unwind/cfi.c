/* Unwind rows from an ELF file's CFI (runtimes/unwind/cfi.h). libdw interprets the CFI: for each
 * FDE (their start addresses from .eh_frame_hdr's sorted table, or .debug_frame's entries), the
 * rows are walked with dwarf_cfi_addrframe at the FDE's start and then at each row's end, and each
 * row's CFA rule, rbp rule and return-address rule are translated into a pp_cfi_row. The
 * sigreturn trampoline is found by its code bytes in the executable segments. */
#include "runtimes/unwind/cfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define X86_RBP 6
#define X86_RSP 7
#define X86_RA 16

/* __restore_rt on x86-64: mov $15,%rax (rt_sigreturn); syscall */
static const unsigned char restore_rt_code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                                0x00, 0x00, 0x0f, 0x05};
#define SIGRETURN_MAX 16 /* trampolines recognised per file */

typedef struct {
    pp_cfi_table *t;
    char *err;
    size_t errsz;
    size_t max_rows;
    uint64_t work;     /* CFI rows libdw has interpreted (from each FDE's start) */
    uint64_t max_work; /* bound of work */
} builder;

static void fail(builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, b->errsz, fmt, ap);
    va_end(ap);
}

static int push_row(builder *b, const pp_cfi_row *r)
{
    pp_cfi_table *t = b->t;
    if (t->n >= b->max_rows) {
        fail(b, "more than %zu unwind rows (the per-file cap): the file is not unwound by CFI",
             b->max_rows);
        return -1;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        pp_cfi_row *nr = realloc(t->rows, nc * sizeof(*nr));
        if (!nr) {
            fail(b, "out of memory for %zu unwind rows", nc);
            return -1;
        }
        t->rows = nr;
        t->cap = nc;
    }
    t->rows[t->n++] = *r;
    return 0;
}

static bool fits_i32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

/* The PLT's CFA expression (binutils' .plt): rsp + 8 + ((((rip & 15) >= 11)) << 3). */
static bool is_plt_expr(const Dwarf_Op *o, size_t n)
{
    static const uint8_t atoms[] = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, DW_OP_lit11,
                                    DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,   DW_OP_plus};
    if (n != sizeof(atoms))
        return false;
    for (size_t i = 0; i < n; i++)
        if (o[i].atom != atoms[i])
            return false;
    return o[0].number == 8 && o[1].number == 0;
}

/* The rule "saved at CFA + off": DW_OP_call_frame_cfa [DW_OP_plus_uconst off], a location (no
 * DW_OP_stack_value). */
static bool cfa_offset_rule(const Dwarf_Op *o, size_t n, int64_t *off)
{
    if (n < 1 || n > 2 || o[0].atom != DW_OP_call_frame_cfa)
        return false;
    *off = n == 2 ? (int64_t)o[1].number : 0;
    return n == 1 || o[1].atom == DW_OP_plus_uconst;
}

/* Translates libdw's frame state at a pc into a row (pc filled in by the caller). */
static void frame_to_row(Dwarf_Frame *f, pp_cfi_row *r)
{
    Dwarf_Op *ops = NULL, mem[3];
    size_t n = 0;
    memset(r, 0, sizeof(*r));
    r->kind = PP_CFI_UNSUPPORTED;
    if (dwarf_frame_cfa(f, &ops, &n) != 0 || n == 0)
        return;
    uint8_t kind;
    int64_t cfa_off = 0;
    if (n == 1 && ops[0].atom == DW_OP_bregx &&
        (ops[0].number == X86_RSP || ops[0].number == X86_RBP) &&
        fits_i32((int64_t)ops[0].number2)) {
        kind = ops[0].number == X86_RSP ? PP_CFI_RSP : PP_CFI_RBP;
        cfa_off = (int64_t)ops[0].number2;
    } else if (is_plt_expr(ops, n)) {
        kind = PP_CFI_PLT;
        cfa_off = 8;
    } else {
        return;
    }
    /* the return address: undefined ends the stack; else it must be at CFA - 8 */
    ops = NULL;
    n = 0;
    if (dwarf_frame_register(f, X86_RA, mem, &ops, &n) != 0)
        return;
    if (n == 0 && ops == mem) {
        r->kind = PP_CFI_END;
        return;
    }
    int64_t ra = 0;
    if (!cfa_offset_rule(ops, n, &ra) || ra != -8)
        return;
    /* rbp: unchanged (same value, undefined) or saved at CFA + off */
    ops = NULL;
    n = 0;
    if (dwarf_frame_register(f, X86_RBP, mem, &ops, &n) != 0)
        return;
    int64_t rbp = 0;
    if (n == 1 && ops[0].atom == DW_OP_regx && ops[0].number == X86_RBP)
        rbp = 0;
    else if (n != 0 && (!cfa_offset_rule(ops, n, &rbp) || rbp == 0 || !fits_i32(rbp)))
        return;
    r->kind = kind;
    r->cfa_off = (int32_t)cfa_off;
    r->rbp_off = (int32_t)rbp;
}

static bool same_rule(const pp_cfi_row *a, const pp_cfi_row *b)
{
    return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

static int push_none(builder *b, uint64_t pc)
{
    pp_cfi_row r = {.pc = pc, .kind = PP_CFI_NONE};
    return push_row(b, &r);
}

typedef bool (*skip_fn)(builder *b, uint64_t pc, size_t nprev);

/* The end of a run of rows at pc: a NONE row, unless rows of another section cover pc. */
static int gap(builder *b, uint64_t pc, skip_fn skip, size_t nprev)
{
    if (skip && skip(b, pc, nprev))
        return 0;
    return push_none(b, pc);
}

/* Walks the rows of the FDEs starting at starts[0..n) (sorted): at each FDE start, then at each
 * row's end, until the next FDE's start or a pc no FDE covers (which gets a NONE row). skip(pc)
 * true: the pc is already covered by rows from another section. */
static int sweep(builder *b, Dwarf_CFI *cfi, const uint64_t *starts, size_t n, skip_fn skip,
                 size_t nprev)
{
    uint64_t pc = 0;
    bool open = false; /* the last row pushed by this sweep is not a NONE */
    for (size_t i = 0; i < n; i++) {
        uint64_t s = starts[i], next = i + 1 < n ? starts[i + 1] : UINT64_MAX;
        if ((open && s < pc) || (i && s == starts[i - 1]))
            continue; /* overlapping or repeated FDE */
        if (skip && skip(b, s, nprev))
            continue;
        if (open && pc < s && gap(b, pc, skip, nprev) < 0)
            return -1;
        pc = s;
        open = false;
        size_t k = 0; /* rows of this FDE so far: libdw interprets them all again for the next */
        while (pc < next) {
            b->work += ++k;
            if (b->work > b->max_work) {
                fail(b,
                     "CFI too costly to interpret (more than %llu row steps; an FDE with %zu "
                     "rows): the file is not unwound by CFI",
                     (unsigned long long)b->max_work, k);
                return -1;
            }
            Dwarf_Frame *f = NULL;
            if (dwarf_cfi_addrframe(cfi, pc, &f) != 0) {
                free(f);
                if (open && gap(b, pc, skip, nprev) < 0)
                    return -1;
                open = false;
                break;
            }
            Dwarf_Addr lo = 0, hi = 0;
            bool sig = false;
            dwarf_frame_info(f, &lo, &hi, &sig);
            pp_cfi_row r;
            frame_to_row(f, &r);
            free(f);
            if (lo > pc || hi <= pc) {
                fail(b, "malformed CFI: the row at 0x%llx spans [0x%llx, 0x%llx)",
                     (unsigned long long)pc, (unsigned long long)lo, (unsigned long long)hi);
                return -1;
            }
            r.pc = pc;
            if (push_row(b, &r) < 0)
                return -1;
            open = true;
            pc = hi;
        }
    }
    if (open && pc != UINT64_MAX && gap(b, pc, skip, nprev) < 0)
        return -1;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* FDE starts from the .eh_frame_hdr search table (PT_GNU_EH_FRAME). Returns the count (>= 0),
 * -1 when there is no usable table (*starts NULL). */
static long eh_hdr_starts(Elf *e, const GElf_Phdr *ph, uint64_t fsize, uint64_t **starts)
{
    *starts = NULL;
    if (ph->p_offset > fsize || ph->p_filesz > fsize - ph->p_offset || ph->p_filesz < 12)
        return -1;
    Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_BYTE);
    if (!d || !d->d_buf || d->d_size < 12)
        return -1;
    const unsigned char *p = d->d_buf;
    /* version 1; eh_frame_ptr encoded 4 bytes (sdata4/udata4, any application); fde_count
     * udata4/sdata4; table datarel|sdata4 */
    if (p[0] != 1 || (p[1] & 0x0f) != 0x0b || ((p[2] & 0x0f) != 0x03 && (p[2] & 0x0f) != 0x0b) ||
        (p[2] & 0x70) != 0 || p[3] != 0x3b)
        return -1;
    uint32_t count;
    memcpy(&count, p + 8, 4);
    size_t room = (d->d_size - 12) / 8;
    if (count > room)
        return -1;
    uint64_t *s = malloc((count ? count : 1) * sizeof(*s));
    if (!s)
        return -1;
    for (uint32_t i = 0; i < count; i++) {
        int32_t loc;
        memcpy(&loc, p + 12 + (size_t)i * 8, 4);
        s[i] = ph->p_vaddr + (uint64_t)(int64_t)loc;
    }
    qsort(s, count, sizeof(*s), cmp_u64); /* a hostile table need not be sorted */
    *starts = s;
    return count;
}

/* FDE starts of .debug_frame (absolute 8-byte initial locations), at most max. */
static long debug_frame_starts(Elf *e, Elf_Data *d, size_t max, uint64_t **starts)
{
    const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
    size_t n = 0, cap = 0;
    uint64_t *s = NULL;
    Dwarf_Off off = 0;
    for (size_t iter = 0; ident && iter < max * 2 + 1024; iter++) {
        Dwarf_Off next = (Dwarf_Off)-1;
        Dwarf_CFI_Entry ent;
        int r = dwarf_next_cfi(ident, d, false, off, &next, &ent);
        if (r == 1)
            break;
        if (next == (Dwarf_Off)-1 || next <= off)
            break;
        off = next;
        if (r != 0 || dwarf_cfi_cie_p(&ent))
            continue;
        const uint8_t *lp = ent.fde.start;
        const uint8_t *base = d->d_buf;
        if (lp < base || (size_t)(lp - base) + 8 > d->d_size)
            continue;
        if (n == cap) {
            if (n >= max)
                break;
            cap = cap ? cap * 2 : 256;
            uint64_t *ns = realloc(s, cap * sizeof(*ns));
            if (!ns) {
                free(s);
                return -1;
            }
            s = ns;
        }
        memcpy(&s[n++], lp, 8);
    }
    if (!s)
        return 0;
    qsort(s, n, sizeof(*s), cmp_u64);
    *starts = s;
    return (long)n;
}

/* pc lies in a row (not NONE) of the first nprev rows (sorted, from .eh_frame). */
static bool covered(builder *b, uint64_t pc, size_t nprev)
{
    pp_cfi_table tmp = *b->t;
    tmp.n = nprev;
    const pp_cfi_row *r = pp_cfi_find(&tmp, pc);
    return r && r->kind != PP_CFI_NONE;
}

static int cmp_row(const void *a, const void *b)
{
    const pp_cfi_row *x = a, *y = b;
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Finds restore_rt_code in the executable PT_LOAD segments' file bytes (read in bounded
 * chunks). Returns how many addresses were stored in out. */
static size_t find_sigreturn(int fd, Elf *e, size_t phnum, uint64_t fsize, uint64_t *out)
{
    enum { CHUNK = 1 << 20, K = sizeof(restore_rt_code) };
    unsigned char *buf = malloc(CHUNK + K);
    size_t n = 0;
    if (!buf)
        return 0;
    for (size_t i = 0; i < phnum && n < SIGRETURN_MAX; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
            continue;
        if (ph.p_offset >= fsize)
            continue;
        uint64_t end =
            ph.p_offset + (ph.p_filesz < fsize - ph.p_offset ? ph.p_filesz : fsize - ph.p_offset);
        for (uint64_t off = ph.p_offset; off < end && n < SIGRETURN_MAX;) {
            size_t want = end - off < CHUNK + K ? (size_t)(end - off) : CHUNK + K;
            ssize_t got = pread(fd, buf, want, (off_t)off);
            if (got < (ssize_t)K)
                break;
            for (const unsigned char *p = buf; n < SIGRETURN_MAX;) {
                p = memmem(p, (size_t)(buf + got - p), restore_rt_code, K);
                if (!p)
                    break;
                out[n++] = ph.p_vaddr + (off + (uint64_t)(p - buf) - ph.p_offset);
                p++;
            }
            if ((size_t)got < want)
                break;
            off += CHUNK; /* the next chunk re-reads the K bytes that may hold a split match */
        }
    }
    free(buf);
    return n;
}

/* Gives [a, a + sizeof(restore_rt_code)) a SIGRETURN row, the rows after it unchanged. */
static int apply_sigreturn(builder *b, uint64_t a)
{
    pp_cfi_table *t = b->t;
    uint64_t z = a + sizeof(restore_rt_code);
    const pp_cfi_row *after = pp_cfi_find(t, z);
    pp_cfi_row rest = after ? *after : (pp_cfi_row){.kind = PP_CFI_NONE};
    rest.pc = z;
    /* drop the rows inside [a, z], then append the two and re-sort */
    size_t w = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].pc < a || t->rows[i].pc > z)
            t->rows[w++] = t->rows[i];
    t->n = w;
    pp_cfi_row sig = {.pc = a, .kind = PP_CFI_SIGRETURN};
    if (push_row(b, &sig) < 0 || push_row(b, &rest) < 0)
        return -1;
    qsort(t->rows, t->n, sizeof(*t->rows), cmp_row);
    return 0;
}

/* Stable sort by pc (bottom-up merge sort): for equal pcs the row pushed first stays first. */
static int stable_sort(builder *b)
{
    pp_cfi_table *t = b->t;
    bool sorted = true;
    for (size_t i = 1; i < t->n && sorted; i++)
        sorted = t->rows[i - 1].pc <= t->rows[i].pc;
    if (sorted)
        return 0;
    pp_cfi_row *tmp = malloc(t->n * sizeof(*tmp)), *src = t->rows, *dst = tmp;
    if (!tmp) {
        fail(b, "out of memory sorting %zu unwind rows", t->n);
        return -1;
    }
    for (size_t w = 1; w < t->n; w *= 2) {
        for (size_t lo = 0; lo < t->n; lo += 2 * w) {
            size_t mid = lo + w < t->n ? lo + w : t->n, hi = lo + 2 * w < t->n ? lo + 2 * w : t->n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = src[j].pc < src[i].pc ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        pp_cfi_row *x = src;
        src = dst;
        dst = x;
    }
    if (src != t->rows)
        memcpy(t->rows, src, t->n * sizeof(*src));
    free(tmp);
    return 0;
}

/* Sorts (for equal pcs the first pushed wins), drops repeated pcs and merges adjacent rows with
 * the same rule. */
static int normalize(builder *b)
{
    pp_cfi_table *t = b->t;
    if (!t->n)
        return 0;
    if (stable_sort(b) < 0)
        return -1;
    size_t w = 1;
    for (size_t i = 1; i < t->n; i++) {
        pp_cfi_row *prev = &t->rows[w - 1];
        if (t->rows[i].pc == prev->pc)
            continue;
        if (same_rule(prev, &t->rows[i]))
            continue;
        t->rows[w++] = t->rows[i];
    }
    t->n = w;
    return 0;
}

/* Copies file bytes [off, off + len) (clamped to the file) into the image. */
static void read_range(int fd, char *img, uint64_t fsize, uint64_t off, uint64_t len)
{
    if (off >= fsize)
        return;
    if (len > fsize - off)
        len = fsize - off;
    while (len) {
        ssize_t got = pread(fd, img + off, len, (off_t)off);
        if (got <= 0)
            return; /* truncated meanwhile: zeros */
        off += (uint64_t)got;
        len -= (uint64_t)got;
    }
}

static bool section_wanted(const char *name)
{
    return !strcmp(name, ".eh_frame") || !strcmp(name, ".eh_frame_hdr") ||
           !strcmp(name, ".debug_frame");
}

/* The file as libelf and libdw read it (elf_memory): an image of the file's size, zero-filled
 * (allocated lazily: only the parts read take memory) but for the headers, the section names
 * and the CFI sections (without section headers: the segment holding .eh_frame_hdr). Read into
 * memory rather than through libelf's descriptor reads, which leak on malformed section tables
 * (found by tests/fuzz/fuzz_cfi.c), and rather than mapped, which a file truncated meanwhile
 * would turn into SIGBUS. NULL with the reason in b. */
static char *sparse_image(builder *b, int fd, uint64_t fsize)
{
    if (fsize < sizeof(Elf64_Ehdr)) {
        fail(b, "not an ELF file (%llu bytes)", (unsigned long long)fsize);
        return NULL;
    }
    char *img = calloc(1, fsize);
    if (!img) {
        fail(b, "out of memory for a %llu-byte file", (unsigned long long)fsize);
        return NULL;
    }
    read_range(fd, img, fsize, 0, sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh;
    memcpy(&eh, img, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB) {
        fail(b, "not a 64-bit little-endian ELF file");
        free(img);
        return NULL;
    }
    uint64_t phnum = 0;
    if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phoff < fsize) {
        phnum = eh.e_phnum;
        if (phnum > (fsize - eh.e_phoff) / sizeof(Elf64_Phdr))
            phnum = (fsize - eh.e_phoff) / sizeof(Elf64_Phdr);
        read_range(fd, img, fsize, eh.e_phoff, phnum * sizeof(Elf64_Phdr));
    }
    uint64_t shnum = 0;
    bool have_eh_frame = false;
    if (eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shoff && eh.e_shoff < fsize &&
        fsize - eh.e_shoff >= sizeof(Elf64_Shdr)) {
        Elf64_Shdr sh0;
        read_range(fd, img, fsize, eh.e_shoff, sizeof(sh0));
        memcpy(&sh0, img + eh.e_shoff, sizeof(sh0));
        shnum = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
        if (shnum > (fsize - eh.e_shoff) / sizeof(Elf64_Shdr))
            shnum = (fsize - eh.e_shoff) / sizeof(Elf64_Shdr);
        read_range(fd, img, fsize, eh.e_shoff, shnum * sizeof(Elf64_Shdr));
        uint64_t strndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
        if (strndx && strndx < shnum) {
            Elf64_Shdr ss;
            memcpy(&ss, img + eh.e_shoff + strndx * sizeof(ss), sizeof(ss));
            if (ss.sh_type == SHT_STRTAB && ss.sh_offset < fsize && ss.sh_size <= (1u << 20)) {
                read_range(fd, img, fsize, ss.sh_offset, ss.sh_size);
                uint64_t ssz =
                    ss.sh_size < fsize - ss.sh_offset ? ss.sh_size : fsize - ss.sh_offset;
                for (uint64_t i = 1; i < shnum; i++) {
                    Elf64_Shdr sh;
                    memcpy(&sh, img + eh.e_shoff + i * sizeof(sh), sizeof(sh));
                    if (sh.sh_type == SHT_NOBITS || sh.sh_name >= ssz)
                        continue;
                    const char *nm = img + ss.sh_offset + sh.sh_name;
                    if (!memchr(nm, 0, ssz - sh.sh_name) || !section_wanted(nm))
                        continue;
                    read_range(fd, img, fsize, sh.sh_offset, sh.sh_size);
                    have_eh_frame |= !strcmp(nm, ".eh_frame");
                }
            }
        }
    }
    for (uint64_t i = 0; i < phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, img + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_GNU_EH_FRAME)
            continue;
        read_range(fd, img, fsize, ph.p_offset, ph.p_filesz);
        for (uint64_t k = 0; !have_eh_frame && k < phnum; k++) {
            Elf64_Phdr ld;
            memcpy(&ld, img + eh.e_phoff + k * sizeof(ld), sizeof(ld));
            if (ld.p_type == PT_LOAD && ph.p_vaddr >= ld.p_vaddr &&
                ph.p_vaddr - ld.p_vaddr < ld.p_filesz)
                read_range(fd, img, fsize, ld.p_offset, ld.p_filesz);
        }
        break;
    }
    return img;
}

/* Section headers, when present, name their sections through a string table (libelf reads
 * names out of a section of another type, and leaks what it read, before refusing it). */
static bool names_ok(Elf *e)
{
    size_t shnum = 0, shstrndx = 0;
    if (elf_getshdrnum(e, &shnum) != 0)
        return false;
    if (shnum == 0)
        return true;
    if (elf_getshdrstrndx(e, &shstrndx) != 0 || shstrndx == 0 || shstrndx >= shnum)
        return false;
    GElf_Shdr sh;
    Elf_Scn *scn = elf_getscn(e, shstrndx);
    return scn && gelf_getshdr(scn, &sh) && sh.sh_type == SHT_STRTAB;
}

long pp_cfi_build(int fd, pp_cfi_table *t, char *err, size_t errsz)
{
    return pp_cfi_build_limited(fd, NULL, t, err, errsz);
}

long pp_cfi_build_limited(int fd, const pp_cfi_limits *lim, pp_cfi_table *t, char *err,
                          size_t errsz)
{
    memset(t, 0, sizeof(*t));
    builder b = {.t = t,
                 .err = err,
                 .errsz = errsz,
                 .max_rows = lim && lim->max_rows ? lim->max_rows : PP_CFI_MAX_ROWS,
                 .max_work = lim && lim->max_work ? lim->max_work : PP_CFI_MAX_WORK};
    if (errsz)
        err[0] = 0;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fail(&b, "cannot stat the file: %s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(&b, "not a regular file");
        return -1;
    }
    if ((uint64_t)st.st_size > PP_CFI_MAX_FILE) {
        fail(&b, "file of %lld bytes is larger than the %llu-byte cap for unwind rows",
             (long long)st.st_size, (unsigned long long)PP_CFI_MAX_FILE);
        return -1;
    }
    uint64_t fsize = (uint64_t)st.st_size;
    char *img = sparse_image(&b, fd, fsize);
    if (!img)
        return -1;
    elf_version(EV_CURRENT);
    Elf *e = elf_memory(img, fsize);
    if (!e || elf_kind(e) != ELF_K_ELF) {
        fail(&b, "not an ELF file");
        if (e)
            elf_end(e);
        free(img);
        return -1;
    }
    long ret = -1;
    Dwarf_CFI *cfi = NULL;
    Dwarf *dw = NULL;
    uint64_t *starts = NULL;
    GElf_Ehdr eh;
    size_t phnum = 0;
    if (!gelf_getehdr(e, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
        fail(&b, "not an x86-64 ELF file (the only architecture with unwind rows)");
        goto out;
    }
    if (elf_getphdrnum(e, &phnum) != 0 || phnum > 65535) {
        fail(&b, "malformed ELF: unreadable program headers");
        goto out;
    }
    if (!names_ok(e)) {
        fail(&b, "malformed ELF: the section-name table is not a string table");
        goto out;
    }
    GElf_Phdr ehph = {0};
    bool have_hdr = false;
    t->text_lo = UINT64_MAX;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph))
            continue;
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && ph.p_memsz &&
            ph.p_vaddr + ph.p_memsz > ph.p_vaddr) {
            if (ph.p_vaddr < t->text_lo)
                t->text_lo = ph.p_vaddr;
            if (ph.p_vaddr + ph.p_memsz > t->text_hi)
                t->text_hi = ph.p_vaddr + ph.p_memsz;
        } else if (ph.p_type == PT_GNU_EH_FRAME && !have_hdr) {
            ehph = ph;
            have_hdr = true;
        }
    }
    if (t->text_lo == UINT64_MAX)
        t->text_lo = 0;

    /* .eh_frame, through .eh_frame_hdr's table */
    /* (the table is read first: libdw's own reading of it need not be this careful) */
    long nhdr = have_hdr ? eh_hdr_starts(e, &ehph, fsize, &starts) : -1;
    if (nhdr >= 0 && (cfi = dwarf_getcfi_elf(e)) != NULL) {
        long n = nhdr;
        if (n > (long)b.max_rows) {
            fail(&b, "%ld FDEs: more than %zu unwind rows (the per-file cap)", n, b.max_rows);
            goto out;
        }
        if (n > 0 && sweep(&b, cfi, starts, (size_t)n, NULL, 0) < 0)
            goto out;
    }
    free(starts);
    starts = NULL;
    if (normalize(&b) < 0)
        goto out;

    /* .debug_frame: FDEs for pcs .eh_frame does not cover */
    dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
    Dwarf_CFI *dcfi = dw ? dwarf_getcfi(dw) : NULL;
    if (dcfi) {
        size_t shstrndx = 0;
        Elf_Scn *scn = NULL;
        Elf_Data *dd = NULL;
        if (elf_getshdrstrndx(e, &shstrndx) == 0) {
            while ((scn = elf_nextscn(e, scn)) != NULL) {
                GElf_Shdr sh;
                const char *nm;
                if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
                    (nm = elf_strptr(e, shstrndx, sh.sh_name)) && !strcmp(nm, ".debug_frame")) {
                    dd = elf_getdata(scn, NULL);
                    break;
                }
            }
        }
        long n = dd && dd->d_buf ? debug_frame_starts(e, dd, b.max_rows, &starts) : 0;
        size_t nprev = t->n;
        if (n > 0 && sweep(&b, dcfi, starts, (size_t)n, covered, nprev) < 0)
            goto out;
        if (normalize(&b) < 0)
            goto out;
    }

    uint64_t sig[SIGRETURN_MAX];
    size_t nsig = find_sigreturn(fd, e, phnum, fsize, sig);
    for (size_t i = 0; i < nsig; i++)
        if (apply_sigreturn(&b, sig[i]) < 0)
            goto out;
    if (normalize(&b) < 0)
        goto out;

    size_t useful = 0;
    for (size_t i = 0; i < t->n; i++)
        useful += t->rows[i].kind != PP_CFI_NONE;
    if (!useful) {
        fail(&b, "no CFI (.eh_frame with .eh_frame_hdr, or .debug_frame) in the file");
        goto out;
    }
    pp_cfi_row *fit = realloc(t->rows, t->n * sizeof(*fit)); /* the cache counts these bytes */
    if (fit) {
        t->rows = fit;
        t->cap = t->n;
    }
    ret = (long)t->n;
out:
    free(starts);
    if (cfi)
        dwarf_cfi_end(cfi);
    if (dw)
        dwarf_end(dw);
    elf_end(e);
    free(img);
    if (ret < 0)
        pp_cfi_free(t);
    return ret;
}

const pp_cfi_row *pp_cfi_find(const pp_cfi_table *t, uint64_t pc)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].pc <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &t->rows[lo - 1] : NULL;
}

void pp_cfi_free(pp_cfi_table *t)
{
    free(t->rows);
    memset(t, 0, sizeof(*t));
}
