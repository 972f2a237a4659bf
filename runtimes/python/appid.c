/* Python appids: gProfiler's rules (gprofiler-compat §7; docs/containers-and-appids.md). */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/inroot.h"
#include "base/procfiles.h"
#include "runtimes/appid.h"
#include "runtimes/python/python.h"

#define MAX_INI_BYTES (1024 * 1024) /* uwsgi ini files larger than this are not read */

static bool is_python_bin(const char *path)
{
    const char *b = pp_appid_base_name(path);
    if (!pp_appid_starts_with(b, "python"))
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
    char *r = pp_appid_with_module(server, spec, file, root, cwd);
    free(file);
    return r;
}

/* ^gunicorn: (?:master|worker) \[([^\]]*)\]$ on the only non-empty argument. */
static char *rule_gunicorn_title(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (argc < 1 || !pp_appid_starts_with(argv[0], "gunicorn: "))
        return NULL;
    for (int i = 1; i < argc; i++)
        if (argv[i][0])
            return NULL;
    const char *s = argv[0] + 10;
    if (!pp_appid_starts_with(s, "master [") && !pp_appid_starts_with(s, "worker ["))
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
    if (strcmp(pp_appid_base_name(pp_appid_arg_at(argv, argc, 0)), server) != 0 &&
        strcmp(pp_appid_base_name(pp_appid_arg_at(argv, argc, 1)), server) != 0)
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
                char *joined = pp_appid_fmt("%s\n%s", prev, v);
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
    if (strcmp(pp_appid_base_name(pp_appid_arg_at(argv, argc, 0)), "uwsgi") != 0)
        return NULL;
    const char *w = NULL;
    int r = pp_appid_arg_or(argv, argc, "-w", false, false, "--wsgi-file", true, false, &w);
    if (r == PP_ARG_ERR)
        return NULL;
    if (r == PP_ARG_FOUND)
        return pp_appid_with_module("uwsgi", w, w, root, cwd);

    const char *ini = NULL;
    static const char *const ini_opts[] = {"--ini", "--ini-paste", "--ini-paste-logged"};
    r = PP_ARG_NA;
    for (size_t i = 0; i < 3 && r == PP_ARG_NA; i++)
        r = pp_appid_arg(argv, argc, ini_opts[i], true, false, &ini);
    if (r == PP_ARG_ERR)
        return NULL;
    if (r == PP_ARG_NA) {
        int n = 0;
        for (int i = 0; i < argc; i++)
            if (pp_appid_ends_with(argv[i], ".ini")) {
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
        return pp_appid_fmt("uwsgi: %s", ini);
    char *res = pp_appid_with_module("uwsgi", ini, module, root, cwd);
    free(module);
    return res;
}

/* ---- celery, pyspark, python ---- */

static char *rule_celery(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (strcmp(pp_appid_base_name(pp_appid_arg_at(argv, argc, 0)), "celery") != 0 &&
        strcmp(pp_appid_base_name(pp_appid_arg_at(argv, argc, 1)), "celery") != 0 &&
        !is_python_m(argv, argc, "celery"))
        return NULL;
    const char *app = NULL;
    int r = pp_appid_arg_or(argv, argc, "-A", false, true, "--app", true, false, &app);
    if (r == PP_ARG_ERR)
        return NULL;
    if (r == PP_ARG_FOUND)
        return pp_appid_with_module("celery", app, app, root, cwd);
    const char *q = NULL;
    r = pp_appid_arg_or(argv, argc, "-Q", false, true, "--queues", true, false, &q);
    if (r != PP_ARG_FOUND || !cwd)
        return NULL;
    return pp_appid_fmt("celery queue: %s (%s)", q, cwd);
}

static char *rule_python(char *const *argv, int argc, const char *cwd, const char *root)
{
    if (!is_python_bin(pp_appid_arg_at(argv, argc, 0)))
        return NULL;
    const char *m = NULL;
    int r = pp_appid_arg(argv, argc, "-m", false, false, &m);
    if (r == PP_ARG_ERR)
        return NULL;
    if (r == PP_ARG_FOUND)
        return pp_appid_fmt("python: -m %s", m);
    const char *a1 = pp_appid_arg_at(argv, argc, 1);
    if (pp_appid_ends_with(a1, ".py"))
        return pp_appid_with_module("python", a1, a1, root, cwd);
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
