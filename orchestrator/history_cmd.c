/* `polyprof history` (history_cmd.h): the merged profile of a window of the local history, written
 * as .col, HTML flame graph or pprof. */
#include "orchestrator/history_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/safefile.h"
#include "merge/collapsed.h"
#include "merge/header.h"
#include "merge/html.h"
#include "merge/pprof.h"
#include "orchestrator/history_store.h"
#include "orchestrator/history_time.h"

static const char usage_text[] =
    "usage: polyprof history --history-dir DIR -o FILE [--since T] [--until T] [--pid N]\n"
    "                        [--comm S] [--container S] [--runtime S] [--appid S]\n"
    "                        [--format col|html|pprof]\n"
    "\n"
    "Writes the merged profile of the sessions polyprof kept in DIR (polyprof --history-dir DIR)\n"
    "that overlap the window [--since, --until].\n"
    "\n"
    "  --history-dir DIR  the directory polyprof writes its history in\n"
    "  -o, --output FILE  the file to write ('-': standard output)\n"
    "  --format F         col (gProfiler collapsed stacks), html (flame graph page) or pprof\n"
    "                     (gzipped profile.proto); default from FILE's extension (.col, .html,\n"
    "                     .pb.gz/.pprof), else col\n"
    "  --since T          window start (default 1h): a time ago (30m, 1h, 2d, 1w), seconds\n"
    "                     since the epoch, or ISO 8601 (2026-11-27T10:00:00Z; no zone: UTC)\n"
    "  --until T          window end (default now), the same forms\n"
    "  --pid N            only process N\n"
    "  --comm S           only processes whose comm is S\n"
    "  --container S      only processes in container S ('' : not in a container)\n"
    "  --runtime S        only processes profiled by runtime profiler S ('system': by the system\n"
    "                     sampler)\n"
    "  --appid S          only processes with application id S\n"
    "  -h, --help         this text\n"
    "\n"
    "Exit codes: 0 written, 1 runtime failure, 2 bad usage.\n";

typedef enum { FMT_NONE, FMT_COL, FMT_HTML, FMT_PPROF } out_format;

typedef struct args {
    const char *dir, *out, *since, *until;
    out_format fmt;
    pp_history_filter f;
} args;

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "polyprof history: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nsee polyprof history --help\n");
    return 2;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static out_format format_named(const char *s)
{
    if (!strcmp(s, "col"))
        return FMT_COL;
    if (!strcmp(s, "html"))
        return FMT_HTML;
    if (!strcmp(s, "pprof"))
        return FMT_PPROF;
    return FMT_NONE;
}

/* Parses argv into a; 0, 2 (bad usage, said on stderr) or -1 (--help printed). */
static int parse(int argc, char **argv, args *a)
{
    enum { O_DIR = 256, O_SINCE, O_UNTIL, O_PID, O_COMM, O_CONTAINER, O_RUNTIME, O_APPID, O_FMT };
    static const struct option opts[] = {
        {"history-dir", required_argument, NULL, O_DIR},
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, O_FMT},
        {"since", required_argument, NULL, O_SINCE},
        {"until", required_argument, NULL, O_UNTIL},
        {"pid", required_argument, NULL, O_PID},
        {"comm", required_argument, NULL, O_COMM},
        {"container", required_argument, NULL, O_CONTAINER},
        {"runtime", required_argument, NULL, O_RUNTIME},
        {"appid", required_argument, NULL, O_APPID},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0; /* a fresh scan (the GNU reset) */
    opterr = 0;
    int ch;
    char *end;
    while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (ch) {
        case O_DIR:
            a->dir = optarg;
            break;
        case 'o':
            a->out = optarg;
            break;
        case O_FMT:
            if ((a->fmt = format_named(optarg)) == FMT_NONE)
                return bad_usage("--format: unknown format '%s'; give col, html or pprof", optarg);
            break;
        case O_SINCE:
            a->since = optarg;
            break;
        case O_UNTIL:
            a->until = optarg;
            break;
        case O_PID: {
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > INT_MAX)
                return bad_usage("--pid: '%s' is not a process id (a number from 1)", optarg);
            a->f.pid = (int)v;
            break;
        }
        case O_COMM:
            a->f.comm = optarg;
            break;
        case O_CONTAINER:
            a->f.container = optarg;
            break;
        case O_RUNTIME:
            a->f.runtime = optarg;
            break;
        case O_APPID:
            a->f.appid = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        case ':':
            return bad_usage("%s: expected one argument", argv[optind - 1]);
        default:
            return bad_usage("unrecognized argument %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad_usage("unrecognized argument %s", argv[optind]);
    if (!a->dir || !*a->dir)
        return bad_usage("%s", "give --history-dir DIR (the directory polyprof --history-dir "
                               "writes)");
    if (!a->out || !*a->out)
        return bad_usage("%s", "give -o FILE (the file to write; '-' for standard output)");
    if (a->fmt == FMT_NONE)
        a->fmt = ends_with(a->out, ".html")                                   ? FMT_HTML
                 : ends_with(a->out, ".pb.gz") || ends_with(a->out, ".pprof") ? FMT_PPROF
                                                                              : FMT_COL;
    time_t now = time(NULL);
    char err[512];
    if (pp_history_parse_time(a->since ? a->since : "1h", now, &a->f.since, err, sizeof(err)) < 0 ||
        pp_history_parse_time(a->until ? a->until : "now", now, &a->f.until, err, sizeof(err)) < 0)
        return bad_usage("%s", err);
    if (a->f.since > a->f.until)
        return bad_usage("%s", "--since is after --until: give a window that starts before it "
                               "ends");
    return 0;
}

/* The .col header of a history window. */
static json_t *window_header(const args *a, const pp_history_window *w)
{
    char since[32], until[32], first[32], last[32];
    pp_iso_time((time_t)a->f.since, since, sizeof(since));
    pp_iso_time((time_t)a->f.until, until, sizeof(until));
    pp_iso_time((time_t)w->first, first, sizeof(first));
    pp_iso_time((time_t)w->last, last, sizeof(last));
    return json_pack("{s:{s:s,s:s,s:s,s:s,s:I,s:s,s:I}}", "history", "since", since, "until", until,
                     "first_start", first, "last_end", last, "sessions", (json_int_t)w->sessions,
                     "hosts", w->hosts, "frequency", (json_int_t)w->hz);
}

static unsigned char *render(const args *a, const pp_profile *p, const pp_history_window *w,
                             size_t *len)
{
    pp_render_opts ro = {.app_metadata_enabled = true, .appids_enabled = true};
    if (a->fmt == FMT_PPROF) {
        pp_pprof_opts po = {.frequency = w->hz > 0 ? w->hz : 11,
                            .time_nanos = w->first * 1000000000LL,
                            .duration_nanos = (w->last - w->first) * 1000000000LL,
                            .appids_enabled = true};
        return pp_pprof_render(p, &po, len);
    }
    json_t *header = window_header(a, w);
    char *col = header ? pp_col_render(p, header, &ro, len) : NULL;
    json_decref(header);
    if (!col || a->fmt == FMT_COL)
        return (unsigned char *)col;
    char *html = pp_html_render(col, *len, &ro, len);
    free(col);
    return (unsigned char *)html;
}

static int write_out(const char *path, const unsigned char *data, size_t len)
{
    if (!strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "polyprof history: error: cannot write to standard output: %s\n",
                    strerror(errno));
            return 1;
        }
        return 0;
    }
    char *d = strdup(path), *b = strdup(path);
    int rc = 1;
    if (!d || !b) {
        fprintf(stderr, "polyprof history: error: out of memory\n");
        goto out;
    }
    int dfd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || pp_replace_file_at(dfd, basename(b), data, len, 0600) < 0)
        fprintf(stderr,
                "polyprof history: error: cannot write %s: %s; check that its directory exists "
                "and is writable\n",
                path, strerror(errno));
    else
        rc = 0;
    if (dfd >= 0)
        close(dfd);
out:
    free(d);
    free(b);
    return rc;
}

int pp_history_main(int argc, char **argv)
{
    args a = {0};
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    char err[1024];
    pp_history *h = pp_history_open(a.dir, false, NULL, err, sizeof(err));
    if (!h) {
        fprintf(stderr, "polyprof history: error: %s\n", err);
        return 1;
    }
    pp_history_window w;
    pp_profile *p = pp_history_query(h, &a.f, &w, err, sizeof(err));
    pp_history_close(h);
    if (!p) {
        fprintf(stderr, "polyprof history: error: %s\n", err);
        return 1;
    }
    size_t len = 0;
    unsigned char *data = render(&a, p, &w, &len);
    pp_profile_free(p);
    if (!data) {
        fprintf(stderr, "polyprof history: error: out of memory while rendering the profile\n");
        return 1;
    }
    rc = write_out(a.out, data, len);
    free(data);
    if (rc == 0 && strcmp(a.out, "-") != 0)
        fprintf(stderr, "polyprof history: %zu sessions in the window, written to %s\n", w.sessions,
                a.out);
    return rc;
}
