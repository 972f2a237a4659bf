/* Container names: cgroup -> container id -> name (see containers.h). */
#include "orchestrator/containers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/curl_api.h"
#include "base/hashtab.h"
#include "base/log.h"
#include "base/procfiles.h"

#define ID_LEN 64
#define MAX_CGROUP_BYTES (64 * 1024)
#define MAX_DOCKER_JSON (16 * 1024 * 1024) /* API answer */
#define MAX_CONFIG_JSON (4 * 1024 * 1024)  /* one config.v2.json */
#define MAX_PODMAN_JSON (32 * 1024 * 1024) /* containers.json */
#define MAX_LOG_LINKS 100000
#define MAX_NAME 512
#define MAX_IDS 8192

static const char unknown[] = "";

typedef struct {
    char id[ID_LEN + 1];
    const char *name; /* owned unless == unknown */
} id_slot;

typedef struct {
    int pid;
    const char *name; /* borrowed from the id table or unknown */
} pid_slot;

struct pp_containers {
    pthread_mutex_t lock;
    char *host_root;
    char *docker_sock; /* absolute path, or NULL */
    pp_htab ids;       /* of id_slot */
    pp_htab pids;      /* of pid_slot, emptied every session */
    char **graveyard;  /* names replaced during the session, freed at the next one */
    size_t graves, graves_cap;
    bool listed;      /* the full listing ran this session */
    bool warned_none; /* the "no source" debug line was written */
};

/* ---- container id from cgroup ---- */

static bool is_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

static bool valid_id(const char *id)
{
    if (!id)
        return false;
    for (int i = 0; i < ID_LEN; i++)
        if (!is_hex(id[i]))
            return false;
    return id[ID_LEN] == '\0';
}

int pp_container_id_from_cgroup(const char *text, char out[65])
{
    out[0] = '\0';
    if (!text)
        return -1;
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            const char *p = c2 + 1, *end = line + len, *last = NULL;
            while (end - p >= ID_LEN) {
                int run = 0;
                while (run < ID_LEN && is_hex(p[run]))
                    run++;
                if (run == ID_LEN) {
                    last = p;
                    p += ID_LEN;
                } else {
                    p += run + 1;
                }
            }
            if (last) {
                memcpy(out, last, ID_LEN);
                out[ID_LEN] = '\0';
                return 0;
            }
        }
        line += len;
        if (*line == '\n')
            line++;
    }
    return -1;
}

/* ---- caches ---- */

static uint64_t hash_id(const char *id)
{
    return pp_hash_bytes(id, ID_LEN, 0);
}

static id_slot *id_find(pp_containers *c, const char *id)
{
    pp_htab_probe p;
    for (id_slot *s = pp_htab_first(&c->ids, hash_id(id), &p); s; s = pp_htab_next(&c->ids, &p))
        if (memcmp(s->id, id, ID_LEN) == 0)
            return s;
    return NULL;
}

static void bury(pp_containers *c, const char *name)
{
    if (!name || name == unknown)
        return;
    if (c->graves == c->graves_cap) {
        size_t cap = c->graves_cap ? c->graves_cap * 2 : 16;
        char **g = realloc(c->graveyard, cap * sizeof(*g));
        if (!g) {
            /* Cannot defer: leak rather than free a string a caller may still hold. */
            return;
        }
        c->graveyard = g;
        c->graves_cap = cap;
    }
    c->graveyard[c->graves++] = (char *)name;
}

/* Records id -> name (name NULL = unknown). With overwrite, replaces a known name; otherwise
 * only fills absent or unknown entries. */
static void id_put(pp_containers *c, const char *id, const char *name, bool overwrite)
{
    id_slot *s = id_find(c, id);
    if (s && s->name != unknown && (!overwrite || !name || strcmp(s->name, name) == 0))
        return;
    if (s && s->name == unknown && !name)
        return;
    const char *v = unknown;
    if (name && !(v = strdup(name)))
        return;
    if (s) {
        bury(c, s->name);
        s->name = v;
        return;
    }
    if (!(s = pp_htab_add(&c->ids, hash_id(id)))) {
        if (v != unknown)
            free((char *)v);
        return;
    }
    memcpy(s->id, id, ID_LEN + 1);
    s->name = v;
}

static pid_slot *pid_find(pp_containers *c, int pid, bool create)
{
    uint64_t h = pp_hash_u64((uint64_t)(unsigned)pid);
    pp_htab_probe p;
    for (pid_slot *s = pp_htab_first(&c->pids, h, &p); s; s = pp_htab_next(&c->pids, &p))
        if (s->pid == pid)
            return s;
    pid_slot *s = create ? pp_htab_add(&c->pids, h) : NULL;
    if (s)
        *s = (pid_slot){pid, unknown};
    return s;
}

/* ---- bounded file reading ---- */

static char *host_path(const pp_containers *c, const char *rel)
{
    char *p = NULL;
    if (asprintf(&p, "%s%s", c->host_root, rel) < 0)
        return NULL;
    return p;
}

/* A /proc file (reported size 0): its first MAX_CGROUP_BYTES, NUL-terminated, or NULL. */
static char *read_proc(const char *path)
{
    char *text = malloc(MAX_CGROUP_BYTES + 1);
    if (text && pp_read_small_file(path, text, MAX_CGROUP_BYTES + 1) < 0) {
        free(text);
        text = NULL;
    }
    return text;
}

static bool name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > MAX_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static const char *strip_slash(const char *s)
{
    return s && s[0] == '/' ? s + 1 : s;
}

/* ---- Docker engine API ---- */

typedef struct {
    char *buf;
    size_t len;
    bool too_big;
} body;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t n = size * nmemb;
    if (b->len + n > MAX_DOCKER_JSON) {
        b->too_big = true;
        return 0;
    }
    char *nb = realloc(b->buf, b->len + n + 1);
    if (!nb)
        return 0;
    memcpy(nb + b->len, ptr, n);
    b->buf = nb;
    b->len += n;
    b->buf[b->len] = '\0';
    return n;
}

/* Returns the number of containers recorded, or -1 when the API is unreachable/bad. */
static int docker_api_list(pp_containers *c)
{
    const pp_curl_api *cu = pp_curl();
    if (!cu) {
        pp_debug("containers: %s", pp_curl_error());
        return -1;
    }
    CURL *h = cu->easy_init();
    if (!h)
        return -1;
    body b = {0};
    long status = 0;
    cu->easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->docker_sock);
    cu->easy_setopt(h, CURLOPT_URL, "http://localhost/containers/json");
    cu->easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
    cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    cu->easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode rc = cu->easy_perform(h);
    cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    cu->easy_cleanup(h);
    if (rc != CURLE_OK || status != 200 || !b.buf) {
        pp_debug("containers: docker API at %s: %s (HTTP %ld)%s", c->docker_sock,
                 rc != CURLE_OK ? cu->easy_strerror(rc) : "no answer", status,
                 b.too_big ? ", answer too large" : "");
        free(b.buf);
        return -1;
    }
    json_error_t err;
    json_t *arr = json_loadb(b.buf, b.len, 0, &err);
    free(b.buf);
    if (!json_is_array(arr)) {
        pp_debug("containers: docker API: unexpected answer");
        json_decref(arr);
        return -1;
    }
    int n = 0;
    size_t i;
    json_t *it;
    json_array_foreach(arr, i, it)
    {
        const char *id = json_string_value(json_object_get(it, "Id"));
        const char *name =
            strip_slash(json_string_value(json_array_get(json_object_get(it, "Names"), 0)));
        if (valid_id(id) && name_ok(name)) {
            id_put(c, id, name, true);
            n++;
        }
    }
    json_decref(arr);
    return n;
}

/* ---- Docker on-disk config ---- */

static char *docker_config_name(pp_containers *c, const char *id)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "/var/lib/docker/containers/%s/config.v2.json", id);
    char *path = host_path(c, rel);
    size_t len = 0;
    char *text = path ? pp_read_file(path, MAX_CONFIG_JSON, 0, &len) : NULL;
    free(path);
    if (!text)
        return NULL;
    json_error_t err;
    json_t *o = json_loadb(text, len, 0, &err);
    free(text);
    char *res = NULL;
    const char *cid = json_string_value(json_object_get(o, "ID"));
    const char *name = strip_slash(json_string_value(json_object_get(o, "Name")));
    if (json_is_object(o) && (!cid || strcmp(cid, id) == 0) && name_ok(name))
        res = strdup(name);
    json_decref(o);
    return res;
}

/* ---- kubelet log links ---- */

static bool k8s_field_ok(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '_' || s[i] == '/' || (unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* <pod>_<ns>_<container>-<id>.log with its target .../<ns>_<pod>_<uid>/<container>/<n>.log (or
 * the pre-1.14 .../<uid>/<container>/<n>.log) -> id and k8s_<c>_<pod>_<ns>_<uid>_<n>. */
static bool k8s_parse(const char *fname, const char *target, char id[65], char *out, size_t outsz)
{
    size_t fl = strlen(fname);
    if (fl < 4 + ID_LEN + 1 + 5 || strcmp(fname + fl - 4, ".log") != 0)
        return false;
    const char *idp = fname + fl - 4 - ID_LEN;
    if (idp[-1] != '-')
        return false;
    memcpy(id, idp, ID_LEN);
    id[ID_LEN] = '\0';
    if (!valid_id(id))
        return false;
    const char *pod = fname, *u1 = strchr(pod, '_');
    const char *ns = u1 ? u1 + 1 : NULL, *u2 = ns ? strchr(ns, '_') : NULL;
    const char *ctr = u2 ? u2 + 1 : NULL, *cend = idp - 1;
    if (!ctr || ctr >= cend || !k8s_field_ok(pod, (size_t)(u1 - pod)) ||
        !k8s_field_ok(ns, (size_t)(u2 - ns)) || !k8s_field_ok(ctr, (size_t)(cend - ctr)))
        return false;

    /* Target: the last three components. */
    size_t tl = strlen(target);
    if (tl < 5 || strcmp(target + tl - 4, ".log") != 0)
        return false;
    const char *end = target + tl, *s3 = memrchr(target, '/', tl);
    if (!s3)
        return false;
    const char *s2 = memrchr(target, '/', (size_t)(s3 - target));
    if (!s2)
        return false;
    const char *s1 = memrchr(target, '/', (size_t)(s2 - target));
    const char *dir = s1 ? s1 + 1 : target;
    const char *restart = s3 + 1;
    size_t rl = (size_t)(end - 4 - restart);
    if (rl == 0 || rl > 9 || strspn(restart, "0123456789") < rl)
        return false;
    if ((size_t)(s3 - s2 - 1) != (size_t)(cend - ctr) || memcmp(s2 + 1, ctr, (size_t)(cend - ctr)))
        return false;
    size_t dl = (size_t)(s2 - dir);
    const char *uid = dir;
    size_t ul = dl;
    const char *d1 = memchr(dir, '_', dl);
    if (d1) { /* <ns>_<pod>_<uid> */
        const char *d2 = memchr(d1 + 1, '_', dl - (size_t)(d1 + 1 - dir));
        if (!d2 || (size_t)(d1 - dir) != (size_t)(u2 - ns) || memcmp(dir, ns, (size_t)(d1 - dir)) ||
            (size_t)(d2 - d1 - 1) != (size_t)(u1 - pod) || memcmp(d1 + 1, pod, (size_t)(u1 - pod)))
            return false;
        uid = d2 + 1;
        ul = (size_t)(s2 - uid);
    }
    if (!k8s_field_ok(uid, ul))
        return false;
    int n = snprintf(out, outsz, "k8s_%.*s_%.*s_%.*s_%.*s_%.*s", (int)(cend - ctr), ctr,
                     (int)(u1 - pod), pod, (int)(u2 - ns), ns, (int)ul, uid, (int)rl, restart);
    return n > 0 && (size_t)n < outsz;
}

static int k8s_list(pp_containers *c)
{
    char *dirpath = host_path(c, "/var/log/containers");
    DIR *d = dirpath ? opendir(dirpath) : NULL;
    free(dirpath);
    if (!d)
        return -1;
    int n = 0, seen = 0;
    struct dirent *e;
    char target[PATH_MAX], id[65], name[1280];
    while ((e = readdir(d)) && seen++ < MAX_LOG_LINKS) {
        if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
            continue;
        ssize_t tl = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
        if (tl <= 0)
            continue;
        target[tl] = '\0';
        if (k8s_parse(e->d_name, target, id, name, sizeof(name)) && name_ok(name)) {
            id_put(c, id, name, false);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* ---- Podman ---- */

static int podman_list(pp_containers *c)
{
    char *path = host_path(c, "/var/lib/containers/storage/overlay-containers/containers.json");
    size_t len = 0;
    char *text = path ? pp_read_file(path, MAX_PODMAN_JSON, 0, &len) : NULL;
    free(path);
    if (!text)
        return -1;
    json_error_t err;
    json_t *arr = json_loadb(text, len, 0, &err);
    free(text);
    int n = -1;
    if (json_is_array(arr)) {
        n = 0;
        size_t i;
        json_t *it;
        json_array_foreach(arr, i, it)
        {
            const char *id = json_string_value(json_object_get(it, "id"));
            const char *name = json_string_value(json_array_get(json_object_get(it, "names"), 0));
            if (valid_id(id) && name_ok(name)) {
                id_put(c, id, name, false);
                n++;
            }
        }
    } else {
        pp_debug("containers: podman containers.json is not a JSON array");
    }
    json_decref(arr);
    return n;
}

/* ---- lookup ---- */

static bool exists(pp_containers *c, const char *rel)
{
    char *p = host_path(c, rel);
    bool ok = p && access(p, F_OK) == 0;
    free(p);
    return ok;
}

static void list_all(pp_containers *c)
{
    c->listed = true;
    bool docker = c->docker_sock && access(c->docker_sock, F_OK) == 0;
    if (docker)
        docker_api_list(c);
    int k8s = k8s_list(c), podman = podman_list(c);
    if (!docker && k8s < 0 && podman < 0 && !exists(c, "/var/lib/docker/containers") &&
        !c->warned_none) {
        c->warned_none = true;
        pp_debug("containers: no container runtime found under %s (docker socket, "
                 "/var/lib/docker, /var/log/containers, podman storage); names stay empty",
                 c->host_root);
    }
}

static const char *lookup_locked(pp_containers *c, const char *id)
{
    if (!valid_id(id))
        return unknown;
    id_slot *s = id_find(c, id);
    if (s && (s->name != unknown || c->listed))
        return s->name;
    if (!c->listed) {
        list_all(c);
        if ((s = id_find(c, id)) && s->name != unknown)
            return s->name;
    }
    char *name = docker_config_name(c, id);
    id_put(c, id, name, true);
    free(name);
    s = id_find(c, id);
    return s ? s->name : unknown;
}

const char *pp_container_name_by_id(pp_containers *c, const char *id)
{
    if (!c)
        return unknown;
    pthread_mutex_lock(&c->lock);
    const char *r = lookup_locked(c, id);
    pthread_mutex_unlock(&c->lock);
    return r;
}

const char *pp_container_name(pp_containers *c, int pid)
{
    if (!c || pid <= 0)
        return unknown;
    pthread_mutex_lock(&c->lock);
    pid_slot *ps = pid_find(c, pid, false);
    const char *r = ps ? ps->name : NULL;
    if (!r) {
        char path[64], id[65];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
        char *text = read_proc(path);
        r = text && pp_container_id_from_cgroup(text, id) == 0 ? lookup_locked(c, id) : unknown;
        if (text && (ps = pid_find(c, pid, true)))
            ps->name = r; /* a vanished process is not cached */
        free(text);
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* pp_htab_filter: keeps an id with a known name unless *drop_all. */
static bool id_kept(void *ent, void *drop_all)
{
    id_slot *s = ent;
    if (s->name != unknown && !*(bool *)drop_all)
        return true;
    if (s->name != unknown)
        free((char *)s->name);
    return false;
}

void pp_containers_new_session(pp_containers *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->graves; i++)
        free(c->graveyard[i]);
    c->graves = 0;
    pp_htab_free(&c->pids);
    c->listed = false;
    /* Drop unknown ids (retried this session); drop everything when too many are known. */
    bool all = pp_htab_count(&c->ids) > MAX_IDS;
    pp_htab_filter(&c->ids, id_kept, &all);
    pthread_mutex_unlock(&c->lock);
}

pp_containers *pp_containers_new(const char *host_root, const char *docker_sock)
{
    pp_containers *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    PP_HTAB_INIT(&c->ids, id_slot, 70);
    PP_HTAB_INIT(&c->pids, pid_slot, 70);
    /* host_root without trailing slashes ("" for "/"), so host_root + "/var/..." works. */
    c->host_root = strdup(host_root ? host_root : "/");
    if (c->host_root) {
        size_t l = strlen(c->host_root);
        while (l > 0 && c->host_root[l - 1] == '/')
            c->host_root[--l] = '\0';
    }
    if (docker_sock && c->host_root &&
        asprintf(&c->docker_sock, "%s%s", c->host_root, docker_sock) < 0)
        c->docker_sock = NULL;
    if (!c->host_root || (docker_sock && !c->docker_sock)) {
        pp_containers_free(c);
        return NULL;
    }
    return c;
}

void pp_containers_free(pp_containers *c)
{
    if (!c)
        return;
    bool all = true;
    pp_htab_filter(&c->ids, id_kept, &all);
    for (size_t i = 0; i < c->graves; i++)
        free(c->graveyard[i]);
    free(c->graveyard);
    pp_htab_free(&c->ids);
    pp_htab_free(&c->pids);
    free(c->host_root);
    free(c->docker_sock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
