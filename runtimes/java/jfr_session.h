/* One JFR recording in one JVM for one session, driven through the attach client (no jcmd):
 *
 *   name:   `polyprof_<pid namespace inode>_<polyprof pid>_<its start time>_<n>`, unique per
 *           session; every request names it, so other recordings are never stopped or dumped.
 *   start:  when JFR was never initialized in that JVM, `JFR.configure stackdepth=1024`; else
 *           `JFR.check`: recordings of a polyprof that is gone (same pid namespace, the pid is no
 *           polyprof or started at another time) are stopped into a private file that is
 *           removed; other running recordings are logged once per JVM (and hour).
 *           Then `JFR.start name=... settings=none <sampler events> duration=<session+30>s
 *           disk=<d> filename=/tmp/<private dir>/start.jfr`, and the private directory (with
 *           the empty file the JVM creates) is removed at once. An in-memory recording gets
 *           no data while another recording runs (JDK 17: 0 bytes), so disk=true when another
 * recording runs (the JVM's own or another live polyprof's) or the repository exists
 * (`jdk.jfr.repository` in VM.system_properties: a recording started later then cannot empty ours);
 * else disk=false, which creates no repository directory in the JVM's tmpdir. If polyprof dies, the
 * recording ends by its duration (its write then fails: nothing is left), or the next polyprof
 * stops it first. Sampler: jdk.CPUTimeSample (throttle = 1/f of CPU time per thread) on JDK 25+,
 *           jdk.ExecutionSample + jdk.NativeMethodSample (period 1/f) before. A native
 *           method sample is counted only when its thread used at least a quarter of the
 *           session in CPU time (/proc/<pid>/task/<tid>/stat at start and finish): JFR takes
 *           them from threads in native code whether they run or wait (epoll, accept, read).
 *   finish: a private directory `/tmp/polyprof-jfr-<polyprof pid>-<12 random chars>` in the JVM's
 * mount namespace (created in its /tmp, opened inside /proc/<pid>/root; mode 0700, owned by the
 * JVM's euid/egid), `JFR.stop name=... filename=<dir>/rec.jfr`, pp_jfr_parse_file (only the
 * sampler's events: the file also holds the events other recordings enabled), then the file and the
 * directory are removed. abort:  `JFR.stop name=...` without a file (the recording is discarded).
 *
 * The JVM's /tmp and cwd (and its -XX:ErrorFile directory) are held as O_PATH descriptors from
 * the start, so files can be removed and hs_err files found even after the JVM is gone. */
#ifndef PP_JAVA_JFR_SESSION_H
#define PP_JAVA_JFR_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/hashtab.h"
#include "merge/profile.h"

typedef enum {
    PP_JFR_SAMPLER_EXECUTION, /* jdk.ExecutionSample + jdk.NativeMethodSample */
    PP_JFR_SAMPLER_CPUTIME,   /* jdk.CPUTimeSample (JDK 25+) */
} pp_jfr_sampler;

/* The sampler for a JVM of that major version (-1: unknown). */
pp_jfr_sampler pp_jfr_sampler_for(int major);

typedef struct pp_jfr_rec {
    int pid, nspid;
    unsigned long long start_ticks;
    uid_t uid;
    gid_t gid;
    int tmp_fd, cwd_fd; /* O_PATH; -1 when unavailable */
    char errfile[256];  /* -XX:ErrorFile= value with %p expanded, "" if none */
    int errdir_fd;      /* O_PATH, its directory inside the JVM's root (see .c); -1 if none */
    char name[64];      /* recording name */
    int sampler;        /* pp_jfr_sampler of the running recording */
    pp_u64map cpu0;     /* tid -> CPU ticks of the JVM's threads at the start */
    double t0;          /* monotonic time of that snapshot */
    bool running;       /* JFR.start succeeded and no stop was sent */
    bool maybe_running; /* JFR.start failed, perhaps only on our side (timeout) */
} pp_jfr_rec;

/* Opens the JVM's descriptors and reads its identity; 0, or -1 with err (process gone). */
int pp_jfr_rec_init(pp_jfr_rec *r, int pid, char *err, size_t errlen);
/* Starts the recording (period from frequency Hz, duration in seconds); the whole start ends
 * within timeout_s (at least 1 s). A JVM that does not answer its first request in time is not
 * sent JFR.start. 0 or -1 with err. */
int pp_jfr_rec_start(pp_jfr_rec *r, pp_jfr_sampler sampler, int frequency, int duration_s,
                     double timeout_s, char *err, size_t errlen);
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

/* Creates a fresh private directory in the JVM's /tmp (r->tmp_fd), mode 0700, owned by the
 * JVM's euid/egid: `polyprof-jfr-<polyprof pid>-<PP_JFR_DIR_RANDOM random characters>`, a new
 * random name on each of up to 8 tries when the name exists (nobody can plant the name in
 * advance). Its name in name; 0, or -1 with a message in err. */
#define PP_JFR_DIR_RANDOM 12
int pp_jfr_make_private_dir(pp_jfr_rec *r, char *name, size_t len, char *err, size_t errlen);

/* Removes the private directories a polyprof that died mid-session left in a JVM's /tmp
 * (tmp_fd: a descriptor of it): `polyprof-jfr-<pid>-*` whose pid is not a running polyprof,
 * with the recording files polyprof names. Returns the number removed, or -1. */
int pp_jfr_cleanup_stale(int tmp_fd);

/* The recordings `JFR.check` lists: up to max names (longer ones skipped) and whether each is
 * running. Unit-tested. */
int pp_jfr_check_names(const char *check, char names[][64], bool *running, int max);

/* Whether name is a polyprof recording name; its parts. Unit-tested. */
bool pp_jfr_polyprof_name(const char *name, unsigned long long *ns, long *pid,
                          unsigned long long *ticks);
/* Whether name is the recording of a polyprof that is gone (in this pid namespace). */
bool pp_jfr_orphan_name(const char *name);

/* Builds the JFR.start command line (unit-tested). */
void pp_jfr_start_cmdline(char *buf, size_t len, const char *name, pp_jfr_sampler sampler,
                          int frequency, int duration_s, bool disk, const char *filename);
/* Whether `VM.system_properties` output sets jdk.jfr.repository (unit-tested). */
bool pp_jfr_props_repository(const char *props);

#endif
