/* async-profiler's library read out of the jar Maven Central publishes
 * (tools.profiler:async-profiler: <platform>/libasyncProfiler.so for linux-x64 and linux-arm64,
 * and the Maven pom.properties with its version), with libarchive, and written into a target's
 * directory. polyprof never loads the library itself. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/java/asprof.h"
#include "runtimes/java/asprof_int.h"

#if defined(__x86_64__)
#define PLATFORM "linux-x64"
#elif defined(__aarch64__)
#define PLATFORM "linux-arm64"
#else
#define PLATFORM "unsupported-platform"
#endif

#define POM_ENTRY "META-INF/maven/tools.profiler/async-profiler/pom.properties"
#define MAX_POM 4096

/* Reads the current entry's data (at most max bytes) into a malloc'd buffer. */
static unsigned char *read_entry(struct archive *a, int64_t size, size_t max, size_t *got)
{
    if (size < 0 || (uint64_t)size > max)
        return NULL;
    unsigned char *buf = malloc((size_t)size + 1);
    size_t at = 0;
    while (buf && at < (size_t)size) {
        la_ssize_t n = archive_read_data(a, buf + at, (size_t)size - at);
        if (n <= 0)
            break;
        at += (size_t)n;
    }
    if (!buf || at != (size_t)size) {
        free(buf);
        return NULL;
    }
    buf[at] = '\0';
    *got = at;
    return buf;
}

/* "version=4.6" of pom.properties, reduced to [A-Za-z0-9._-]. */
static void pom_version(const char *text, char *ver, size_t len)
{
    const char *v = strstr(text, "\nversion=");
    v = v ? v + 9 : (strncmp(text, "version=", 8) == 0 ? text + 8 : NULL);
    size_t o = 0;
    for (; v && *v && *v != '\n' && *v != '\r' && o + 1 < len; v++)
        if ((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') || (*v >= '0' && *v <= '9') ||
            *v == '.' || *v == '-' || *v == '_')
            ver[o++] = *v;
    ver[o] = '\0';
}

pp_asprof_lib *pp_asprof_lib_load(const char *jar, char *err, size_t errlen)
{
    pp_asprof_lib *lib = calloc(1, sizeof(*lib));
    struct archive *a = archive_read_new();
    if (!lib || !a) {
        snprintf(err, errlen, "out of memory");
        free(lib);
        if (a)
            archive_read_free(a);
        return NULL;
    }
    archive_read_support_format_zip(a);
    const char *why = NULL;
    if (archive_read_open_filename(a, jar, 65536) != ARCHIVE_OK) {
        why = archive_error_string(a) ? archive_error_string(a) : "not a jar";
    } else {
        struct archive_entry *e;
        int r;
        while (!why && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
            const char *name = archive_entry_pathname(e);
            size_t got = 0;
            if (name && strcmp(name, PLATFORM "/libasyncProfiler.so") == 0) {
                lib->data = read_entry(a, archive_entry_size(e), PP_ASPROF_MAX_LIB, &lib->size);
                if (!lib->data)
                    why = "its library entry is unreadable or larger than 64 MiB";
            } else if (name && strcmp(name, POM_ENTRY) == 0) {
                char *pom = (char *)read_entry(a, archive_entry_size(e), MAX_POM, &got);
                if (pom)
                    pom_version(pom, lib->version, sizeof(lib->version));
                free(pom);
            }
        }
        if (!why && r != ARCHIVE_EOF)
            why = archive_error_string(a) ? archive_error_string(a) : "not a jar";
    }
    if (!why && !lib->data)
        why = "it has no " PLATFORM "/libasyncProfiler.so";
    if (why) {
        snprintf(err, errlen, "cannot read async-profiler from %s: %s", jar, why);
        archive_read_free(a);
        pp_asprof_lib_free(lib);
        return NULL;
    }
    archive_read_free(a);
    if (!lib->version[0])
        snprintf(lib->version, sizeof(lib->version), "size-%zu", lib->size);
    return lib;
}

void pp_asprof_lib_free(pp_asprof_lib *lib)
{
    if (!lib)
        return;
    free(lib->data);
    free(lib);
}

int pp_asprof_lib_write(const pp_asprof_lib *lib, int dirfd, const char *name, char *err,
                        size_t errlen)
{
    struct stat ds = {0}; /* zeroed: valgrind does not see fstatat fill it */
    if (fstatat(dirfd, name, &ds, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ds.st_mode) &&
        (size_t)ds.st_size == lib->size && ds.st_uid == 0)
        return 0;
    char tmp[128];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(tmp, sizeof(tmp), ".%s.%d.%lx", name, (int)getpid(), (unsigned long)ts.tv_nsec);
    int out = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
    if (out < 0) {
        snprintf(err, errlen, "cannot create the async-profiler library in the target: %s",
                 strerror(errno));
        return -1;
    }
    size_t at = 0;
    while (at < lib->size) {
        ssize_t n = write(out, lib->data + at, lib->size - at);
        if (n <= 0)
            break;
        at += (size_t)n;
    }
    int e = at == lib->size ? 0 : (errno ? errno : EIO);
    if (!e && fchmod(out, 0755) < 0)
        e = errno;
    if (close(out) < 0 && !e)
        e = errno;
    if (!e && renameat(dirfd, tmp, dirfd, name) < 0)
        e = errno;
    if (e) {
        snprintf(err, errlen, "cannot write the async-profiler library in the target: %s",
                 strerror(e));
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    return 0;
}
