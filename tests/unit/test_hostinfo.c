/* Unit tests for orchestrator/hostinfo.c: the header's "metadata" object has every key
 * gProfiler's header has, in its order, with this host's values (os-release, uname, the CPU
 * count, ...); --disable-metadata-collection leaves only the hostname; the metrics window. */
#include "tests/unit/testutil.h"

#include <jansson.h>
#include <sys/utsname.h>

#include "orchestrator/cli.h"
#include "orchestrator/hostinfo.h"

TestSuite(hostinfo, .init = pp_test_quiet_log);

/* gProfiler's host metadata keys, in its order (the header adds current_time and the sampling
 * keys after these, see output). */
static const char *const KEYS[] = {"cloud_provider",    "agent_version",  "spawn_time",
                                   "python_version",    "run_mode",       "deployment_type",
                                   "kernel_release",    "kernel_version", "system_name",
                                   "hypervisor",        "processors",     "cpu_model_name",
                                   "cpu_arch_codename", "cpu_flags",      "memory_capacity_mb",
                                   "hostname",          "system",         "os_name",
                                   "os_release",        "os_codename",    "libc_type",
                                   "libc_version",      "hardware_type",  "pid",
                                   "mac_address",       "private_ip",     "spawn_uptime_ms",
                                   "run_arguments",     "big_data",       "external_metadata"};

static void parse_config(pp_config *cfg, int argc, char **argv)
{
    char err[256];
    cr_assert_eq(pp_cli_parse(argc, argv, NULL, stdout, cfg, err, sizeof(err)), PP_CLI_OK, "%s",
                 err);
}

/* The value of key in the host's os-release, read here independently of hostinfo.c (the host's
 * file through PID 1's root when readable, else ours: the same source hostinfo.c documents). */
static void os_release_value(const char *key, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/1/root/etc/os-release", "r");
    if (!f)
        f = fopen("/etc/os-release", "r");
    cr_assert(f, "no os-release on this host");
    char line[512];
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, kl) != 0 || line[kl] != '=')
            continue;
        char *v = line + kl + 1;
        v[strcspn(v, "\n")] = '\0';
        size_t vl = strlen(v);
        if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
            v[vl - 1] = '\0';
            v++;
        }
        snprintf(out, len, "%s", v);
    }
    fclose(f);
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_string(v), "metadata key %s is not a string", key);
    return json_string_value(v);
}

Test(hostinfo, every_gprofiler_key_in_order_with_this_hosts_values)
{
    pp_config cfg;
    char *argv[] = {"polyprof", "-o", "x", NULL};
    parse_config(&cfg, 3, argv);
    json_t *md = pp_host_metadata(&cfg, 1700000000);
    cr_assert(json_is_object(md));

    size_t n = sizeof(KEYS) / sizeof(KEYS[0]), i = 0;
    const char *key;
    json_t *v;
    json_object_foreach(md, key, v)
    {
        cr_assert(i < n, "unexpected extra key %s", key);
        cr_assert_str_eq(key, KEYS[i], "key %zu is %s, gProfiler's is %s", i, key, KEYS[i]);
        i++;
    }
    cr_assert_eq(i, n, "%zu keys, gProfiler's header has %zu (first missing: %s)", i, n,
                 i < n ? KEYS[i] : "");

    char want[256];
    os_release_value("VERSION_CODENAME", want, sizeof(want));
    cr_assert(want[0], "this host's os-release has no VERSION_CODENAME: the check needs one");
    cr_assert_str_eq(str(md, "os_codename"), want);
    os_release_value("NAME", want, sizeof(want));
    cr_assert_str_eq(str(md, "os_name"), want);
    os_release_value("VERSION_ID", want, sizeof(want));
    cr_assert_str_eq(str(md, "os_release"), want);

    struct utsname u;
    cr_assert_eq(uname(&u), 0);
    cr_assert_str_eq(str(md, "kernel_release"), u.release);
    cr_assert_str_eq(str(md, "kernel_version"), u.version);
    cr_assert_str_eq(str(md, "system_name"), u.sysname);
    cr_assert_str_eq(str(md, "system"), u.sysname);
    cr_assert_str_eq(str(md, "hardware_type"), u.machine);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    cr_assert_str_eq(str(md, "hostname"), host);
    cr_assert_str_eq(str(md, "agent_version"), PP_GPROFILER_COMPAT_VERSION);
    cr_assert_str_eq(str(md, "spawn_time"), "2023-11-14T22:13:20");
    cr_assert_str_eq(str(md, "libc_type"), "glibc");
    cr_assert(str(md, "libc_version")[0]);
    cr_assert(str(md, "cpu_model_name")[0] || access("/proc/cpuinfo", R_OK) != 0);
    cr_assert_eq(json_integer_value(json_object_get(md, "processors")),
                 sysconf(_SC_NPROCESSORS_ONLN));
    cr_assert_eq(json_integer_value(json_object_get(md, "pid")), getpid());
    cr_assert_gt(json_integer_value(json_object_get(md, "memory_capacity_mb")), 0);
    cr_assert_gt(json_integer_value(json_object_get(md, "spawn_uptime_ms")), 0);
    cr_assert(json_is_object(json_object_get(md, "run_arguments")));
    cr_assert(json_is_object(json_object_get(md, "big_data")));
    cr_assert(json_is_object(json_object_get(md, "external_metadata")));
    const char *run_mode = str(md, "run_mode");
    cr_assert(strcmp(run_mode, "standalone_executable") == 0 || strcmp(run_mode, "k8s") == 0 ||
                  strcmp(run_mode, "container") == 0,
              "run_mode %s", run_mode);
    json_decref(md);
    pp_config_free(&cfg);
}

Test(hostinfo, disabled_collection_keeps_only_the_hostname)
{
    pp_config cfg;
    char *argv[] = {"polyprof", "-o", "x", "--disable-metadata-collection", NULL};
    parse_config(&cfg, 4, argv);
    json_t *md = pp_host_metadata(&cfg, 1700000000);
    cr_assert_eq(json_object_size(md), 1);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    cr_assert_str_eq(str(md, "hostname"), host);
    json_decref(md);
    pp_config_free(&cfg);
}

Test(hostinfo, metrics_window)
{
    pp_host_metrics m;
    pp_metrics_begin(&m);
    pp_metrics_poll(&m);
    pp_metrics_poll(&m);
    double cpu = -1, mem = -1;
    pp_metrics_end(&m, &cpu, &mem);
    cr_assert(cpu >= 0 && cpu <= 100, "cpu %f", cpu);
    cr_assert(mem > 0 && mem <= 100, "mem %f", mem);
}
