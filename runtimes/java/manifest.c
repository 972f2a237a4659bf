/* JAR manifests (manifest.h). */
#include "runtimes/java/manifest.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ENTRIES 200000 /* entries visited looking for the manifest */

static void put(char *dst, size_t cap, const char *v, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* One attribute "name: value" (value already joined from its continuation lines). */
static int attribute(pp_jar_manifest *m, const char *name, size_t nlen, const char *v, size_t vlen)
{
    static const struct {
        const char *name;
        size_t off, cap;
    } keys[] = {
        {"Main-Class", offsetof(pp_jar_manifest, main_class), sizeof(m->main_class)},
        {"Start-Class", offsetof(pp_jar_manifest, start_class), sizeof(m->start_class)},
        {"Implementation-Title", offsetof(pp_jar_manifest, implementation_title),
         sizeof(m->implementation_title)},
        {"Implementation-Version", offsetof(pp_jar_manifest, implementation_version),
         sizeof(m->implementation_version)},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strlen(keys[i].name) == nlen && strncasecmp(keys[i].name, name, nlen) == 0) {
            put((char *)m + keys[i].off, keys[i].cap, v, vlen);
            return 1;
        }
    return 0;
}

int pp_jar_manifest_parse(const char *text, size_t len, pp_jar_manifest *m)
{
    memset(m, 0, sizeof(*m));
    if (len > PP_MANIFEST_MAX)
        len = PP_MANIFEST_MAX;
    char *value = malloc(PP_MANIFEST_MAX + 1);
    if (!value)
        return 0;
    int kept = 0;
    const char *p = text, *end = text + len, *name = NULL;
    size_t nlen = 0, vlen = 0;
    while (p < end) {
        const char *le = p;
        while (le < end && *le != '\n' && *le != '\r')
            le++;
        size_t l = (size_t)(le - p);
        if (l == 0)
            break;                 /* the end of the main section */
        if (p[0] == ' ' && name) { /* continuation: appended without its leading space */
            size_t add = l - 1;
            if (vlen + add > PP_MANIFEST_MAX)
                add = PP_MANIFEST_MAX - vlen;
            memcpy(value + vlen, p + 1, add);
            vlen += add;
        } else {
            if (name)
                kept += attribute(m, name, nlen, value, vlen);
            const char *colon = memchr(p, ':', l);
            name = NULL;
            if (colon && colon > p) {
                name = p;
                nlen = (size_t)(colon - p);
                const char *v = colon + 1;
                if (v < le && *v == ' ')
                    v++;
                vlen = (size_t)(le - v);
                memcpy(value, v, vlen);
            }
        }
        p = le;
        if (p < end && *p == '\r')
            p++;
        if (p < end && *p == '\n')
            p++;
    }
    if (name)
        kept += attribute(m, name, nlen, value, vlen);
    free(value);
    return kept;
}

int pp_jar_manifest_read_fd(int fd, pp_jar_manifest *m)
{
    memset(m, 0, sizeof(*m));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || lseek(fd, 0, SEEK_SET) != 0)
        return -1;
    struct archive *a = archive_read_new();
    if (!a)
        return -1;
    archive_read_support_format_zip_seekable(a); /* reads the central directory */
    int rc = -1;
    if (archive_read_open_fd(a, fd, 64 << 10) == ARCHIVE_OK) {
        struct archive_entry *e;
        for (int i = 0; i < MAX_ENTRIES && archive_read_next_header(a, &e) == ARCHIVE_OK; i++) {
            const char *name = archive_entry_pathname(e);
            if (!name || strcasecmp(name, "META-INF/MANIFEST.MF") != 0)
                continue;
            char *buf = malloc(PP_MANIFEST_MAX);
            size_t n = 0;
            while (buf && n < PP_MANIFEST_MAX) {
                la_ssize_t r = archive_read_data(a, buf + n, PP_MANIFEST_MAX - n);
                if (r <= 0)
                    break;
                n += (size_t)r;
            }
            if (buf && n > 0) {
                pp_jar_manifest_parse(buf, n, m);
                rc = 0;
            }
            free(buf);
            break;
        }
    }
    archive_read_free(a);
    return rc;
}

bool pp_jar_is_boot_launcher(const char *cls)
{
    static const char *const launchers[] = {"JarLauncher", "WarLauncher", "PropertiesLauncher"};
    static const char *const pkgs[] = {"org.springframework.boot.loader.",
                                       "org.springframework.boot.loader.launch."};
    for (size_t p = 0; p < 2; p++) {
        size_t pl = strlen(pkgs[p]);
        if (strncmp(cls, pkgs[p], pl) != 0)
            continue;
        for (size_t i = 0; i < 3; i++)
            if (strcmp(cls + pl, launchers[i]) == 0)
                return true;
    }
    return false;
}
