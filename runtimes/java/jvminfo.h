/* Java application metadata read through the attach client: `jvm_flags` from `VM.flags -all`
 * and `java_version` (the text `java -version` prints) from `VM.system_properties`
 * Pure text functions; thread-safe. */
#ifndef PP_JAVA_JVMINFO_H
#define PP_JAVA_JVMINFO_H

#include <jansson.h>

/* Text read from a JVM is untrusted (another process may answer in its place, and the values
 * are the application's): every string put in the metadata is at most PP_JVM_TEXT_MAX bytes
 * with every byte that is not printable ASCII (newlines, control bytes) written as \xNN, and at
 * most PP_JVM_FLAGS_MAX flags are read. */
#define PP_JVM_TEXT_MAX 256
#define PP_JVM_FLAGS_MAX 4096

typedef enum {
    PP_JVM_FLAGS_DEFAULT = 0, /* gProfiler's `default` filter */
    PP_JVM_FLAGS_ALL,         /* every supported flag (no ccstr/ccstrlist, no manageable) */
    PP_JVM_FLAGS_NONE,
} pp_jvm_flags_mode;

/* Parses `VM.flags -all` output line by line with granulate-utils' JvmFlag pattern
 * `(\S+)\s+(\S+)\s+(:)?= (\S*)\s+{(.+?)}(?:\s*{(.*)})?` (JDK 8 lines have no origin: ":=" means
 * "non-default", "=" means "default"), drops ccstr/ccstrlist and manageable flags, then (default
 * mode) origin "default" and kinds notproduct/pd/develop. Returns an array of
 * {name, type, value, origin, kind: [sorted]} sorted by name (new reference; NULL on OOM). */
json_t *pp_jvm_flags_parse(const char *text, pp_jvm_flags_mode mode);

/* Rebuilds the three lines `java -version` prints (joined by '\n', no trailing newline) from
 * `VM.system_properties` output, e.g.
 *   openjdk version "25.0.3" 2026-04-21 LTS
 *   OpenJDK Runtime Environment Temurin-25.0.3+9 (build 25.0.3+9-LTS)
 *   OpenJDK 64-Bit Server VM Temurin-25.0.3+9 (build 25.0.3+9-LTS, mixed mode, sharing)
 * Each value is bounded and escaped (above); the two newlines are polyprof's. Returns malloc'd
 * text, or NULL when java.version or java.vm.name is missing. */
char *pp_java_version_from_props(const char *props);

/* HotSpot major version from `java.version`-like text ("1.8.0_292" -> 8, "17.0.15" -> 17), or -1.
 */
int pp_java_major(const char *version);

#endif
