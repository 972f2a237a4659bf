/* HotSpot dynamic attach client: what jcmd and jattach speak,
 * in-process, so polyprof never starts a java/jcmd/jattach process.
 *
 * The JVM is found by its host pid. Its namespace pid (last NSpid field of /proc/<pid>/status)
 * names the socket `/tmp/.java_pid<nspid>`, opened (O_PATH) inside the JVM's root directory
 * through /proc/<pid>/root (so mount namespaces need no setns, and a container's symlinks
 * cannot lead to a host socket) and connected to as /proc/self/fd/<fd> (short: no sun_path
 * limit) only when it is a socket owned by the JVM's effective uid, and used only when the
 * listener's SO_PEERCRED names the JVM's pid (base/peersock.h: a socket another user bound at
 * that predictable path before the JVM gets an error, and nothing is sent to it). When the
 * socket is missing, the attach listener is started the way jcmd does it: a
 * trigger file `.attach_pid<nspid>` in the JVM's cwd (else its /tmp), SIGQUIT, then polling for the
 * socket (20, 40, 60 … ms, at most ~6 s, stopping early if the process is gone), and the trigger
 * is removed. SIGQUIT is only sent to a JVM whose SigCgt has SIGQUIT (its handler is installed;
 * a JVM in its first moments or run with -Xrs would die or dump threads) and whose command line
 * does not disable the attach mechanism.
 *
 * HotSpot (JDK 11+; verified on 17 and 25, also when the JVM runs as another user) accepts a
 * peer whose euid is root or matches its own, and a trigger file owned by root or by its euid.
 * The trigger file is given to the JVM's user. When the JVM closes the connection without an
 * answer (it refused root: JDK 8, or a JVM in a user namespace that does not map polyprof's
 * root), the request is sent again over a connection made with the calling thread's effective
 * ids switched to the JVM's (raw per-thread setresgid/setresuid around connect(), restored at
 * once; never glibc's seteuid, which changes every thread). Every socket operation has a
 * deadline (poll), the reply is bounded (PP_JATTACH_MAX_REPLY). Thread-safe (no shared state).
 *
 * A stopped process (state T or t: SIGSTOP, a debugger) cannot answer: it is neither signalled
 * nor connected to, the call fails at once (a SIGQUIT left pending would make the JVM print a
 * thread dump when it continues, its trigger file being gone by then). A calling thread can
 * also give a cancel descriptor (pp_jattach_set_cancel_fd): its attach calls then end as soon as
 * that descriptor is readable, whatever their timeout (the Java driver's start, on a stop), and
 * pp_jattach_cancel_all ends every call at exit. */
#ifndef PP_JAVA_ATTACH_H
#define PP_JAVA_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PP_JATTACH_MAX_REPLY (8u << 20)

/* What /proc/<pid>/status says about a process (for attach decisions). */
typedef struct pp_jattach_status {
    int nspid;  /* pid inside its own pid namespace (= pid when not namespaced) */
    uid_t euid; /* effective ids */
    gid_t egid;
    bool sigquit_caught; /* SigCgt has SIGQUIT */
    bool stopped;        /* State T (stopped) or t (tracing stop) */
} pp_jattach_status;

/* Parses the text of /proc/<pid>/status. 0, or -1 when a field is missing. */
int pp_jattach_parse_status(const char *text, pp_jattach_status *st);

/* Encodes a protocol-1 request "1\0<cmd>\0<a1>\0<a2>\0<a3>\0" into buf (NULL args are empty).
 * Returns its length, or 0 when it does not fit or an argument is too long (> 4096). */
size_t pp_jattach_encode(char *buf, size_t len, const char *cmd, const char *a1, const char *a2,
                         const char *a3);

/* Splits a reply: the first line is the decimal result code, the rest is the output.
 * Returns 0 with *code and *body (points into buf; NUL-terminated because buf is), or -1 when
 * the reply has no result-code line. */
int pp_jattach_parse_reply(const char *buf, size_t len, int *code, const char **body);

/* Sends a command with up to 3 arguments (e.g. "load", lib, "true", options) to JVM pid.
 * Returns the JVM's result code (>= 0, 0 = success) with its output in *out (malloc'd,
 * NUL-terminated; free it), or -1 with a one-line reason in err (*out NULL) and errno ETIMEDOUT
 * (the JVM did not answer in time), ECANCELED (pp_jattach_set_cancel_fd), EAGAIN (the process is
 * stopped), another value for any other reason. timeout_s bounds the whole exchange,
 * attach-listener start-up included. */
int pp_jattach_cmd(int pid, const char *cmd, const char *a1, const char *a2, const char *a3,
                   double timeout_s, char **out, char *err, size_t errlen);

/* Makes the calling thread's attach calls fail at once (-1, "cancelled") once fd is readable (an
 * eventfd that was written); -1 for none (the default). Per thread. */
void pp_jattach_set_cancel_fd(int fd);
/* Makes every attach call, running or to come, of every thread fail at once, for the rest of the
 * process (at exit: a call in progress removes its trigger file before polyprof is gone). */
void pp_jattach_cancel_all(void);

/* A jcmd command line ("VM.version", "JFR.start name=x ..."): pp_jattach_cmd(pid, "jcmd",
 * cmdline, NULL, NULL, ...). */
int pp_jattach_jcmd(int pid, const char *cmdline, double timeout_s, char **out, char *err,
                    size_t errlen);

#endif
