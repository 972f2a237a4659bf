/* Unit tests: appids (gprofiler-compat.md §7), mirroring gProfiler's tests/test_appids.py with
 * cwd "/my/dir" and root "/" (paths that do not exist are joined and normalized lexically), plus
 * the rules the spec adds (uvicorn, gunicorn options), Java, path resolution inside a fixture
 * root, uwsgi ini files and /proc reading. */
#include "tests/unit/testutil.h"

#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "runtimes/dotnet/dotnet.h"
#include "runtimes/appid.h"
#include "runtimes/java/java.h"
#include "runtimes/node/node.h"
#include "runtimes/python/python.h"
#include "runtimes/ruby/ruby.h"
#include "runtimes/runtime.h"

TestSuite(appid, .init = pp_test_quiet_log);

#define CWD "/my/dir"
#define MAXARGS 12

typedef char *(*appid_fn)(char *const *, int, const char *, const char *);

typedef struct {
    appid_fn fn;
    const char *argv[MAXARGS]; /* NULL-terminated */
    const char *want;          /* NULL: no appid */
} appid_case;

#define PY pp_appid_python
#define JAVA pp_appid_java
#define NODE pp_appid_node
#define RUBY pp_appid_ruby
#define NET pp_appid_dotnet

static const appid_case cases[] = {
    /* gunicorn process title */
    {PY, {"gunicorn: master [my.wsgi:app]"}, "gunicorn: my.wsgi:app (/my/dir/my/wsgi.py)"},
    {PY, {"gunicorn: worker [my.wsgi:app]"}, "gunicorn: my.wsgi:app (/my/dir/my/wsgi.py)"},
    {PY, {"gunicorn: worker [my.wsgi:app]", "", ""}, "gunicorn: my.wsgi:app (/my/dir/my/wsgi.py)"},
    {PY, {"gunicorn: arbiter [my.wsgi:app]"}, NULL},
    {PY, {"gunicorn: master [a]b]"}, NULL},
    /* gunicorn */
    {PY, {"gunicorn", "a", "b", "my.wsgi:app"}, "gunicorn: my.wsgi:app (/my/dir/my/wsgi.py)"},
    {PY,
     {"python", "/path/to/gunicorn", "a", "b", "my.wsgi:app"},
     "gunicorn: my.wsgi:app (/my/dir/my/wsgi.py)"},
    {PY,
     {"python", "/path/to/gunicorn", "a", "b", "/path/to/my/wsgi:app"},
     "gunicorn: /path/to/my/wsgi:app (/path/to/my/wsgi.py)"},
    {PY,
     {"/usr/bin/gunicorn", "-b", "0.0.0.0:8000", "-w", "4", "app:create()"},
     "gunicorn: app:create() (/my/dir/app.py)"},
    {PY,
     {"gunicorn", "-b", "0.0.0.0:8000"},
     "gunicorn: unknown app name (/my/dir/unknown app name.py)"},
    /* uvicorn */
    {PY, {"uvicorn", "main:app", "--port", "80"}, "uvicorn: main:app (/my/dir/main.py)"},
    {PY,
     {"python3", "/usr/local/bin/uvicorn", "--host", "0.0.0.0:80", "pkg.main:app"},
     "uvicorn: pkg.main:app (/my/dir/pkg/main.py)"},
    {PY, {"uvicorn", "--factory", "pkg.fact:make"}, "uvicorn: pkg.fact:make (/my/dir/pkg/fact.py)"},
    {PY,
     {"uvicorn", "--app-dir", "lib", "--factory", "tool.fast:factory"},
     "uvicorn: tool.fast:factory (/my/dir/tool/fast.py)"},
    /* uwsgi -w / --wsgi-file */
    {PY, {"uwsgi", "a", "b", "-w", "my.wsgi"}, "uwsgi: my.wsgi (/my/dir/my/wsgi.py)"},
    {PY, {"uwsgi", "a", "b", "--wsgi-file", "my.wsgi"}, "uwsgi: my.wsgi (/my/dir/my/wsgi.py)"},
    {PY, {"uwsgi", "a", "b", "--wsgi-file=my.wsgi"}, "uwsgi: my.wsgi (/my/dir/my/wsgi.py)"},
    {PY, {"uwsgi", "--wsgi-file", "app/wsgi.py"}, "uwsgi: app/wsgi.py (/my/dir/app/wsgi.py)"},
    {PY, {"uwsgi", "a", "b", "my.ini", "my2.ini"}, "uwsgi: ini file / wsgi module not found"},
    {PY, {"uwsgi", "--http", ":80"}, "uwsgi: ini file / wsgi module not found"},
    {PY, {"uwsgi", "a", "-w"}, NULL}, /* gProfiler raises: option without a value */
    {PY, {"uwsgi", "--ini", "missing.ini"}, NULL},
    /* celery with an app */
    {PY, {"celery", "a", "b", "-A", "app1"}, "celery: app1 (/my/dir/app1.py)"},
    {PY, {"celery", "a", "b", "-A", "/path/to/app1"}, "celery: /path/to/app1 (/path/to/app1.py)"},
    {PY, {"celery", "a", "b", "-A/path/to/app1"}, "celery: /path/to/app1 (/path/to/app1.py)"},
    {PY, {"python", "/path/to/celery", "a", "b", "-A", "app1"}, "celery: app1 (/my/dir/app1.py)"},
    {PY,
     {"python", "/path/to/celery", "a", "b", "-A", "/path/to/app1"},
     "celery: /path/to/app1 (/path/to/app1.py)"},
    {PY, {"celery", "a", "b", "--app", "app2"}, "celery: app2 (/my/dir/app2.py)"},
    {PY,
     {"celery", "a", "b", "--app", "/path/to/app2"},
     "celery: /path/to/app2 (/path/to/app2.py)"},
    {PY, {"celery", "a", "b", "--app=app3"}, "celery: app3 (/my/dir/app3.py)"},
    {PY, {"celery", "a", "b", "--app=/path/to/app3"}, "celery: /path/to/app3 (/path/to/app3.py)"},
    {PY,
     {"python3", "-m", "celery", "-A", "proj.tasks", "worker"},
     "celery: proj.tasks (/my/dir/proj/tasks.py)"},
    /* celery with a queue */
    {PY, {"celery", "a", "b", "-Q", "qqq"}, "celery queue: qqq (/my/dir)"},
    {PY, {"celery", "a", "b", "-Qqqq"}, "celery queue: qqq (/my/dir)"},
    {PY, {"python", "/path/to/celery", "a", "b", "-Q", "qqq"}, "celery queue: qqq (/my/dir)"},
    {PY, {"celery", "a", "b", "--queues", "qqq"}, "celery queue: qqq (/my/dir)"},
    {PY, {"celery", "a", "b", "--queues=qqq"}, "celery queue: qqq (/my/dir)"},
    {PY, {"celery", "a", "b", "-Q", "qqq,www"}, "celery queue: qqq,www (/my/dir)"},
    {PY, {"celery", "a", "b"}, NULL},
    /* pyspark */
    {PY, {"python", "-m", "pyspark.daemon"}, "pyspark"},
    {PY, {"python3.11", "-m", "pyspark.daemon"}, "pyspark"},
    /* plain python */
    {PY, {"python", "-m", "myapp"}, "python: -m myapp"},
    {PY, {"python3", "-m", "myapp"}, "python: -m myapp"},
    {PY, {"python3.8", "-m", "myapp"}, "python: -m myapp"},
    {PY, {"python2", "-m", "myapp"}, "python: -m myapp"},
    {PY, {"python2.7", "-m", "myapp.x.y"}, "python: -m myapp.x.y"},
    {PY, {"/usr/bin/python3.12", "-u", "-m", "http.server"}, "python: -m http.server"},
    {PY, {"python2.7", "/path/to/mod.py"}, "python: /path/to/mod.py (/path/to/mod.py)"},
    {PY, {"python2.7", "mod.py"}, "python: mod.py (/my/dir/mod.py)"},
    {PY, {"python3", "../up/x.py"}, "python: ../up/x.py (/my/up/x.py)"},
    {PY, {"python3", "../../../../x.py"}, "python: ../../../../x.py (/x.py)"},
    {PY, {"python3", "./a//b/./c.py"}, "python: ./a//b/./c.py (/my/dir/a/b/c.py)"},
    {PY, {"python3", "-u", "mod.py"}, NULL},
    {PY, {"python3"}, NULL},
    {PY, {"python3.123", "mod.py"}, NULL},
    {PY, {"python4", "mod.py"}, NULL},
    {PY, {"pythonw", "mod.py"}, NULL},
    {PY, {"python", "-m"}, NULL},
    {PY, {"/usr/bin/env", "app.py"}, NULL},
    /* node */
    {NET, {"dotnet", "App.dll"}, "dotnet: App.dll (/my/dir/App.dll)"},
    {NET,
     {"/usr/share/dotnet/dotnet", "exec", "--roll-forward", "Major", "bin/App.dll", "x.dll"},
     "dotnet: bin/App.dll (/my/dir/bin/App.dll)"},
    {NET, {"dotnet", "--fx-version", "3.1.0", "Prog.exe"}, "dotnet: Prog.exe (/my/dir/Prog.exe)"},
    {NET, {"dotnet", "run"}, NULL},
    {NET, {"dotnet"}, NULL},
    {NET, {"/srv/app/MyService", "--urls", "x"}, "dotnet: /srv/app/MyService (/srv/app/MyService)"},
    {NODE, {"node", "myapp.js"}, "nodejs: myapp.js (/my/dir/myapp.js)"},
    {NODE, {"node", "myapp/myapp.js"}, "nodejs: myapp/myapp.js (/my/dir/myapp/myapp.js)"},
    {NODE, {"node", "myapp.js", "-r", "mock"}, "nodejs: myapp.js (/my/dir/myapp.js)"},
    {NODE, {"node", "/path/to/myapp.js"}, "nodejs: /path/to/myapp.js (/path/to/myapp.js)"},
    {NODE, {"node", "--myflag", "myapp.js"}, "nodejs: myapp.js (/my/dir/myapp.js)"},
    {NODE,
     {"node", "-r", "myrequire.js", "--myflag", "myapp.js"},
     "nodejs: myapp.js (/my/dir/myapp.js)"},
    {NODE, {"node", "--require=myrequire.js", "myapp.js"}, "nodejs: myapp.js (/my/dir/myapp.js)"},
    {NODE, {"node", "--require", "a.js", "b.js"}, "nodejs: b.js (/my/dir/b.js)"},
    {NODE, {"main.js"}, NULL}, /* argv[0] is not scanned */
    {NODE, {"node", "-e", "1"}, NULL},
    /* ruby */
    {RUBY, {"ruby", "myapp.rb"}, "ruby: myapp.rb (/my/dir/myapp.rb)"},
    {RUBY, {"ruby", "/path/to/myapp.rb"}, "ruby: /path/to/myapp.rb (/path/to/myapp.rb)"},
    {RUBY, {"ruby", "--myflag", "myapp.rb"}, "ruby: myapp.rb (/my/dir/myapp.rb)"},
    {RUBY,
     {"ruby", "-r", "myrequire.rb", "--myflag", "myapp.rb"},
     "ruby: myapp.rb (/my/dir/myapp.rb)"},
    {RUBY, {"ruby", "-rmyrequire.rb", "--myflag", "myapp.rb"}, "ruby: myapp.rb (/my/dir/myapp.rb)"},
    {RUBY, {"script.rb", "x"}, "ruby: script.rb (/my/dir/script.rb)"}, /* argv[0] is scanned */
    {RUBY, {"ruby", "-e", "1"}, NULL},
    /* java (polyprof: from the command line) */
    {JAVA, {"java", "-jar", "Fibonacci.jar"}, "java: Fibonacci.jar"},
    {JAVA,
     {"/opt/java/bin/java", "-Xmx1g", "-Dx=y", "-jar", "/app/app.jar", "--port", "1"},
     "java: /app/app.jar"},
    {JAVA, {"java", "-cp", "a.jar:b.jar", "com.Main", "arg"}, "java: com.Main"},
    {JAVA, {"java", "-classpath", "lib/*", "-XX:+UseG1GC", "Fibonacci"}, "java: Fibonacci"},
    {JAVA, {"java", "--class-path=x", "com.Main"}, "java: com.Main"},
    {JAVA, {"java", "-p", "mods", "-m", "com.foo/com.foo.Main"}, "java: com.foo/com.foo.Main"},
    {JAVA, {"java", "--module-path", "mods", "--module", "com.foo"}, "java: com.foo"},
    {JAVA, {"java", "--module=com.foo/com.foo.Main"}, "java: com.foo/com.foo.Main"},
    {JAVA, {"java", "@argfile", "--add-opens", "a/b=c", "org.Main"}, "java: org.Main"},
    {JAVA, {"java", "-version"}, NULL},
    {JAVA, {"java", "-jar"}, NULL},
};

static void run_case(const appid_case *c, const char *cwd, const char *root)
{
    int argc = 0;
    while (argc < MAXARGS && c->argv[argc])
        argc++;
    char *got = c->fn((char *const *)c->argv, argc, cwd, root);
    if (c->want)
        cr_expect(got && strcmp(got, c->want) == 0, "argv[0]=%s ...: got \"%s\", want \"%s\"",
                  c->argv[0], got ? got : "(null)", c->want);
    else
        cr_expect_null(got, "argv[0]=%s %s: got \"%s\", want none", c->argv[0],
                       argc > 1 ? c->argv[1] : "", got ? got : "");
    free(got);
}

Test(appid, table)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i], CWD, "/");
}

Test(appid, no_cwd_gives_nothing_that_needs_a_path)
{
    char *argv1[] = {"python3", "mod.py"};
    cr_assert_null(pp_appid_python(argv1, 2, NULL, "/"));
    char *argv2[] = {"python3", "-m", "mod"};
    char *r = pp_appid_python(argv2, 3, NULL, "/");
    cr_assert_str_eq(r, "python: -m mod");
    free(r);
    cr_assert_null(pp_appid_python(NULL, 0, CWD, "/"));
}

/* ---- path resolution inside a fixture root ---- */

static void mkdirs(const char *base, const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", base, rel);
    for (char *s = p + strlen(base) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void symlink_at(const char *base, const char *target, const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", base, rel);
    cr_assert_eq(symlink(target, p), 0, "symlink %s", p);
}

static void expect_path(const char *root, const char *cwd, const char *arg, const char *want)
{
    char *got = pp_appid_path(root, cwd, arg);
    cr_expect(got && strcmp(got, want) == 0, "path(%s, %s): got %s, want %s", cwd, arg,
              got ? got : "(null)", want);
    free(got);
}

Test(appid, path_resolution_stays_inside_root)
{
    char *root = pp_test_mkdtemp();
    mkdirs(root, "app/src");
    mkdirs(root, "real/lib");
    mkdirs(root, "etc");
    symlink_at(root, "/../../etc", "app/escape");     /* absolute, tries to climb out */
    symlink_at(root, "../../../../../etc", "app/up"); /* relative, tries to climb out */
    symlink_at(root, "/real/lib", "app/lib");         /* absolute: re-rooted */
    symlink_at(root, "src", "app/cur");               /* relative */
    symlink_at(root, "loop2", "app/loop1");           /* loop: not followed forever */
    symlink_at(root, "loop1", "app/loop2");
    char rootslash[PATH_MAX];
    snprintf(rootslash, sizeof(rootslash), "%s/", root);

    expect_path(root, "/app", "escape/passwd", "/etc/passwd");
    expect_path(root, "/app", "up/passwd", "/etc/passwd");
    expect_path(root, "/app", "lib/x.py", "/real/lib/x.py");
    expect_path(rootslash, "/app", "lib/x.py", "/real/lib/x.py");
    expect_path(root, "/app", "lib/../y.py", "/real/y.py"); /* .. after a symlink: its parent */
    expect_path(root, "/app", "cur/m.py", "/app/src/m.py");
    expect_path(root, "/app", "/app/cur/../z.py", "/app/z.py");
    expect_path(root, "/app", "../../../..", "/");
    expect_path(root, "app", "x", "/app/x"); /* relative cwd: from / */
    char *l = pp_appid_path(root, "/app", "loop1/x");
    cr_assert_not_null(l);
    cr_assert_eq(strncmp(l, "/app/loop", 9), 0, "%s", l);
    free(l);
    cr_assert_null(pp_appid_path(root, NULL, "x"));

    /* The identifiers use it: a script reached through the escaping link. */
    char *argv[] = {"python3", "escape/app.py"};
    char *r = pp_appid_python(argv, 2, "/app", root);
    cr_assert_str_eq(r, "python: escape/app.py (/etc/app.py)");
    free(r);
    pp_test_rmtree(root);
}

/* ---- uwsgi ini files ---- */

static char *fixture_with_ini(const char *name, const char *text)
{
    char *root = pp_test_mkdtemp();
    mkdirs(root, "my/dir");
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/my/dir/%s", root, name);
    pp_test_write_file(p, text, strlen(text));
    return root;
}

static void expect_py(const char *root, const char *const *args, const char *want)
{
    appid_case c = {.fn = pp_appid_python, .want = want};
    for (int i = 0; args[i] && i < MAXARGS - 1; i++)
        c.argv[i] = args[i];
    run_case(&c, CWD, root);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(appid, uwsgi_ini)
{
    const char *want = "uwsgi: my.ini (/my/dir/mymod.py)";
    char *root = fixture_with_ini("my.ini", "[app:blabla]\nxx = yy\n\n[uwsgi]\nmodule = mymod");
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini", "my.ini"), want);
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini=my.ini"), want);
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini-paste", "my.ini"), want);
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini-paste=my.ini"), want);
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini-paste-logged", "my.ini"), want);
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini-paste-logged=my.ini"), want);
    expect_py(root, ARGS("uwsgi", "a", "b", "my.ini"), want);
    expect_py(root, ARGS("uwsgi", "a", "b", "my.ini", "my2.ini"),
              "uwsgi: ini file / wsgi module not found");
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini=my.ini", "my2.ini"), want);
    expect_py(root, ARGS("uwsgi", "--ini", "/my/dir/my.ini"),
              "uwsgi: /my/dir/my.ini (/my/dir/mymod.py)");
    expect_py(root, ARGS("uwsgi", "-w", "x.y", "--ini", "my.ini"), "uwsgi: x.y (/my/dir/x/y.py)");
    pp_test_rmtree(root);

    /* No [uwsgi] section / no module in it. */
    root = fixture_with_ini("my.ini", "[app:blabla]\nxx = yy\n\n");
    expect_py(root, ARGS("uwsgi", "a", "b", "--ini", "my.ini"), "uwsgi: my.ini");
    pp_test_rmtree(root);
    root = fixture_with_ini("my.ini", "[uwsgi]\nhttp = :80\n");
    expect_py(root, ARGS("uwsgi", "--ini", "my.ini"), "uwsgi: my.ini");
    pp_test_rmtree(root);

    /* configparser details: case-insensitive keys, ':' delimiter, comments, last value wins,
     * [DEFAULT] fallback, "%%", dotted modules. */
    root = fixture_with_ini("u.ini", "; c\n# c\n[uwsgi]\nMODULE : first\n  [not a section]\n"
                                     "module=pkg.app\nprocesses = 4\n");
    expect_py(root, ARGS("uwsgi", "--ini", "u.ini"), "uwsgi: u.ini (/my/dir/pkg/app.py)");
    pp_test_rmtree(root);
    root = fixture_with_ini("u.ini", "[DEFAULT]\nmodule = dflt\n[uwsgi]\nx = 1\n");
    expect_py(root, ARGS("uwsgi", "--ini", "u.ini"), "uwsgi: u.ini (/my/dir/dflt.py)");
    pp_test_rmtree(root);
    root = fixture_with_ini("u.ini", "[DEFAULT]\nmodule = dflt\n");
    expect_py(root, ARGS("uwsgi", "--ini", "u.ini"), "uwsgi: u.ini");
    pp_test_rmtree(root);
    root = fixture_with_ini("u.ini", "[uwsgi]\nmodule = a%%b\n");
    expect_py(root, ARGS("uwsgi", "--ini", "u.ini"), "uwsgi: u.ini (/my/dir/a%b.py)");
    pp_test_rmtree(root);

    /* Files configparser rejects: the uwsgi rule gives nothing (gProfiler's exception path). */
    const char *bad[] = {
        "module = x\n[uwsgi]\n",            /* no section header first */
        "[uwsgi]\nmodule = x\njunk line\n", /* line without a delimiter */
        "[uwsgi]\nmodule = %n\n",           /* uwsgi magic var: interpolation error */
        "[uwsgi]\n= x\n",                   /* empty key */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        root = fixture_with_ini("u.ini", bad[i]);
        expect_py(root, ARGS("uwsgi", "--ini", "u.ini"), NULL);
        pp_test_rmtree(root);
    }
    /* A binary file, a directory and an empty file. */
    root = fixture_with_ini("u.ini", "");
    expect_py(root, ARGS("uwsgi", "--ini", "u.ini"), "uwsgi: u.ini");
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/my/dir/bin.ini", root);
    pp_test_write_file(p, "[uwsgi]\0module=x\n", 17);
    expect_py(root, ARGS("uwsgi", "--ini", "bin.ini"), NULL);
    snprintf(p, sizeof(p), "%s/my/dir/d.ini", root);
    mkdir(p, 0755);
    expect_py(root, ARGS("uwsgi", "--ini", "d.ini"), NULL);
    pp_test_rmtree(root);
}

/* ---- cmdline splitting and /proc ---- */

/* An ini file reached through more symlinks than pp_appid_path follows (the last one is left
 * in the path) whose last link is absolute, to a path that exists both on the host and inside
 * the root: the file inside is read. */
Test(appid, uwsgi_ini_read_inside_the_root)
{
    char *root = fixture_with_ini("unused.ini", ""), *host = pp_test_mkdtemp(), p[PATH_MAX];
    char target[PATH_MAX], name[32], next[16];
    snprintf(target, sizeof(target), "%s/evil.ini", host);
    static const char outside[] = "[uwsgi]\nmodule = hostmod\n",
                      inside[] = "[uwsgi]\nmodule = rootmod\n";
    pp_test_write_file(target, outside, strlen(outside));
    snprintf(p, sizeof(p), "%s", host + 1);
    mkdirs(root, strcat(p, "/x"));
    snprintf(p, sizeof(p), "%s%s", root, target);
    pp_test_write_file(p, inside, strlen(inside));
    for (int i = 0; i <= 40; i++) { /* my/dir/l0 -> l1 -> ... -> l40 -> <host>/evil.ini */
        snprintf(name, sizeof(name), "my/dir/l%d", i);
        snprintf(next, sizeof(next), "l%d", i + 1);
        symlink_at(root, i < 40 ? next : target, name);
    }
    expect_py(root, ARGS("uwsgi", "--ini", "l0"), "uwsgi: l0 (/my/dir/rootmod.py)");
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}

Test(appid, split_cmdline_like_psutil)
{
    int argc;
    char **v = pp_appid_split_cmdline("python\0a.py\0", 12, &argc);
    cr_assert_eq(argc, 2);
    cr_assert_str_eq(v[0], "python");
    cr_assert_str_eq(v[1], "a.py");
    cr_assert_null(v[2]);
    free(v);
    v = pp_appid_split_cmdline("gunicorn: master [a:b]\0\0\0", 25, &argc);
    cr_assert_eq(argc, 3);
    cr_assert_str_eq(v[0], "gunicorn: master [a:b]");
    cr_assert_str_eq(v[2], "");
    free(v);
    v = pp_appid_split_cmdline("node server.js\0", 15, &argc); /* rewritten title */
    cr_assert_eq(argc, 2);
    cr_assert_str_eq(v[1], "server.js");
    free(v);
    v = pp_appid_split_cmdline("a b ", 4, &argc); /* no NUL at all */
    cr_assert_eq(argc, 2);
    cr_assert_str_eq(v[1], "b");
    free(v);
    cr_assert_null(pp_appid_split_cmdline("", 0, &argc));
    cr_assert_eq(argc, 0);
}

Test(appid, for_pid_reads_proc)
{
    char *dir = pp_test_mkdtemp();
    char script[PATH_MAX];
    snprintf(script, sizeof(script), "%s/app.rb", dir);
    pp_test_write_file(script, "", 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        if (chdir(dir) != 0)
            _exit(1);
        /* A shell whose argv we choose ("; :" keeps it from exec'ing sleep). */
        execl("/bin/sh", "ruby", "-c", "sleep 30; :", "-rx", "app.rb", (char *)NULL);
        _exit(1);
    }
    char want[PATH_MAX + 64], *got = NULL;
    snprintf(want, sizeof(want), "ruby: app.rb (%s)", script);
    for (int i = 0; i < 3000 && !(got && strcmp(got, want) == 0); i++) { /* 30 s */
        free(got);
        usleep(10000);
        got = pp_runtime_appid(pid, PP_KIND_RUBY);
    }
    char *none = pp_runtime_appid(pid, PP_KIND_PHP);
    char *py = pp_runtime_appid(pid, PP_KIND_PYTHON);
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_expect(got && strcmp(got, want) == 0, "got %s", got ? got : "(null)");
    cr_expect_null(none);
    cr_expect_null(py);
    free(got);
    free(none);
    free(py);
    cr_expect_null(pp_runtime_appid(pid, PP_KIND_RUBY)); /* gone */
    cr_expect_null(pp_appid_for_pid(-1, pp_appid_ruby));
    pp_test_rmtree(dir);
}
