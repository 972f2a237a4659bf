/* The rbspy backend (runtimes/ruby/rbspy.c): its collapsed output parsed into gProfiler's
 * frames, its place among the Ruby backends; Ruby metadata (runtimes/ruby/metadata.c). */
#include "tests/unit/testutil.h"

#include <limits.h>

#include "runtimes/ruby/rbspy.h"
#include "runtimes/ruby/ruby.h"
#include "runtimes/runtime.h"

TestSuite(rbspy, .init = pp_test_quiet_log);

/* Upstream rbspy's collapsed lines: Ruby frames get "_[rb]", C-function frames none, with the
 * ":0" line of Granulate's fork. */
Test(rbspy, frames_get_gprofilers_suffixes)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 42, true);
    char text[] = "<main> - /app/a.rb:53;(unknown) [c function] - (unknown);"
                  "block in <main> - /app/a.rb:52;hot_a - /app/a.rb:25 235\n"
                  "<main> - /app/a.rb:53;sleep [c function] - (unknown):0 3\r\n"
                  "Foo.bar - /app/b.rb:7_[rb] 2\n";
    cr_assert_eq(pp_rbspy_parse(text, p, pp), 3);
    uint64_t c;
    cr_assert_str_eq(pp_test_stack_text(p, pp, 0, &c),
                     "<main> - /app/a.rb:53_[rb];(unknown) [c function] - (unknown):0;"
                     "block in <main> - /app/a.rb:52_[rb];hot_a - /app/a.rb:25_[rb]");
    cr_assert_eq(c, 235);
    cr_assert_str_eq(pp_test_stack_text(p, pp, 1, &c),
                     "<main> - /app/a.rb:53_[rb];sleep [c function] - (unknown):0");
    cr_assert_eq(c, 3);
    cr_assert_str_eq(pp_test_stack_text(p, pp, 2, &c), "Foo.bar - /app/b.rb:7_[rb]",
                     "a fork's suffix is kept once");
    pp_profile_free(p);
}

Test(rbspy, malformed_lines_are_skipped)
{
    pp_profile *p = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(p, 42, true);
    char text[] = "\n"
                  "no count here\n"
                  "f - /a.rb:1 -5\n"
                  "f - /a.rb:1 0\n"
                  " 7\n"
                  "f - /a.rb:1 99999999999999999999999\n"
                  "f - /a.rb:1 12x\n"
                  "x [c function] - \n"
                  "x [c function] - : 4\n"
                  "<main> - /a.rb:2;;g - /a.rb:9 10";
    cr_assert_eq(pp_rbspy_parse(text, p, pp), 2);
    uint64_t c;
    cr_assert_str_eq(pp_test_stack_text(p, pp, 0, &c), "x [c function] - ::0");
    cr_assert_str_eq(pp_test_stack_text(p, pp, 1, &c), "<main> - /a.rb:2_[rb];g - /a.rb:9_[rb]");
    cr_assert_eq(c, 10);
    pp_profile_free(p);
}

/* The search path finds rbspy at ruby/rbspy; "auto" is the built-in backend (which hands rbspy
 * what it cannot walk) whether or not rbspy is found, and an explicit rbspy mode without it says
 * where it was looked for. */
Test(rbspy, found_on_the_resource_path)
{
    char *d = pp_test_mkdtemp(), tool[PATH_MAX], out[PATH_MAX], why[1024];
    snprintf(tool, sizeof(tool), "%s/ruby", d);
    cr_assert(mkdir(tool, 0755) == 0);
    strcat(tool, "/rbspy");
    pp_test_write_file(tool, "#!/bin/sh\n", 10);
    cr_assert(chmod(tool, 0755) == 0);
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", "/nonexistent", 1);
    setenv("POLYPROF_RESOURCES", d, 1);
    const pp_runtime *rt = pp_runtime_get(PP_KIND_RUBY);
    cr_assert_eq(pp_rbspy_find(out, sizeof(out)), 0);
    cr_expect_str_eq(out, tool);
    const pp_backend *b = pp_runtime_backend(rt, "auto", why, sizeof(why));
    cr_assert(b && strcmp(b->name, "builtin") == 0);
    b = pp_runtime_backend(rt, "rbspy", why, sizeof(why));
    cr_assert(b && strcmp(b->name, "rbspy") == 0 && !why[0], "%s", why);
    unsetenv("POLYPROF_RESOURCES");
    b = pp_runtime_backend(rt, "auto", why, sizeof(why));
    cr_assert(b && strcmp(b->name, "builtin") == 0);
    b = pp_runtime_backend(rt, "rbspy", why, sizeof(why));
    cr_assert(b && strcmp(b->name, "rbspy") == 0);
    cr_expect(strstr(why, "rbspy not found (looked for ") && strstr(why, "ruby/rbspy"), "%s", why);
    if (old_path)
        setenv("PATH", old_path, 1);
    free(old_path);
    pp_test_rmtree(d);
}

/* A shared library with Ruby's version arrays, as libruby has them. */
static void build_libruby(const char *path, const char *description, const char *version)
{
    char cmd[1600];
    snprintf(cmd, sizeof(cmd),
             "printf 'const char ruby_description[] = \"%s\";\\n"
             "const char ruby_version[] = \"%s\";\\n' | cc -shared -fPIC -o '%s' -x c -",
             description, version, path);
    cr_assert(system(cmd) == 0, "%s", cmd);
}

Test(rbspy, version_read_from_the_elf)
{
    char *d = pp_test_mkdtemp(), lib[PATH_MAX], ver[160];
    snprintf(lib, sizeof(lib), "%s/libruby.so", d);
    build_libruby(lib, "ruby 3.1.2p20 (2022-04-12 revision 4491bb740a) [x86_64-linux-gnu]",
                  "3.1.2");
    cr_assert_eq(pp_ruby_elf_version(lib, ver, sizeof(ver)), 0);
    cr_assert_str_eq(ver, "ruby 3.1.2p20 (2022-04-12 revision 4491bb740a) [x86_64-linux-gnu]");
    build_libruby(lib, "not a ruby", "3.4.1");
    cr_assert_eq(pp_ruby_elf_version(lib, ver, sizeof(ver)), 0);
    cr_assert_str_eq(ver, "ruby 3.4.1", "no description: the version array");
    build_libruby(lib, "x", "garbage!");
    cr_assert_eq(pp_ruby_elf_version(lib, ver, sizeof(ver)), -1);
    pp_test_rmtree(d);
}

/* The metadata of a process in a container mapping libruby: its keys in gProfiler's order,
 * the version read from the libruby inside the process's root. */
Test(rbspy, metadata_of_a_process_in_a_container)
{
    char *root = pp_test_mkdtemp(), p[1400];
    snprintf(p, sizeof(p), "mkdir -p %s/lib", root);
    cr_assert(system(p) == 0);
    snprintf(p, sizeof(p), "%s/lib/libruby-3.1.so.3.1", root);
    build_libruby(p, "ruby 3.1.9p1 (test) [x86_64-linux]", "3.1.9");
    pid_t pid = pp_test_spawn_in_root_with_lib(root, "lib/libruby-3.1.so.3.1");
    json_t *m = pp_ruby_metadata(pid);
    cr_assert(m);
    const char *keys[] = {"ruby_version", "exe_elfid", "libruby_elfid"};
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v)
    {
        cr_assert_lt(i, 3);
        cr_expect_str_eq(k, keys[i++]);
    }
    cr_assert_eq(i, 3);
    cr_expect_str_eq(json_string_value(json_object_get(m, "ruby_version")),
                     "ruby 3.1.9p1 (test) [x86_64-linux]");
    const char *lid = json_string_value(json_object_get(m, "libruby_elfid"));
    cr_expect(lid && strncmp(lid, "buildid:", 8) == 0, "%s", lid ? lid : "null");
    json_decref(m);
    pp_test_kill(pid);
    pp_test_rmtree(root);
}
