/* One JFR recording in one JVM for one session, driven through the attach client (no jcmd):
 *
 *   start:  (only when JFR was never initialized in that JVM) `JFR.configure stackdepth=1024`;
 *           then `JFR.start name=polyprof_<pid>_<n> settings=none
 *           +jdk.ExecutionSample#enabled=true +jdk.ExecutionSample#period=<1000/f>ms
 *           duration=<session+30>s disk=false filename=/tmp/<private dir>/start.jfr`, and the
 *           private directory (with the empty file the JVM creates) is removed at once. If
 *           polyprof dies, the recording stops by itself after its duration and its write fails
 *           silently: nothing is left on disk (JDK 17 and 25 verified; JDK 25 would otherwise
 *           write hotspot-pid-*.jfr into the JVM's cwd).
 *           disk=true instead when JFR already runs another recording (JFR.check): an in-memory
 *           recording gets no data while a recording to disk runs (JDK 17: 0 bytes written);
 *           the JVM's repository then exists already, polyprof adds nothing to it for long.
 *   finish: a private directory `/tmp/polyprof-jfr-<polyprof pid>-<n>` in the JVM's mount
 *           namespace (created in its /tmp, opened inside /proc/<pid>/root; mode 0700, owned
 *           by the JVM's euid/egid), `JFR.stop name=... filename=<dir>/rec.jfr`,
 *           pp_jfr_parse_file, then the file and the directory are removed.
 *   abort:  `JFR.stop name=...` without a file (the recording is discarded).
 *
 * The JVM's /tmp and cwd (and its -XX:ErrorFile directory) are held as O_PATH descriptors from
 * the start, so files can be removed and hs_err files found even after the JVM is gone. */
#ifndef PP_JAVA_JFR_SESSION_H
#define PP_JAVA_JFR_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "merge/profile.h"

typedef struct pp_jfr_rec {
    int pid, nspid;
    unsigned long long start_ticks;
    uid_t uid;
    gid_t gid;
    int tmp_fd, cwd_fd; /* O_PATH; -1 when unavailable */
    char errfile[256];  /* -XX:ErrorFile= value with %p expanded, "" if none */
    int errdir_fd;      /* O_PATH, its directory inside the JVM's root (see .c); -1 if none */
    char name[64];      /* recording name */
    bool running;       /* JFR.start succeeded and no stop was sent */
    bool maybe_running; /* JFR.start failed, perhaps only on our side (timeout) */
} pp_jfr_rec;

/* Opens the JVM's descriptors and reads its identity; 0, or -1 with err (process gone). */
int pp_jfr_rec_init(pp_jfr_rec *r, int pid, char *err, size_t errlen);
/* Starts the recording (period from frequency Hz, duration in seconds); the whole start ends
 * within timeout_s (at least 1 s). A JVM that does not answer its first request in time is not
 * sent JFR.start. 0 or -1 with err. */
int pp_jfr_rec_start(pp_jfr_rec *r, int frequency, int duration_s, double timeout_s, char *err,
                     size_t errlen);
/* Stops it into a private file and parses it into pp (an entry of prof). 0 or -1 with err. */
int pp_jfr_rec_finish(pp_jfr_rec *r, pp_profile *prof, pp_pid_profile *pp, double timeout_s,
                      char *err, size_t errlen);
/* Stops a recording that runs or may run (its start got no answer) without output, waiting at
 * most timeout_s; best effort: the recording counts as stopped afterwards either way (it ends by
 * its duration otherwise). */
void pp_jfr_rec_discard(pp_jfr_rec *r, double timeout_s);
/* pp_jfr_rec_discard (2 s) and closes the descriptors. */
void pp_jfr_rec_close(pp_jfr_rec *r);

/* The hs_err file the JVM left, if any ("hserr" safemode): -XX:ErrorFile (its directory
 * resolved at pp_jfr_rec_init inside the JVM's root, or below its cwd when relative),
 * hs_err_pid<nspid>.log in its cwd, /tmp/hs_err_pid<nspid>.log. True when one exists; the last
 * component is not followed (a symlink of that name counts as present). */
bool pp_jfr_rec_hserr(const pp_jfr_rec *r);

/* Removes the private directories a polyprof that died mid-session left in a JVM's /tmp
 * (tmp_fd: a descriptor of it): `polyprof-jfr-<pid>-*` whose pid is not a running polyprof,
 * with the recording files polyprof names. Returns the number removed, or -1. */
int pp_jfr_cleanup_stale(int tmp_fd);

/* Whether `JFR.check` output lists a running recording that is not polyprof's (then polyprof's
 * recording must go to disk too). Unit-tested. */
bool pp_jfr_other_recording_running(const char *check);

/* Builds the JFR.start command line (unit-tested). */
void pp_jfr_start_cmdline(char *buf, size_t len, const char *name, int frequency, int duration_s,
                          bool disk, const char *filename);

#endif
