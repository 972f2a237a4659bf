/* Package-version annotations on fixture site-packages trees. */
#include <sys/stat.h>
#include <time.h>

#include "runtimes/python/pkgversions.h"
#include "testutil.h"

static void mk(const char *root, const char *rel, const char *content)
{
    char path[1024], cmd[1200];
    snprintf(path, sizeof(path), "%s%s", root, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
    cr_assert(system(cmd) == 0);
    pp_test_write_file(path, content, strlen(content));
}

#define SP "/usr/lib/python3.11/site-packages"

static char *fixture(void)
{
    char *root = pp_test_mkdtemp();
    mk(root, SP "/requests-2.31.0.dist-info/METADATA",
       "Metadata-Version: 2.1\nName: requests\nVersion: 2.31.0\n\nName: not-this\n");
    mk(root, SP "/requests-2.31.0.dist-info/RECORD",
       "requests/__init__.py,sha256=abc,4924\r\nrequests/api.py,sha256=x,1\n"
       "requests/__pycache__/api.cpython-311.pyc,,\n../../../bin/req.py,,\n"
       "\"requests/odd,name.py\",sha256=y,2\n");
    mk(root, SP "/requests/api.py", "");
    /* No METADATA: name and version from the directory name. */
    mk(root, SP "/six-1.16.0.dist-info/RECORD", "six.py,sha256=z,3\n");
    mk(root, SP "/Legacy_Pkg-0.9-py3.11.egg-info/PKG-INFO", "Name: Legacy-Pkg\nVersion: 0.9\n");
    mk(root, SP "/Legacy_Pkg-0.9-py3.11.egg-info/installed-files.txt",
       "../legacy/__init__.py\n../legacy/./core.py\n./PKG-INFO\n../../escape.py\n");
    mk(root, "/usr/lib/python3/dist-packages/apt-2.6.0.dist-info/RECORD", "apt/cache.py,,\n");
    /* Not a distribution directory, and garbage. */
    mk(root, SP "/notes.txt", "x");
    mk(root, SP "/broken.dist-info/RECORD", "\n\n,,,\n\"unterminated\n../../..\n");
    return root;
}

static void check(const char *root, const char *file, const char *want)
{
    char out[256];
    int r = pp_pkgver_annotation(root, file, "3.11.7", out, sizeof(out));
    cr_assert_eq(r, want[0] != '\0', "%s: got %d '%s'", file, r, out);
    cr_assert_str_eq(out, want, "%s", file);
}

Test(pkgversions, dist_info_egg_info_and_stdlib)
{
    char *root = fixture();
    check(root, SP "/requests/__init__.py", "[requests==2.31.0]");
    check(root, SP "/requests/api.py", "[requests==2.31.0]");
    check(root, SP "/requests/odd,name.py", "[requests==2.31.0]");
    check(root, SP "/six.py", "[six==1.16.0]");
    check(root, SP "/legacy/__init__.py", "[Legacy-Pkg==0.9]");
    check(root, SP "/legacy/core.py", "[Legacy-Pkg==0.9]");
    check(root, "/usr/lib/python3/dist-packages/apt/cache.py", "[apt==2.6.0]");
    /* Not listed anywhere / outside the directory / not a .py. */
    check(root, SP "/unlisted/mod.py", "");
    check(root, "/usr/lib/python3.11/escape.py", "[standard-library==3.11.7]");
    check(root, SP "/requests/__pycache__/api.cpython-311.pyc", "");
    /* Standard library: under /pythonX.Y/ and not site-packages. */
    check(root, "/usr/lib/python3.11/threading.py", "[standard-library==3.11.7]");
    check(root, "/root/.pyenv/versions/3.8.18/lib/python3.8/json/decoder.py",
          "[standard-library==3.11.7]");
    check(root, "/app/main.py", "");
    check(root, "/app/python3/x.py", "");
    check(root, "relative.py", "");
    check(root, "<frozen importlib._bootstrap>", "");
    /* A site directory that does not exist in this root. */
    check(root, "/opt/venv/lib/python3.11/site-packages/x.py", "");
    char out[64];
    cr_assert_eq(pp_pkgver_annotation(root, "/usr/lib/python3.11/os.py", NULL, out, sizeof(out)),
                 0);
    pp_pkgver_clear_cache();
    pp_test_rmtree(root);
}

Test(pkgversions, cache_revalidated_when_the_directory_changes)
{
    char *root = fixture();
    check(root, SP "/newpkg/a.py", "");
    /* Installing a package adds an entry: the directory's mtime changes. */
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    mk(root, SP "/newpkg-1.0.dist-info/RECORD", "newpkg/a.py,,\n");
    check(root, SP "/newpkg/a.py", "[newpkg==1.0]");
    check(root, SP "/six.py", "[six==1.16.0]");
    pp_pkgver_clear_cache();
    pp_test_rmtree(root);
}

/* Under base+prefix: site/evil-6.6.6.dist-info (METADATA evil_meta, if any) and dist (a
 * *.dist-info directory's files, METADATA dist_meta), both listing one file. */
static void dists_at(const char *base, const char *prefix, const char *evil_meta,
                     const char *dist_meta)
{
    char rel[1024];
    snprintf(rel, sizeof(rel), "%s/site/evil-6.6.6.dist-info/RECORD", prefix);
    mk(base, rel, "evil/x.py,,\n");
    if (evil_meta) {
        snprintf(rel, sizeof(rel), "%s/site/evil-6.6.6.dist-info/METADATA", prefix);
        mk(base, rel, evil_meta);
    }
    snprintf(rel, sizeof(rel), "%s/dist/METADATA", prefix);
    mk(base, rel, dist_meta);
    snprintf(rel, sizeof(rel), "%s/dist/RECORD", prefix);
    mk(base, rel, "linked/a.py,,\n");
}

/* A container's site directory and a *.dist-info directory that are absolute symlinks to paths
 * that exist both on the host and inside its root: the files inside are read. */
Test(pkgversions, symlinks_resolved_inside_the_root)
{
    char *root = fixture(), *host = pp_test_mkdtemp(), link[1024], target[600];
    dists_at(host, "", NULL, "Name: hostpkg\nVersion: 9\n");
    dists_at(root, host, "Name: good\nVersion: 1.0\n", "Name: linked\nVersion: 2.0\n");
    mk(root, "/opt/app/README", "");
    snprintf(target, sizeof(target), "%s/site", host);
    snprintf(link, sizeof(link), "%s/opt/app/site-packages", root);
    cr_assert(symlink(target, link) == 0);
    snprintf(target, sizeof(target), "%s/dist", host);
    snprintf(link, sizeof(link), "%s" SP "/linked-2.0.dist-info", root);
    cr_assert(symlink(target, link) == 0);

    check(root, "/opt/app/site-packages/evil/x.py", "[good==1.0]");
    check(root, SP "/linked/a.py", "[linked==2.0]");
    check(root, SP "/requests/api.py", "[requests==2.31.0]");
    pp_pkgver_clear_cache();
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}

Test(pkgversions, host_root_and_output_truncation)
{
    char out[8];
    /* The host root: "/" and "" are the same; a short buffer is truncated, not overrun. */
    cr_assert_eq(pp_pkgver_annotation("/", "/usr/lib/python3.11/os.py", "3.11.2", out, sizeof(out)),
                 1);
    cr_assert_eq(strlen(out), sizeof(out) - 1);
    cr_assert_eq(pp_pkgver_annotation("", "/x/os.py", "3.11.2", out, 0), 0);
    pp_pkgver_clear_cache();
}

Test(pkgversions, frame_text_and_pyspy_rewrite)
{
    char out[512];
    pp_py_frame_text(out, sizeof(out), "Worker.run", "/app/w.py", 12, "");
    cr_assert_str_eq(out, "Worker.run (/app/w.py:12)_[p]");
    pp_py_frame_text(out, sizeof(out), "f", "/usr/lib/python3.11/os.py", 7,
                     "[standard-library==3.11.2]");
    cr_assert_str_eq(out, "f (/usr/lib/python3.11/os.py:7 [standard-library==3.11.2])_[p]");
    pp_py_frame_text(out, sizeof(out), "g", "<string>", 0, NULL);
    cr_assert_str_eq(out, "g (<string>)_[p]");
    pp_py_frame_text(out, sizeof(out), "h", "", 3, NULL);
    cr_assert_str_eq(out, "h_[p]");

    char *root = fixture();
    pp_pkgver_rewrite_frame(root, "get (" SP "/requests/api.py:73)_[p]", "3.11.7", out,
                            sizeof(out));
    cr_assert_str_eq(out, "get (" SP "/requests/api.py:73 [requests==2.31.0])_[p]");
    pp_pkgver_rewrite_frame(root, "<module> (/usr/lib/python3.11/os.py:1)_[p]", "3.11.7", out,
                            sizeof(out));
    cr_assert_str_eq(out, "<module> (/usr/lib/python3.11/os.py:1 [standard-library==3.11.7])_[p]");
    /* Unchanged: no line, not a Python frame, unknown file, garbage. */
    static const char *const same[] = {
        "f (/usr/lib/python3.11/os.py)_[p]",    "main", "f (/app/x.py:3)_[p]", "(:)_[p]",
        "x (/usr/lib/python3.11/os.py:1a)_[p]", ""};
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        pp_pkgver_rewrite_frame(root, same[i], "3.11.7", out, sizeof(out));
        cr_assert_str_eq(out, same[i]);
    }
    pp_pkgver_clear_cache();
    pp_test_rmtree(root);
}

/* A zip made with Python's zipfile: members given as "name=content" arguments. */
static void zip_at(const char *root, const char *rel, const char *const *members)
{
    char cmd[4096];
    int n = snprintf(cmd, sizeof(cmd),
                     "mkdir -p \"$(dirname '%s%s')\" && /usr/bin/python3 -c 'import sys, zipfile\n"
                     "z = zipfile.ZipFile(sys.argv[1], \"w\")\n"
                     "[z.writestr(m.split(\"=\", 1)[0], m.split(\"=\", 1)[1]) for m in "
                     "sys.argv[2:]]\nz.close()' '%s%s'",
                     root, rel, root, rel);
    for (const char *const *m = members; *m; m++)
        n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " '%s'", *m);
    cr_assert(system(cmd) == 0);
}

Test(pkgversions, zipapps_pex_and_eggs)
{
    char *root = pp_test_mkdtemp();
    /* a zipapp with vendored packages (pip install --target, then zipapp) */
    const char *pyz[] = {"__main__.py=import app",
                         "app.py=x = 1",
                         "requests/__init__.py=",
                         "requests/api.py=",
                         "requests-2.31.0.dist-info/METADATA=Name: requests\nVersion: 2.31.0\n",
                         "requests-2.31.0.dist-info/RECORD=requests/__init__.py,,\n"
                         "requests/api.py,sha256=x,10\n",
                         NULL};
    zip_at(root, "/srv/tool.pyz", pyz);
    /* a PEX: wheels under .deps/ */
    const char *pex[] = {".deps/six-1.16.0-py2.py3-none-any.whl/six.py=",
                         ".deps/six-1.16.0-py2.py3-none-any.whl/six-1.16.0.dist-info/RECORD="
                         "six.py,,\n",
                         "__main__.py=", NULL};
    zip_at(root, "/srv/app.pex", pex);
    /* an egg on sys.path inside site-packages */
    const char *egg[] = {"EGG-INFO/PKG-INFO=Metadata-Version: 1.1\nName: legacy\nVersion: 0.3\n",
                         "legacy/__init__.py=", "legacy/core.py=", NULL};
    zip_at(root, SP "/legacy-0.3-py3.11.egg", egg);
    mk(root, "/srv/plain/main.py", "");

    check(root, "/srv/tool.pyz/requests/api.py", "[requests==2.31.0]");
    check(root, "/srv/tool.pyz/app.py", "");
    check(root, "/srv/app.pex/.deps/six-1.16.0-py2.py3-none-any.whl/six.py", "[six==1.16.0]");
    check(root, SP "/legacy-0.3-py3.11.egg/legacy/core.py", "[legacy==0.3]");
    check(root, "/srv/plain/main.py", "");
    check(root, "/srv/missing/dir/x.py", "");
    /* not a zip where a component is a regular file: nothing, and no crash */
    mk(root, "/srv/notzip.pyz", "garbage");
    check(root, "/srv/notzip.pyz/requests/api.py", "");
    pp_pkgver_clear_cache();
    pp_test_rmtree(root);
}
