/* Unit tests: container ids from cgroup text, names from Docker's on-disk config, kubelet log
 * links and Podman's containers.json in fixture trees, the Docker engine API through libcurl
 * against a tiny HTTP server on a unix socket, session caching, malformed inputs, and a real
 * cgroup v2 directory named like a Docker scope holding a child process. */
#include "tests/unit/testutil.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "orchestrator/containers.h"

TestSuite(containers, .init = pp_test_quiet_log);

#define ID_A "3f4e1c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
#define ID_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_C "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define ID_D "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* ---- cgroup parsing ---- */

typedef struct {
    const char *text;
    const char *want; /* "" = none */
} cgroup_case;

static const cgroup_case cgroup_cases[] = {
    /* docker, cgroup v1 */
    {"12:pids:/docker/" ID_A "\n11:memory:/docker/" ID_A "\n", ID_A},
    /* docker, cgroup v2 with the systemd driver */
    {"0::/system.slice/docker-" ID_A ".scope\n", ID_A},
    /* docker, cgroup v2 with the cgroupfs driver */
    {"0::/docker/" ID_A "\n", ID_A},
    /* kubepods + containerd, v1 with pod uid (not 64 hex) */
    {"11:cpu,cpuacct:/kubepods/burstable/pod0c7b2b64-1f3a-4bb4-8e3e-1a2b3c4d5e6f/" ID_B "\n", ID_B},
    /* kubepods, systemd driver, containerd and cri-o */
    {"0::/kubepods.slice/kubepods-besteffort.slice/"
     "kubepods-besteffort-pod0c7b2b64_1f3a_4bb4_8e3e_1a2b3c4d5e6f.slice/cri-containerd-" ID_B
     ".scope\n",
     ID_B},
    {"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podx.slice/crio-" ID_C
     ".scope\n",
     ID_C},
    {"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podx.slice/crio-conmon-" ID_C
     ".scope\n",
     ID_C},
    /* podman */
    {"0::/machine.slice/libpod-" ID_C ".scope\n", ID_C},
    {"0::/machine.slice/libpod-" ID_C ".scope/container\n", ID_C},
    {"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID_C ".scope\n", ID_C},
    /* ECS: /ecs/<task uuid or 32 hex>/<64 hex> */
    {"9:perf_event:/ecs/5a0d5f8e9b2c4d7e8f9a0b1c2d3e4f5a/" ID_A "\n", ID_A},
    {"3:cpu:/ecs/0d1f5a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b/" ID_A "\n", ID_A},
    /* the last match on the first line that has one */
    {"0::/docker/" ID_A "/" ID_B "\n1:cpu:/docker/" ID_C "\n", ID_B},
    {"2:cpu:/\n1:memory:/docker/" ID_C "\n0::/docker/" ID_A "\n", ID_C},
    /* a 65+ hex run: the first 64 chars (findall is non-overlapping) */
    {"0::/x/" ID_A "9\n", ID_A},
    /* 128 hex: two matches, the last wins */
    {"0::/" ID_A ID_B "\n", ID_B},
    /* the hex has to be in the path, not the controllers field */
    {"1:" ID_A ":/\n", ""},
    /* no container */
    {"0::/user.slice/user-0.slice/session-1.scope\n", ""},
    {"0::/init.scope\n", ""},
    {"0::/\n", ""},
    {"12:pids:/\n11:memory:/process_api/137eb9102ecb17dbfab4fb26d50a6a71\n0::/\n", ""},
    {"0::/system.slice/docker.service\n", ""},
    {"0::/docker/" ID_A, ID_A}, /* no trailing newline */
    /* uppercase or short hex is no id */
    {"0::/docker/3F4E1C2B9A8D7E6F5A4B3C2D1E0F9A8B7C6D5E4F3A2B1C0D9E8F7A6B5C4D3E2F\n", ""},
    {"0::/docker/3f4e1c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2\n", ""},
    /* malformed lines */
    {"garbage " ID_A "\n", ""},
    {"", ""},
    {"\n\n\n", ""},
    {"::\n:", ""},
};

Test(containers, cgroup_table)
{
    for (size_t i = 0; i < sizeof(cgroup_cases) / sizeof(cgroup_cases[0]); i++) {
        char out[65] = "x";
        int rc = pp_container_id_from_cgroup(cgroup_cases[i].text, out);
        cr_expect_str_eq(out, cgroup_cases[i].want, "case %zu: %s", i, cgroup_cases[i].text);
        cr_expect_eq(rc, cgroup_cases[i].want[0] ? 0 : -1, "case %zu", i);
    }
    char out[65] = "x";
    cr_assert_eq(pp_container_id_from_cgroup(NULL, out), -1);
    cr_assert_str_eq(out, "");
}

/* ---- fixture helpers ---- */

static void mkdirs(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void write_at(const char *root, const char *rel, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s%s", root, rel);
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", p);
    *strrchr(dir, '/') = '\0';
    mkdirs(dir);
    pp_test_write_file(p, text, strlen(text));
}

static void docker_config(const char *root, const char *id, const char *json)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "/var/lib/docker/containers/%s/config.v2.json", id);
    write_at(root, rel, json);
}

static void log_link(const char *root, const char *name, const char *target)
{
    char dir[PATH_MAX], p[PATH_MAX + 256];
    snprintf(dir, sizeof(dir), "%s/var/log/containers", root);
    mkdirs(dir);
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    cr_assert_eq(symlink(target, p), 0, "symlink %s", p);
}

/* ---- on-disk sources ---- */

Test(containers, docker_config_fixture)
{
    char *root = pp_test_mkdtemp();
    docker_config(root, ID_A, "{\"ID\":\"" ID_A "\",\"Name\":\"/my-web\",\"State\":{}}");
    docker_config(root, ID_B, "{\"Name\":\"plain\"}");
    docker_config(root, ID_C, "{\"ID\":\"" ID_A "\",\"Name\":\"/wrong-id\"}");
    pp_containers *c = pp_containers_new(root, NULL);
    cr_assert_not_null(c);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), "my-web");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_B), "plain");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_C), "");
    cr_assert_str_eq(pp_container_name_by_id(c, "../../etc"), "");
    cr_assert_str_eq(pp_container_name_by_id(c, NULL), "");
    cr_assert_str_eq(pp_container_name(c, -5), "");
    pp_containers_free(c);
    pp_test_rmtree(root);
}

Test(containers, malformed_docker_configs)
{
    char *root = pp_test_mkdtemp();
    const char *bad[] = {
        "",
        "not json",
        "[1,2,3]",
        "{\"Name\": 42}",
        "{\"Name\": \"\"}",
        "{\"Name\": \"/\"}",
        "{\"Name\": \"/a\\nb\"}",
        "{\"Name\": \"/trunc",
        "{\"ID\": 7, \"Name\": \"/x\"}", /* a non-string ID is ignored: name used */
    };
    pp_containers *c = pp_containers_new(root, "/var/run/docker.sock"); /* no socket there */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char id[65];
        snprintf(id, sizeof(id), "%064zx", i + 1);
        docker_config(root, id, bad[i]);
        cr_expect_str_eq(pp_container_name_by_id(c, id), i == 8 ? "x" : "", "case %zu", i);
    }
    /* Too large (sparse 5 MiB), a directory in place of the file, and a FIFO. */
    docker_config(root, ID_A, "{\"Name\":\"/big\"}");
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/var/lib/docker/containers/%s/config.v2.json", root, ID_A);
    cr_assert_eq(truncate(p, 5 * 1024 * 1024), 0);
    cr_expect_str_eq(pp_container_name_by_id(c, ID_A), "");
    snprintf(p, sizeof(p), "%s/var/lib/docker/containers/%s/config.v2.json", root, ID_B);
    mkdirs(p);
    cr_expect_str_eq(pp_container_name_by_id(c, ID_B), "");
    snprintf(p, sizeof(p), "%s/var/lib/docker/containers/%s", root, ID_C);
    mkdirs(p);
    strcat(p, "/config.v2.json");
    cr_assert_eq(mkfifo(p, 0600), 0);
    cr_expect_str_eq(pp_container_name_by_id(c, ID_C), "");
    pp_containers_free(c);
    pp_test_rmtree(root);
}

Test(containers, kubelet_log_links)
{
    char *root = pp_test_mkdtemp();
    log_link(root, "web-7d9f_prod_nginx-" ID_A ".log",
             "/var/log/pods/prod_web-7d9f_0c7b2b64-1f3a-4bb4-8e3e-1a2b3c4d5e6f/nginx/3.log");
    /* pre-1.14 layout: /var/log/pods/<uid>/<container>/<n>.log */
    log_link(root, "db-0_default_postgres-" ID_B ".log",
             "/var/log/pods/11111111-2222-3333-4444-555555555555/postgres/0.log");
    /* relative target */
    log_link(root, "a.b.c_kube-system_coredns-" ID_C ".log",
             "../pods/kube-system_a.b.c_u-1/coredns/12.log");
    /* malformed ones: ignored */
    log_link(root, "x_y_z-" ID_D ".log", "/var/log/pods/other_x_u/z/0.log"); /* ns mismatch */
    log_link(root, "x_y_z-1234.log", "/var/log/pods/y_x_u/z/0.log");         /* short id */
    log_link(root, "xy_z-" ID_D "0.log", "/var/log/pods/y_x_u/z/0.log");     /* bad name */
    log_link(root, "p_n_c-" ID_D ".log", "/var/log/pods/n_p_u/c/x.log");     /* restart */
    log_link(root, "p_n_c-" ID_D ".txt", "/var/log/pods/n_p_u/c/0.log");
    log_link(root, "p_n_other-" ID_D ".log", "/var/log/pods/n_p_u/c/0.log"); /* container */
    log_link(root, "p_n_c-" ID_D ".log.tmp", "x");
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/var/log/containers/plainfile-" ID_D ".log", root);
    pp_test_write_file(p, "x", 1);

    pp_containers *c = pp_containers_new(root, NULL);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A),
                     "k8s_nginx_web-7d9f_prod_0c7b2b64-1f3a-4bb4-8e3e-1a2b3c4d5e6f_3");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_B),
                     "k8s_postgres_db-0_default_11111111-2222-3333-4444-555555555555_0");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_C), "k8s_coredns_a.b.c_kube-system_u-1_12");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_D), "");
    pp_containers_free(c);
    pp_test_rmtree(root);
}

Test(containers, podman_containers_json)
{
    char *root = pp_test_mkdtemp();
    const char *rel = "/var/lib/containers/storage/overlay-containers/containers.json";
    write_at(root, rel,
             "[{\"id\":\"" ID_A "\",\"names\":[\"pod-web\",\"alias\"],\"image\":\"x\"},"
             "{\"id\":\"" ID_B "\",\"names\":[]},{\"id\":\"short\",\"names\":[\"s\"]},"
             "{\"names\":[\"noid\"]},7,null,{\"id\":\"" ID_C "\",\"names\":[\"podman-c\"]}]");
    pp_containers *c = pp_containers_new(root, NULL);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), "pod-web");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_B), "");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_C), "podman-c");
    pp_containers_free(c);

    write_at(root, rel, "{\"not\":\"an array\"}");
    c = pp_containers_new(root, NULL);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), "");
    pp_containers_free(c);
    write_at(root, rel, "[{\"id\":\"" ID_A "\",\"names\":[\"trunc");
    c = pp_containers_new(root, NULL);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), "");
    pp_containers_free(c);
    pp_test_rmtree(root);
}

Test(containers, session_caching)
{
    char *root = pp_test_mkdtemp();
    pp_containers *c = pp_containers_new(root, NULL);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), ""); /* no source at all */
    docker_config(root, ID_A, "{\"Name\":\"/late\"}");
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), ""); /* unknown for this session */
    pp_containers_new_session(c);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), "late"); /* retried */
    docker_config(root, ID_A, "{\"Name\":\"/renamed\"}");
    pp_containers_new_session(c);
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), "late"); /* known names are kept */
    /* Many ids: the table grows and keeps answering. */
    for (int i = 0; i < 3000; i++) {
        char id[65];
        snprintf(id, sizeof(id), "%064x", i + 100);
        cr_assert_str_eq(pp_container_name_by_id(c, id), "");
    }
    cr_assert_str_eq(pp_container_name_by_id(c, ID_A), "late");
    pp_containers_new_session(c);
    pp_containers_free(c);
    pp_containers_free(NULL);
    pp_containers_new_session(NULL);
    cr_assert_str_eq(pp_container_name(NULL, 1), "");
    pp_test_rmtree(root);
}

Test(containers, own_process_and_gone_pids)
{
    char *root = pp_test_mkdtemp();
    pp_containers *c = pp_containers_new(root, NULL);
    /* Whatever this test runs in, the call answers and is stable within the session. */
    const char *a = pp_container_name(c, getpid());
    cr_assert_not_null(a);
    cr_assert_eq(pp_container_name(c, getpid()), a);
    cr_assert_str_eq(pp_container_name(c, 0x3fffffff), ""); /* no such pid */
    pp_containers_free(c);
    pp_test_rmtree(root);
}

/* ---- Docker engine API over a unix socket ---- */

typedef struct {
    int lfd;
    const char *reply; /* full HTTP answer; NULL = accept and never answer */
    atomic_int conns;
    atomic_int stop;
} http_srv;

static void *serve(void *arg)
{
    http_srv *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&s->conns, 1);
        char req[8192];
        size_t got = 0;
        while (got < sizeof(req) - 1) {
            ssize_t n = read(fd, req + got, sizeof(req) - 1 - got);
            if (n <= 0)
                break;
            got += (size_t)n;
            req[got] = '\0';
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        if (s->reply) {
            if (strncmp(req, "GET /containers/json HTTP/1.1\r\n", 31) == 0) {
                ssize_t w = write(fd, s->reply, strlen(s->reply));
                (void)w;
            }
        } else {
            while (!atomic_load(&s->stop))
                usleep(10000); /* hang until the test ends */
        }
        close(fd);
    }
    return NULL;
}

static char *http_ok(const char *json, int status)
{
    char *r = NULL;
    cr_assert(asprintf(&r,
                       "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: "
                       "%zu\r\nConnection: close\r\n\r\n%s",
                       status, strlen(json), json) > 0);
    return r;
}

static void start_server(http_srv *s, const char *root, pthread_t *th)
{
    char dir[64];
    cr_assert_lt(strlen(root), 40);
    snprintf(dir, sizeof(dir), "%.40s/var/run", root);
    mkdirs(dir);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s/docker.sock", dir);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(s->lfd, 0);
    cr_assert_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
    cr_assert_eq(listen(s->lfd, 8), 0);
    cr_assert_eq(pthread_create(th, NULL, serve, s), 0);
}

static void stop_server(http_srv *s, pthread_t th)
{
    atomic_store(&s->stop, 1);
    pthread_join(th, NULL);
    close(s->lfd);
}

Test(containers, docker_api)
{
    char *root = pp_test_mkdtemp();
    char *reply = http_ok("[{\"Id\":\"" ID_A "\",\"Names\":[\"/web-1\"],\"Image\":\"nginx\"},"
                          "{\"Id\":\"" ID_B "\",\"Names\":[]},{\"Id\":\"zz\",\"Names\":[\"/z\"]},"
                          "{\"Id\":\"" ID_C "\",\"Names\":[\"/api\"]}]",
                          200);
    http_srv s = {.reply = reply};
    pthread_t th;
    start_server(&s, root, &th);
    /* The on-disk config loses to the API on the same id. */
    docker_config(root, ID_C, "{\"Name\":\"/from-disk\"}");
    docker_config(root, ID_B, "{\"Name\":\"/b-disk\"}");

    pp_containers *c = pp_containers_new(root, "/var/run/docker.sock");
    const char *a = pp_container_name_by_id(c, ID_A);
    const char *b = pp_container_name_by_id(c, ID_B);
    const char *cc = pp_container_name_by_id(c, ID_C);
    const char *d = pp_container_name_by_id(c, ID_D);
    int after_first = atomic_load(&s.conns);
    pp_containers_new_session(c);
    const char *a2 = pp_container_name_by_id(c, ID_A); /* kept: no new request */
    int after_known = atomic_load(&s.conns);
    const char *d2 = pp_container_name_by_id(c, ID_D); /* unknown: one new listing */
    const char *d3 = pp_container_name_by_id(c, ID_D);
    int after_unknown = atomic_load(&s.conns);
    char a_s[64], b_s[64], c_s[64], d_s[64], a2_s[64], d2_s[64], d3_s[64];
    snprintf(a_s, sizeof(a_s), "%s", a);
    snprintf(b_s, sizeof(b_s), "%s", b);
    snprintf(c_s, sizeof(c_s), "%s", cc);
    snprintf(d_s, sizeof(d_s), "%s", d);
    snprintf(a2_s, sizeof(a2_s), "%s", a2);
    snprintf(d2_s, sizeof(d2_s), "%s", d2);
    snprintf(d3_s, sizeof(d3_s), "%s", d3);
    pp_containers_free(c);
    stop_server(&s, th);
    free(reply);
    pp_test_rmtree(root);

    cr_expect_str_eq(a_s, "web-1");
    cr_expect_str_eq(b_s, "b-disk"); /* no name in the API answer: disk fallback */
    cr_expect_str_eq(c_s, "api");
    cr_expect_str_eq(d_s, "");
    cr_expect_eq(after_first, 1, "one listing per session, got %d", after_first);
    cr_expect_str_eq(a2_s, "web-1");
    cr_expect_eq(after_known, 1);
    cr_expect_str_eq(d2_s, "");
    cr_expect_str_eq(d3_s, "");
    cr_expect_eq(after_unknown, 2);
}

Test(containers, docker_api_failures)
{
    const char *bodies[] = {"not json", "{\"an\":\"object\"}", "[1,{\"Id\":5}]"};
    for (int i = 0; i < 4; i++) {
        char *root = pp_test_mkdtemp();
        char *reply = i < 3 ? http_ok(bodies[i], 200) : http_ok("[]", 500);
        http_srv s = {.reply = reply};
        pthread_t th;
        start_server(&s, root, &th);
        docker_config(root, ID_A, "{\"Name\":\"/disk\"}");
        pp_containers *c = pp_containers_new(root, "/var/run/docker.sock");
        char got[64];
        snprintf(got, sizeof(got), "%s", pp_container_name_by_id(c, ID_A));
        pp_containers_free(c);
        stop_server(&s, th);
        free(reply);
        pp_test_rmtree(root);
        cr_expect_str_eq(got, "disk", "case %d", i);
    }
}

Test(containers, docker_api_timeout)
{
    char *root = pp_test_mkdtemp();
    http_srv s = {.reply = NULL}; /* accepts, never answers */
    pthread_t th;
    start_server(&s, root, &th);
    pp_containers *c = pp_containers_new(root, "/var/run/docker.sock");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char got[64];
    snprintf(got, sizeof(got), "%s", pp_container_name_by_id(c, ID_A));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pp_containers_free(c);
    stop_server(&s, th);
    pp_test_rmtree(root);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect_str_eq(got, "");
    cr_expect_lt(secs, 2.5, "took %.2f s", secs);
    cr_expect_geq(secs, 0.9, "took %.2f s", secs);
}

/* ---- a real cgroup v2 directory ---- */

static int cgroup2_mount(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/mounts", "re");
    if (!f)
        return -1;
    char dev[256], mnt[PATH_MAX], type[64];
    int rc = -1;
    while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, mnt, type) == 3)
        if (strcmp(type, "cgroup2") == 0) {
            snprintf(out, len, "%s", mnt);
            rc = 0;
            break;
        }
    fclose(f);
    return rc;
}

Test(containers, real_cgroup_v2_docker_scope)
{
    char mnt[PATH_MAX], self[65];
    if (geteuid() != 0 || cgroup2_mount(mnt, sizeof(mnt)) != 0)
        cr_skip_test("needs root and a cgroup2 mount");
    FILE *sf = fopen("/proc/self/cgroup", "re");
    char selftext[8192] = "";
    size_t sn = sf ? fread(selftext, 1, sizeof(selftext) - 1, sf) : 0;
    selftext[sn] = '\0';
    if (sf)
        fclose(sf);
    if (pp_container_id_from_cgroup(selftext, self) == 0)
        cr_skip_test("the test itself runs in a container (%s)", self);

    char id[65], slice[PATH_MAX + 64], scope[PATH_MAX + 192], procs[PATH_MAX + 224];
    snprintf(id, sizeof(id), "%056x%08x", 0xabcdefu, (unsigned)getpid());
    snprintf(slice, sizeof(slice), "%s/polyprof-test-%d.slice", mnt, (int)getpid());
    snprintf(scope, sizeof(scope), "%s/docker-%s.scope", slice, id);
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", scope);
    if (mkdir(slice, 0755) != 0 && errno != EEXIST)
        cr_skip_test("cannot create a cgroup under %s: %s", mnt, strerror(errno));
    int mk = mkdir(scope, 0755);

    char *root = pp_test_mkdtemp();
    docker_config(root, id, "{\"Name\":\"/pp-real-cgroup\"}");

    pid_t child = fork();
    if (child == 0) {
        for (;;)
            pause();
    }
    int moved = -1;
    char name[128] = "(not run)", cgtext[4096] = "", cgid[65] = "";
    if (mk == 0 && child > 0) {
        FILE *f = fopen(procs, "we");
        if (f) {
            moved = fprintf(f, "%d\n", (int)child) > 0 ? 0 : -1;
            if (fclose(f) != 0)
                moved = -1;
        }
    }
    if (moved == 0) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)child);
        FILE *f = fopen(path, "re");
        size_t n = f ? fread(cgtext, 1, sizeof(cgtext) - 1, f) : 0;
        cgtext[n] = '\0';
        if (f)
            fclose(f);
        pp_container_id_from_cgroup(cgtext, cgid);
        pp_containers *c = pp_containers_new(root, NULL);
        snprintf(name, sizeof(name), "%s", pp_container_name(c, child));
        pp_containers_free(c);
    }
    /* Cleanup in every case: kill the child (leaving the cgroup empty), remove both dirs. */
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    int rm = 0;
    for (int i = 0; i < 100; i++) {
        rm = (mk != 0 || rmdir(scope) == 0 || errno == ENOENT) ? 0 : -1;
        if (rm == 0)
            break;
        usleep(10000);
    }
    rmdir(slice);
    pp_test_rmtree(root);

    cr_assert_eq(mk, 0, "mkdir %s", scope);
    cr_assert_gt(child, 0);
    cr_assert_eq(moved, 0, "moving the child into %s failed", scope);
    cr_expect_str_eq(cgid, id, "cgroup text: %s", cgtext);
    cr_expect_str_eq(name, "pp-real-cgroup");
    cr_expect_eq(rm, 0, "rmdir %s", scope);
}
