/* Unit tests: JAR manifests read with libarchive, and the Spring Boot appid they give. */
#include "tests/unit/testutil.h"

#include <limits.h>

#include "runtimes/java/java.h"
#include "runtimes/java/manifest.h"

Test(manifest, parse_main_section_with_continuations)
{
    const char *t = "Manifest-Version: 1.0\r\n"
                    "main-class: org.springframework.boot.loader.launch.JarLauncher\r\n"
                    "Start-Class: com.example.very.long.package.name.that.wraps.at.seventy.tw\r\n"
                    " o.bytes.Application\r\n"
                    "Implementation-Title: demo\r\n"
                    "Implementation-Version: 1.2.3\r\n"
                    "\r\n"
                    "Name: com/example/\r\n"
                    "Implementation-Title: not the main section\r\n";
    pp_jar_manifest m;
    cr_assert_eq(pp_jar_manifest_parse(t, strlen(t), &m), 4);
    cr_expect_str_eq(m.main_class, "org.springframework.boot.loader.launch.JarLauncher");
    cr_expect_str_eq(m.start_class,
                     "com.example.very.long.package.name.that.wraps.at.seventy.two.bytes."
                     "Application");
    cr_expect_str_eq(m.implementation_title, "demo");
    cr_expect_str_eq(m.implementation_version, "1.2.3");
}

Test(manifest, garbage_and_long_values_are_bounded)
{
    pp_jar_manifest m;
    cr_expect_eq(pp_jar_manifest_parse("", 0, &m), 0);
    cr_expect_eq(pp_jar_manifest_parse(":::\n \n\n", 8, &m), 0);
    size_t n = 3 * PP_MANIFEST_MAX;
    char *big = malloc(n);
    memset(big, ' ', n);
    memcpy(big, "Start-Class: x", 14);
    big[14] = '\n';
    cr_expect_eq(pp_jar_manifest_parse(big, n, &m), 1); /* continuation lines of spaces */
    cr_expect_eq(strlen(m.start_class), sizeof(m.start_class) - 1, "cut to its field");
    free(big);
}

Test(manifest, launchers)
{
    cr_expect(pp_jar_is_boot_launcher("org.springframework.boot.loader.JarLauncher"));
    cr_expect(pp_jar_is_boot_launcher("org.springframework.boot.loader.launch.PropertiesLauncher"));
    cr_expect(pp_jar_is_boot_launcher("org.springframework.boot.loader.WarLauncher"));
    cr_expect(!pp_jar_is_boot_launcher("org.springframework.boot.loader.Other"));
    cr_expect(!pp_jar_is_boot_launcher("com.example.JarLauncher"));
}

/* A jar made with Python's zipfile: 300 entries, then the manifest. */
static char *make_jar(const char *dir, const char *name, const char *manifest)
{
    char *path = malloc(PATH_MAX), cmd[4096];
    snprintf(path, PATH_MAX, "%s/%s", dir, name);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import sys, zipfile\n"
             "z = zipfile.ZipFile(sys.argv[1], \"w\", zipfile.ZIP_DEFLATED)\n"
             "[z.writestr(\"com/example/C%%d.class\" %% i, b\"x\" * 100) for i in range(300)]\n"
             "z.writestr(\"META-INF/MANIFEST.MF\", sys.argv[2])\n"
             "z.close()' '%s' '%s'",
             path, manifest);
    cr_assert_eq(system(cmd), 0);
    return path;
}

Test(manifest, read_from_a_jar_and_the_boot_appid)
{
    char *dir = pp_test_mkdtemp();
    char sub[PATH_MAX];
    snprintf(sub, sizeof(sub), "%s/app", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    char *jar = make_jar(sub, "demo.jar",
                         "Manifest-Version: 1.0\nMain-Class: "
                         "org.springframework.boot.loader.launch.JarLauncher\nStart-Class: "
                         "com.example.Demo\nImplementation-Version: 0.9\n");
    int fd = open(jar, O_RDONLY);
    pp_jar_manifest m;
    cr_assert_eq(pp_jar_manifest_read_fd(fd, &m), 0);
    cr_expect_str_eq(m.start_class, "com.example.Demo");
    cr_expect_str_eq(m.implementation_version, "0.9");
    close(fd);

    /* the appid: root is the fixture directory, cwd /app inside it */
    char *argv[] = {"java",
                    "-Xmx64m",
                    "-cp",
                    "demo.jar:lib/other.jar",
                    "org.springframework.boot.loader.launch.JarLauncher",
                    "--server.port=1"};
    char *id = pp_appid_java(argv, 6, "/app", dir);
    cr_expect_str_eq(id, "java: com.example.Demo");
    free(id);
    char out[PATH_MAX];
    cr_expect_str_eq(pp_java_app_jar(argv, 6, out, sizeof(out)), "demo.jar");
    /* -jar keeps gProfiler's appid */
    char *argv2[] = {"java", "-jar", "/app/demo.jar"};
    id = pp_appid_java(argv2, 3, "/", dir);
    cr_expect_str_eq(id, "java: /app/demo.jar");
    free(id);
    cr_expect_str_eq(pp_java_app_jar(argv2, 3, out, sizeof(out)), "/app/demo.jar");
    /* an ordinary main class: no jar read */
    char *argv3[] = {"java", "-cp", "demo.jar", "com.example.Main"};
    id = pp_appid_java(argv3, 4, "/app", dir);
    cr_expect_str_eq(id, "java: com.example.Main");
    free(id);
    cr_expect_null(pp_java_app_jar(argv3, 4, out, sizeof(out)));
    free(jar);
    pp_test_rmtree(dir);
}

Test(manifest, nothing_outside_the_root_or_unreadable)
{
    char *dir = pp_test_mkdtemp();
    char *outside = pp_test_mkdtemp();
    char *jar = make_jar(outside, "host.jar", "Start-Class: host.Secret\n");
    char link[PATH_MAX];
    snprintf(link, sizeof(link), "%s/demo.jar", dir);
    cr_assert_eq(symlink(jar, link), 0); /* absolute: resolved inside the root, not found */
    char *argv[] = {"java", "-cp", "demo.jar", "org.springframework.boot.loader.JarLauncher"};
    char *id = pp_appid_java(argv, 4, "/", dir);
    cr_expect_str_eq(id, "java: org.springframework.boot.loader.JarLauncher");
    free(id);
    /* not a zip, a FIFO */
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/bad.jar", dir);
    FILE *f = fopen(p, "w");
    fputs("not a zip", f);
    fclose(f);
    int fd = open(p, O_RDONLY);
    pp_jar_manifest m;
    cr_expect_eq(pp_jar_manifest_read_fd(fd, &m), -1);
    close(fd);
    snprintf(p, sizeof(p), "%s/fifo.jar", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    fd = pp_java_open_jar(dir, "/", "fifo.jar");
    cr_assert_geq(fd, 0, "opened without blocking");
    cr_expect_eq(pp_jar_manifest_read_fd(fd, &m), -1);
    close(fd);
    free(jar);
    pp_test_rmtree(dir);
    pp_test_rmtree(outside);
}
