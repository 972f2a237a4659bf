/* The Python version of a process, read from the libpython it maps (pp_python_process_version):
 * the file is opened inside the process's root, so a container's symlinks cannot make polyprof
 * read a host file instead. */
#include "tests/unit/testutil.h"

#include <stdbool.h>

#include "runtimes/python/python_int.h"

TestSuite(python_version, .init = pp_test_quiet_log);

/* A shared library whose .rodata holds the literal version (as PY_VERSION in libpython). */
static void build_lib(const char *path, const char *version)
{
    char cmd[1400];
    snprintf(cmd, sizeof(cmd),
             "printf 'const char pp_version[] = \"%s\";\\n' | cc -shared -fPIC -o '%s' -x c -",
             version, path);
    cr_assert(system(cmd) == 0, "%s", cmd);
}

/* libpython replaced, after it was mapped, by an absolute symlink to a path that exists both on
 * the host and inside the root: the version comes from the file inside. */
Test(python_version, libpython_read_inside_the_process_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp(), p[1400], target[600];
    snprintf(p, sizeof(p), "mkdir -p %s/lib %s%s", root, root, host);
    cr_assert(system(p) == 0);
    snprintf(p, sizeof(p), "%s/lib/libpython3.11.so", root);
    build_lib(p, "3.11.42");
    pid_t pid = pp_test_spawn_in_root_with_lib(root, "lib/libpython3.11.so");
    char ver[32];
    cr_assert_eq(pp_python_process_version(pid, ver, sizeof(ver)), 0);
    cr_assert_str_eq(ver, "3.11.42");

    snprintf(target, sizeof(target), "%s/libpython.so", host);
    build_lib(target, "3.11.99");
    snprintf(p, sizeof(p), "%s%s/libpython.so", root, host);
    build_lib(p, "3.11.7");
    snprintf(p, sizeof(p), "%s/lib/libpython3.11.so", root);
    cr_assert(unlink(p) == 0 && symlink(target, p) == 0);
    cr_assert_eq(pp_python_process_version(pid, ver, sizeof(ver)), 0);
    cr_assert_str_eq(ver, "3.11.7", "libpython was read outside the process's root");
    pp_test_kill(pid);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}
