/* jitdump files (Linux perf's JIT interface, tools/perf/Documentation/jitdump-specification.txt):
 * what a JIT writes instead of a perf map when asked for `perf inject --jit` (V8's --perf-prof,
 * `jit-<pid>.dump`, found through the process's mappings: the JIT maps the file executable so
 * that perf sees it). Code-load and code-move records become entries of the same bounded
 * in-memory map as a perf map's lines (perfmap.c); the code bytes they carry are never read. */
#include "runtimes/symbols/symbols_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JD_MAGIC 0x4A695444u /* "JiTD" as written by a little-endian JIT */
#define JD_HEADER_MIN 40u
#define REC_HEADER 16u   /* id, total_size, timestamp */
#define LOAD_FIXED 40u   /* pid, tid, vma, code_addr, code_size, code_index */
#define MOVE_FIXED 48u   /* pid, tid, vma, old_code_addr, new_code_addr, code_size, code_index */
#define CHUNK (1u << 20) /* bytes read at a time */
#define MAX_NAME 4096u

enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1, JIT_CODE_CLOSE = 3 };

static uint32_t u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

long pp_jitdump_header(const void *data, size_t len)
{
    const unsigned char *d = data;
    if (len < JD_HEADER_MIN || u32(d) != JD_MAGIC)
        return -1;
    uint32_t size = u32(d + 8);
    if (size < JD_HEADER_MIN || size > 4096)
        return -1;
    return size;
}

/* Appends "addr size name\n" to the text buffer t (grown as needed). */
static int add_line(char **t, size_t *tl, size_t *tc, uint64_t addr, uint64_t size,
                    const char *name, size_t nl)
{
    if (*tl + nl + 48 > *tc) {
        size_t nc = (*tc ? *tc * 2 : 65536) + nl + 48;
        char *n = realloc(*t, nc);
        if (!n)
            return -1;
        *t = n;
        *tc = nc;
    }
    *tl += (size_t)snprintf(*t + *tl, *tc - *tl, "%llx %llx %.*s\n", (unsigned long long)addr,
                            (unsigned long long)size, (int)nl, name);
    return 0;
}

long pp_jitdump_records(pp_perfmap *m, const void *data, size_t len, uint64_t limit, uint64_t *used,
                        int *closed)
{
    const unsigned char *d = data;
    size_t off = 0;
    char *text = NULL;
    size_t tl = 0, tc = 0;
    long added = 0;
    *closed = 0;
    while (off + REC_HEADER <= len) {
        uint32_t id = u32(d + off), total = u32(d + off + 4);
        if (total < REC_HEADER) { /* corrupt: read no further */
            *closed = 1;
            break;
        }
        if (off + (uint64_t)total > limit)
            break; /* not all written yet */
        const unsigned char *r = d + off + REC_HEADER;
        size_t avail = len - off - REC_HEADER; /* of the record, in data */
        if (id == JIT_CODE_CLOSE) {
            *closed = 1;
            off += total;
            break;
        }
        if (id == JIT_CODE_LOAD && total > REC_HEADER + LOAD_FIXED) {
            /* the name follows the fixed part, the code the name (never read) */
            size_t room = total - REC_HEADER - LOAD_FIXED;
            if (room > MAX_NAME)
                room = MAX_NAME;
            if (avail < LOAD_FIXED + room)
                break; /* in the next chunk */
            const char *name = (const char *)r + LOAD_FIXED;
            size_t nl = strnlen(name, room);
            const char *nlc = memchr(name, '\n', nl);
            if (nlc)
                nl = (size_t)(nlc - name);
            if (nl > PP_SYM_MAX_NAME)
                nl = PP_SYM_MAX_NAME;
            if (add_line(&text, &tl, &tc, u64(r + 16), u64(r + 24), name, nl) < 0)
                break;
            added++;
        } else if (id == JIT_CODE_MOVE && total >= REC_HEADER + MOVE_FIXED) {
            if (avail < MOVE_FIXED)
                break;
            if (tl) { /* the old address may be among the lines not merged yet */
                pp_perfmap_parse(m, text, tl);
                tl = 0;
            }
            const char *old = pp_perfmap_find(m, u64(r + 16));
            if (old) {
                char copy[PP_SYM_MAX_NAME + 1];
                snprintf(copy, sizeof(copy), "%s", old);
                if (add_line(&text, &tl, &tc, u64(r + 24), u64(r + 32), copy, strlen(copy)) < 0)
                    break;
                added++;
            }
        }
        /* other records (debug and unwinding info) are skipped whole */
        off += total;
    }
    if (tl)
        pp_perfmap_parse(m, text, tl);
    free(text);
    *used = off;
    return added;
}

long pp_jitdump_update_some(pp_perfmap *m, int fd, uint64_t max_bytes)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        pp_perfmap_free(m);
        return -1;
    }
    bool same = m->dev == (uint64_t)st.st_dev && m->ino == (uint64_t)st.st_ino &&
                (uint64_t)st.st_size >= m->parsed;
    if (same && m->complete && m->size == (uint64_t)st.st_size)
        return 0;
    if (!same) {
        pp_perfmap_free(m);
        m->dev = (uint64_t)st.st_dev;
        m->ino = (uint64_t)st.st_ino;
    }
    m->size = (uint64_t)st.st_size;
    m->complete = 0;
    m->clock = (m->clock + 1) & 0x7fffffffu;
    unsigned char *buf = malloc(CHUNK);
    if (!buf)
        return -1;
    long added = 0;
    if (m->parsed == 0) {
        ssize_t r = pread(fd, buf, 4096, 0);
        long h = r > 0 ? pp_jitdump_header(buf, (size_t)r) : -1;
        if (h < 0) {
            free(buf);
            return r >= 0 && (size_t)r < JD_HEADER_MIN ? 0 : -1; /* not written yet, or not one */
        }
        m->parsed = (uint64_t)h;
    }
    uint64_t start = m->parsed;
    for (;;) {
        if (m->parsed > start && m->parsed - start + CHUNK > max_bytes)
            break; /* no room for another chunk: the next call goes on from here */
        ssize_t r = pread(fd, buf, CHUNK, (off_t)m->parsed);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            m->complete = 1;
            break;
        }
        uint64_t used = 0;
        int closed = 0;
        added +=
            pp_jitdump_records(m, buf, (size_t)r, (uint64_t)st.st_size - m->parsed, &used, &closed);
        m->parsed += used;
        if (closed) {
            m->parsed = (uint64_t)st.st_size; /* nothing more will come: read no more */
            m->complete = 1;
            break;
        }
        if (used == 0) {
            m->complete = 1; /* a partial record: read again when the file grows */
            break;
        }
    }
    free(buf);
    return added;
}

long pp_jitdump_update(pp_perfmap *m, int fd)
{
    return pp_jitdump_update_some(m, fd, UINT64_MAX);
}
