/* JVM flags and version text from attach output: see jvminfo.h. */
#include "runtimes/java/jvminfo.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/safefile.h"

static pcre2_code *flag_re;
static pthread_once_t flag_once = PTHREAD_ONCE_INIT;

static void compile_flag_re(void)
{
    int ec;
    PCRE2_SIZE eo;
    flag_re = pcre2_compile((PCRE2_SPTR) "(\\S+)\\s+(\\S+)\\s+(:)?= (\\S*)\\s+\\{(.+?)\\}"
                                         "(?:\\s*\\{(.*)\\})?",
                            PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_kind(char **kinds, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kinds[i], k) == 0)
            return true;
    return false;
}

static char *group(const char *line, const PCRE2_SIZE *ov, int g)
{
    if (ov[2 * g] == PCRE2_UNSET)
        return NULL;
    return strndup(line + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
}

/* A JSON string of text the JVM gave (untrusted: any process can answer in its place, and the
 * JVM's own text is the application's): at most PP_JVM_TEXT_MAX bytes, every byte that is not
 * printable ASCII (newlines, control bytes, invalid UTF-8) written as \xNN. */
static json_t *clean_string(const char *s)
{
    char buf[PP_JVM_TEXT_MAX + 1];
    pp_escape_text(s, buf, sizeof(buf));
    return json_string(buf);
}

/* One flag object, or NULL when the line is not a flag or is filtered out. */
static json_t *parse_line(const char *line, size_t len, pcre2_match_data *md,
                          pp_jvm_flags_mode mode)
{
    if (pcre2_match(flag_re, (PCRE2_SPTR)line, len, 0, 0, md, NULL) < 0)
        return NULL;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    char *type = group(line, ov, 1), *name = group(line, ov, 2), *colon = group(line, ov, 3);
    char *value = group(line, ov, 4), *kind = group(line, ov, 5), *origin = group(line, ov, 6);
    json_t *flag = NULL;
    char *kinds[32];
    size_t nk = 0;
    if (!type || !name || !value || !kind)
        goto out;
    if (!origin) /* JDK 8 */
        origin = strdup(colon ? "non-default" : "default");
    for (char *save = NULL, *t = strtok_r(kind, " \t", &save); t && nk < 32;
         t = strtok_r(NULL, " \t", &save))
        kinds[nk++] = t;
    qsort(kinds, nk, sizeof(*kinds), cmp_str);
    if (!origin || strcmp(type, "ccstr") == 0 || strcmp(type, "ccstrlist") == 0 ||
        has_kind(kinds, nk, "manageable"))
        goto out;
    if (mode == PP_JVM_FLAGS_DEFAULT &&
        (strcmp(origin, "default") == 0 || has_kind(kinds, nk, "notproduct") ||
         has_kind(kinds, nk, "pd") || has_kind(kinds, nk, "develop")))
        goto out;
    json_t *ka = json_array();
    for (size_t i = 0; i < nk; i++)
        json_array_append_new(ka, clean_string(kinds[i]));
    flag = json_pack("{s:o, s:o, s:o, s:o, s:o}", "name", clean_string(name), "type",
                     clean_string(type), "value", clean_string(value), "origin",
                     clean_string(origin), "kind", ka);
out:
    free(type);
    free(name);
    free(colon);
    free(value);
    free(kind);
    free(origin);
    return flag;
}

static int by_name(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return strcmp(json_string_value(json_object_get(x, "name")),
                  json_string_value(json_object_get(y, "name")));
}

json_t *pp_jvm_flags_parse(const char *text, pp_jvm_flags_mode mode)
{
    json_t *arr = json_array();
    if (!arr || mode == PP_JVM_FLAGS_NONE || !text)
        return arr;
    pthread_once(&flag_once, compile_flag_re);
    pcre2_match_data *md = flag_re ? pcre2_match_data_create_from_pattern(flag_re, NULL) : NULL;
    if (!md)
        return arr;
    size_t n = 0, cap = 0;
    json_t **flags = NULL;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (n >= PP_JVM_FLAGS_MAX) /* far more than HotSpot has (about 1,000 with -all) */
            break;
        json_t *f = len < 4096 ? parse_line(p, len, md, mode) : NULL;
        if (f) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                json_t **nf = realloc(flags, nc * sizeof(*nf));
                if (!nf) {
                    json_decref(f);
                    break;
                }
                flags = nf;
                cap = nc;
            }
            flags[n++] = f;
        }
        p += len + (nl ? 1 : 0);
    }
    pcre2_match_data_free(md);
    if (n)
        qsort(flags, n, sizeof(*flags), by_name);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, flags[i]);
    free(flags);
    return arr;
}

/* Value of a Java properties line "key=value" (escapes undone), malloc'd, or NULL. */
static char *prop(const char *props, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = props; p && *p;) {
        const char *nl = strchr(p, '\n');
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *v = p + kl + 1, *e = nl ? nl : v + strlen(v);
            char *out = malloc((size_t)(e - v) + 1), *o = out;
            if (!out)
                return NULL;
            for (const char *s = v; s < e; s++) {
                if (*s == '\r')
                    continue;
                if (*s == '\\' && s + 1 < e) {
                    s++;
                    *o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
                } else {
                    *o++ = *s;
                }
            }
            *o = '\0';
            return out;
        }
        p = nl ? nl + 1 : NULL;
    }
    return NULL;
}

/* prop() made safe for metadata: bounded (PP_JVM_TEXT_MAX) and escaped as clean_string does
 * (an escaped "\n" in a value is a newline by now: it is written \x0a); malloc'd, or NULL. */
static char *clean_prop(const char *props, const char *key)
{
    char *v = prop(props, key);
    if (!v)
        return NULL;
    char *out = malloc(PP_JVM_TEXT_MAX + 1);
    if (out)
        pp_escape_text(v, out, PP_JVM_TEXT_MAX + 1);
    free(v);
    return out;
}

char *pp_java_version_from_props(const char *props)
{
    char *ver = clean_prop(props, "java.version"), *date = clean_prop(props, "java.version.date");
    char *rtname = clean_prop(props, "java.runtime.name");
    char *rtver = clean_prop(props, "java.runtime.version");
    char *vmname = clean_prop(props, "java.vm.name"), *vmver = clean_prop(props, "java.vm.version");
    char *vminfo = clean_prop(props, "java.vm.info");
    char *vendor = clean_prop(props, "java.vendor.version");
    char *out = NULL;
    if (ver && vmname) {
        const char *launcher = rtname && strstr(rtname, "OpenJDK") ? "openjdk" : "java";
        bool lts = rtver && strstr(rtver, "-LTS");
        char vend[160] = "";
        if (vendor && *vendor)
            snprintf(vend, sizeof(vend), " %s", vendor);
        char line1[256], line2[512], line3[640];
        snprintf(line1, sizeof(line1), "%s version \"%s\"%s%s%s", launcher, ver, date ? " " : "",
                 date ? date : "", lts ? " LTS" : "");
        snprintf(line2, sizeof(line2), "%s%s (build %s)", rtname ? rtname : "Java(TM) SE", vend,
                 rtver ? rtver : ver);
        snprintf(line3, sizeof(line3), "%s%s (build %s%s%s)", vmname, vend, vmver ? vmver : ver,
                 vminfo && *vminfo ? ", " : "", vminfo ? vminfo : "");
        if (asprintf(&out, "%s\n%s\n%s", line1, line2, line3) < 0)
            out = NULL;
    }
    free(ver);
    free(date);
    free(rtname);
    free(rtver);
    free(vmname);
    free(vmver);
    free(vminfo);
    free(vendor);
    return out;
}

int pp_java_major(const char *version)
{
    char *end;
    long a = strtol(version, &end, 10);
    if (end == version || a <= 0)
        return -1;
    if (a == 1 && *end == '.') {
        long b = strtol(end + 1, &end, 10);
        return b > 0 ? (int)b : -1;
    }
    return (int)a;
}
