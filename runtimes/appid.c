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
#define MAX_INI_BYTES (1024 * 1024)    /* uwsgi ini files larger than this are not read */
#define MAX_CMDLINE_BYTES (256 * 1024) /* /proc/<pid>/cmdline prefix read */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, f);
    if (vasprintf(&s, f, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static bool starts_with(const char *s, const char *prefix)
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
    if (ends_with(module, ".py"))
        return pp_appid_path(root, cwd, module);
    char *m = fmt("%s.py", module);
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
static char *with_module(const char *prefix, const char *shown, const char *mod, const char *root,
                         const char *cwd)
{
    char *p = module_path(root, cwd, mod);
    if (!p)
        return NULL;
    char *r = fmt("%s: %s (%s)", prefix, shown, p);
    free(p);
    return r;
}

static char *with_file(const char *prefix, const char *arg, const char *root, const char *cwd)
{
    char *p = pp_appid_path(root, cwd, arg);
    if (!p)
        return NULL;
    char *r = fmt("%s: %s (%s)", prefix, arg, p);
    free(p);
    return r;
}

/* ---- gProfiler's command-line argument lookup ---- */

enum { ARG_ERR = -1, ARG_NA = 0, ARG_FOUND = 1 };

/* `_get_cli_arg_by_name`: "name value" (first occurrence; ARG_ERR when it is the last
 * argument), then with eq "name=value", then with prefix "namevalue". */
static int arg_by_name(char *const *argv, int argc, const char *name, bool eq, bool prefix,
                       const char **out)
{
    size_t nl = strlen(name);
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], name) == 0) {
            if (i + 1 >= argc)
                return ARG_ERR;
            *out = argv[i + 1];
            return ARG_FOUND;
        }
    if (eq)
        for (int i = 0; i < argc; i++)
            if (strncmp(argv[i], name, nl) == 0 && argv[i][nl] == '=') {
                *out = argv[i] + nl + 1;
                return ARG_FOUND;
            }
    if (prefix)
        for (int i = 0; i < argc; i++)
            if (strncmp(argv[i], name, nl) == 0) {
                *out = argv[i] + nl;
                return ARG_FOUND;
            }
    return ARG_NA;
}

/* Python's `a or b` over two lookups: a when found and non-empty, else b. */
static int arg_or(char *const *argv, int argc, const char *n1, bool eq1, bool pre1, const char *n2,
                  bool eq2, bool pre2, const char **out)
{
    const char *v = NULL;
    int r = arg_by_name(argv, argc, n1, eq1, pre1, &v);
    if (r == ARG_ERR)
        return ARG_ERR;
    if (r == ARG_FOUND && v[0]) {
        *out = v;
        return ARG_FOUND;
    }
    return arg_by_name(argv, argc, n2, eq2, pre2, out);
}

static const char *arg_at(char *const *argv, int argc, int i)
{
    return i < argc ? argv[i] : "";
}

/* ^python([23](\.\d{1,2})?)?$ on the basename. */
static bool is_python_bin(const char *path)
{
    const char *b = base_name(path);
    if (!starts_with(b, "python"))
        return false;
    b += 6;
    if (!*b)
        return true;
    if (*b != '2' && *b != '3')
        return false;
    b++;
    if (!*b)
        return true;
    if (*b != '.')
        return false;
    b++;
    int d = 0;
    while (d < 3 && b[d] >= '0' && b[d] <= '9')
        d++;
    return (d == 1 || d == 2) && b[d] == '\0';
}

static bool is_python_m(char *const *argv, int argc, const char *module)
{
    return argc >= 3 && is_python_bin(argv[0]) && strcmp(argv[1], "-m") == 0 &&
           strcmp(argv[2], module) == 0;
}

/* ---- gunicorn / uvicorn ---- */

static char *gunicorn_appid(const char *server, const char *spec, const char *root, const char *cwd)
{
    size_t fl = strcspn(spec, ":");
    char *file = strndup(spec, fl);
    if (!file)
        return NULL;
    char *r = with_module(server, spec, file, root, cwd);
    free(file);
    return r;
}

/* ^gunicorn: (?:master|worker) \[([^\]]*)\]$ on the only non-empty argument. */
static char *rule_gunicorn_title(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (argc < 1 || !starts_with(argv[0], "gunicorn: "))
        return NULL;
    for (int i = 1; i < argc; i++)
        if (argv[i][0])
            return NULL;
    const char *s = argv[0] + 10;
    if (!starts_with(s, "master [") && !starts_with(s, "worker ["))
        return NULL;
    s += 8;
    size_t sl = strcspn(s, "]");
    const char *end = s + sl;
    if (*end != ']' || !(end[1] == '\0' || (end[1] == '\n' && end[2] == '\0')))
        return NULL;
    char *spec = strndup(s, sl);
    if (!spec)
        return NULL;
    char *r = gunicorn_appid("gunicorn", spec, root, cwd);
    free(spec);
    return r;
}

static char *rule_server(const char *server, char *const *argv, int argc, const char *cwd,
                         const char *root, bool factory)
{
    if (strcmp(base_name(arg_at(argv, argc, 0)), server) != 0 &&
        strcmp(base_name(arg_at(argv, argc, 1)), server) != 0)
        return NULL;
    const char *spec = "unknown app name";
    for (int i = 1; i < argc; i++)
        if (strchr(argv[i], ':') &&
            (argv[i - 1][0] != '-' || (factory && strcmp(argv[i - 1], "--factory") == 0))) {
            spec = argv[i];
            break;
        }
    return gunicorn_appid(server, spec, root, cwd);
}

/* ---- uwsgi ---- */

/* configparser-like reader: returns 1 and *module (malloc'd, or NULL when [uwsgi] has no
 * module), or -1 when the file cannot be read or configparser would raise. */
static char *ini_strip(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v')
        s++;
    size_t l = strlen(s);
    while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r' || s[l - 1] == '\f' ||
                     s[l - 1] == '\v'))
        s[--l] = '\0';
    return s;
}

typedef struct {
    char *text;        /* the whole file, modified in place */
    const char *uwsgi; /* value of module in [uwsgi] (last wins), NULL if absent */
    const char *deflt; /* value of module in [DEFAULT] */
    bool has_uwsgi;    /* a [uwsgi] section exists */
    char *cont[2];     /* malloc'd multi-line values (uwsgi, DEFAULT), owned */
} ini_result;

static int ini_parse(ini_result *r)
{
    enum { NONE, UWSGI, DEFAULT, OTHER } sect = NONE;
    int cur = -1; /* which module value a continuation line extends: 0 uwsgi, 1 DEFAULT */
    int opt_indent = -1;
    char *line = r->text;
    while (line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        int indent = 0;
        while (line[indent] == ' ' || line[indent] == '\t')
            indent++;
        char *v = ini_strip(line);
        if (!*v || v[0] == '#' || v[0] == ';') {
            if (!*v)
                opt_indent = -1; /* simplification: a blank line ends a value */
        } else if (opt_indent >= 0 && sect != NONE && indent > opt_indent) {
            if (cur >= 0) { /* continuation of a module value */
                const char *prev = cur == 0 ? r->uwsgi : r->deflt;
                char *joined = fmt("%s\n%s", prev, v);
                if (!joined)
                    return -1;
                free(r->cont[cur]);
                r->cont[cur] = joined;
                if (cur == 0)
                    r->uwsgi = joined;
                else
                    r->deflt = joined;
            }
        } else if (v[0] == '[' && strrchr(v, ']') > v + 1) {
            *strrchr(v, ']') = '\0';
            const char *h = v + 1;
            sect = strcmp(h, "uwsgi") == 0 ? UWSGI : strcmp(h, "DEFAULT") == 0 ? DEFAULT : OTHER;
            if (sect == UWSGI)
                r->has_uwsgi = true;
            opt_indent = -1;
            cur = -1;
        } else {
            if (sect == NONE)
                return -1; /* MissingSectionHeaderError */
            size_t k = strcspn(v, "=:");
            if (!v[k])
                return -1; /* ParsingError (allow_no_value is off) */
            v[k] = '\0';
            char *key = ini_strip(v), *val = ini_strip(v + k + 1);
            if (!*key)
                return -1;
            for (char *p = key; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                    *p = (char)(*p - 'A' + 'a');
            opt_indent = indent;
            cur = -1;
            if (strcmp(key, "module") == 0 && (sect == UWSGI || sect == DEFAULT)) {
                cur = sect == UWSGI ? 0 : 1;
                if (cur == 0)
                    r->uwsgi = val;
                else
                    r->deflt = val;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

/* BasicInterpolation of the module value: "%%" -> "%", "%(module)s" -> itself is a loop, any
 * other "%" raises in configparser -> -1. Only "%%" is supported; "%(name)s" references to
 * other keys are treated as a failure (documented). */
static char *ini_interpolate(const char *v)
{
    char *out = malloc(strlen(v) + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = v; *p; p++) {
        if (*p == '%') {
            if (p[1] != '%') {
                free(out);
                return NULL;
            }
            p++;
        }
        *o++ = *p;
    }
    *o = '\0';
    return out;
}

/* 1: *module set (may be NULL: no module), -1: the identifier fails. */
static int uwsgi_ini_module(const char *root, const char *cwd, const char *ini, char **module)
{
    *module = NULL;
    char *rel = pp_appid_path(root, cwd, ini);
    if (!rel)
        return -1;
    /* Opened inside root: rel may still hold a symlink (a link left lexically past
     * MAX_SYMLINKS, or one planted since), which must not lead out of it. */
    int rootfd = open(root && root[0] ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd = rootfd >= 0 ? pp_openat_in_root(rootfd, rel, O_RDONLY | O_NONBLOCK) : -1;
    if (rootfd >= 0)
        close(rootfd);
    free(rel);
    if (fd < 0)
        return -1;
    size_t got;
    char *text = pp_read_fd(fd, MAX_INI_BYTES, 0, &got); /* a regular file only */
    close(fd);
    if (!text)
        return -1;
    if (strlen(text) != got) { /* NUL bytes: not a text file */
        free(text);
        return -1;
    }
    ini_result r = {.text = text};
    int rc = ini_parse(&r);
    if (rc == 0 && r.has_uwsgi) {
        const char *v = r.uwsgi ? r.uwsgi : r.deflt;
        if (v) {
            *module = ini_interpolate(v);
            if (!*module)
                rc = -1;
        }
    }
    free(r.cont[0]);
    free(r.cont[1]);
    free(text);
    return rc == 0 ? 1 : -1;
}

static char *rule_uwsgi(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (strcmp(base_name(arg_at(argv, argc, 0)), "uwsgi") != 0)
        return NULL;
    const char *w = NULL;
    int r = arg_or(argv, argc, "-w", false, false, "--wsgi-file", true, false, &w);
    if (r == ARG_ERR)
        return NULL;
    if (r == ARG_FOUND)
        return with_module("uwsgi", w, w, root, cwd);

    const char *ini = NULL;
    static const char *const ini_opts[] = {"--ini", "--ini-paste", "--ini-paste-logged"};
    r = ARG_NA;
    for (size_t i = 0; i < 3 && r == ARG_NA; i++)
        r = arg_by_name(argv, argc, ini_opts[i], true, false, &ini);
    if (r == ARG_ERR)
        return NULL;
    if (r == ARG_NA) {
        int n = 0;
        for (int i = 0; i < argc; i++)
            if (ends_with(argv[i], ".ini")) {
                n++;
                ini = argv[i];
            }
        if (n != 1)
            return strdup("uwsgi: ini file / wsgi module not found");
    }
    char *module = NULL;
    if (uwsgi_ini_module(root, cwd, ini, &module) < 0)
        return NULL;
    if (!module)
        return fmt("uwsgi: %s", ini);
    char *res = with_module("uwsgi", ini, module, root, cwd);
    free(module);
    return res;
}

/* ---- celery, pyspark, python ---- */

static char *rule_celery(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (strcmp(base_name(arg_at(argv, argc, 0)), "celery") != 0 &&
        strcmp(base_name(arg_at(argv, argc, 1)), "celery") != 0 &&
        !is_python_m(argv, argc, "celery"))
        return NULL;
    const char *app = NULL;
    int r = arg_or(argv, argc, "-A", false, true, "--app", true, false, &app);
    if (r == ARG_ERR)
        return NULL;
    if (r == ARG_FOUND)
        return with_module("celery", app, app, root, cwd);
    const char *q = NULL;
    r = arg_or(argv, argc, "-Q", false, true, "--queues", true, false, &q);
    if (r != ARG_FOUND || !cwd)
        return NULL;
    return fmt("celery queue: %s (%s)", q, cwd);
}

static char *rule_python(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!is_python_bin(arg_at(argv, argc, 0)))
        return NULL;
    const char *m = NULL;
    int r = arg_by_name(argv, argc, "-m", false, false, &m);
    if (r == ARG_ERR)
        return NULL;
    if (r == ARG_FOUND)
        return fmt("python: -m %s", m);
    const char *a1 = arg_at(argv, argc, 1);
    if (ends_with(a1, ".py"))
        return with_module("python", a1, a1, root, cwd);
    return NULL;
}

char *pp_appid_python(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!argv || argc <= 0)
        return NULL;
    char *r;
    if ((r = rule_gunicorn_title(argv, argc, cwd, root)))
        return r;
    if ((r = rule_server("gunicorn", argv, argc, cwd, root, false)))
        return r;
    if ((r = rule_server("uvicorn", argv, argc, cwd, root, true)))
        return r;
    if ((r = rule_uwsgi(argv, argc, cwd, root)))
        return r;
    if ((r = rule_celery(argv, argc, cwd, root)))
        return r;
    if (is_python_m(argv, argc, "pyspark.daemon"))
        return strdup("pyspark");
    return rule_python(argv, argc, cwd, root);
}

/* ---- java, node, ruby ---- */

char *pp_appid_java(char *const *argv, int argc, const char *cwd, const char *root)
{
    (void)cwd;
    (void)root;
    static const char *const with_value[] = {
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--add-modules",
        "--upgrade-module-path",
        "--limit-modules",
        "--add-reads",
        "--add-exports",
        "--add-opens",
        "--patch-module",
        "--source",
        "-d",
        "--enable-native-access",
        "--describe-module",
    };
    if (!argv)
        return NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-jar") == 0 || strcmp(a, "-m") == 0 || strcmp(a, "--module") == 0)
            return i + 1 < argc && argv[i + 1][0] ? fmt("java: %s", argv[i + 1]) : NULL;
        if (starts_with(a, "--module="))
            return a[9] ? fmt("java: %s", a + 9) : NULL;
        if (a[0] == '@')
            continue;
        if (a[0] == '-') {
            for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
                if (strcmp(a, with_value[k]) == 0) {
                    i++;
                    break;
                }
            continue;
        }
        if (a[0])
            return fmt("java: %s", a);
    }
    return NULL;
}

char *pp_appid_node(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!argv)
        return NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (starts_with(a, "--require="))
            continue;
        if (strcmp(a, "--require") == 0 || strcmp(a, "-r") == 0) {
            i++;
            continue;
        }
        if (ends_with(a, ".js"))
            return with_file("nodejs", a, root, cwd);
    }
    return NULL;
}

char *pp_appid_ruby(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!argv)
        return NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (starts_with(a, "-r")) {
            if (strlen(a) <= 2)
                i++;
            continue;
        }
        if (ends_with(a, ".rb"))
            return with_file("ruby", a, root, cwd);
    }
    return NULL;
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

char *pp_appid_for_pid(int pid, const char *runtime)
{
    char *(*fn)(char *const *, int, const char *, const char *) = NULL;
    if (!runtime)
        return NULL;
    if (strcmp(runtime, "python") == 0)
        fn = pp_appid_python;
    else if (strcmp(runtime, "java") == 0)
        fn = pp_appid_java;
    else if (strcmp(runtime, "node") == 0 || strcmp(runtime, "nodejs") == 0)
        fn = pp_appid_node;
    else if (strcmp(runtime, "ruby") == 0)
        fn = pp_appid_ruby;
    if (!fn || pid <= 0)
        return NULL;

    char path[64], root[64], cwd[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    char *buf = malloc(MAX_CMDLINE_BYTES + 1);
    ssize_t len = buf ? pp_read_small_file(path, buf, MAX_CMDLINE_BYTES + 1) : -1;
    int argc = 0;
    char **argv = len > 0 ? pp_appid_split_cmdline(buf, (size_t)len, &argc) : NULL;
    free(buf);
    if (!argv)
        return NULL;
    snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
    ssize_t cl = readlink(path, cwd, sizeof(cwd) - 1);
    if (cl > 0)
        cwd[cl] = '\0';
    snprintf(root, sizeof(root), "/proc/%d/root", pid);
    char *r = fn(argv, argc, cl > 0 ? cwd : NULL, root);
    free(argv);
    return r;
}
