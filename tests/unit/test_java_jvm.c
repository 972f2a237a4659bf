/* Unit tests: what polyprof reads from a JVM and asks of it, as text: the VM.flags filter and
 * --java-collect-jvm-flags, the `java -version` text rebuilt from system properties, the
 * JFR.start command line and sampler per JDK, JFR.check's recording names (orphans of a killed
 * polyprof), stale private directories, --java-safemode and its classifiers, /proc times. */
#include "tests/unit/testutil.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "runtimes/java/javaopts.h"
#include "runtimes/java/jfr_session.h"
#include "runtimes/java/jvminfo.h"
#include "runtimes/java/safemode.h"
#include "base/procfiles.h"

TestSuite(java, .init = pp_test_quiet_log);

static const char *FLAGS17 =
    "4242:\n"
    "[Global flags]\n"
    "     intx CICompilerCount                          = 2                                "
    "         {product} {ergonomic}\n"
    "     bool FlightRecorder                           = true                             "
    "         {product} {management}\n"
    "   size_t MaxHeapSize                              = 268435456                        "
    "         {product} {command line}\n"
    "    uintx ReservedCodeCacheSize                    = 251658240                     "
    "{pd product} {ergonomic}\n"
    "   size_t SoftMaxHeapSize                          = 268435456                   "
    "{manageable} {ergonomic}\n"
    "     bool UseCompressedOops                        = true                         "
    "  {product lp64_product} {ergonomic}\n"
    "     bool UseSerialGC                              = false                             "
    "        {product} {default}\n"
    "    ccstr ErrorFile                                = /x/hs_err.log                     "
    "        {product} {command line}\n"
    "     intx Tier4Threshold                           = 15000                            "
    "   {C2 product} {command line, ergonomic}\n";

Test(java, vm_flags_default_filter)
{
    json_t *a = pp_jvm_flags_parse(FLAGS17, PP_JVM_FLAGS_DEFAULT);
    char *s = json_dumps(a, JSON_COMPACT);
    cr_assert_str_eq(
        s, "[{\"name\":\"CICompilerCount\",\"type\":\"intx\",\"value\":\"2\",\"origin\":"
           "\"ergonomic\",\"kind\":[\"product\"]},"
           "{\"name\":\"FlightRecorder\",\"type\":\"bool\",\"value\":\"true\",\"origin\":"
           "\"management\",\"kind\":[\"product\"]},"
           "{\"name\":\"MaxHeapSize\",\"type\":\"size_t\",\"value\":\"268435456\",\"origin\":"
           "\"command line\",\"kind\":[\"product\"]},"
           "{\"name\":\"Tier4Threshold\",\"type\":\"intx\",\"value\":\"15000\",\"origin\":"
           "\"command line, ergonomic\",\"kind\":[\"C2\",\"product\"]},"
           "{\"name\":\"UseCompressedOops\",\"type\":\"bool\",\"value\":\"true\",\"origin\":"
           "\"ergonomic\",\"kind\":[\"lp64_product\",\"product\"]}]");
    free(s);
    json_decref(a);
}

Test(java, vm_flags_all_none_and_jdk8)
{
    json_t *a = pp_jvm_flags_parse(FLAGS17, PP_JVM_FLAGS_ALL);
    cr_assert_eq(json_array_size(a), 7); /* no ccstr, no manageable */
    json_decref(a);
    a = pp_jvm_flags_parse(FLAGS17, PP_JVM_FLAGS_NONE);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    const char *jdk8 = "    bool UseCompressedClassPointers               := true         "
                       "                       {lp64_product}\n"
                       "    bool UseG1GC                                   = false        "
                       "                       {product}\n";
    a = pp_jvm_flags_parse(jdk8, PP_JVM_FLAGS_DEFAULT);
    cr_assert_eq(json_array_size(a), 1);
    json_t *f = json_array_get(a, 0);
    cr_assert_str_eq(json_string_value(json_object_get(f, "name")), "UseCompressedClassPointers");
    cr_assert_str_eq(json_string_value(json_object_get(f, "origin")), "non-default");
    json_decref(a);
    a = pp_jvm_flags_parse("garbage\n\n{}\n = {\n", PP_JVM_FLAGS_ALL);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
}

Test(java, version_text_from_properties)
{
    const char *p17 = "#Sun Nov 22\njava.runtime.version=17.0.15+6-Debian-1deb12u1\n"
                      "java.runtime.name=OpenJDK Runtime Environment\n"
                      "java.vm.name=OpenJDK 64-Bit Server VM\njava.version=17.0.15\n"
                      "java.version.date=2025-04-15\njava.vm.info=mixed mode, sharing\n"
                      "java.vm.version=17.0.15+6-Debian-1deb12u1\n"
                      "java.vendor.url=https\\://tracker.debian.org/openjdk-17\n";
    char *v = pp_java_version_from_props(p17);
    cr_assert_str_eq(v, "openjdk version \"17.0.15\" 2025-04-15\n"
                        "OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n"
                        "OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, "
                        "sharing)");
    free(v);
    const char *p25 = "java.runtime.name=OpenJDK Runtime Environment\n"
                      "java.runtime.version=25.0.3+9-LTS\njava.vendor.version=Temurin-25.0.3+9\n"
                      "java.version=25.0.3\njava.version.date=2026-04-21\n"
                      "java.vm.info=mixed mode, sharing\njava.vm.name=OpenJDK 64-Bit Server VM\n"
                      "java.vm.version=25.0.3+9-LTS\n";
    v = pp_java_version_from_props(p25);
    cr_assert_str_eq(v, "openjdk version \"25.0.3\" 2026-04-21 LTS\n"
                        "OpenJDK Runtime Environment Temurin-25.0.3+9 (build 25.0.3+9-LTS)\n"
                        "OpenJDK 64-Bit Server VM Temurin-25.0.3+9 (build 25.0.3+9-LTS, mixed "
                        "mode, sharing)");
    free(v);
    cr_assert_null(pp_java_version_from_props("java.vm.name=x\n"));
    cr_assert_eq(pp_java_major("1.8.0_292"), 8);
    cr_assert_eq(pp_java_major("17.0.15"), 17);
    cr_assert_eq(pp_java_major("1.6.0_45"), 6);
    cr_assert_eq(pp_java_major("x"), -1);
}

/* What a JVM (or a process answering in its place) says is untrusted text: every value in the
 * metadata is bounded and has no newline or control byte of its own. */
Test(java, untrusted_metadata_text_is_bounded_and_escaped)
{
    char props[8192];
    char big[2000];
    memset(big, 'A', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    snprintf(props, sizeof(props),
             "java.version=99.0-SPOOFED\\nopenjdk version \"1\"\n"
             "java.vm.name=EvilVM;frame\x1b[31m\r\n"
             "java.runtime.name=%s\njava.vm.info=a\tb\x7f\xff\n",
             big);
    char *v = pp_java_version_from_props(props);
    cr_assert_not_null(v);
    size_t newlines = 0;
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        newlines += *c == '\n';
        cr_assert(*c == '\n' || (*c >= 0x20 && *c < 0x7f), "byte 0x%02x in %s", *c, v);
    }
    cr_assert_eq(newlines, 2, "%s", v); /* polyprof's own, between the three lines */
    cr_assert(strstr(v, "java version \"99.0-SPOOFED\\x0aopenjdk version \"1\"\""), "%s", v);
    cr_assert(strstr(v, "EvilVM;frame\\x1b[31m (build"), "%s", v);
    cr_assert(strstr(v, "a\\x09b\\x7f\\xff)"), "%s", v);
    cr_assert_lt(strlen(v), 3 * 640, "%zu bytes", strlen(v));
    cr_assert_null(strstr(v, big), "the 2,000-byte value was not bounded");
    free(v);

    /* VM.flags: fields escaped, bounded; at most PP_JVM_FLAGS_MAX flags */
    json_t *a = pp_jvm_flags_parse(
        "     intx Evil\x1b[2J = 1\x07         {product} {command line}\n", PP_JVM_FLAGS_ALL);
    cr_assert_eq(json_array_size(a), 1);
    json_t *f = json_array_get(a, 0);
    cr_assert_str_eq(json_string_value(json_object_get(f, "name")), "Evil\\x1b[2J");
    cr_assert_str_eq(json_string_value(json_object_get(f, "value")), "1\\x07");
    json_decref(a);
    size_t cap = 1u << 20, len = 0;
    char *many = malloc(cap);
    for (int i = 0; i < PP_JVM_FLAGS_MAX + 100; i++)
        len += (size_t)snprintf(many + len, cap - len,
                                "     intx Flag%05d = %d  {product} {command line}\n", i, i);
    a = pp_jvm_flags_parse(many, PP_JVM_FLAGS_ALL);
    cr_assert_eq(json_array_size(a), PP_JVM_FLAGS_MAX);
    json_decref(a);
    free(many);
}

Test(java, jfr_start_cmdline)
{
    char buf[640];
    pp_jfr_start_cmdline(buf, sizeof(buf), "polyprof_1_2_3_4", PP_JFR_SAMPLER_EXECUTION, 11, 90,
                         true, "/tmp/d/start.jfr");
    cr_assert_str_eq(buf, "JFR.start name=polyprof_1_2_3_4 settings=none "
                          "+jdk.ExecutionSample#enabled=true +jdk.ExecutionSample#period=91ms "
                          "+jdk.NativeMethodSample#enabled=true "
                          "+jdk.NativeMethodSample#period=91ms "
                          "duration=90s disk=true filename=/tmp/d/start.jfr");
    pp_jfr_start_cmdline(buf, sizeof(buf), "n", PP_JFR_SAMPLER_CPUTIME, 99, 34, false, "/f");
    cr_assert_str_eq(buf, "JFR.start name=n settings=none +jdk.CPUTimeSample#enabled=true "
                          "+jdk.CPUTimeSample#throttle=10ms duration=34s disk=false filename=/f");
    pp_jfr_start_cmdline(buf, sizeof(buf), "n", PP_JFR_SAMPLER_EXECUTION, 1000, 34, true, "/f");
    cr_assert(strstr(buf, "#period=1ms "), "%s", buf);
    cr_assert_eq(pp_jfr_sampler_for(25), PP_JFR_SAMPLER_CPUTIME);
    cr_assert_eq(pp_jfr_sampler_for(26), PP_JFR_SAMPLER_CPUTIME);
    cr_assert_eq(pp_jfr_sampler_for(21), PP_JFR_SAMPLER_EXECUTION);
    cr_assert_eq(pp_jfr_sampler_for(-1), PP_JFR_SAMPLER_EXECUTION);
}

Test(java, stale_private_directories)
{
    char *dir = pp_test_mkdtemp(), path[512];
    long dead = 4000000;
    while (kill((pid_t)dead, 0) == 0 || errno != ESRCH)
        dead++;
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%ld-3", dir, dead);
    cr_assert(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%ld-3/rec.jfr", dir, dead);
    pp_test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%d-4", dir, (int)getpid());
    cr_assert(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/other", dir);
    cr_assert(mkdir(path, 0700) == 0);
    int fd = open(dir, O_PATH | O_DIRECTORY);
    cr_assert_eq(pp_jfr_cleanup_stale(fd), 1);
    close(fd);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%ld-3", dir, dead);
    cr_assert(access(path, F_OK) != 0);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%d-4", dir, (int)getpid());
    cr_assert(access(path, F_OK) == 0);
    snprintf(path, sizeof(path), "%s/other", dir);
    cr_assert(access(path, F_OK) == 0);
    pp_test_rmtree(dir);
}

Test(java, recording_names)
{
    char names[4][64];
    bool running[4];
    int n = pp_jfr_check_names("4242:\nRecording 2: name=userdisk maxsize=250.0MB (running)\n\n"
                               "Recording 3: name=polyprof_4026531836_77_123_1 duration=64s "
                               "(running)\nRecording 1: name=x duration=3s (stopped)\n",
                               names, running, 4);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(names[0], "userdisk");
    cr_assert(running[0] && running[1] && !running[2]);
    cr_assert_str_eq(names[1], "polyprof_4026531836_77_123_1");
    cr_assert_eq(pp_jfr_check_names("4242:\nNo available recordings.\n", names, running, 4), 0);
    cr_assert_eq(pp_jfr_check_names("Recording 1: name=a (running)\nRecording 2: name=b\n", names,
                                    running, 1),
                 1);

    cr_assert(pp_jfr_props_repository("4242:\n#Wed\nfile.encoding=UTF-8\n"
                                      "jdk.jfr.repository=/tmp/2026_11_25_17_03_19_3613\nx=y\n"));
    cr_assert(!pp_jfr_props_repository("4242:\nfile.encoding=UTF-8\njdk.jfr.repository=\n"));
    cr_assert(!pp_jfr_props_repository("4242:\nxjdk.jfr.repository=/a\n"));

    unsigned long long ns, ticks;
    long pid;
    cr_assert(pp_jfr_polyprof_name("polyprof_4026531836_77_123_1", &ns, &pid, &ticks));
    cr_assert(ns == 4026531836ULL && pid == 77 && ticks == 123);
    cr_assert(!pp_jfr_polyprof_name("polyprof_77_1", &ns, &pid, &ticks));
    cr_assert(!pp_jfr_polyprof_name("polyprof_1_2_3_4x", &ns, &pid, &ticks));
    cr_assert(!pp_jfr_polyprof_name("user", &ns, &pid, &ticks));

    /* ours, another live process, a dead pid, another pid namespace */
    struct stat sb;
    cr_assert(stat("/proc/self/ns/pid", &sb) == 0);
    long dead = 4000000;
    while (kill((pid_t)dead, 0) == 0 || errno != ESRCH)
        dead++;
    char name[64];
    pp_jfr_rec r;
    char err[256];
    cr_assert(pp_jfr_rec_init(&r, getpid(), err, sizeof(err)) == 0, "%s", err);
    cr_assert(!pp_jfr_orphan_name(r.name), "%s", r.name);
    snprintf(name, sizeof(name), "polyprof_%llu_%d_%llu_1", (unsigned long long)sb.st_ino,
             (int)getpid(), pp_proc_start_ticks(getpid()) + 1);
    cr_assert(pp_jfr_orphan_name(name), "our pid, another start time");
    snprintf(name, sizeof(name), "polyprof_%llu_%ld_1_1", (unsigned long long)sb.st_ino, dead);
    cr_assert(pp_jfr_orphan_name(name));
    snprintf(name, sizeof(name), "polyprof_%llu_%d_%llu_1", (unsigned long long)sb.st_ino, 1,
             pp_proc_start_ticks(1));
    cr_assert(pp_jfr_orphan_name(name), "pid 1 is no polyprof");
    snprintf(name, sizeof(name), "polyprof_%llu_%ld_1_1", (unsigned long long)sb.st_ino + 1, dead);
    cr_assert(!pp_jfr_orphan_name(name), "another pid namespace");
    cr_assert(!pp_jfr_orphan_name("userdisk"));
    pp_jfr_rec_close(&r);
}

Test(java, safemode_classifiers)
{
    cr_assert(pp_java_fatal_status(SIGKILL, NULL)); /* killed by signal 9 */
    cr_assert(pp_java_fatal_status(SIGSEGV, NULL));
    cr_assert(pp_java_fatal_status(SIGABRT | 0x80, NULL)); /* with a core dump */
    cr_assert(!pp_java_fatal_status(SIGTERM, NULL));
    cr_assert(!pp_java_fatal_status(143 << 8, NULL)); /* exit code 143 after SIGTERM */
    cr_assert(!pp_java_fatal_status(0, NULL));
    cr_assert(pp_java_kmsg_oom("3,1234,5678,-;Out of memory: Killed process 4242 (java) "
                               "total-vm:1kB",
                               4242));
    cr_assert(pp_java_kmsg_oom("6,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),"
                               "task=java,pid=4242,uid=0",
                               4242));
    cr_assert(!pp_java_kmsg_oom("3,1,2,-;Out of memory: Killed process 42420 (java)", 4242));
    cr_assert(!pp_java_kmsg_oom("6,1,2,-;java[4242]: segfault at 0", 4242));
}

Test(java, collect_jvm_flags_option)
{
    json_t *a = pp_java_jvm_flags_for(FLAGS17, NULL);
    cr_assert_eq(json_array_size(a), 5);
    json_decref(a);
    a = pp_java_jvm_flags_for(FLAGS17, "all");
    cr_assert_eq(json_array_size(a), 7);
    json_decref(a);
    a = pp_java_jvm_flags_for(FLAGS17, "none");
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    /* a list: those of `all` named (UseSerialGC is at its default; ErrorFile is a ccstr) */
    a = pp_java_jvm_flags_for(FLAGS17, "UseSerialGC,MaxHeapSize,ErrorFile,Nope");
    cr_assert_eq(json_array_size(a), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "name")),
                     "MaxHeapSize");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 1), "name")),
                     "UseSerialGC");
    json_decref(a);
}

Test(java, safemode_option)
{
    unsigned m;
    char bad[80];
    cr_assert_eq(pp_java_safemode_parse(NULL, &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, PP_SAFEMODE_PROFILED_OOM | PP_SAFEMODE_PROFILED_SIGNALED | PP_SAFEMODE_HSERR);
    cr_assert_eq(pp_java_safemode_parse("", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, 0xffu);
    cr_assert_eq(pp_java_safemode_parse("all", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, 0xffu);
    cr_assert_eq(pp_java_safemode_parse("hserr,ap-loaded-check", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, PP_SAFEMODE_HSERR | PP_SAFEMODE_AP_LOADED_CHECK);
    cr_assert_eq(pp_java_safemode_parse("none", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, 0u);
    cr_assert_eq(pp_java_safemode_parse("hserr,oops", &m, bad, sizeof(bad)), -1);
    cr_assert_str_eq(bad, "oops");
}

Test(java, stat_times_of_a_process)
{
    /* start time as ps shows it, CPU time grows with work, 0 for a process that is gone */
    unsigned long long start = pp_proc_start_ticks(getpid()), cpu = pp_proc_cpu_ticks(getpid());
    cr_assert(start > 0);
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile unsigned long spin = 0;
    do {
        for (int i = 0; i < 100000; i++)
            spin += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000000L);
    cr_assert_gt(pp_proc_cpu_ticks(getpid()), cpu, "100 ms of CPU is 10 clock ticks");
    cr_assert_eq(pp_proc_start_ticks(getpid()), start);
    cr_assert_eq(pp_proc_cpu_ticks(1 << 23), 0);
    cr_assert_eq(pp_proc_start_ticks(1 << 23), 0);
}

/* auto's hand-over set: by pid and start time (a reused pid is another JVM), taken back, and when
 * full an entry of a JVM that is gone is replaced before a live one. */
Test(java, handed_over_jvms)
{
    int me = getpid();
    unsigned long long start = pp_proc_start_ticks(me);
    cr_assert(start > 0);
    cr_assert_not(pp_java_is_handed(me, start));
    pp_java_set_handed(me, start, true);
    cr_assert(pp_java_is_handed(me, start));
    cr_assert_not(pp_java_is_handed(me, start + 1), "the pid reused by another process");
    pp_java_set_handed(me, start, false);
    cr_assert_not(pp_java_is_handed(me, start));

    pp_java_set_handed(me, start, true);
    for (int i = 1; i < PP_JAVA_HANDED_MAX; i++) /* processes that are gone (no such pid) */
        pp_java_set_handed((1 << 23) + i, 1, true);
    for (int i = 0; i < 8; i++) /* full: each replaces a gone one */
        pp_java_set_handed((1 << 23) + PP_JAVA_HANDED_MAX + i, 1, true);
    cr_assert(pp_java_is_handed(me, start), "a live JVM's entry was replaced");
    cr_assert(pp_java_is_handed((1 << 23) + PP_JAVA_HANDED_MAX + 7, 1));
}
