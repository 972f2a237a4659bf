/* The Node.js runtime's functions used outside its folder's files (tests included). */
#ifndef PP_NODE_H
#define PP_NODE_H

#include <stdbool.h>
#include <stddef.h>

/* "nodejs: <arg> (path)": the first argument after argv[0] ending in .js, skipping -r X,
 * --require X and --require=X. */
char *pp_appid_node(char *const *argv, int argc, const char *cwd, const char *root);

/* ---- /proc parsers (nodeproc.c) ---- */

/* Whether the SigCgt mask of a /proc/<pid>/status text has sig caught: 1, 0, or -1 when the
 * text has no valid mask. */
int pp_node_sig_caught(const char *status, int sig);
/* The process's pid in its own pid namespace (last NSpid field, else Pid), -1 if absent. */
int pp_node_nspid(const char *status);

/* A listening TCP socket. */
typedef struct pp_node_listener {
    unsigned long long inode;
    int port;
    bool v6;
    char addr[48]; /* where to connect: 127.0.0.1 for a v4 wildcard, ::1 for v6 wildcard or
                      loopback; "" for a v6 address that is neither */
} pp_node_listener;
/* The listening sockets of a /proc/<pid>/net/tcp (v6: tcp6) text, at most max. */
size_t pp_node_parse_listeners(const char *text, bool v6, pp_node_listener *out, size_t max);
/* The listening TCP sockets pid owns (its fds), read from its own network namespace's tables. */
size_t pp_node_listeners(int pid, pp_node_listener *out, size_t max);

/* Node options of a command line (and NODE_OPTIONS) that the attach cares about. */
typedef struct pp_node_flags {
    int port;              /* the inspector's port: --inspect[-brk|-wait]=, --inspect-port; 9229 */
    bool inspect_at_start; /* --inspect, --inspect-brk, --inspect-wait (with or without =) */
    bool disable_sigusr1;  /* --disable-sigusr1 */
    bool perf_basic_prof;  /* --perf-basic-prof[-only-functions]: writes its own perf map */
    bool perf_prof;        /* --perf-prof: writes a jitdump */
} pp_node_flags;
/* Options before the script (node's own), NODE_OPTIONS first; node_options may be NULL. */
void pp_node_parse_flags(char *const *argv, int argc, const char *node_options, pp_node_flags *f);
/* pp_node_parse_flags of pid's /proc cmdline and environ. 0, or -1 (gone). */
int pp_node_read_flags(int pid, pp_node_flags *f);

/* ---- the DevTools protocol (cdp.c) ---- */

/* Connects to the inspector listening on addr:port inside the network namespace of netns_pid
 * (0: polyprof's own), from a thread that enters it; reads /json/list, opens the first target's
 * WebSocket and evaluates each of exprs in turn (Runtime.evaluate, returnByValue; a promise is
 * awaited), storing each result's value as a string (JSON of the value, malloc'd;
 * {"exception":"<description>"} if it threw; NULL if the connection closed before the reply) in
 * results[i]. Returns how many results arrived, or -1 with err set (connection failed or the
 * deadline, monotonic seconds, passed). */
int pp_cdp_evaluate(int netns_pid, const char *addr, int port, const char *const *exprs, size_t n,
                    char **results, double deadline, char *err, size_t errlen);
/* The value in a DevTools message replying to the call want_id (*match: it is that reply, not
 * an event or another reply): its value as JSON text, {"exception":"<description>"} if it threw;
 * NULL when not a reply with a result. malloc'd. */
char *pp_cdp_reply_value(const char *msg, size_t len, long want_id, bool *match);
/* The webSocketDebuggerUrl path ("/<uuid>") of the first target of a /json/list body. */
int pp_cdp_ws_path(const char *body, size_t len, char *out, size_t outlen);

/* ---- the inspector (inspector.c) ---- */

/* Whether pid shares polyprof's namespace ns ("net", "mnt"). */
bool pp_node_same_ns(int pid, const char *ns);
/* Evaluates js in pid's inspector: the user's if it listens on f->port (left open), else one
 * opened with SIGUSR1 (start: pid's start time, checked right before the signal), which is
 * closed again once Node's event loop has turned and verified closed (an ERROR naming the pid
 * when it cannot be). nspid: pid in its own namespace (JavaScript's process.pid). js's result
 * in *answer (malloc'd JSON text, or NULL). 0, or -1 with err. */
int pp_node_inspect(int pid, unsigned long long start, int nspid, const pp_node_flags *f,
                    const char *js, char **answer, char *err, size_t errlen);

/* ---- attach-maps (attach.c) ---- */

typedef struct pp_runtime_ctx pp_runtime_ctx;
typedef struct pp_profile pp_profile;
typedef struct pp_proc pp_proc;
/* "v20.20.2" from pid's executable (its "node.js/v..." literal). 0, or -1. */
int pp_node_exe_version(int pid, char *out, size_t len);
/* The descriptor's hooks. */
void pp_node_session_begin(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n);
int pp_node_hook_stacks(const pp_runtime_ctx *ctx, pp_profile *out);
void pp_node_at_exit(const pp_runtime_ctx *ctx);

#endif
