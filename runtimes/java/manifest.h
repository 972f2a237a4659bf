/* A JAR's META-INF/MANIFEST.MF, read with libarchive: what names the application when the
 * command line does not (Spring Boot's launchers), and its title and version for the
 * application metadata. Every read is bounded: the manifest (64 KiB), the entries visited, the
 * line length. */
#ifndef PP_JAVA_MANIFEST_H
#define PP_JAVA_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#define PP_MANIFEST_MAX (64u << 10)

typedef struct pp_jar_manifest {
    char main_class[256];            /* Main-Class */
    char start_class[256];           /* Start-Class (Spring Boot: the application's class) */
    char implementation_title[128];  /* Implementation-Title */
    char implementation_version[64]; /* Implementation-Version */
} pp_jar_manifest;

/* Parses manifest text (the main section: attributes up to the first blank line; "Name: value"
 * lines, continuation lines start with one space). Unknown attributes are ignored; values too
 * long for their field are cut. Returns the number of attributes kept. */
int pp_jar_manifest_parse(const char *text, size_t len, pp_jar_manifest *m);

/* Reads the manifest of the JAR open at fd (a regular file; the fd is not closed). 0, or -1 when
 * it is not a readable zip or has no manifest (m is zeroed then). */
int pp_jar_manifest_read_fd(int fd, pp_jar_manifest *m);

/* Whether cls is one of Spring Boot's launchers (JarLauncher, WarLauncher, PropertiesLauncher,
 * in org.springframework.boot.loader or its .launch package since Boot 3.2), whose manifest's
 * Start-Class names the application. */
bool pp_jar_is_boot_launcher(const char *cls);

#endif
