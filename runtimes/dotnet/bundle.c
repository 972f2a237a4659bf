/* Detection of .NET single-file apps (.NET 5+ `PublishSingleFile`; .NET 6+ links the runtime into
 * the executable, so no libcoreclr.so is mapped for the maps regex to see). The apphost such an
 * executable starts with carries the bundle marker (dotnet/runtime, bundle_marker.cpp): a 40-byte
 * writable array, the bundle header's file offset (int64, little-endian; 0 in an apphost that is
 * not a bundle) followed by a 32-byte signature (the SHA-256 of ".net core bundle\n"), which
 * `dotnet publish` patches with the offset of the bundle header it appends (major version: 1 for
 * .NET Core 3.x, 2 for .NET 5, 6 from .NET 6 on). Only the file ranges of the executable's writable
 * PT_LOAD segments are read (where the array lives), at most BUNDLE_SCAN_MAX bytes, in chunks; the
 * detector caches the answer per executable (base/execache.h). */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "base/execache.h"
#include "runtimes/dotnet/dotnet.h"
#include "runtimes/runtime.h"

#define BUNDLE_SCAN_MAX (16u << 20) /* bytes of writable segments read per executable */
#define BUNDLE_CHUNK (256u << 10)
#define BUNDLE_MAJOR_MAX 64 /* 1, 2 and 6 are known; later majors are let through */

const uint8_t pp_net_bundle_signature[32] = {
    0x8b, 0x12, 0x02, 0xb9, 0x6a, 0x61, 0x20, 0x38, 0x72, 0x7b, 0x93, 0x02, 0x14, 0xd7, 0xa0, 0x32,
    0x13, 0xf5, 0xb9, 0xe6, 0xef, 0xae, 0x33, 0x18, 0xee, 0x3b, 0x2d, 0xce, 0x24, 0xb3, 0x6a, 0xae};

static uint64_t get64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* 1 when the marker's header offset points at a bundle header inside the file. */
static int header_valid(int fd, uint64_t off, off_t size)
{
    uint8_t h[8];
    if (off == 0 || off > (uint64_t)size || (uint64_t)size - off < sizeof(h) ||
        pread(fd, h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
        return 0;
    uint32_t major = (uint32_t)(h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24);
    return major >= 1 && major <= BUNDLE_MAJOR_MAX;
}

/* Searches [start, end) of the file for the marker: 1 a bundle, 0 none (or an apphost that is
 * not a bundle), -1 a read error. *budget: bytes still allowed. */
static int scan_range(int fd, off_t size, uint64_t start, uint64_t end, uint8_t *buf,
                      size_t *budget)
{
    const size_t keep = 8 + sizeof(pp_net_bundle_signature) - 1; /* a marker across chunks */
    size_t have = 0;                                             /* carried over */
    uint64_t pos = start;                                        /* file offset of buf[have] */
    while (pos < end && *budget != 0) {
        size_t want = BUNDLE_CHUNK;
        if (want > end - pos)
            want = (size_t)(end - pos);
        if (want > *budget)
            want = *budget;
        ssize_t r = pread(fd, buf + have, want, (off_t)pos);
        if (r <= 0)
            return r < 0 ? -1 : 0;
        *budget -= (size_t)r;
        size_t n = have + (size_t)r;
        for (const uint8_t *p = buf; (p = memmem(p, n - (size_t)(p - buf), pp_net_bundle_signature,
                                                 sizeof(pp_net_bundle_signature)));
             p++) {
            if (p - buf >= 8 && header_valid(fd, get64(p - 8), size))
                return 1;
        }
        have = n < keep ? n : keep;
        memmove(buf, buf + n - have, have);
        pos += (uint64_t)r;
    }
    return 0;
}

int pp_net_bundle_check_fd(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return -1;
    Elf *e = pp_elf_begin_bounded(fd);
    if (!e)
        return -1;
    size_t nph = 0;
    int r = elf_getphdrnum(e, &nph) == 0 ? 0 : -1; /* an ELF file: pp_elf_begin_bounded's */
    uint8_t *buf = r == 0 ? malloc(BUNDLE_CHUNK + 64) : NULL;
    size_t budget = BUNDLE_SCAN_MAX;
    for (size_t i = 0; buf && r == 0 && i < nph && i < 256; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_W) ||
            ph.p_offset >= (uint64_t)st.st_size)
            continue;
        uint64_t end = ph.p_filesz > (uint64_t)st.st_size - ph.p_offset ? (uint64_t)st.st_size
                                                                        : ph.p_offset + ph.p_filesz;
        r = scan_range(fd, st.st_size, ph.p_offset, end, buf, &budget);
    }
    free(buf);
    elf_end(e);
    return r;
}

static int detect_check(void *state, int pid, bool *match)
{
    return pp_execache_check_pid(state, pid, pp_net_bundle_check_fd, match);
}

const pp_detector pp_net_bundle_detector = {
    .create = pp_execache_new,
    .destroy = pp_execache_delete,
    .check = detect_check,
    .files_parsed = pp_execache_opens,
};
