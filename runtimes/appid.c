/* Application identifiers: gProfiler's rules (gprofiler-compat.md §7) over a command line. A
 * rule that "fails" (gProfiler raises: an option given as the last argument, an unreadable or
 * malformed uwsgi ini file, an unknown cwd) gives NULL and the next rule is tried, as
 * gProfiler's identifier loop does. */
#include "runtimes/appid.h"

#include "base/inroot.h"
#include "base/procfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SYMLINKS 40
#define MAX_PATH_WORK 16384            /* bound on the path being resolved */
#define MAX_CMDLINE_BYTES (256 * 1024) /* /proc/<pid>/cmdline prefix read */

char *pp_appid_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
char *pp_appid_fmt(const char *f, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, f);
    if (vasprintf(&s, f, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

const char *pp_appid_base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

bool pp_appid_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

bool pp_appid_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- path resolution inside a root ---- */

/* out: root without trailing slashes ("" for "/" or NULL). */
static int root_prefix(const char *root, char out[PATH_MAX])
{
    size_t rl = strlen(root ? root : "/");
    if (rl >= PATH_MAX)
        return -1;
    memcpy(out, root ? root : "/", rl + 1);
    while (rl > 0 && out[rl - 1] == '/')
        out[--rl] = '\0';
    return 0;
}

char *pp_appid_path(const char *root, const char *cwd, const char *arg)
{
    if (!cwd || !arg)
        return NULL;
    char rootp[PATH_MAX];
    if (root_prefix(root, rootp) < 0)
        return NULL;

    /* todo: the components still to resolve; out: the resolved path below root. */
    char *todo = malloc(MAX_PATH_WORK), *out = malloc(MAX_PATH_WORK);
    char *probe = malloc(PATH_MAX + MAX_PATH_WORK), *link = malloc(PATH_MAX);
    char *res = NULL;
    if (!todo || !out || !probe || !link)
        goto done;
    int n = arg[0] == '/' ? snprintf(todo, MAX_PATH_WORK, "%s", arg)
                          : snprintf(todo, MAX_PATH_WORK, "/%s/%s", cwd, arg);
    if (n < 0 || n >= MAX_PATH_WORK)
        goto done;
    size_t outl = 0, pos = 0;
    out[0] = '\0';
    int links = 0;
    while (todo[pos]) {
        while (todo[pos] == '/')
            pos++;
        if (!todo[pos])
            break;
        size_t cl = strcspn(todo + pos, "/");
        const char *comp = todo + pos;
        size_t next = pos + cl;
        if (cl == 1 && comp[0] == '.') {
            pos = next;
            continue;
        }
        if (cl == 2 && comp[0] == '.' && comp[1] == '.') {
            while (outl > 0 && out[outl - 1] != '/')
                outl--;
            if (outl > 0)
                outl--; /* the slash */
            out[outl] = '\0';
            pos = next;
            continue;
        }
        if (outl + 1 + cl + 1 > MAX_PATH_WORK)
            goto done;
        out[outl] = '/';
        memcpy(out + outl + 1, comp, cl);
        size_t newl = outl + 1 + cl;
        out[newl] = '\0';
        struct stat st;
        snprintf(probe, PATH_MAX + MAX_PATH_WORK, "%s%s", rootp, out);
        ssize_t ll;
        if (links < MAX_SYMLINKS && lstat(probe, &st) == 0 && S_ISLNK(st.st_mode) &&
            (ll = readlink(probe, link, PATH_MAX - 1)) > 0) {
            link[ll] = '\0';
            links++;
            /* New todo: the link target, then what followed this component. */
            size_t rest = strlen(todo + next);
            if ((size_t)ll + rest + 2 > MAX_PATH_WORK)
                goto done;
            memmove(todo + ll + 1, todo + next, rest + 1);
            memcpy(todo, link, ll);
            todo[ll] = '/';
            pos = 0;
            if (link[0] == '/')
                outl = 0; /* absolute target: re-rooted */
            out[outl] = '\0';
            continue;
        }
        outl = newl;
        pos = next;
    }
    res = strdup(outl ? out : "/");
done:
    free(todo);
    free(out);
    free(probe);
    free(link);
    return res;
}

/* a.b -> a/b.py unless it already ends with .py, then resolved. */
static char *module_path(const char *root, const char *cwd, const char *module)
{
    if (pp_appid_ends_with(module, ".py"))
        return pp_appid_path(root, cwd, module);
    char *m = pp_appid_fmt("%s.py", module);
    if (!m)
        return NULL;
    for (size_t i = 0, l = strlen(module); i < l; i++)
        if (m[i] == '.')
            m[i] = '/';
    char *r = pp_appid_path(root, cwd, m);
    free(m);
    return r;
}

/* "<prefix>: <shown> (<path>)" with path = module_path(shown-or-mod). */
char *pp_appid_with_module(const char *prefix, const char *shown, const char *mod, const char *root,
                           const char *cwd)
{
    char *p = module_path(root, cwd, mod);
    if (!p)
        return NULL;
    char *r = pp_appid_fmt("%s: %s (%s)", prefix, shown, p);
    free(p);
    return r;
}

char *pp_appid_with_file(const char *prefix, const char *arg, const char *root, const char *cwd)
{
    char *p = pp_appid_path(root, cwd, arg);
    if (!p)
        return NULL;
    char *r = pp_appid_fmt("%s: %s (%s)", prefix, arg, p);
    free(p);
    return r;
}

/* ---- gProfiler's command-line argument lookup ---- */

/* `_get_cli_arg_by_name`: "name value" (first occurrence; PP_ARG_ERR when it is the last
 * argument), then with eq "name=value", then with prefix "namevalue". */
int pp_appid_arg(char *const *argv, int argc, const char *name, bool eq, bool prefix,
                 const char **out)
{
    size_t nl = strlen(name);
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], name) == 0) {
            if (i + 1 >= argc)
                return PP_ARG_ERR;
            *out = argv[i + 1];
            return PP_ARG_FOUND;
        }
    if (eq)
        for (int i = 0; i < argc; i++)
            if (strncmp(argv[i], name, nl) == 0 && argv[i][nl] == '=') {
                *out = argv[i] + nl + 1;
                return PP_ARG_FOUND;
            }
    if (prefix)
        for (int i = 0; i < argc; i++)
            if (strncmp(argv[i], name, nl) == 0) {
                *out = argv[i] + nl;
                return PP_ARG_FOUND;
            }
    return PP_ARG_NA;
}

/* Python's `a or b` over two lookups: a when found and non-empty, else b. */
int pp_appid_arg_or(char *const *argv, int argc, const char *n1, bool eq1, bool pre1,
                    const char *n2, bool eq2, bool pre2, const char **out)
{
    const char *v = NULL;
    int r = pp_appid_arg(argv, argc, n1, eq1, pre1, &v);
    if (r == PP_ARG_ERR)
        return PP_ARG_ERR;
    if (r == PP_ARG_FOUND && v[0]) {
        *out = v;
        return PP_ARG_FOUND;
    }
    return pp_appid_arg(argv, argc, n2, eq2, pre2, out);
}

const char *pp_appid_arg_at(char *const *argv, int argc, int i)
{
    return i < argc ? argv[i] : "";
}

/* ---- /proc ---- */

char **pp_appid_split_cmdline(const char *data, size_t len, int *argc)
{
    *argc = 0;
    if (!data || len == 0)
        return NULL;
    char sep = data[len - 1] == '\0' ? '\0' : ' ';
    if (data[len - 1] == sep)
        len--;
    if (sep == '\0' && memchr(data, '\0', len) == NULL && memchr(data, ' ', len))
        sep = ' ';
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += data[i] == sep;
    char **v = malloc((n + 1) * sizeof(char *) + len + 1);
    if (!v)
        return NULL;
    char *s = (char *)(v + n + 1);
    memcpy(s, data, len);
    s[len] = '\0';
    size_t k = 0;
    v[k++] = s;
    for (size_t i = 0; i < len; i++)
        if (s[i] == sep) {
            s[i] = '\0';
            v[k++] = s + i + 1;
        }
    v[k] = NULL;
    *argc = (int)k;
    return v;
}

char **pp_appid_proc_cmdline(int pid, int *argc, char *cwd, size_t cwdlen)
{
    char path[64];
    *argc = 0;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    char *buf = malloc(MAX_CMDLINE_BYTES + 1);
    ssize_t len = buf ? pp_read_small_file(path, buf, MAX_CMDLINE_BYTES + 1) : -1;
    char **argv = len > 0 ? pp_appid_split_cmdline(buf, (size_t)len, argc) : NULL;
    free(buf);
    snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
    ssize_t cl = argv && cwdlen ? readlink(path, cwd, cwdlen - 1) : -1;
    if (cwdlen)
        cwd[cl > 0 ? cl : 0] = '\0';
    return argv;
}

char *pp_appid_for_pid(int pid, pp_appid_fn rule)
{
    if (!rule || pid <= 0)
        return NULL;
    char root[64], cwd[PATH_MAX];
    int argc;
    char **argv = pp_appid_proc_cmdline(pid, &argc, cwd, sizeof(cwd));
    if (!argv)
        return NULL;
    snprintf(root, sizeof(root), "/proc/%d/root", pid);
    char *r = rule(argv, argc, cwd[0] ? cwd : NULL, root);
    free(argv);
    return r;
}
