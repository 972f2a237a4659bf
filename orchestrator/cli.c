/* Command line, environment and config file parsing, driven by the option table in
 * cli_table.c. Sources are applied from the lowest precedence to the highest (defaults, config
 * file, GPROFILER_ env, POLYPROF_ env, command line); every option remembers the level that
 * last set it, so a higher source replaces a lower one (lists restart) and values from the same
 * source extend lists. */
#include "orchestrator/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "orchestrator/cli_opts.h"
#include "orchestrator/history_time.h"
#include "base/log.h"
#include "base/safefile.h"

const char *pp_cli_default_config_path = "/etc/polyprof/config.ini";
const char *pp_cli_gprofiler_config_path = "/etc/gprofiler/config.ini";

enum { LVL_DEFAULT = 0, LVL_CONFIG, LVL_GENV, LVL_PENV, LVL_CMDLINE };

#define VAL_BASE 1000

typedef struct variant {
    size_t row;
    bool neg;
    const char *name;
} variant;

typedef struct item {
    size_t row;
    bool neg;
    const char *val;
} item;

typedef struct ctx {
    pp_config *cfg;
    unsigned char *level; /* per row */
    char **noop_val;      /* per row */
    bool *noop_given;     /* per row */
    variant *vars;
    size_t nvars;
    item *items;
    size_t nitems, items_cap;
    const char *notices[8];
    size_t nnotices;
    char src[512]; /* where the value being applied comes from, for messages */
    char *err;
    size_t errlen;
} ctx;

static char *xstrdup(const char *s)
{
    char *r = strdup(s);
    if (!r)
        abort();
    return r;
}

static void *xrealloc(void *p, size_t n)
{
    void *r = realloc(p, n ? n : 1);
    if (!r)
        abort();
    return r;
}

/* Messages quote values from the command line, the environment and files: every byte that is
 * not printable ASCII is written as \xNN, so a binary file named by --config cannot send raw
 * bytes (terminal escapes) to the terminal. */
static int message(ctx *c, int rc, bool with_src, const char *fmt, va_list ap)
{
    char raw[4096];
    int n = vsnprintf(raw, sizeof(raw), fmt, ap);
    if (with_src && c->src[0] && n >= 0 && (size_t)n < sizeof(raw))
        snprintf(raw + n, sizeof(raw) - (size_t)n, " (%s)", c->src);
    pp_escape_text(raw, c->err, c->errlen);
    return rc;
}

static int usage(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = message(c, PP_CLI_USAGE, true, fmt, ap);
    va_end(ap);
    return rc;
}

static int fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = message(c, PP_CLI_FAIL, false, fmt, ap);
    va_end(ap);
    return rc;
}

static void *field(ctx *c, const pp_opt *o)
{
    return pp_opt_field(c->cfg, o);
}

static unsigned row_scope(const pp_opt *o)
{
    return o->scope ? o->scope : PP_SCOPE_MAIN;
}

static void build_variants(ctx *c)
{
    c->vars = xrealloc(NULL, 3 * pp_nopts * sizeof(*c->vars));
    for (size_t i = 0; i < pp_nopts; i++) {
        c->vars[c->nvars++] = (variant){i, false, pp_opts[i].name};
        if (pp_opts[i].alias)
            c->vars[c->nvars++] = (variant){i, false, pp_opts[i].alias};
        if (pp_opts[i].neg)
            c->vars[c->nvars++] = (variant){i, true, pp_opts[i].neg};
    }
}

static const variant *find_variant(ctx *c, const char *name)
{
    for (size_t i = 0; i < c->nvars; i++)
        if (strcmp(c->vars[i].name, name) == 0)
            return &c->vars[i];
    return NULL;
}

static size_t row_of(const char *name)
{
    for (size_t i = 0; i < pp_nopts; i++)
        if (strcmp(pp_opts[i].name, name) == 0)
            return i;
    abort();
}

static void add_notice(ctx *c, const char *notice)
{
    for (size_t i = 0; i < c->nnotices; i++)
        if (c->notices[i] == notice)
            return;
    if (c->nnotices < sizeof(c->notices) / sizeof(c->notices[0]))
        c->notices[c->nnotices++] = notice;
}

static bool parse_long(const char *s, long *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return false;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || end == s)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

/* Parses an int option value with the row's range; on error writes the usage message. */
static int parse_int_opt(ctx *c, const pp_opt *o, const char *val, int *out)
{
    char name[128];
    long v;
    pp_opt_display(o, name, sizeof(name));
    if (!parse_long(val, &v))
        return usage(c, "argument %s: invalid int value: '%s'", name, val);
    long lo = o->ranged ? o->min : INT_MIN, hi = o->ranged ? o->max : INT_MAX;
    if (v < lo || v > hi) {
        if (hi == INT_MAX)
            return usage(c, "argument %s: must be at least %ld (got %s)", name, lo, val);
        if (lo == INT_MIN)
            return usage(c, "argument %s: must be at most %ld (got %s)", name, hi, val);
        return usage(c, "argument %s: must be between %ld and %ld (got %s)", name, lo, hi, val);
    }
    *out = (int)v;
    return PP_CLI_OK;
}

static int add_pids(ctx *c, const pp_opt *o, const char *val)
{
    int **arr = field(c, o);
    size_t *n = (size_t *)((char *)c->cfg + o->cnt_off);
    char *copy = xstrdup(val);
    int rc = PP_CLI_OK;
    char *save = NULL;
    size_t len = strlen(copy);
    if (len == 0 || copy[0] == ',' || copy[len - 1] == ',' || strstr(copy, ",,"))
        rc = usage(c,
                   "argument --pids: invalid pid list '%s' (expected a comma-separated list "
                   "of positive integers)",
                   val);
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == PP_CLI_OK;
         tok = strtok_r(NULL, ",", &save)) {
        long v;
        if (!parse_long(tok, &v) || v <= 0 || v > INT_MAX) {
            rc = usage(c,
                       "argument --pids: invalid pid '%s' (expected a comma-separated list of "
                       "positive integers)",
                       tok);
            break;
        }
        *arr = xrealloc(*arr, (*n + 1) * sizeof(int));
        (*arr)[(*n)++] = (int)v;
    }
    free(copy);
    return rc;
}

static void clear_list(ctx *c, const pp_opt *o)
{
    size_t *n = (size_t *)((char *)c->cfg + o->cnt_off);
    if (o->kind == PP_OPT_STRLIST) {
        char ***arr = field(c, o);
        for (size_t i = 0; i < *n; i++)
            free((*arr)[i]);
        free(*arr);
        *arr = NULL;
    } else {
        int **arr = field(c, o);
        free(*arr);
        *arr = NULL;
    }
    *n = 0;
}

static int set_choice(ctx *c, const pp_opt *o, const char *val, const char **out)
{
    for (const pp_choice *ch = o->choices; ch->in; ch++) {
        if (strcmp(ch->in, val) == 0) {
            *out = ch->out ? ch->out : ch->in;
            if (ch->notice)
                add_notice(c, ch->notice);
            return PP_CLI_OK;
        }
    }
    char list[512];
    size_t n = 0;
    list[0] = '\0';
    for (const pp_choice *ch = o->choices; ch->in && n < sizeof(list); ch++)
        n += snprintf(list + n, sizeof(list) - n, "%s'%s'", n ? ", " : "", ch->in);
    char name[128];
    pp_opt_display(o, name, sizeof(name));
    return usage(c, "argument %s: invalid choice: '%s' (choose from %s)", name, val, list);
}

static void set_str(char **dst, const char *val)
{
    free(*dst);
    *dst = val ? xstrdup(val) : NULL;
}

/* Applies one value to row `row`. neg: the negative variant (--no-X) was used. on: for flags,
 * whether the flag is set (false: an env/config "false"). val: the value for value options. */
static int apply(ctx *c, size_t row, bool neg, bool on, const char *val, int level)
{
    const pp_opt *o = &pp_opts[row];
    if (level < c->level[row])
        return PP_CLI_OK;
    if (neg && !on && (o->kind == PP_OPT_CHOICE || o->kind == PP_OPT_PERF))
        return PP_CLI_OK; /* "no-<rt> = false": nothing to do */
    bool fresh = level > c->level[row];
    c->level[row] = (unsigned char)level;
    switch (o->kind) {
    case PP_OPT_FLAG:
        *(bool *)field(c, o) = on ? !o->inv : o->inv;
        return PP_CLI_OK;
    case PP_OPT_NEGFLAG:
        *(bool *)field(c, o) = neg ? !on : on;
        return PP_CLI_OK;
    case PP_OPT_COUNT: {
        int *v = field(c, o);
        if (fresh || !on)
            *v = 0;
        if (on)
            (*v)++;
        return PP_CLI_OK;
    }
    case PP_OPT_INT:
        return parse_int_opt(c, o, val, field(c, o));
    case PP_OPT_STR:
        set_str(field(c, o), val);
        return PP_CLI_OK;
    case PP_OPT_CHOICE: {
        const char *mapped = "disabled";
        if (!neg) {
            int rc = set_choice(c, o, val, &mapped);
            if (rc)
                return rc;
        }
        set_str(field(c, o), mapped);
        return PP_CLI_OK;
    }
    case PP_OPT_PERF: {
        pp_perf_mode *m = field(c, o);
        if (neg) {
            *m = PP_PERF_DISABLED;
            c->cfg->perf_fp_only = false;
            set_str(&c->cfg->perf_mode_given, NULL);
            return PP_CLI_OK;
        }
        const char *mapped;
        int rc = set_choice(c, o, val, &mapped);
        if (rc)
            return rc;
        if (strcmp(mapped, "perf-event") == 0)
            *m = PP_PERF_EVENT;
        else if (strcmp(mapped, "disabled") == 0 || strcmp(mapped, "none") == 0)
            *m = PP_PERF_DISABLED;
        else
            *m = PP_PERF_BPF;
        /* fp: frame pointers only (gProfiler's fp); dwarf, smart: the CFI unwinder, as bpf */
        c->cfg->perf_fp_only = strcmp(mapped, "fp") == 0;
        set_str(&c->cfg->perf_mode_given, val);
        return PP_CLI_OK;
    }
    case PP_OPT_INTLIST:
        if (fresh)
            clear_list(c, o);
        return add_pids(c, o, val);
    case PP_OPT_STRLIST: {
        if (fresh)
            clear_list(c, o);
        char ***arr = field(c, o);
        size_t *n = (size_t *)((char *)c->cfg + o->cnt_off);
        *arr = xrealloc(*arr, (*n + 1) * sizeof(char *));
        (*arr)[(*n)++] = xstrdup(val);
        return PP_CLI_OK;
    }
    case PP_OPT_NOOP_FLAG:
        c->noop_given[row] = on;
        return PP_CLI_OK;
    case PP_OPT_NOOP_ARG:
    case PP_OPT_NOOP_OPTARG: {
        if (val && o->ranged) {
            int dummy;
            int rc = parse_int_opt(c, o, val, &dummy);
            if (rc)
                return rc;
        }
        c->noop_given[row] = true;
        if (val && o->multi && !fresh && c->noop_val[row]) {
            size_t a = strlen(c->noop_val[row]), b = strlen(val);
            c->noop_val[row] = xrealloc(c->noop_val[row], a + b + 2);
            c->noop_val[row][a] = ',';
            memcpy(c->noop_val[row] + a + 1, val, b + 1);
        } else {
            set_str(&c->noop_val[row], val);
        }
        return PP_CLI_OK;
    }
    case PP_OPT_HELP:
    case PP_OPT_VERSION:
        return PP_CLI_OK;
    }
    return PP_CLI_OK;
}

static int parse_bool(const char *s, bool *out)
{
    static const char *const t[] = {"true", "yes", "1", "on"};
    static const char *const f[] = {"false", "no", "0", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, t[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, f[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Applies a textual value from the environment or the config file. */
static int apply_text(ctx *c, const variant *v, const char *text, int level)
{
    const pp_opt *o = &pp_opts[v->row];
    if (o->kind == PP_OPT_HELP || o->kind == PP_OPT_VERSION)
        return PP_CLI_OK;
    if (!pp_opt_takes_value(o) || v->neg) {
        bool on;
        if (parse_bool(text, &on) < 0)
            return usage(c,
                         "unexpected value '%s' for --%s: expecting 'true', 'false', 'yes', "
                         "'no', '1' or '0'",
                         text, v->name);
        return apply(c, v->row, v->neg, on, NULL, level);
    }
    size_t len = strlen(text);
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']' &&
        (o->kind == PP_OPT_STRLIST || o->kind == PP_OPT_INTLIST || o->multi)) {
        /* ConfigArgParse list syntax: [a, b] */
        char *copy = xstrdup(text + 1);
        copy[len - 2] = '\0';
        char *save = NULL;
        int rc = PP_CLI_OK;
        for (char *tok = strtok_r(copy, ",", &save); tok && rc == PP_CLI_OK;
             tok = strtok_r(NULL, ",", &save))
            rc = apply(c, v->row, false, true, trim(tok), level);
        free(copy);
        return rc;
    }
    return apply(c, v->row, false, true, text, level);
}

static void env_key(char *buf, size_t len, const char *prefix, const char *name)
{
    size_t n = (size_t)snprintf(buf, len, "%s", prefix);
    for (const char *p = name; *p && n + 1 < len; p++)
        buf[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    buf[n] = '\0';
}

static const char *env_get(char **envp, const char *key)
{
    size_t kl = strlen(key);
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, key, kl) == 0 && (*e)[kl] == '=')
            return *e + kl + 1;
    return NULL;
}

static int apply_env(ctx *c, char **envp, const char *prefix, int level)
{
    for (size_t i = 0; i < c->nvars; i++) {
        char key[128];
        env_key(key, sizeof(key), prefix, c->vars[i].name);
        const char *val = env_get(envp, key);
        if (!val)
            continue;
        snprintf(c->src, sizeof(c->src), "from environment variable %s", key);
        int rc;
        if (strcmp(key, "GPROFILER_DONT_SEND_LOGS") == 0)
            rc = apply(c, c->vars[i].row, false, true, NULL, level); /* any value */
        else if (!*val)
            continue;
        else
            rc = apply_text(c, &c->vars[i], val, level);
        if (rc)
            return rc;
    }
    c->src[0] = '\0';
    return PP_CLI_OK;
}

static int apply_config(ctx *c, const char *path, bool explicit)
{
    char why[1024];
    bool bad_kind;
    size_t len;
    char *text = pp_read_input_file(path, PP_CLI_MAX_CONFIG, "config file", &len, &bad_kind, why,
                                    sizeof(why));
    if (!text) {
        if (!explicit && errno == ENOENT && !bad_kind)
            return PP_CLI_OK;
        if (bad_kind)
            return usage(c, "%s; check the path given to --config", why);
        return fail(c, "%s; check the path given to --config", why);
    }
    int lineno = 0, rc = PP_CLI_OK;
    for (char *next = text, *line; rc == PP_CLI_OK && next < text + len;) {
        line = next;
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        if (nl)
            *nl = '\0';
        next = nl ? nl + 1 : text + len;
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';' || *s == '[')
            continue;
        snprintf(c->src, sizeof(c->src), "in config file %s line %d", path, lineno);
        size_t k = strcspn(s, "=:");
        char *val = s[k] ? trim(s + k + 1) : NULL;
        s[k] = '\0';
        char *key = trim(s);
        while (*key == '-')
            key++;
        for (char *p = key; *p; p++)
            if (*p == '_')
                *p = '-';
        const variant *v = find_variant(c, key);
        if (!v) {
            rc = usage(c, "unrecognized arguments: --%s; see --help", key);
            break;
        }
        if (!val) {
            if (pp_opt_takes_value(&pp_opts[v->row]) && !v->neg) {
                char name[128];
                pp_opt_display(&pp_opts[v->row], name, sizeof(name));
                rc = usage(c, "argument %s: expected one argument", name);
                break;
            }
            val = "true";
        }
        size_t vl = strlen(val);
        if (vl >= 2 && (val[0] == '"' || val[0] == '\'') && val[vl - 1] == val[0]) {
            val[vl - 1] = '\0';
            val++;
        }
        if (pp_opts[v->row].kind == PP_OPT_STR && strcmp(pp_opts[v->row].name, "config") == 0)
            continue; /* no nested config files */
        rc = apply_text(c, v, val, LVL_CONFIG);
    }
    free(text);
    if (rc == PP_CLI_OK)
        c->src[0] = '\0';
    return rc;
}

static void add_item(ctx *c, size_t row, bool neg, const char *val)
{
    if (c->nitems == c->items_cap) {
        c->items_cap = c->items_cap ? 2 * c->items_cap : 16;
        c->items = xrealloc(c->items, c->items_cap * sizeof(*c->items));
    }
    c->items[c->nitems++] = (item){row, neg, val};
}

/* Unknown or ambiguous long option at argv[idx]. */
static int bad_long(ctx *c, const char *arg, unsigned scope)
{
    const char *name = arg + 2;
    size_t nl = strcspn(name, "=");
    char matches[512];
    size_t n = 0, count = 0;
    matches[0] = '\0';
    for (size_t i = 0; i < c->nvars; i++) {
        if (!(row_scope(&pp_opts[c->vars[i].row]) & scope) ||
            strncmp(c->vars[i].name, name, nl) != 0)
            continue;
        count++;
        if (n < sizeof(matches))
            n += snprintf(matches + n, sizeof(matches) - n, "%s--%s", n ? ", " : "",
                          c->vars[i].name);
    }
    if (count > 1 && nl > 0)
        return usage(c, "ambiguous option: --%.*s could match %s", (int)nl, name, matches);
    /* the name only: a mistyped --token=... must not echo the value */
    return usage(c, "unrecognized arguments: --%.*s; see --help", (int)nl, name);
}

/* Parses argv for one parser scope into c->items. Returns PP_CLI_OK, PP_CLI_USAGE or
 * PP_CLI_EXIT_OK; *next is set to the index of the first positional argument. */
static int parse_argv(ctx *c, int argc, char **argv, unsigned scope, FILE *out, int *next)
{
    struct option *lo = xrealloc(NULL, (c->nvars + 1) * sizeof(*lo));
    size_t nlo = 0;
    char optstring[64] = "+:";
    size_t nos = 2;
    for (size_t i = 0; i < c->nvars; i++) {
        const pp_opt *o = &pp_opts[c->vars[i].row];
        if (!(row_scope(o) & scope))
            continue;
        int has = no_argument;
        if (!c->vars[i].neg && pp_opt_takes_value(o))
            has = o->kind == PP_OPT_NOOP_OPTARG ? optional_argument : required_argument;
        lo[nlo++] = (struct option){c->vars[i].name, has, NULL, VAL_BASE + (int)i};
        if (o->shortopt && !c->vars[i].neg && c->vars[i].name == o->name && nos + 3 < 64) {
            optstring[nos++] = o->shortopt;
            if (pp_opt_takes_value(o))
                optstring[nos++] = ':';
        }
    }
    optstring[nos] = '\0';
    lo[nlo] = (struct option){0};

    int rc = PP_CLI_OK, ch;
    optind = 0;
    opterr = 0;
    while (rc == PP_CLI_OK && (ch = getopt_long(argc, argv, optstring, lo, NULL)) != -1) {
        if (ch == '?') {
            if (optopt >= VAL_BASE) {
                const char *arg = argv[optind - 1];
                const char *eq = strchr(arg, '=');
                char name[128];
                pp_opt_display(&pp_opts[c->vars[optopt - VAL_BASE].row], name, sizeof(name));
                rc =
                    usage(c, "argument %s: ignored explicit argument '%s'", name, eq ? eq + 1 : "");
            } else if (optopt > 0) {
                rc = usage(c, "unrecognized arguments: -%c; see --help", optopt);
            } else {
                rc = bad_long(c, argv[optind - 1], scope);
            }
            break;
        }
        size_t vi = 0;
        if (ch == ':') {
            char name[128];
            if (optopt >= VAL_BASE)
                pp_opt_display(&pp_opts[c->vars[optopt - VAL_BASE].row], name, sizeof(name));
            else
                snprintf(name, sizeof(name), "-%c", optopt);
            for (size_t i = 0; optopt < VAL_BASE && i < pp_nopts; i++)
                if (pp_opts[i].shortopt == optopt)
                    pp_opt_display(&pp_opts[i], name, sizeof(name));
            rc = usage(c, "argument %s: expected one argument", name);
            break;
        }
        if (ch >= VAL_BASE) {
            vi = (size_t)(ch - VAL_BASE);
        } else {
            for (vi = 0; vi < c->nvars; vi++)
                if (pp_opts[c->vars[vi].row].shortopt == ch && !c->vars[vi].neg)
                    break;
            if (vi == c->nvars)
                abort();
        }
        const variant *v = &c->vars[vi];
        const pp_opt *o = &pp_opts[v->row];
        if (o->kind == PP_OPT_HELP) {
            pp_cli_print_help(out);
            rc = PP_CLI_EXIT_OK;
            break;
        }
        if (o->kind == PP_OPT_VERSION) {
            fprintf(out, "polyprof %s (gProfiler-compatible %s)\n", PP_VERSION,
                    PP_GPROFILER_COMPAT_VERSION);
            rc = PP_CLI_EXIT_OK;
            break;
        }
        const char *val = optarg;
        if (o->kind == PP_OPT_NOOP_OPTARG && !val && optind < argc && argv[optind][0] != '-' &&
            strcmp(argv[optind], "upload-file") != 0 &&
            strcmp(argv[optind], "extract-resources") != 0)
            val = argv[optind++];
        add_item(c, v->row, v->neg, val);
    }
    *next = optind;
    free(lo);
    return rc;
}

static int read_token_file(ctx *c)
{
    pp_config *cfg = c->cfg;
    char why[1024];
    bool bad_kind;
    size_t len;
    char *buf = pp_read_input_file(cfg->token_file, PP_CLI_MAX_SECRET_FILE, "--token-file", &len,
                                   &bad_kind, why, sizeof(why));
    if (!buf) {
        if (bad_kind)
            return usage(c, "%s", why);
        return fail(c, "%s; check the path and its permissions", why);
    }
    set_str(&cfg->token, trim(buf));
    memset(buf, 0, len);
    free(buf);
    return PP_CLI_OK;
}

/* --format: a comma list of col, pprof, collapsed-plain (repeats allowed; the .col is
 * always written). */
static int parse_output_format(ctx *c)
{
    pp_config *cfg = c->cfg;
    const char *s = cfg->output_format;
    while (s && *s) {
        size_t n = strcspn(s, ",");
        if (n == 3 && strncmp(s, "col", 3) == 0)
            ;
        else if (n == 5 && strncmp(s, "pprof", 5) == 0)
            cfg->output_pprof = true;
        else if (n == 15 && strncmp(s, "collapsed-plain", 15) == 0)
            cfg->output_plain = true;
        else
            return usage(c,
                         "--format: unknown format '%.*s'; give a comma list of col, "
                         "pprof, collapsed-plain",
                         (int)n, s);
        s += n + (s[n] == ',');
    }
    if ((cfg->output_pprof || cfg->output_plain) && !cfg->output_dir)
        return usage(c, "--format %s writes files beside the .col: give -o/--output-dir",
                     cfg->output_format);
    return PP_CLI_OK;
}

static int validate(ctx *c)
{
    pp_config *cfg = c->cfg;
    c->src[0] = '\0';
    if (cfg->command == PP_CMD_UPLOAD_FILE) {
        cfg->upload = true;
        if (!cfg->file_path || !*cfg->file_path)
            return usage(c, "upload-file: the following arguments are required: --file-path");
        if (cfg->resources_dest)
            return usage(c, "--resources-dest belongs to extract-resources, not upload-file");
    }
    if (cfg->command == PP_CMD_EXTRACT_RESOURCES) {
        if (!cfg->resources_dest || !*cfg->resources_dest)
            return usage(c, "extract-resources: the following arguments are required: "
                            "--resources-dest");
        if (cfg->file_path)
            return usage(c, "--file-path belongs to upload-file, not extract-resources");
        return PP_CLI_OK;
    }
    if (strcmp(cfg->profiling_mode, "allocation") != 0 && c->noop_given[row_of("alloc-interval")])
        return usage(c, "--alloc-interval is only allowed with --mode allocation");
    if (strcmp(cfg->profiling_mode, "allocation") == 0 &&
        c->level[row_of("profiling-frequency")] > LVL_DEFAULT)
        return usage(c, "-f/--profiling-frequency is not allowed with --mode allocation (it "
                        "applies to cpu profiling only)");
    if (cfg->upload) {
        if (!cfg->token || !*cfg->token)
            return usage(c, "--upload-results requires --token (or --token-file, or the "
                            "POLYPROF_TOKEN / GPROFILER_TOKEN environment variable)");
        if (!cfg->service_name || !*cfg->service_name)
            return usage(c, "--upload-results requires --service-name");
    }
    if (cfg->command == PP_CMD_PROFILE && !cfg->upload && !cfg->output_dir && !cfg->history_dir)
        return usage(c, "must provide either --output-dir (-o) or --upload-results (-u)");
    char why[512];
    if (pp_history_parse_opts(cfg, why, sizeof(why)) < 0)
        return usage(c, "%s", why);
    int frc = cfg->command == PP_CMD_PROFILE ? parse_output_format(c) : PP_CLI_OK;
    if (frc != PP_CLI_OK)
        return frc;
    if (cfg->pids && c->noop_given[row_of("profile-spawned-processes")])
        return usage(c, "--pids is not allowed together with --profile-spawned-processes");
    return PP_CLI_OK;
}

static void collect_noops(ctx *c)
{
    pp_config *cfg = c->cfg;
    size_t n = 0;
    for (size_t i = 0; i < pp_nopts; i++)
        n += c->noop_given[i];
    if (!n)
        return;
    cfg->named_options = xrealloc(NULL, n * sizeof(*cfg->named_options));
    for (size_t i = 0; i < pp_nopts; i++) {
        if (!c->noop_given[i])
            continue;
        cfg->named_options[cfg->nnamed_options++] =
            (pp_opt_value){xstrdup(pp_opts[i].name), c->noop_val[i]};
        c->noop_val[i] = NULL;
    }
}

static int parse_all(ctx *c, int argc, char **argv, char **envp, FILE *out)
{
    pp_config *cfg = c->cfg;
    int next = 0;
    int rc = parse_argv(c, argc, argv, PP_SCOPE_MAIN, out, &next);
    if (rc)
        return rc;
    bool upload = next < argc && strcmp(argv[next], "upload-file") == 0;
    if (upload || (next < argc && strcmp(argv[next], "extract-resources") == 0)) {
        cfg->command = upload ? PP_CMD_UPLOAD_FILE : PP_CMD_EXTRACT_RESOURCES;
        int base = next;
        rc = parse_argv(c, argc - base, argv + base, PP_SCOPE_SUB, out, &next);
        if (rc)
            return rc;
        next += base;
    }
    if (next < argc) {
        char list[512];
        size_t n = 0;
        list[0] = '\0';
        for (int i = next; i < argc && n < sizeof(list); i++)
            n += snprintf(list + n, sizeof(list) - n, "%s%s", n ? " " : "", argv[i]);
        return usage(c, "unrecognized arguments: %s; see --help", list);
    }

    /* config file: --config, POLYPROF_CONFIG, GPROFILER_CONFIG, else the default if present,
     * else gProfiler's default if present */
    const char *config = NULL;
    size_t config_row = row_of("config");
    for (size_t i = 0; i < c->nitems; i++)
        if (c->items[i].row == config_row)
            config = c->items[i].val;
    if (!config && !(config = env_get(envp, "POLYPROF_CONFIG")))
        config = env_get(envp, "GPROFILER_CONFIG");
    if (config && *config)
        rc = apply_config(c, config, true);
    else if (pp_cli_default_config_path && access(pp_cli_default_config_path, F_OK) == 0)
        rc = apply_config(c, pp_cli_default_config_path, false);
    else if (pp_cli_gprofiler_config_path && access(pp_cli_gprofiler_config_path, F_OK) == 0)
        rc = apply_config(c, pp_cli_gprofiler_config_path, false);
    if (rc)
        return rc;

    if ((rc = apply_env(c, envp, "GPROFILER_", LVL_GENV)) ||
        (rc = apply_env(c, envp, "POLYPROF_", LVL_PENV)))
        return rc;
    for (size_t i = 0; i < c->nitems; i++)
        if ((rc = apply(c, c->items[i].row, c->items[i].neg, true, c->items[i].val, LVL_CMDLINE)))
            return rc;

    if (cfg->token_file && *cfg->token_file &&
        c->level[row_of("token-file")] >= c->level[row_of("token")])
        if ((rc = read_token_file(c)))
            return rc;
    collect_noops(c);
    return validate(c);
}

int pp_cli_parse(int argc, char **argv, char **envp, FILE *out, pp_config *cfg, char *err,
                 size_t errlen)
{
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    memset(cfg, 0, sizeof(*cfg));
    pp_cli_table_init();
    pp_cli_set_defaults(cfg);
    ctx c = {.cfg = cfg, .err = err, .errlen = errlen};
    c.level = calloc(pp_nopts, 1);
    c.noop_val = calloc(pp_nopts, sizeof(char *));
    c.noop_given = calloc(pp_nopts, sizeof(bool));
    if (!c.level || !c.noop_val || !c.noop_given)
        abort();
    build_variants(&c);

    int rc = parse_all(&c, argc, argv, envp, out ? out : stdout);
    if (rc == PP_CLI_OK) {
        for (size_t i = 0; i < c.nnotices; i++)
            pp_info("%s", c.notices[i]);
        for (size_t i = 0; i < cfg->nnamed_options; i++) {
            size_t row = row_of(cfg->named_options[i].name);
            if (row < pp_nopts && pp_opts[row].driver_opt)
                continue;
            pp_info("option --%s is accepted for gProfiler compatibility and has no effect in "
                    "polyprof",
                    cfg->named_options[i].name);
        }
    }
    for (size_t i = 0; i < pp_nopts; i++)
        free(c.noop_val[i]);
    free(c.noop_val);
    free(c.noop_given);
    free(c.level);
    free(c.vars);
    free(c.items);
    return rc;
}
