/* What the attach reads about a Node process from /proc, as pure parsers over text (unit-tested)
 * plus the few readers that feed them: the caught-signals mask, the pid inside its namespace,
 * its listening TCP sockets (the inspector's port), and its command-line inspector flags. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/procfiles.h"
#include "runtimes/node/node.h"

/* A /proc file (its size reads as 0) up to max bytes, NUL-terminated, malloc'd; NULL if it
 * cannot be read. */
static char *read_proc(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 65536, got = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == cap) {
            if (cap >= max)
                break;
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (buf) {
        buf[got] = '\0';
        *len = got;
    }
    return buf;
}

int pp_node_sig_caught(const char *status, int sig)
{
    const char *v = pp_status_field(status, "SigCgt");
    if (!v || sig < 1 || sig > 64)
        return -1;
    while (*v == ' ' || *v == '\t')
        v++;
    char *end;
    errno = 0;
    unsigned long long mask = strtoull(v, &end, 16);
    if (errno || end == v || (*end && *end != '\n'))
        return -1;
    return (int)((mask >> (sig - 1)) & 1);
}

int pp_node_nspid(const char *status)
{
    if (pp_status_field(status, "NSpid"))
        return pp_status_nspid(status, NULL);
    const char *v = pp_status_field(status, "Pid"); /* kernels before 4.1: no NSpid */
    char *end;
    long pid = v ? strtol(v, &end, 10) : -1;
    return pid > 0 && pid <= INT_MAX ? (int)pid : -1;
}

size_t pp_node_parse_listeners(const char *text, bool v6, pp_node_listener *out, size_t max)
{
    size_t n = 0;
    const char *line = strchr(text, '\n'); /* the header line */
    while (line && n < max) {
        line++;
        const char *eol = strchr(line, '\n');
        size_t ll = eol ? (size_t)(eol - line) : strlen(line);
        /* sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ... */
        char copy[512], *f[10], *save = NULL;
        int nf = 0;
        if (ll >= sizeof(copy)) {
            line = eol;
            continue;
        }
        memcpy(copy, line, ll);
        copy[ll] = '\0';
        line = eol;
        for (char *w = strtok_r(copy, " \t", &save); w && nf < 10; w = strtok_r(NULL, " \t", &save))
            f[nf++] = w;
        if (nf < 10 || strcmp(f[3], "0A") != 0) /* TCP_LISTEN */
            continue;
        const char *addr = f[1], *colon = strchr(addr, ':');
        char *end;
        if (!colon || colon - addr != (v6 ? 32 : 8))
            continue;
        unsigned long port = strtoul(colon + 1, &end, 16);
        if (*end || end == colon + 1 || port == 0 || port > 65535)
            continue;
        unsigned long long inode = strtoull(f[9], &end, 10);
        if (*end || inode == 0)
            continue;
        pp_node_listener *l = &out[n++];
        memset(l, 0, sizeof(*l));
        l->inode = inode;
        l->port = (int)port;
        l->v6 = v6;
        /* the kernel prints the address as 32-bit words in host order: 0100007F is 127.0.0.1;
         * a wildcard is reached on the loopback address */
        if (!v6) {
            char word[9];
            memcpy(word, addr, 8);
            word[8] = '\0';
            unsigned a = (unsigned)strtoul(word, NULL, 16);
            if (a == 0)
                a = 0x0100007F;
            snprintf(l->addr, sizeof(l->addr), "%u.%u.%u.%u", a & 0xff, (a >> 8) & 0xff,
                     (a >> 16) & 0xff, a >> 24);
        } else if (!strncmp(addr, "00000000000000000000000000000000", 32) ||
                   !strncmp(addr, "00000000000000000000000001000000", 32)) {
            snprintf(l->addr, sizeof(l->addr), "::1");
        } else {
            l->addr[0] = '\0'; /* another v6 address: not reachable as loopback */
        }
    }
    return n;
}

size_t pp_node_listeners(int pid, pp_node_listener *out, size_t max)
{
    /* the process's socket inodes */
    unsigned long long inodes[1024];
    size_t ni = 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *e;
    unsigned scanned = 0;
    while ((e = readdir(d)) && ni < sizeof(inodes) / sizeof(inodes[0]) && scanned++ < 65536) {
        char lp[320], target[64];
        snprintf(lp, sizeof(lp), "/proc/%d/fd/%s", pid, e->d_name);
        ssize_t l = readlink(lp, target, sizeof(target) - 1);
        if (l <= 0)
            continue;
        target[l] = '\0';
        unsigned long long ino;
        if (sscanf(target, "socket:[%llu]", &ino) == 1)
            inodes[ni++] = ino;
    }
    closedir(d);
    size_t n = 0;
    for (int v6 = 0; v6 < 2 && n < max; v6++) {
        snprintf(path, sizeof(path), "/proc/%d/net/tcp%s", pid, v6 ? "6" : "");
        size_t len;
        char *text = read_proc(path, 4u << 20, &len);
        if (!text)
            continue;
        pp_node_listener all[256];
        size_t na = pp_node_parse_listeners(text, v6, all, 256);
        free(text);
        for (size_t i = 0; i < na && n < max; i++)
            for (size_t k = 0; k < ni; k++)
                if (all[i].inode == inodes[k] && all[i].addr[0]) {
                    out[n++] = all[i];
                    break;
                }
    }
    return n;
}

/* "[host:]port" → port, -1 if not a port. */
static int port_of(const char *v)
{
    const char *c = strrchr(v, ':');
    const char *p = c ? c + 1 : v;
    char *end;
    long x = strtol(p, &end, 10);
    if (end == p || *end || x < 0 || x > 65535)
        return -1;
    return (int)x;
}

/* Applies one option to f; returns how many arguments it used (1 or 2), 0 if not an option. */
static int apply_flag(pp_node_flags *f, char *const *argv, int i, int argc)
{
    const char *a = argv[i];
    if (a[0] != '-')
        return 0;
    if (!strcmp(a, "--disable-sigusr1"))
        f->disable_sigusr1 = true;
    else if (!strcmp(a, "--inspect") || !strcmp(a, "--inspect-brk") || !strcmp(a, "--inspect-wait"))
        f->inspect_at_start = true;
    else if (!strncmp(a, "--inspect=", 10) || !strncmp(a, "--inspect-brk=", 14) ||
             !strncmp(a, "--inspect-wait=", 15)) {
        f->inspect_at_start = true;
        int p = port_of(strchr(a, '=') + 1);
        if (p >= 0)
            f->port = p;
    } else if (!strncmp(a, "--inspect-port=", 15) || !strncmp(a, "--debug-port=", 13)) {
        int p = port_of(strchr(a, '=') + 1);
        if (p >= 0)
            f->port = p;
    } else if ((!strcmp(a, "--inspect-port") || !strcmp(a, "--debug-port")) && i + 1 < argc) {
        int p = port_of(argv[i + 1]);
        if (p >= 0)
            f->port = p;
        return 2;
    } else if (!strcmp(a, "--perf-basic-prof") || !strcmp(a, "--perf-basic-prof-only-functions"))
        f->perf_basic_prof = true;
    else if (!strcmp(a, "--perf-prof"))
        f->perf_prof = true;
    else if ((!strcmp(a, "-r") || !strcmp(a, "--require") || !strcmp(a, "--import") ||
              !strcmp(a, "--loader") || !strcmp(a, "-e") || !strcmp(a, "--eval") ||
              !strcmp(a, "-p") || !strcmp(a, "--print")) &&
             i + 1 < argc)
        return 2;
    return 1;
}

void pp_node_parse_flags(char *const *argv, int argc, const char *node_options, pp_node_flags *f)
{
    memset(f, 0, sizeof(*f));
    f->port = 9229;
    /* NODE_OPTIONS first: the command line wins */
    if (node_options) {
        char buf[4096];
        snprintf(buf, sizeof(buf), "%s", node_options);
        char *words[128];
        int nw = 0;
        for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w && nw < 128;
             w = strtok_r(NULL, " \t", &save))
            words[nw++] = w;
        for (int i = 0; i < nw;) {
            int used = apply_flag(f, words, i, nw);
            i += used ? used : 1;
        }
    }
    /* node's own options come before the script (or -e code); the script's are not node's */
    for (int i = 1; i < argc;) {
        int used = apply_flag(f, argv, i, argc);
        if (!used)
            break;
        i += used;
    }
}

int pp_node_read_flags(int pid, pp_node_flags *f)
{
    char path[64];
    size_t len, elen = 0;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    char *cmd = read_proc(path, 1u << 20, &len);
    if (!cmd)
        return -1;
    char *argv[256];
    int argc = 0;
    for (size_t o = 0; o < len && argc < 256; o += strlen(cmd + o) + 1)
        argv[argc++] = cmd + o;
    snprintf(path, sizeof(path), "/proc/%d/environ", pid);
    char *env = read_proc(path, 1u << 20, &elen);
    const char *nopts = NULL;
    for (size_t o = 0; env && o < elen; o += strlen(env + o) + 1)
        if (!strncmp(env + o, "NODE_OPTIONS=", 13))
            nopts = env + o + 13;
    pp_node_parse_flags(argv, argc, nopts, f);
    free(env);
    free(cmd);
    return 0;
}
