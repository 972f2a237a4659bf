#include "orchestrator/hostinfo.h"

#include <arpa/inet.h>
#include <cpuid.h>
#include <dirent.h>
#include <gnu/libc-version.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "merge/header.h"

static int read_small(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static const char *cloud_provider(void)
{
    char v[256] = "", p[256] = "", b[256] = "", a[256] = "";
    read_small("/sys/class/dmi/id/sys_vendor", v, sizeof(v));
    read_small("/sys/class/dmi/id/product_name", p, sizeof(p));
    read_small("/sys/class/dmi/id/bios_vendor", b, sizeof(b));
    read_small("/sys/class/dmi/id/chassis_asset_tag", a, sizeof(a));
    if (strstr(v, "Amazon") || strstr(b, "Amazon") || strncmp(p, "HVM domU", 8) == 0)
        return "aws";
    if (strstr(v, "Google") || strstr(p, "Google"))
        return "gcp";
    if (strstr(v, "Microsoft") && strstr(a, "7783-7084-3265-9085-8269-3286-77"))
        return "azure";
    return "unknown";
}

static void hypervisor(char *out, size_t len)
{
    unsigned a, b, c, d;
    __cpuid(1, a, b, c, d);
    if (!(c & (1u << 31))) {
        snprintf(out, len, "NONE");
        return;
    }
    __cpuid(0x40000000, a, b, c, d);
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &c, 4);
    memcpy(vendor + 8, &d, 4);
    vendor[12] = '\0';
    snprintf(out, len, "%s", vendor[0] ? vendor : "VM-UNKNOWN");
}

static void cpuinfo(char *model, size_t mlen, char *flags, size_t flen)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    model[0] = flags[0] = '\0';
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && (!model[0] || !flags[0])) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *val = colon + 1 + (colon[1] == ' ');
        val[strcspn(val, "\n")] = '\0';
        if (!model[0] && strncmp(line, "model name", 10) == 0)
            snprintf(model, mlen, "%s", val);
        else if (!flags[0] && (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0))
            snprintf(flags, flen, "%s", val);
    }
    free(line);
    fclose(f);
}

static long long meminfo_kb(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return -1;
    char line[256];
    long long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = atoll(line + kl + 1);
            break;
        }
    fclose(f);
    return v;
}

/* os-release of the host (PID 1's root), falling back to ours. */
static void os_release(char *name, char *ver, char *code, size_t len)
{
    name[0] = ver[0] = code[0] = '\0';
    FILE *f = fopen("/proc/1/root/etc/os-release", "re");
    if (!f)
        f = fopen("/etc/os-release", "re");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *v = eq + 1;
        if (*v == '"') {
            v++;
            v[strcspn(v, "\"")] = '\0';
        }
        if (strcmp(line, "NAME") == 0)
            snprintf(name, len, "%s", v);
        else if (strcmp(line, "VERSION_ID") == 0)
            snprintf(ver, len, "%s", v);
        else if (strcmp(line, "VERSION_CODENAME") == 0)
            snprintf(code, len, "%s", v);
    }
    fclose(f);
}

static void mac_address(char *out, size_t len)
{
    snprintf(out, len, "%s", "");
    DIR *d = opendir("/sys/class/net");
    if (!d)
        return;
    struct dirent *e;
    char best[64] = "";
    char bestname[256] = "";
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "lo") == 0)
            continue;
        char path[512], mac[64];
        snprintf(path, sizeof(path), "/sys/class/net/%s/address", e->d_name);
        if (read_small(path, mac, sizeof(mac)) < 0 || !mac[0] ||
            strcmp(mac, "00:00:00:00:00:00") == 0)
            continue;
        if (!bestname[0] || strcmp(e->d_name, bestname) < 0) {
            snprintf(best, sizeof(best), "%s", mac);
            snprintf(bestname, sizeof(bestname), "%s", e->d_name);
        }
    }
    closedir(d);
    for (char *p = best; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    snprintf(out, len, "%s", best);
}

/* The source address the host would use for outbound traffic: a UDP connect() only does a
 * route lookup, nothing is sent. */
static void private_ip(char *out, size_t len)
{
    snprintf(out, len, "%s", "");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
    inet_pton(AF_INET, "8.8.8.8", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        struct sockaddr_in me;
        socklen_t sl = sizeof(me);
        if (getsockname(fd, (struct sockaddr *)&me, &sl) == 0)
            inet_ntop(AF_INET, &me.sin_addr, out, (socklen_t)len);
    }
    close(fd);
}

json_t *pp_host_metadata(const pp_config *cfg, time_t spawn_time)
{
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    json_t *o = json_object();
    if (cfg->disable_metadata_collection) {
        json_object_set_new(o, "hostname", json_string(host));
        return o;
    }
    struct utsname u;
    uname(&u);
    char ts[32], hv[64], model[256], flags[4096], osn[128], osv[128], osc[128], mac[64], ip[64];
    pp_iso_time(spawn_time, ts, sizeof(ts));
    hypervisor(hv, sizeof(hv));
    cpuinfo(model, sizeof(model), flags, sizeof(flags));
    os_release(osn, osv, osc, sizeof(osn));
    mac_address(mac, sizeof(mac));
    private_ip(ip, sizeof(ip));
    const char *run_mode = "standalone_executable", *deployment = "instances";
    if (getenv("POLYPROF_IN_K8S") || getenv("GPROFILER_IN_K8S"))
        run_mode = deployment = "k8s";
    else if (getenv("POLYPROF_IN_CONTAINER") || getenv("GPROFILER_IN_CONTAINER")) {
        run_mode = "container";
        deployment = "containers";
    }
    struct timespec boot;
    clock_gettime(CLOCK_BOOTTIME, &boot);
    long long mem_kb = meminfo_kb("MemTotal");

    json_object_set_new(o, "cloud_provider", json_string(cloud_provider()));
    json_object_set_new(o, "agent_version", json_string(PP_GPROFILER_COMPAT_VERSION));
    json_object_set_new(o, "spawn_time", json_string(ts));
    json_object_set_new(o, "python_version", json_string(""));
    json_object_set_new(o, "run_mode", json_string(run_mode));
    json_object_set_new(o, "deployment_type", json_string(deployment));
    json_object_set_new(o, "kernel_release", json_string(u.release));
    json_object_set_new(o, "kernel_version", json_string(u.version));
    json_object_set_new(o, "system_name", json_string(u.sysname));
    json_object_set_new(o, "hypervisor", json_string(hv));
    json_object_set_new(o, "processors", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    json_object_set_new(o, "cpu_model_name", json_string(model));
    json_object_set_new(o, "cpu_arch_codename", json_string("UNKNOWN"));
    json_object_set_new(o, "cpu_flags", json_string(flags));
    json_object_set_new(o, "memory_capacity_mb", json_integer(mem_kb > 0 ? mem_kb / 1024 : 0));
    json_object_set_new(o, "hostname", json_string(host));
    json_object_set_new(o, "system", json_string(u.sysname));
    json_object_set_new(o, "os_name", json_string(osn));
    json_object_set_new(o, "os_release", json_string(osv));
    json_object_set_new(o, "os_codename", json_string(osc));
    json_object_set_new(o, "libc_type", json_string("glibc"));
    json_object_set_new(o, "libc_version", json_string(gnu_get_libc_version()));
    json_object_set_new(o, "hardware_type", json_string(u.machine));
    json_object_set_new(o, "pid", json_integer(getpid()));
    json_object_set_new(o, "mac_address", json_string(mac));
    json_object_set_new(o, "private_ip", json_string(ip));
    /* gProfiler stores seconds here (its quirk #11); polyprof stores what the name says. */
    json_object_set_new(o, "spawn_uptime_ms",
                        json_integer((json_int_t)boot.tv_sec * 1000 + boot.tv_nsec / 1000000));
    json_object_set_new(o, "run_arguments", pp_config_run_arguments(cfg));
    json_object_set_new(o, "big_data", json_object());
    json_object_set_new(o, "external_metadata", json_object());
    return o;
}

static void cpu_times(unsigned long long *total, unsigned long long *idle)
{
    *total = *idle = 0;
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return;
    unsigned long long v[10] = {0};
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5], &v[6], &v[7]) >= 4) {
        for (int i = 0; i < 8; i++)
            *total += v[i];
        *idle = v[3] + v[4];
    }
    fclose(f);
}

void pp_metrics_begin(pp_host_metrics *m)
{
    memset(m, 0, sizeof(*m));
    cpu_times(&m->cpu_total, &m->cpu_idle);
    pp_metrics_poll(m);
}

void pp_metrics_poll(pp_host_metrics *m)
{
    long long total = meminfo_kb("MemTotal"), avail = meminfo_kb("MemAvailable");
    if (total > 0 && avail >= 0) {
        m->mem_sum += 100.0 * (double)(total - avail) / (double)total;
        m->mem_samples++;
    }
}

void pp_metrics_end(pp_host_metrics *m, double *cpu_avg, double *mem_avg)
{
    unsigned long long t, i;
    cpu_times(&t, &i);
    unsigned long long dt = t - m->cpu_total, di = i - m->cpu_idle;
    *cpu_avg = dt ? 100.0 * (double)(dt - di) / (double)dt : 0.0;
    *mem_avg = m->mem_samples ? m->mem_sum / m->mem_samples : 0.0;
    *cpu_avg = (double)(long long)(*cpu_avg * 100 + 0.5) / 100;
    *mem_avg = (double)(long long)(*mem_avg * 100 + 0.5) / 100;
    pp_metrics_begin(m);
}
