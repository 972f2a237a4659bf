#include "orchestrator/extmeta.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SIZE (16 << 20)

/* The whole regular file at path (malloc'd, *len set), or NULL with err set. */
static char *read_file(const char *path, time_t now, size_t *len, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO planted there does not hang the start; it is refused below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    const char *why = !S_ISREG(st.st_mode)                     ? "not a regular file"
                      : st.st_size > MAX_SIZE                  ? "larger than 16 MiB"
                      : now - st.st_mtime > PP_EXTMETA_MAX_AGE ? "stale"
                                                               : NULL;
    if (why) {
        if (strcmp(why, "stale") == 0)
            snprintf(err, errlen,
                     "%s is stale: last modified %lld s ago, more than %d s (it must be kept "
                     "up to date, as for gProfiler)",
                     path, (long long)(now - st.st_mtime), PP_EXTMETA_MAX_AGE);
        else
            snprintf(err, errlen, "%s is %s", path, why);
        close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = 0;
    while (buf && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) {
        snprintf(err, errlen, "cannot read %s: out of memory", path);
        return NULL;
    }
    *len = n;
    return buf;
}

json_t *pp_extmeta_load(const char *path, time_t now, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = read_file(path, now, &len, err, errlen);
    if (!text)
        return NULL;
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    free(text);
    if (!doc) {
        snprintf(err, errlen, "%s is not valid JSON: %s (line %d)", path, je.text, je.line);
        return NULL;
    }
    json_t *st = json_object_get(doc, "static"), *app = json_object_get(doc, "application");
    if (!json_is_object(doc) || (st && !json_is_object(st)) || (app && !json_is_object(app))) {
        snprintf(err, errlen,
                 "%s: expected {\"static\": {...}, \"application\": {\"<pid>\": {...}}}", path);
        json_decref(doc);
        return NULL;
    }
    json_t *out = json_object();
    json_object_set_new(out, "static", st ? json_incref(st) : json_object());
    json_object_set_new(out, "application", app ? json_incref(app) : json_object());
    json_decref(doc);
    return out;
}

void pp_extmeta_apply(const json_t *ext, pp_profile *prof)
{
    const json_t *apps = json_object_get(ext, "application");
    if (!json_object_size(apps))
        return;
    for (size_t i = 0; i < pp_profile_npids(prof); i++) {
        pp_pid_profile *pp = pp_profile_at(prof, i);
        char key[16];
        snprintf(key, sizeof(key), "%d", pp->pid);
        json_t *add = json_object_get(apps, key);
        if (!json_is_object(add))
            continue;
        json_t *md = json_is_object(pp->app_metadata) ? json_copy(pp->app_metadata) : json_object();
        if (!md || json_object_update(md, add) < 0) {
            json_decref(md);
            continue;
        }
        json_decref(pp->app_metadata);
        pp->app_metadata = md;
    }
}
