/* The .NET runtime's own files (runtimes/dotnet/): the nettrace stream parser (nettrace.c) and
 * the client of the runtime's diagnostics IPC protocol (ipc.c). For this folder and its tests
 * only. See docs/dotnet.md. */
#ifndef PP_DOTNET_H
#define PP_DOTNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <sys/types.h>

/* ---- nettrace.c: the EventPipe "nettrace" stream ---- */

/* Where a method event came from. */
enum pp_net_method_kind {
    PP_NET_METHOD_LOAD = 1, /* MethodLoadVerbose (Microsoft-Windows-DotNETRuntime, event 143) */
    PP_NET_METHOD_UNLOAD,   /* MethodUnloadVerbose (same provider, event 144) */
    PP_NET_METHOD_RUNDOWN,  /* MethodDCStartVerbose/MethodDCEndVerbose (the rundown provider,
                             * events 143/144): methods compiled before the session */
};

/* Longest text kept of each name part, in UTF-8 bytes (cut at a character boundary). */
#define PP_NET_NAME_MAX 512

/* One method event; the strings are valid UTF-8 with control characters replaced by '?', live
 * during the callback only. */
typedef struct pp_net_method {
    enum pp_net_method_kind kind;
    uint64_t start;   /* MethodStartAddress */
    uint32_t size;    /* MethodSize (bytes of code) */
    const char *ns;   /* MethodNamespace: the declaring type's full name, "PolyNet.Hot" */
    const char *name; /* MethodName: "HotA" */
    const char *sig;  /* MethodSignature: "void  (int32)" */
} pp_net_method;

typedef void (*pp_net_method_fn)(void *arg, const pp_net_method *m);

typedef struct pp_nettrace_stats {
    uint64_t bytes;     /* consumed */
    uint64_t blocks;    /* block objects read */
    uint64_t events;    /* event blobs read (metadata included) */
    uint64_t methods;   /* callbacks made */
    uint64_t malformed; /* method or metadata events skipped as malformed */
    int pointer_size;   /* the Trace object's, 0 before it */
    int pid;            /* the Trace object's ProcessId */
    size_t buffer;      /* bytes of the stream buffer allocated now */
} pp_nettrace_stats;

typedef struct pp_nettrace pp_nettrace;

/* A parser that calls fn for every method event of the stream. NULL on OOM. */
pp_nettrace *pp_nettrace_new(pp_net_method_fn fn, void *arg);
void pp_nettrace_free(pp_nettrace *p);

/* Appends len bytes of the stream (any split: the parser keeps what does not yet complete an
 * object, at most one block of PP_NETTRACE_MAX_BLOCK bytes, checked on its declared size; the
 * buffer shrinks back to 64 KiB after a larger one) and parses what is complete. 0, or -1 once
 * the stream is malformed (then and after: pp_nettrace_error says why). The runtime writes
 * blocks of about 100 KB at most (the committed 3.1 capture's largest: 68,653 bytes). */
#define PP_NETTRACE_MAX_BLOCK (1u << 20)
int pp_nettrace_push(pp_nettrace *p, const void *buf, size_t len);

/* True once the stream's end (its null-reference tag) was read. */
bool pp_nettrace_done(const pp_nettrace *p);
/* The error message, "" while there is none. */
const char *pp_nettrace_error(const pp_nettrace *p);
const pp_nettrace_stats *pp_nettrace_get_stats(const pp_nettrace *p);

/* UTF-16LE bytes s[0..n) (n even) to UTF-8 in out (cap >= 1, NUL-terminated, cut before a
 * character that does not fit whole): unpaired surrogates become U+FFFD, control characters
 * '?'. Returns the length written. */
size_t pp_net_utf16_to_utf8(const uint8_t *s, size_t n, char *out, size_t cap);

/* ---- ipc.c: the runtime's diagnostics IPC protocol ---- */

/* EventPipe providers and keywords */
#define PP_NET_PROVIDER_RUNTIME "Microsoft-Windows-DotNETRuntime"
#define PP_NET_PROVIDER_RUNDOWN "Microsoft-Windows-DotNETRuntimeRundown"
#define PP_NET_KW_LOADER 0x8ull
#define PP_NET_KW_JIT 0x10ull
/* the rundown provider's keywords dotnet-trace enables (Loader, Jit, NGen, EndRundown, …) */
#define PP_NET_KW_RUNDOWN 0x80020139ull
#define PP_NET_LEVEL_VERBOSE 5

typedef struct pp_net_provider {
    const char *name; /* ASCII */
    uint64_t keywords;
    uint32_t level;
} pp_net_provider;

/* The message header's size and the largest message built here. */
#define PP_NET_IPC_HEADER 20
#define PP_NET_IPC_MAX_MSG 4096

/* The CollectTracing (0x0202) message: circular buffer of buffer_mb MiB, format NetTrace, the
 * providers (no filter data). Its length, or 0 when it does not fit in cap. */
size_t pp_net_ipc_collect_msg(uint8_t *out, size_t cap, uint32_t buffer_mb,
                              const pp_net_provider *prov, int nprov);
/* The StopTracing (0x0201) message of session. Its length (28). */
size_t pp_net_ipc_stop_msg(uint8_t out[28], uint64_t session);

/* A reply's header (PP_NET_IPC_HEADER bytes): *payload gets the payload's length (at most 64);
 * 0 for OK, 1 for an error reply (its payload is an HRESULT), -1 with a message in err (a bad
 * magic or size, an unknown reply). */
int pp_net_ipc_parse_reply(const uint8_t hdr[PP_NET_IPC_HEADER], size_t *payload, char *err,
                           size_t errlen);

/* The value of TMPDIR in an environ text (NUL-separated entries, n bytes) as the runtime takes it
 * for its socket: an absolute path without its trailing slashes, "/tmp" when unset, empty,
 * relative, longer than len - 1 or holding a control byte (< 0x20, 0x7f: it would reach the
 * log; such a target's socket is not found). */
void pp_net_tmpdir_from_environ(const char *env, size_t n, char *out, size_t len);

/* The target's diagnostics socket name in its TMPDIR: "dotnet-diagnostic-<pid in its own
 * namespace>-<start time in clock ticks>-socket", what the runtime names it. dir gets the
 * TMPDIR (inside the target's root). 0, or -1 with errno and a message (the process is gone). */
int pp_net_socket_name(int pid, char *dir, size_t dirlen, char *name, size_t namelen, char *err,
                       size_t errlen);

/* One EventPipe session of a target, streaming on its own connection. */
typedef struct pp_net_session {
    int pid;
    int fd; /* the streaming connection, -1 once closed */
    uint64_t id;
    char dir[256], name[96]; /* where the socket is: the stop connects there again */
} pp_net_session;

/* A descriptor that, once readable, cancels the calling thread's connects, sends, replies and
 * rundowns here (errno ECANCELED, polled only, never read); -1: none (the default). */
void pp_net_set_cancel_fd(int fd);

/* Connects to pid's diagnostics socket (only if it is owned by the target's user and served by
 * the target: base/peersock.h), sends CollectTracing and reads the reply. 0 with s filled, or
 * -1 with errno and a message in err; nothing stays open then. */
int pp_net_session_start(int pid, const pp_net_provider *prov, int nprov, uint32_t buffer_mb,
                         double deadline, pp_net_session *s, char *err, size_t errlen);
/* Reads what the stream has (waiting until deadline for the first byte): the bytes read, 0 at
 * the stream's end, -1 with errno (ETIMEDOUT). */
ssize_t pp_net_session_read(pp_net_session *s, void *buf, size_t len, double deadline);
/* Sends StopTracing on a new connection and reads its reply; the runtime writes the rest of the
 * stream (the rundown on 3.1) and then replies and closes the stream: the stream must be read
 * meanwhile (another thread), or use the two steps below. 0, or -1 with a message in err. */
int pp_net_session_stop(pp_net_session *s, double deadline, char *err, size_t errlen);
/* pp_net_session_stop in two steps, for a caller that reads the stream meanwhile (the runtime
 * answers once the rest of the stream, the rundown, is written): the stop connection's descriptor
 * once the message is sent (-1 with a message), then its reply (the descriptor closed). */
int pp_net_session_stop_send(pp_net_session *s, double deadline, char *err, size_t errlen);
int pp_net_session_stop_reply(pp_net_session *s, int fd, double deadline, char *err, size_t errlen);
/* Closes the streaming connection (a runtime whose stream cannot be written ends the session). */
void pp_net_session_close(pp_net_session *s);

/* The methods compiled in pid before now: a session of the runtime provider (JIT | Loader,
 * verbose) and the rundown provider started and stopped at once, its stream read to its end
 * into p (the rundown comes at the stop). 0 once the stream ended, -1 with a message in err;
 * its connection is closed either way. journal (NULL: none) is called with the session's id
 * once it is open and with 0 once the runtime acknowledged its StopTracing (sent twice if the
 * first could not be); when that never came, the caller is to stop the id later. */
int pp_net_rundown(int pid, pp_nettrace *p, double timeout_s, void (*journal)(void *, uint64_t),
                   void *jarg, char *err, size_t errlen);

/* ---- journal.c: sessions a killed polyprof left open ---- */

typedef struct pp_net_jent {
    int pid;
    unsigned long long start; /* its start time (clock ticks): the same process */
    uint64_t id;              /* the EventPipe session */
} pp_net_jent;

/* The entries of a journal text (at most max; malformed lines are skipped). */
size_t pp_net_journal_parse(const char *text, pp_net_jent *out, size_t max);
/* Replaces the journal with these n entries (logged at INFO when it cannot). */
void pp_net_journal_write(const pp_net_jent *e, size_t n);
/* Sends StopTracing for every journaled session whose process still runs (the same start time),
 * then empties the journal. Returns how many were stopped. */
int pp_net_stop_orphans(void);

/* ---- metadata.c ---- */

/* The runtime's version from the path of its libcoreclr.so (".../3.1.23/libcoreclr.so" ->
 * "3.1.23"); false when the directory is not a version. */
bool pp_net_version_from_path(const char *path, char *out, size_t len);
/* The descriptor's metadata: {"dotnet_version": ...} when the runtime's version is known, else {}.
 */
json_t *pp_dotnet_metadata(int pid);

/* ---- builtin.c: --dotnet-mode builtin ---- */

/* The frame text of a method: "Namespace.Class.Method(args)_[net]" (args: the signature from its
 * '(' on). Its length (cut to len - 1). */
size_t pp_net_frame_name(const pp_net_method *m, char *out, size_t len);

struct pp_runtime_ctx;
struct pp_proc;
void pp_dotnet_session_begin(const struct pp_runtime_ctx *ctx, const struct pp_proc *procs,
                             size_t n);
void pp_dotnet_at_exit(const struct pp_runtime_ctx *ctx);
void pp_dotnet_at_start(void);

/* ---- bundle.c: single-file apps ---- */

/* The bundle marker's signature (the 32 bytes after the header offset). */
extern const uint8_t pp_net_bundle_signature[32];

/* Whether the open file is a .NET single-file app (its apphost's bundle marker holds the offset
 * of a bundle header inside the file): 1 yes, 0 no (also an apphost that is not a bundle), -1
 * not an ELF file or unreadable. Reads at most 16 MiB of its writable segments. */
int pp_net_bundle_check_fd(int fd);

/* appid.c: the main assembly's appid (runtimes/appid.h's rule type). */
char *pp_appid_dotnet(char *const *argv, int argc, const char *cwd, const char *root);

#endif
