/* Ruby application metadata (gProfiler §2.4: ruby_version, exe_elfid, libruby_elfid), read from
 * the files the process maps; no process is started (docs/ruby.md "Metadata"). */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "base/inroot.h"
#include "base/procfiles.h"
#include "runtimes/ruby/ruby.h"

/* Whether s (n bytes read) holds a version text: NUL-terminated, printable, "ruby ..." */
static bool description_ok(const char *s, size_t n)
{
    size_t l = strnlen(s, n);
    if (l == n || l < 6 || strncmp(s, "ruby ", 5) != 0)
        return false;
    for (size_t i = 0; i < l; i++)
        if (!isprint((unsigned char)s[i]))
            return false;
    return true;
}

/* `ruby --version`'s text from an ELF (libruby or a static ruby): the ruby_description array
 * ("ruby 3.1.2p20 (2022-04-12 revision 4491bb740a) [x86_64-linux-gnu]"), else "ruby X.Y.Z" from
 * the ruby_version array. */
int pp_ruby_elf_version(const char *path, char *out, size_t len)
{
    char buf[256];
    ssize_t n = pp_elf_read_symbol_upto(path, "ruby_description", buf, sizeof(buf));
    if (n > 0 && description_ok(buf, (size_t)n)) {
        snprintf(out, len, "%s", buf);
        return 0;
    }
    char ver[16];
    n = pp_elf_read_symbol_upto(path, "ruby_version", ver, sizeof(ver));
    size_t l = n > 0 ? strnlen(ver, (size_t)n) : 0;
    if (l > 0 && l < (size_t)n && ver[0] >= '1' && ver[0] <= '9' &&
        strspn(ver, "0123456789.") == l) {
        snprintf(out, len, "ruby %s", ver);
        return 0;
    }
    return -1;
}

json_t *pp_ruby_metadata(int pid)
{
    char exe[64], lib[PATH_MAX], libpath[PP_FD_PATH_LEN], ver[160] = "";
    snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
    pp_elfinfo ei, li;
    bool have_exe = pp_elfinfo_read(exe, &ei) == 0, have_li = false;
    /* libruby as mapped, opened inside the process's root (a container's links resolve
     * there), held open until its version is read */
    int fd = pp_find_mapping(pid, "/libruby", lib, sizeof(lib)) == 0
                 ? pp_open_in_proc_root_path(pid, lib, libpath, sizeof(libpath))
                 : -1;
    if (fd >= 0) {
        have_li = pp_elfinfo_read(libpath, &li) == 0;
        if (have_li && pp_ruby_elf_version(libpath, ver, sizeof(ver)) < 0)
            ver[0] = '\0';
        close(fd);
    }
    if (!ver[0] && have_exe && pp_ruby_elf_version(exe, ver, sizeof(ver)) < 0)
        ver[0] = '\0';
    json_t *o = json_object();
    json_object_set_new(o, "ruby_version", ver[0] ? json_string(ver) : json_null());
    json_object_set_new(o, "exe_elfid",
                        have_exe && ei.buildid[0] ? json_string(ei.buildid) : json_null());
    json_object_set_new(o, "libruby_elfid",
                        have_li && li.buildid[0] ? json_string(li.buildid) : json_null());
    return o;
}
