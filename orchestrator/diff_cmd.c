#include "orchestrator/diff_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/safefile.h"
#include "merge/diff.h"

#define DEFAULT_TOP 10
#define MAX_TOP 1000

static const char USAGE[] = "usage: polyprof diff BASE.col TARGET.col [-o OUT.html] [--top N]\n";

static const char HELP[] =
    "Compares two profiles (.col files written by polyprof or gProfiler, or plain collapsed\n"
    "text): each function's share of its profile's samples in TARGET minus its share in BASE.\n"
    "Prints the functions whose share grew and shrank most, and with -o writes a differential\n"
    "flame graph page: the flame graph of TARGET, each frame red when its share grew, blue when\n"
    "it shrank (deeper for a larger change), both profiles' counts on hover.\n"
    "\n"
    "  -o, --output OUT.html  write the differential flame graph page to OUT.html\n"
    "  --top N                rows in each table (default 10, at most 1000)\n"
    "  -h, --help             show this help\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("polyprof diff: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    fputs(USAGE, stderr);
    return 2;
}

/* The value of option opt at argv[*i] ("--top N", "--top=N", "-oX"); NULL when missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *arg, size_t optlen)
{
    if (arg[optlen] == '=')
        return arg + optlen + 1;
    if (arg[optlen])
        return arg[1] != '-' ? arg + optlen : NULL; /* "-oX"; "--topX" is no option */
    return *i + 1 < argc ? argv[++*i] : NULL;
}

/* Reads and parses one profile. 0, or the exit code with the message printed. */
static int load(const char *path, const char *what, pp_stackset *s)
{
    char err[1024];
    size_t len;
    bool usage;
    char *text = pp_read_input_file(path, PP_DIFF_MAX_FILE, what, &len, &usage, err, sizeof(err));
    if (!text) {
        fprintf(stderr, "polyprof diff: error: %s%s\n", err,
                usage ? "" : "; check the path and its permissions");
        return usage ? 2 : 1;
    }
    int rc = pp_stackset_parse_col(s, text, len, err, sizeof(err));
    free(text);
    if (rc == -1) {
        fprintf(stderr, "polyprof diff: error: out of memory reading %s %s\n", what, path);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr,
                "polyprof diff: error: %s %s is not a collapsed profile: %s; give a .col file "
                "written by polyprof or gProfiler, or plain collapsed text\n",
                what, path, err);
        return 2;
    }
    if (pp_stackset_total(s) == 0) {
        fprintf(stderr,
                "polyprof diff: error: %s %s holds no samples: there is nothing to compare; "
                "give a profile of a session that sampled something\n",
                what, path);
        return 1;
    }
    return 0;
}

/* Writes the page to path (a new file replaces it by a rename; a link there is replaced, never
 * written through). 0, or 1 with the message printed. */
static int write_page(const char *path, const char *page, size_t len)
{
    char *copy = strdup(path);
    if (!copy) {
        fprintf(stderr, "polyprof diff: error: out of memory\n");
        return 1;
    }
    char *slash = strrchr(copy, '/');
    const char *dir = ".", *name = copy;
    if (slash) {
        *slash = '\0';
        dir = slash == copy ? "/" : copy;
        name = slash + 1;
    }
    int rc = 0;
    int dfd = *name ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (!*name) {
        fprintf(stderr, "polyprof diff: error: -o %s names a directory; give a file name\n", path);
        rc = 1;
    } else if (dfd < 0 || pp_replace_file_at(dfd, name, page, len, 0600) < 0) {
        fprintf(stderr,
                "polyprof diff: error: cannot write %s: %s; check that its directory exists "
                "and is writable\n",
                path, strerror(errno));
        rc = 1;
    }
    if (dfd >= 0)
        close(dfd);
    free(copy);
    return rc;
}

int pp_diff_main(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *out = NULL;
    int nfiles = 0;
    long top = DEFAULT_TOP;
    bool opts = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            fputs(USAGE, stdout);
            fputs(HELP, stdout);
            return 0;
        } else if (opts && strcmp(a, "--") == 0) {
            opts = false;
        } else if (opts && (strncmp(a, "-o", 2) == 0 || strncmp(a, "--output", 8) == 0) &&
                   (a[1] == 'o' || a[8] == '\0' || a[8] == '=')) {
            if (!(out = opt_value(argc, argv, &i, a, a[1] == 'o' ? 2 : 8)) || !*out)
                return usage_error("%s needs a file name", a);
        } else if (opts && strncmp(a, "--top", 5) == 0 && (a[5] == '\0' || a[5] == '=')) {
            const char *v = opt_value(argc, argv, &i, a, 5);
            char *end = NULL;
            errno = 0;
            top = v ? strtol(v, &end, 10) : 0;
            if (!v || !*v || *end || errno || top < 1 || top > MAX_TOP)
                return usage_error("--top needs a number of rows from 1 to 1000, not '%s'",
                                   v ? v : "");
        } else if (opts && a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (nfiles < 2) {
            files[nfiles++] = a;
        } else {
            return usage_error("one profile too many: '%s' (give BASE and TARGET)", a);
        }
    }
    if (nfiles < 2)
        return usage_error("%s", nfiles ? "give TARGET, the profile to compare with BASE"
                                        : "give BASE and TARGET, the two profiles to compare");

    pp_stackset *base = pp_stackset_new(), *target = pp_stackset_new();
    pp_diff *d = NULL;
    char *page = NULL;
    size_t plen = 0;
    int rc = !base || !target ? 1 : load(files[0], "base profile", base);
    if (rc == 0)
        rc = load(files[1], "target profile", target);
    if (rc == 0 && (!(d = pp_diff_compute(base, target)) ||
                    (out && !(page = pp_diff_render_html(base, target, d, (size_t)top, &plen))))) {
        fprintf(stderr, "polyprof diff: error: out of memory comparing the profiles\n");
        rc = 1;
    }
    if (rc == 0 && out)
        rc = write_page(out, page, plen);
    if (rc == 0) {
        pp_diff_write_table(d, (size_t)top, stdout);
        if (out)
            printf("Differential flame graph: %s\n", out);
        if (fflush(stdout) != 0)
            rc = 1;
    }
    free(page);
    pp_diff_free(d);
    pp_stackset_free(base);
    pp_stackset_free(target);
    return rc;
}
