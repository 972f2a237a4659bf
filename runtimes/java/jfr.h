/* A native parser of Java Flight Recorder files (no JVM, no `jfr` tool): chunk headers,
 * metadata, constant pools, LEB128-style compressed integers, and the sample events
 * (jdk.ExecutionSample, jdk.NativeMethodSample, jdk.CPUTimeSample) with their stack traces. Handles
 * several chunks per file and JDK 17 / JDK 25 output.
 *
 * Frames are written as gProfiler writes async-profiler's `ann,sig` output: root first,
 * `pkg/Class.method(Sig)Ret` with every ';' of the signature replaced by '|', then the suffix
 * of the JFR frame type: "_[j]" JIT compiled, "_[i]" inlined, "_[0]" interpreted, none for
 * native frames. A stack JFR marked truncated gets a leading "[truncated]" root frame. */
#ifndef PP_JFR_H
#define PP_JFR_H

#include <stddef.h>
#include <stdint.h>

#include "merge/profile.h"

typedef struct pp_jfr_stats {
    uint64_t chunks;    /* chunks parsed */
    uint64_t events;    /* events seen (all types) */
    uint64_t samples;   /* sample events added to the profile */
    uint64_t truncated; /* samples whose stack JFR truncated */
    uint64_t bad;       /* samples dropped because a reference did not resolve */
} pp_jfr_stats;

/* Sample events (pp_jfr_opts.events). */
#define PP_JFR_EXECUTION 1u /* jdk.ExecutionSample (sampledThread, stackTrace) */
#define PP_JFR_NATIVE 2u    /* jdk.NativeMethodSample (sampledThread, stackTrace) */
#define PP_JFR_CPUTIME 4u   /* jdk.CPUTimeSample (eventThread, stackTrace; JDK 25+) */

typedef struct pp_jfr_opts {
    /* The sample events counted (0: PP_JFR_EXECUTION). A recording holds every event type any
     * recording of the JVM enabled, so the caller names the ones it asked for. */
    unsigned events;
    /* Keep only samples whose sampled thread's OS tid satisfies keep_tid (NULL = all). Used to
     * drop threads the system sampler did not see on a CPU; arg is passed through. The tid is
     * -1 when the sample's thread does not resolve. */
    int (*keep_tid)(void *arg, long tid);
    /* The same for jdk.NativeMethodSample events (NULL: keep_tid). */
    int (*keep_native_tid)(void *arg, long tid);
    /* Record each sample's thread (pp_pid_add_tid) for the per-thread merge: its OS tid, mapped
     * by sampler_tid when set (a JVM in another pid namespace: the tid as the system sampler
     * names it, 0 when unknown). Samples whose thread does not resolve get none. */
    bool per_thread;
    uint32_t (*sampler_tid)(void *arg, long tid);
    void *arg;
} pp_jfr_opts;

/* Parses a recording held in memory and adds one count per kept sample event to pp
 * (an entry of prof; frames interned in prof). Never reads outside buf, never crashes nor
 * loops forever on malformed input. Returns 0, or -1 with a one-line message in err
 * ("not a JFR file", "truncated chunk at offset N", "unsupported JFR version 3.0", ...);
 * samples parsed before the error stay added. opts and st may be NULL; st is zeroed first and
 * counts this call only. */
int pp_jfr_parse_buf(const uint8_t *buf, size_t len, const pp_jfr_opts *opts, pp_profile *prof,
                     pp_pid_profile *pp, pp_jfr_stats *st, char *err, size_t errlen);

/* Same for a file (mapped read-only). */
int pp_jfr_parse_file(const char *path, const pp_jfr_opts *opts, pp_profile *prof,
                      pp_pid_profile *pp, pp_jfr_stats *st, char *err, size_t errlen);

#endif
