/* Internal helpers of the Java runtime (see java.h for the shared ones). */
#ifndef PP_JAVA_JVMUTIL_H
#define PP_JAVA_JVMUTIL_H

#include <stddef.h>

/* Path of the JVM's libjvm.so as mapped (inside the JVM's root: open it with
 * pp_open_in_proc_root), and JAVA_VERSION / JAVA_VERSION_DATE of the JDK's `release` file next
 * to it, read inside the JVM's root ("" when absent). -1 when no libjvm is mapped.
 * version/date may be NULL. */
int pp_java_release_info(int pid, char *libjvm, size_t liblen, char *version, size_t vlen,
                         char *date, size_t dlen);

/* Clears the safemode state (tests). */
void pp_java_safemode_reset(void);

/* Attach timeouts (seconds). */
#define PP_JAVA_ATTACH_TIMEOUT 5.0
#define PP_JAVA_QUICK_TIMEOUT 2.0

#endif
