/* Integration fixture: writes a large perf map quickly. Usage:
 *   perfmap_writer PATH MEGABYTES CODE_ADDR CODE_LEN
 * Filler lines at distinct addresses far from the code (a JIT's other functions), MEGABYTES of
 * them, then lines covering [CODE_ADDR, CODE_ADDR + CODE_LEN) in 64-byte functions named
 * jit_region_<n>: the code a target runs, named by the very end of the file. The file is
 * created exclusively (O_EXCL) by the user running the writer. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 22];
static size_t len;

static int flush(int fd)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    len = 0;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s PATH MEGABYTES CODE_ADDR CODE_LEN\n", argv[0]);
        return 2;
    }
    unsigned long long total = strtoull(argv[2], NULL, 10) << 20;
    unsigned long long code = strtoull(argv[3], NULL, 16), clen = strtoull(argv[4], NULL, 16);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    unsigned long long written = 0, addr = 0x10000000ull;
    while (written < total) {
        if (len > sizeof(buf) - 256) {
            if (flush(fd) < 0)
                return 1;
        }
        int n = snprintf(buf + len, 256,
                         "%llx 40 LazyCompile:~a_function_with_a_long_name /srv/app/x/y.js:%llu\n",
                         addr, (addr >> 6) & 0xffff);
        len += (size_t)n;
        written += (unsigned long long)n;
        addr += 0x40;
        if (addr >= code && addr < code + clen)
            addr = code + clen;
    }
    for (unsigned long long a = code, k = 0; a < code + clen; a += 0x40, k++) {
        if (len > sizeof(buf) - 256 && flush(fd) < 0)
            return 1;
        len += (size_t)snprintf(buf + len, 256, "%llx 40 jit_region_%llu\n", a, k);
    }
    if (flush(fd) < 0 || close(fd) < 0)
        return 1;
    return 0;
}
