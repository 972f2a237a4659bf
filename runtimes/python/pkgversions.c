#include "runtimes/python/pkgversions.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "base/hashtab.h"
#include "base/inroot.h"
#include "base/procfiles.h"

#define MAX_LIST_FILE (16u << 20) /* RECORD / installed-files.txt */
#define MAX_META_FILE (64u << 10) /* only the first headers of METADATA / PKG-INFO are read */
#define MAX_DISTS 8192            /* *.dist-info / *.egg-info entries per directory */
#define MAX_FILES 500000          /* .py files per directory */

/* One site-packages directory: relative .py path -> index into dists ("name==version"). */
typedef struct dirmap {
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    pp_htab files; /* of file_ent */
    char **dists;
    size_t ndists;
} dirmap;

typedef struct file_ent {
    char *rel;     /* owned */
    uint32_t dist; /* index into dists */
} file_ent;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static dirmap *cache[PP_PKGVER_MAX_DIRS];
static size_t ncache;

static void dirmap_free(dirmap *m)
{
    if (!m)
        return;
    size_t pos = 0;
    for (file_ent *e; (e = pp_htab_each(&m->files, &pos));)
        free(e->rel);
    pp_htab_free(&m->files);
    for (size_t i = 0; i < m->ndists; i++)
        free(m->dists[i]);
    free(m->dists);
    free(m);
}

static const file_ent *map_find(const dirmap *m, const char *rel, uint64_t h)
{
    pp_htab_probe p;
    for (const file_ent *e = pp_htab_first(&m->files, h, &p); e; e = pp_htab_next(&m->files, &p))
        if (strcmp(e->rel, rel) == 0)
            return e;
    return NULL;
}

/* Adds rel -> dist unless present (the first distribution listing a file keeps it). */
static void map_put(dirmap *m, const char *rel, uint32_t dist)
{
    uint64_t h = pp_hash_bytes(rel, strlen(rel), 0);
    if (pp_htab_count(&m->files) >= MAX_FILES || map_find(m, rel, h))
        return;
    char *k = strdup(rel);
    file_ent *e = k ? pp_htab_add(&m->files, h) : NULL;
    if (!e) {
        free(k);
        return;
    }
    *e = (file_ent){k, dist};
}

static const char *map_get(const dirmap *m, const char *rel)
{
    const file_ent *e = map_find(m, rel, pp_hash_bytes(rel, strlen(rel), 0));
    return e ? m->dists[e->dist] : NULL;
}

/* Normalizes a relative path in place ("a/./b/../c" -> "a/c"). Returns false when it leaves
 * the directory (leading ".."), is absolute or empty. */
static bool normalize_rel(char *p)
{
    if (p[0] == '/' || !p[0])
        return false;
    char *out = p, *s = p, *end = p + strlen(p);
    while (s < end) {
        char *e = memchr(s, '/', (size_t)(end - s));
        size_t n = e ? (size_t)(e - s) : (size_t)(end - s);
        if (n == 0 || (n == 1 && s[0] == '.')) {
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (out == p)
                return false;
            out--;
            while (out > p && out[-1] != '/')
                out--;
        } else {
            memmove(out, s, n);
            out += n;
            *out++ = '/';
        }
        s += n + 1;
    }
    if (out == p)
        return false;
    out[-1] = '\0';
    return true;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The regular file path (not a symlink itself) inside rootfd, at most max bytes. */
static char *read_in_root(int rootfd, const char *path, size_t max, size_t *len)
{
    int fd = pp_openat_in_root(rootfd, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    char *buf = pp_read_fd(fd, max, PP_READ_TRUNCATE, len);
    close(fd);
    return buf;
}

/* "Name" and "Version" headers of METADATA / PKG-INFO text (modified). */
static bool parse_name_version(char *buf, char *name, size_t nlen, char *ver, size_t vlen)
{
    name[0] = ver[0] = '\0';
    for (char *line = buf; line && *line && *line != '\n';) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r')
            line[l - 1] = '\0';
        if (!name[0] && strncmp(line, "Name: ", 6) == 0)
            snprintf(name, nlen, "%s", line + 6);
        else if (!ver[0] && strncmp(line, "Version: ", 9) == 0)
            snprintf(ver, vlen, "%s", line + 9);
        line = nl ? nl + 1 : NULL; /* headers end at the first empty line */
    }
    return name[0] && ver[0];
}

/* The same, of a METADATA / PKG-INFO file. */
static bool read_name_version(int rootfd, const char *path, char *name, size_t nlen, char *ver,
                              size_t vlen)
{
    size_t len;
    char *buf = read_in_root(rootfd, path, MAX_META_FILE, &len);
    if (!buf)
        return false;
    bool ok = parse_name_version(buf, name, nlen, ver, vlen);
    free(buf);
    return ok;
}

/* Fallback: "name-version.dist-info" / "name-version-py3.11.egg-info". */
static bool name_version_from_dirname(const char *d, size_t stem, char *name, size_t nlen,
                                      char *ver, size_t vlen)
{
    const char *dash = memchr(d, '-', stem);
    if (!dash || dash == d)
        return false;
    const char *vend = memchr(dash + 1, '-', stem - (size_t)(dash + 1 - d));
    size_t vl = (vend ? (size_t)(vend - dash - 1) : stem - (size_t)(dash + 1 - d));
    if (!vl)
        return false;
    snprintf(name, nlen, "%.*s", (int)(dash - d), d);
    snprintf(ver, vlen, "%.*s", (int)vl, dash + 1);
    return true;
}

/* Adds the .py files of one list (RECORD: CSV relative to the directory; installed-files.txt:
 * one path per line relative to the .egg-info directory). */
static void add_list(dirmap *m, char *buf, const char *prefix, bool csv, uint32_t dist)
{
    char rel[PATH_MAX];
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *p = line, *end;
        if (csv && *p == '"') { /* quoted path (holds a comma); "" escapes are not expected */
            p++;
            end = strchr(p, '"');
        } else {
            end = csv ? strchr(p, ',') : NULL;
        }
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
            n--;
        int w = snprintf(rel, sizeof(rel), "%s%.*s", prefix, (int)n, p);
        if (w > 0 && (size_t)w < sizeof(rel) && ends_with(rel, ".py") && normalize_rel(rel))
            map_put(m, rel, dist);
        line = nl ? nl + 1 : NULL;
    }
}

static int add_dist(dirmap *m, const char *name, const char *ver)
{
    if (m->ndists >= MAX_DISTS)
        return -1;
    char **d = realloc(m->dists, (m->ndists + 1) * sizeof(*d));
    if (!d)
        return -1;
    m->dists = d;
    size_t len = strlen(name) + strlen(ver) + 3;
    char *s = malloc(len);
    if (!s)
        return -1;
    snprintf(s, len, "%s==%s", name, ver);
    m->dists[m->ndists] = s;
    return (int)m->ndists++;
}

/* The map of the directory path inside rootfd, open as dfd (closed here). */
static dirmap *build_map(int rootfd, const char *path, int dfd, const struct stat *st)
{
    dirmap *m = calloc(1, sizeof(*m));
    DIR *dir = m ? fdopendir(dfd) : NULL;
    if (!dir)
        close(dfd);
    if (!m)
        return NULL;
    PP_HTAB_INIT(&m->files, file_ent, 50);
    m->dev = st->st_dev;
    m->ino = st->st_ino;
    m->mtime = st->st_mtim;
    if (!dir)
        return m; /* an empty map: looked up again only when the mtime changes */
    struct dirent *de;
    char sub[PATH_MAX], name[256], ver[128], prefix[NAME_MAX + 8];
    while ((de = readdir(dir)) != NULL) {
        const char *d = de->d_name;
        bool dist = ends_with(d, ".dist-info"), egg = ends_with(d, ".egg-info");
        if (!dist && !egg)
            continue;
        size_t stem = strlen(d) - (dist ? 10 : 9);
        snprintf(sub, sizeof(sub), "%s/%s/%s", path, d, dist ? "METADATA" : "PKG-INFO");
        if (!read_name_version(rootfd, sub, name, sizeof(name), ver, sizeof(ver)) &&
            !name_version_from_dirname(d, stem, name, sizeof(name), ver, sizeof(ver)))
            continue;
        snprintf(sub, sizeof(sub), "%s/%s/%s", path, d, dist ? "RECORD" : "installed-files.txt");
        size_t len;
        char *buf = read_in_root(rootfd, sub, MAX_LIST_FILE, &len);
        if (!buf)
            continue;
        int idx = add_dist(m, name, ver);
        if (idx >= 0) {
            snprintf(prefix, sizeof(prefix), "%s/", d);
            add_list(m, buf, dist ? "" : prefix, dist, (uint32_t)idx);
        }
        free(buf);
    }
    closedir(dir);
    return m;
}

/* ---- archives: zipapps (.pyz), PEX, eggs ---- */

#define MAX_ZIP_ENTRIES 200000

/* The data of the current entry, at most max bytes, NUL-terminated. */
static char *entry_data(struct archive *a, size_t max)
{
    char *buf = malloc(max + 1);
    size_t n = 0;
    while (buf && n < max) {
        la_ssize_t r = archive_read_data(a, buf + n, max - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* The map of a zip archive open as fd (closed here): the .py members listed in the RECORD of
 * every *.dist-info inside it (a zipapp's or a PEX's vendored wheels, relative to the directory
 * holding the .dist-info), and every .py member of an egg (EGG-INFO/PKG-INFO). */
static dirmap *build_zip_map(int rootfd, const char *path, int fd, const struct stat *st)
{
    (void)rootfd, (void)path;
    dirmap *m = calloc(1, sizeof(*m));
    struct archive *a = m ? archive_read_new() : NULL;
    if (!a) {
        free(m);
        close(fd);
        return NULL;
    }
    PP_HTAB_INIT(&m->files, file_ent, 50);
    m->dev = st->st_dev;
    m->ino = st->st_ino;
    m->mtime = st->st_mtim;
    archive_read_support_format_zip_seekable(a);
    char **eggpy = NULL;
    size_t neggpy = 0;
    int egg = -1;
    if (archive_read_open_fd(a, fd, 64 << 10) == ARCHIVE_OK) {
        struct archive_entry *e;
        char name[256], ver[128], prefix[PATH_MAX];
        for (int i = 0; i < MAX_ZIP_ENTRIES && archive_read_next_header(a, &e) == ARCHIVE_OK; i++) {
            const char *n = archive_entry_pathname(e);
            if (!n)
                continue;
            if (ends_with(n, ".dist-info/RECORD")) {
                size_t dl = strlen(n) - 7; /* ".../x.dist-info" */
                const char *base = n;
                for (const char *q = n; q < n + dl; q++)
                    if (*q == '/')
                        base = q + 1;
                size_t stem = (size_t)(n + dl - base) - 10;
                if (!name_version_from_dirname(base, stem, name, sizeof(name), ver, sizeof(ver)) ||
                    (size_t)(base - n) >= sizeof(prefix))
                    continue;
                snprintf(prefix, sizeof(prefix), "%.*s", (int)(base - n), n);
                char *buf = entry_data(a, MAX_LIST_FILE);
                int idx = buf ? add_dist(m, name, ver) : -1;
                if (idx >= 0)
                    add_list(m, buf, prefix, true, (uint32_t)idx);
                free(buf);
            } else if (strcmp(n, "EGG-INFO/PKG-INFO") == 0 && egg < 0) {
                char *buf = entry_data(a, MAX_META_FILE);
                if (buf && parse_name_version(buf, name, sizeof(name), ver, sizeof(ver)))
                    egg = add_dist(m, name, ver);
                free(buf);
            } else if (ends_with(n, ".py") && neggpy < MAX_FILES) {
                char **g = realloc(eggpy, (neggpy + 1) * sizeof(*g));
                if (g && (g[neggpy] = strdup(n)))
                    neggpy++;
                if (g)
                    eggpy = g;
            }
        }
    }
    for (size_t i = 0; i < neggpy; i++) {
        if (egg >= 0 && normalize_rel(eggpy[i]))
            map_put(m, eggpy[i], (uint32_t)egg);
        free(eggpy[i]);
    }
    free(eggpy);
    archive_read_free(a);
    close(fd);
    return m;
}

/* The map of path inside rootfd, open as fd (closed here), from the cache or built. Called with
 * cache_lock held. */
static dirmap *cached_map(int rootfd, const char *path, int fd,
                          dirmap *(*build)(int, const char *, int, const struct stat *))
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return NULL;
    }
    for (size_t i = 0; i < ncache; i++) {
        dirmap *m = cache[i];
        if (m->dev != st.st_dev || m->ino != st.st_ino)
            continue;
        if (m->mtime.tv_sec == st.st_mtim.tv_sec && m->mtime.tv_nsec == st.st_mtim.tv_nsec) {
            close(fd);
            return m;
        }
        dirmap_free(m); /* changed: rebuild in place */
        cache[i] = build(rootfd, path, fd, &st);
        if (!cache[i])
            cache[i] = cache[--ncache];
        return i < ncache ? cache[i] : NULL;
    }
    if (ncache == PP_PKGVER_MAX_DIRS) {
        for (size_t i = 0; i < ncache; i++)
            dirmap_free(cache[i]);
        ncache = 0;
    }
    dirmap *m = build(rootfd, path, fd, &st);
    if (m)
        cache[ncache++] = m;
    return m;
}

/* The map of the directory dir inside rootfd. Called with cache_lock held. */
static dirmap *get_map(int rootfd, const char *dir)
{
    int dfd = pp_openat_in_root(rootfd, dir, O_RDONLY | O_DIRECTORY);
    return dfd < 0 ? NULL : cached_map(rootfd, dir, dfd, build_map);
}

/* The distribution of a file inside an archive: file does not exist as such, but a prefix of
 * it is a regular file (the archive: zipimport names its modules "<archive>/<member>"). Called
 * with cache_lock held. */
static const char *archive_dist(int rootfd, const char *file)
{
    int fd = pp_openat_in_root(rootfd, file, O_PATH);
    if (fd >= 0) { /* the file itself exists: not in an archive */
        close(fd);
        return NULL;
    }
    char prefix[PATH_MAX];
    size_t fl = strlen(file);
    if (fl >= sizeof(prefix))
        return NULL;
    for (size_t i = 1, depth = 0; i < fl && depth < 64; i++) {
        if (file[i] != '/')
            continue;
        depth++;
        memcpy(prefix, file, i);
        prefix[i] = '\0';
        struct stat st;
        int pfd = pp_openat_in_root(rootfd, prefix, O_RDONLY | O_NONBLOCK);
        if (pfd < 0)
            return NULL; /* a missing component: nothing below it exists either */
        if (fstat(pfd, &st) < 0 || S_ISDIR(st.st_mode)) {
            close(pfd);
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            close(pfd);
            return NULL;
        }
        dirmap *m = cached_map(rootfd, prefix, pfd, build_zip_map);
        return m ? map_get(m, file + i + 1) : NULL;
    }
    return NULL;
}

void pp_pkgver_clear_cache(void)
{
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < ncache; i++)
        dirmap_free(cache[i]);
    ncache = 0;
    pthread_mutex_unlock(&cache_lock);
}

/* The next "/site-packages/" or "/dist-packages/" at or after s. */
static const char *find_site(const char *s, size_t *complen)
{
    const char *a = strstr(s, "/site-packages/"), *b = strstr(s, "/dist-packages/");
    const char *r = a && (!b || a < b) ? a : b;
    *complen = 15;
    return r;
}

/* True when file has a "/pythonX.Y/" component. */
static bool in_python_lib(const char *file)
{
    for (const char *p = strstr(file, "/python"); p; p = strstr(p + 1, "/python")) {
        const char *q = p + 7;
        if (!isdigit((unsigned char)*q))
            continue;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q++ != '.' || !isdigit((unsigned char)*q))
            continue;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q == '/')
            return true;
    }
    return false;
}

int pp_pkgver_annotation(const char *root, const char *file, const char *pyver, char *out,
                         size_t len)
{
    if (len)
        out[0] = '\0';
    if (!file || file[0] != '/' || !ends_with(file, ".py") || !len)
        return 0;
    if (!root || !root[0])
        root = "/";
    size_t clen;
    const char *site = find_site(file, &clen);
    if (!site && pyver && pyver[0] && in_python_lib(file)) {
        snprintf(out, len, "[standard-library==%s]", pyver);
        return 1;
    }
    char dir[PATH_MAX];
    int found = 0, rootfd = -1;
    pthread_mutex_lock(&cache_lock);
    /* Innermost site directory first (a vendored tree inside a package). */
    const char *sites[8];
    size_t ns = 0;
    for (const char *s = site; s && ns < 8; s = find_site(s + 1, &clen))
        sites[ns++] = s;
    while (site && ns-- > 0 && !found) {
        size_t dl = (size_t)(sites[ns] - file) + clen - 1; /* up to "...-packages" */
        if (dl >= sizeof(dir))
            continue;
        memcpy(dir, file, dl);
        dir[dl] = '\0';
        /* Everything is read inside the process's root: a container's symlinks (a site
         * directory, a *.dist-info directory) cannot lead to the host's files. */
        if (rootfd < 0 && (rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
            break;
        dirmap *m = get_map(rootfd, dir);
        const char *d = m ? map_get(m, file + dl + 1) : NULL;
        if (d) {
            snprintf(out, len, "[%s]", d);
            found = 1;
        }
    }
    if (!found && (rootfd >= 0 || (rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0)) {
        const char *d = archive_dist(rootfd, file); /* a zipapp, a PEX, an egg */
        if (d) {
            snprintf(out, len, "[%s]", d);
            found = 1;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    if (rootfd >= 0)
        close(rootfd);
    return found;
}

int pp_py_frame_text(char *out, size_t len, const char *name, const char *file, int line,
                     const char *ann)
{
    int n;
    bool a = ann && ann[0];
    if (!file || !file[0])
        n = snprintf(out, len, "%s_[p]", name);
    else if (line <= 0)
        n = snprintf(out, len, "%s (%s)_[p]", name, file);
    else
        n = snprintf(out, len, "%s (%s:%d%s%s)_[p]", name, file, line, a ? " " : "", a ? ann : "");
    return n < 0 ? 0 : (size_t)n >= len ? (int)len - 1 : n;
}

void pp_pkgver_rewrite_frame(const char *root, const char *frame, const char *pyver, char *out,
                             size_t len)
{
    snprintf(out, len, "%s", frame);
    size_t fl = strlen(frame);
    if (fl < 8 || strcmp(frame + fl - 5, ")_[p]") != 0)
        return;
    const char *open = strrchr(frame, '(');
    const char *colon = strrchr(frame, ':');
    if (!open || !colon || colon < open || open == frame || open[-1] != ' ')
        return;
    for (const char *d = colon + 1; d < frame + fl - 5; d++)
        if (!isdigit((unsigned char)*d))
            return;
    char file[PATH_MAX], ann[512];
    size_t flen = (size_t)(colon - open - 1);
    if (flen == 0 || flen >= sizeof(file))
        return;
    memcpy(file, open + 1, flen);
    file[flen] = '\0';
    if (!pp_pkgver_annotation(root, file, pyver, ann, sizeof(ann)))
        return;
    snprintf(out, len, "%.*s %s)_[p]", (int)(fl - 5), frame, ann);
}
