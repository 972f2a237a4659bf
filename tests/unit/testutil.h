/* Shared helpers for the Criterion unit tests. */
#ifndef PP_TESTUTIL_H
#define PP_TESTUTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/log.h"

/* Quiet logging for tests: only CRITICAL reaches stderr. */
static inline void pp_test_quiet_log(void)
{
    pp_log_set_stderr_level(PP_LOG_CRITICAL);
}

/* Creates a private temp directory; the caller removes it with pp_test_rmtree. */
static inline char *pp_test_mkdtemp(void)
{
    char *d = strdup("/tmp/pp_test_XXXXXX");
    cr_assert(mkdtemp(d) != NULL);
    return d;
}

static inline void pp_test_rmtree(char *dir)
{
    char cmd[512];
    if (dir && strncmp(dir, "/tmp/pp_test_", 13) == 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        cr_assert(system(cmd) == 0);
    }
    free(dir);
}

static inline void pp_test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f != NULL, "cannot write %s", path);
    cr_assert(fwrite(data, 1, len, f) == len);
    fclose(f);
}

#endif
