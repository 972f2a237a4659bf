/* The resource search path (resource.h). */
#include "base/resource.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Called with each candidate path in search order; a nonzero return stops the walk. */
typedef int (*candidate_fn)(const char *path, void *arg);

/* Calls fn with "<dir>/<name>" for each absolute entry of a ':'-separated list. */
static int each_listed(const char *list, const char *name, candidate_fn fn, void *arg)
{
    char cand[PATH_MAX];
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ':');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        /* relative entries (and empty ones, which mean "." in PATH) are never used */
        if (l && p[0] == '/' &&
            (size_t)snprintf(cand, sizeof(cand), "%.*s/%s", (int)l, p, name) < sizeof(cand)) {
            int rc = fn(cand, arg);
            if (rc)
                return rc;
        }
        p += l + (e ? 1 : 0);
    }
    return 0;
}

/* Steps 1-4 of resource.h: $POLYPROF_RESOURCES, then the directories beside the binary. */
static int each_resource_dir(const pp_resource_env *env, const char *rel, candidate_fn fn,
                             void *arg)
{
    int rc = each_listed(env->resources, rel, fn, arg);
    if (rc || !env->exe || env->exe[0] != '/')
        return rc;
    char dir[PATH_MAX], parent[PATH_MAX], cand[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", env->exe);
    *strrchr(dir, '/') = '\0'; /* "" for a binary in "/" */
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = '\0';
    const char *base[] = {dir, parent, parent};
    const char *sub[] = {"resources", "share/polyprof/resources", "resources"};
    for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]) && !rc; i++)
        if ((size_t)snprintf(cand, sizeof(cand), "%s/%s/%s", base[i], sub[i], rel) < sizeof(cand))
            rc = fn(cand, arg);
    return rc;
}

static const char *base_name(const char *rel)
{
    const char *s = strrchr(rel, '/');
    return s ? s + 1 : rel;
}

/* env, or this process's inputs (filled into self, the binary's path into exe) when NULL. */
static const pp_resource_env *env_or_self(const pp_resource_env *env, pp_resource_env *self,
                                          char *exe, size_t len)
{
    if (env)
        return env;
    ssize_t n = readlink("/proc/self/exe", exe, len - 1);
    exe[n > 0 ? n : 0] = '\0';
    self->exe = n > 0 ? exe : NULL;
    self->resources = getenv("POLYPROF_RESOURCES");
    self->path = getenv("PATH");
    return self;
}

typedef struct match {
    bool tool;
    char *out;
    size_t len;
} match;

static int try_candidate(const char *path, void *arg)
{
    match *m = arg;
    struct stat st;
    char real[PATH_MAX];
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, m->tool ? X_OK : R_OK) != 0 ||
        !realpath(path, real) || strlen(real) >= m->len)
        return 0;
    strcpy(m->out, real);
    return 1;
}

int pp_resource_lookup(const pp_resource_env *env, const char *rel, bool tool, char *out,
                       size_t len)
{
    pp_resource_env self;
    char exe[PATH_MAX];
    env = env_or_self(env, &self, exe, sizeof(exe));
    match m = {.tool = tool, .out = out, .len = len};
    if (each_resource_dir(env, rel, try_candidate, &m) ||
        (tool && each_listed(env->path, base_name(rel), try_candidate, &m)))
        return 0;
    return -1;
}

int pp_resource_tool(const char *rel, char *out, size_t len)
{
    return pp_resource_lookup(NULL, rel, true, out, len);
}

typedef struct text {
    char *out;
    size_t len, used;
} text;

static int append(const char *path, void *arg)
{
    text *t = arg;
    int n = snprintf(t->out + t->used, t->len - t->used, "%s%s", t->used ? ", " : "", path);
    if (n > 0)
        t->used += (size_t)n < t->len - t->used ? (size_t)n : t->len - t->used - 1;
    return 0;
}

typedef struct dir_walk {
    int (*fn)(const char *dir, void *arg);
    void *arg;
    size_t cut; /* strlen("/" DIR_PROBE) */
} dir_walk;

#define DIR_PROBE "."

/* A candidate "<dir>/." of each_resource_dir: fn gets "<dir>". */
static int call_dir(const char *path, void *arg)
{
    dir_walk *w = arg;
    char dir[PATH_MAX];
    size_t l = strlen(path);
    if (l < w->cut || l - w->cut >= sizeof(dir))
        return 0;
    memcpy(dir, path, l - w->cut);
    dir[l - w->cut] = '\0';
    return w->fn(dir, w->arg);
}

int pp_resource_each_dir(const pp_resource_env *env, int (*fn)(const char *dir, void *arg),
                         void *arg)
{
    pp_resource_env self;
    char exe[PATH_MAX];
    env = env_or_self(env, &self, exe, sizeof(exe));
    dir_walk w = {.fn = fn, .arg = arg, .cut = strlen("/" DIR_PROBE)};
    return each_resource_dir(env, DIR_PROBE, call_dir, &w);
}

void pp_resource_describe(const pp_resource_env *env, const char *rel, bool tool, char *out,
                          size_t len)
{
    pp_resource_env self;
    char exe[PATH_MAX];
    env = env_or_self(env, &self, exe, sizeof(exe));
    if (!len)
        return;
    text t = {.out = out, .len = len, .used = 0};
    out[0] = '\0';
    each_resource_dir(env, rel, append, &t);
    if (tool)
        snprintf(out + t.used, len - t.used, "%s%s on PATH", t.used ? " or " : "", base_name(rel));
}
