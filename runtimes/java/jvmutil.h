/* Internal helpers of the Java runtime (see java.h for the shared ones). */
#ifndef PP_JAVA_JVMUTIL_H
#define PP_JAVA_JVMUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashtab.h"

/* Path of the JVM's libjvm.so as mapped (inside the JVM's root: open it with
 * pp_open_in_proc_root), and JAVA_VERSION / JAVA_VERSION_DATE of the JDK's `release` file next
 * to it, read inside the JVM's root ("" when absent). -1 when no libjvm is mapped.
 * version/date may be NULL. */
int pp_java_release_info(int pid, char *libjvm, size_t liblen, char *version, size_t vlen,
                         char *date, size_t dlen);

/* Calls fn for each thread of pid (/proc/<pid>/task, at most 100,000 entries) until it returns
 * non-zero. */
void pp_java_each_thread(int pid, int (*fn)(void *arg, int pid, long tid), void *arg);

/* A JVM's thread ids as the system sampler names them. JFR's osThreadId and async-profiler's
 * tid= are the ids the JVM sees (gettid in its pid namespace); a JVM in another pid namespace
 * has other ids in ours. */
typedef struct pp_java_tids {
    bool other_ns;
    pp_u64map ids; /* other_ns: its id -> ours, for the threads alive at init */
} pp_java_tids;
/* Reads NSpid of pid's threads when pid lives in another pid namespace (bounded). */
void pp_java_tids_init(pp_java_tids *t, int pid);
/* tid (as the JVM knows it) as the sampler names it; 0 when unknown. arg: a pp_java_tids. */
uint32_t pp_java_tids_map(void *arg, long tid);
void pp_java_tids_free(pp_java_tids *t);

/* Clears the safemode state (tests). */
void pp_java_safemode_reset(void);

/* Attach timeouts (seconds). */
#define PP_JAVA_ATTACH_TIMEOUT 5.0
#define PP_JAVA_QUICK_TIMEOUT 2.0
/* The application metadata's two requests (version, flags), on an identity worker: a JVM serves
 * one attach request at a time, and its first JFR.start, sent by the session at the same moment,
 * holds the listener for 1-2 s (JFR's initialisation on JDK 17). */
#define PP_JAVA_METADATA_TIMEOUT 6.0

#endif
