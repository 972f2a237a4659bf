/* Java appids (docs/containers-and-appids.md). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include "base/inroot.h"
#include "runtimes/appid.h"
#include "runtimes/java/java.h"
#include "runtimes/java/manifest.h"

int pp_java_open_jar(const char *root, const char *cwd, const char *jar)
{
    char path[PATH_MAX];
    if (!jar || !jar[0] || (jar[0] != '/' && !cwd))
        return -1;
    int n = jar[0] == '/' ? snprintf(path, sizeof(path), "%s", jar)
                          : snprintf(path, sizeof(path), "%s/%s", cwd, jar);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -1;
    int rootfd = open(root ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return -1;
    int fd = pp_openat_in_root(rootfd, path, O_RDONLY | O_NONBLOCK); /* a FIFO never blocks */
    close(rootfd);
    return fd;
}

int pp_java_jar_manifest(const char *root, const char *cwd, const char *jar, pp_jar_manifest *m)
{
    memset(m, 0, sizeof(*m));
    int fd = pp_java_open_jar(root, cwd, jar);
    if (fd < 0)
        return -1;
    int rc = pp_jar_manifest_read_fd(fd, m);
    close(fd);
    return rc;
}

/* The first entry of a class path that is a .jar (copied into out), or NULL. */
static const char *classpath_jar(const char *cp, char *out, size_t len)
{
    while (cp && *cp) {
        size_t l = strcspn(cp, ":");
        if (l >= 4 && l < len && strncmp(cp + l - 4, ".jar", 4) == 0) {
            memcpy(out, cp, l);
            out[l] = '\0';
            return out;
        }
        cp += l + (cp[l] == ':');
    }
    return NULL;
}

/* A Spring Boot launcher started with -cp app.jar: the application is the manifest's
 * Start-Class. "java: <Start-Class>", or NULL. */
static char *boot_start_class(const char *launcher, const char *cp, const char *cwd,
                              const char *root)
{
    char jar[PATH_MAX];
    if (!pp_jar_is_boot_launcher(launcher) || !classpath_jar(cp, jar, sizeof(jar)))
        return NULL;
    pp_jar_manifest m;
    return pp_java_jar_manifest(root, cwd, jar, &m) == 0 && m.start_class[0]
               ? pp_appid_fmt("java: %s", m.start_class)
               : NULL;
}

char *pp_appid_java(char *const *argv, int argc, const char *cwd, const char *root)
{
    static const char *const with_value[] = {
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--add-modules",
        "--upgrade-module-path",
        "--limit-modules",
        "--add-reads",
        "--add-exports",
        "--add-opens",
        "--patch-module",
        "--source",
        "-d",
        "--enable-native-access",
        "--describe-module",
    };
    if (!argv)
        return NULL;
    const char *cp = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-jar") == 0 || strcmp(a, "-m") == 0 || strcmp(a, "--module") == 0)
            return i + 1 < argc && argv[i + 1][0] ? pp_appid_fmt("java: %s", argv[i + 1]) : NULL;
        if (pp_appid_starts_with(a, "--module="))
            return a[9] ? pp_appid_fmt("java: %s", a + 9) : NULL;
        if (a[0] == '@')
            continue;
        if (a[0] == '-') {
            bool cp_opt = strcmp(a, "-cp") == 0 || strcmp(a, "-classpath") == 0 ||
                          strcmp(a, "--class-path") == 0;
            if (cp_opt && i + 1 < argc)
                cp = argv[i + 1];
            else if (pp_appid_starts_with(a, "--class-path="))
                cp = a + 13;
            for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
                if (strcmp(a, with_value[k]) == 0) {
                    i++;
                    break;
                }
            continue;
        }
        if (a[0]) {
            char *boot = boot_start_class(a, cp, cwd, root);
            return boot ? boot : pp_appid_fmt("java: %s", a);
        }
    }
    return NULL;
}

const char *pp_java_app_jar(char *const *argv, int argc, char *out, size_t len)
{
    const char *cp = NULL;
    for (int i = 1; argv && i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-jar") == 0)
            return i + 1 < argc && argv[i + 1][0] ? (snprintf(out, len, "%s", argv[i + 1]), out)
                                                  : NULL;
        if ((strcmp(a, "-cp") == 0 || strcmp(a, "-classpath") == 0 ||
             strcmp(a, "--class-path") == 0) &&
            i + 1 < argc) {
            cp = argv[++i];
            continue;
        }
        if (pp_appid_starts_with(a, "--class-path=")) {
            cp = a + 13;
            continue;
        }
        if (a[0] == '-' || a[0] == '@' || !a[0])
            continue; /* options with values other than the class path do not matter here */
        return pp_jar_is_boot_launcher(a) ? classpath_jar(cp, out, len) : NULL;
    }
    return NULL;
}
