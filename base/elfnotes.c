/* ELF note walker (see elfnotes.h). */
#include "base/elfnotes.h"

#include <string.h>

#define MAX_SEGMENTS 256
#define MAX_SECTIONS 4096
#define MAX_NOTES 1024

static int walk_data(Elf_Data *d, pp_elf_note_cb cb, void *arg)
{
    if (!d || !d->d_buf)
        return 0;
    size_t off = 0, name_off, desc_off;
    GElf_Nhdr nh;
    for (int n = 0; n < MAX_NOTES && off < d->d_size; n++) {
        size_t next = gelf_getnote(d, off, &nh, &name_off, &desc_off);
        if (next == 0 || next <= off)
            break;
        int rc = cb(arg, (const char *)d->d_buf + name_off, nh.n_namesz, nh.n_type,
                    (const unsigned char *)d->d_buf + desc_off, nh.n_descsz);
        if (rc)
            return rc;
        off = next;
    }
    return 0;
}

int pp_elf_notes_walk(Elf *e, size_t max_region, pp_elf_note_cb cb, void *arg)
{
    if (!max_region)
        max_region = 1 << 20;
    size_t nph = 0;
    if (elf_getphdrnum(e, &nph) == 0) {
        for (size_t i = 0; i < nph && i < MAX_SEGMENTS; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE || ph.p_filesz == 0 ||
                ph.p_filesz > max_region)
                continue;
            int rc = walk_data(elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
                                                    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR),
                               cb, arg);
            if (rc)
                return rc;
        }
    }
    Elf_Scn *scn = NULL;
    for (size_t i = 0; i < MAX_SECTIONS && (scn = elf_nextscn(e, scn)) != NULL; i++) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || sh.sh_size == 0 ||
            sh.sh_size > max_region)
            continue;
        int rc = walk_data(elf_getdata(scn, NULL), cb, arg);
        if (rc)
            return rc;
    }
    return 0;
}

bool pp_elf_note_named(const char *name, size_t namesz, const char *want)
{
    size_t wl = strlen(want);
    if (namesz < wl || namesz > ((wl + 4) & ~(size_t)3) || memcmp(name, want, wl) != 0)
        return false;
    for (size_t i = wl; i < namesz; i++)
        if (name[i] != '\0')
            return false;
    return true;
}
