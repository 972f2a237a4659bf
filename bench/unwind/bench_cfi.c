/* Builds the unwind rows of ELF files and prints rows, bytes and build time per file (the
 * figures in docs/benchmarks.md); -v also prints every row. Usage: bench_cfi [-v] FILE... */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/unwind/cfi.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *kind_name(unsigned k)
{
    static const char *const names[] = {"none",      "rsp",         "rbp", "plt",
                                        "sigreturn", "unsupported", "end"};
    return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

int main(int argc, char **argv)
{
    int verbose = 0, rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            perror(argv[i]);
            rc = 1;
            continue;
        }
        pp_cfi_table t;
        char err[256];
        double t0 = now();
        long n = pp_cfi_build(fd, &t, err, sizeof(err));
        double dt = now() - t0;
        close(fd);
        if (n < 0) {
            printf("%s: error: %s (%.1f ms)\n", argv[i], err, dt * 1e3);
            rc = 1;
            continue;
        }
        size_t kinds[8] = {0};
        for (size_t j = 0; j < t.n; j++)
            kinds[t.rows[j].kind < 8 ? t.rows[j].kind : 7]++;
        printf("%s: %ld rows, %zu bytes, %.1f ms (rsp %zu rbp %zu plt %zu sigreturn %zu "
               "unsupported %zu end %zu none %zu)\n",
               argv[i], n, t.n * sizeof(pp_cfi_row), dt * 1e3, kinds[PP_CFI_RSP], kinds[PP_CFI_RBP],
               kinds[PP_CFI_PLT], kinds[PP_CFI_SIGRETURN], kinds[PP_CFI_UNSUPPORTED],
               kinds[PP_CFI_END], kinds[PP_CFI_NONE]);
        for (size_t j = 0; verbose && j < t.n; j++)
            printf("  %" PRIx64 " %s cfa %d rbp %d\n", t.rows[j].pc, kind_name(t.rows[j].kind),
                   t.rows[j].cfa_off, t.rows[j].rbp_off);
        pp_cfi_free(&t);
    }
    return rc;
}
