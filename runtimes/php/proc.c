/* Finding the Zend engine of a PHP process (php_int.h): the module holding executor_globals (the
 * executable, or a libphp mapping for an embedded engine such as Apache's mod_php), its load
 * bias, execute_ex's code range and the version ("X-Powered-By: PHP/8.2.36" in .rodata). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "base/inroot.h"
#include "base/procfiles.h"
#include "runtimes/modules.h"
#include "runtimes/php/php_int.h"

enum { SYM_EG, SYM_EXEC, SYM_ZTS, NSYMS };
static const char *const sym_names[NSYMS] = {"executor_globals", "execute_ex",
                                             "executor_globals_offset"};

/* Values and sizes of the symbols (.dynsym, then .symtab) and the first PT_LOAD's page. */
static int elf_syms_read(const char *file, uint64_t *val, uint64_t *size, uint64_t *first_load)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *e = pp_elf_begin_bounded(fd);
    int found = 0;
    size_t nph = 0;
    *first_load = UINT64_MAX;
    if (e && elf_getphdrnum(e, &nph) == 0) { /* only ELF files: pp_elf_begin_bounded */
        for (size_t i = 0; i < nph; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < *first_load)
                *first_load = ph.p_vaddr & ~0xfffull;
        }
        for (int pass = 0; pass < 2; pass++) {
            Elf_Scn *scn = NULL;
            while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;
                if (!gelf_getshdr(scn, &sh) ||
                    sh.sh_type != (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize)
                    continue;
                Elf_Data *d = elf_getdata(scn, NULL);
                size_t count = d ? d->d_size / sh.sh_entsize : 0;
                for (size_t i = 0; i < count && count < 10000000; i++) {
                    GElf_Sym s;
                    const char *nm;
                    if (!gelf_getsym(d, (int)i, &s) || !s.st_value ||
                        !(nm = elf_strptr(e, sh.sh_link, s.st_name)))
                        continue;
                    for (int k = 0; k < NSYMS; k++)
                        if (!val[k] && strcmp(nm, sym_names[k]) == 0) {
                            val[k] = s.st_value;
                            size[k] = s.st_size;
                            found++;
                        }
                }
            }
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    if (*first_load == UINT64_MAX)
        *first_load = 0;
    return found;
}

static int module_version(const char *file, char *out, size_t cap);

/* The last file read (php-fpm forks its workers from one binary: each new worker would read it
 * again), by identity. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    int found;
    uint64_t val[NSYMS], size_[NSYMS], first_load;
    char version[32];
    bool have_version;
} cache;

static int elf_syms(const char *file, uint64_t *val, uint64_t *size, uint64_t *first_load,
                    char *version, size_t vcap, bool *have_version)
{
    struct stat st;
    if (stat(file, &st) != 0)
        return -1;
    pthread_mutex_lock(&cache_lock);
    if (cache.found > 0 && cache.dev == st.st_dev && cache.ino == st.st_ino &&
        cache.size == st.st_size && cache.mtime.tv_sec == st.st_mtim.tv_sec &&
        cache.mtime.tv_nsec == st.st_mtim.tv_nsec) {
        memcpy(val, cache.val, sizeof(cache.val));
        memcpy(size, cache.size_, sizeof(cache.size_));
        *first_load = cache.first_load;
        snprintf(version, vcap, "%s", cache.version);
        *have_version = cache.have_version;
        int found = cache.found;
        pthread_mutex_unlock(&cache_lock);
        return found;
    }
    pthread_mutex_unlock(&cache_lock);
    int found = elf_syms_read(file, val, size, first_load);
    *have_version = found > 0 && module_version(file, version, vcap) == 0;
    if (found > 0) {
        pthread_mutex_lock(&cache_lock);
        cache.dev = st.st_dev;
        cache.ino = st.st_ino;
        cache.size = st.st_size;
        cache.mtime = st.st_mtim;
        cache.found = found;
        memcpy(cache.val, val, sizeof(cache.val));
        memcpy(cache.size_, size, sizeof(cache.size_));
        cache.first_load = *first_load;
        snprintf(cache.version, sizeof(cache.version), "%s", *have_version ? version : "");
        cache.have_version = *have_version;
        pthread_mutex_unlock(&cache_lock);
    }
    return found;
}

/* The version "X.Y.Z" from the module's "X-Powered-By: PHP/X.Y.Z" string. */
static int module_version(const char *file, char *out, size_t cap)
{
    char s[96];
    static const char prefix[] = "X-Powered-By: PHP/";
    if (pp_elf_find_string(file, prefix,
                           "0123456789.-+~abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 64,
                           NULL, s, sizeof(s)) != 0 ||
        strncmp(s, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    snprintf(out, cap, "%.31s", s + sizeof(prefix) - 1);
    return 0;
}

pp_php_st pp_php_find(int pid, pp_php_target *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    pp_rt_module lib, exe;
    if (pid <= 0 || pp_rt_find_modules(pid, "libphp", &lib, &exe) != 0) {
        if (pid > 0 && errno != ENOENT && errno != ESRCH) {
            snprintf(err, errlen, "cannot read /proc/%d/maps (permission? run as root)", pid);
            return PP_PHP_ERR;
        }
        snprintf(err, errlen, "process exited (pid %d)", pid);
        return PP_PHP_GONE;
    }
    pp_rt_module *mods[2] = {lib.path[0] ? &lib : NULL, exe.path[0] ? &exe : NULL};
    char file[PATH_MAX + 64];
    for (int i = 0; i < 2; i++) {
        if (!mods[i])
            continue;
        int fd = pp_rt_module_file(pid, mods[i], mods[i] == &exe, file, sizeof(file));
        uint64_t val[NSYMS] = {0}, size[NSYMS] = {0}, first_load = 0;
        bool have_version = false;
        int found = file[0] ? elf_syms(file, val, size, &first_load, t->version, sizeof(t->version),
                                       &have_version)
                            : -1;
        if (found <= 0 || (!val[SYM_EG] && !val[SYM_ZTS])) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        uint64_t bias = mods[i]->start - first_load;
        if (!have_version || sscanf(t->version, "%u.%u", &t->major, &t->minor) != 2) {
            if (fd >= 0)
                close(fd);
            snprintf(err, errlen, "cannot tell the PHP version of %s (no X-Powered-By string)",
                     mods[i]->path);
            return PP_PHP_UNSUPPORTED;
        }
        if (fd >= 0)
            close(fd);
        if (val[SYM_ZTS] && !val[SYM_EG]) {
            t->zts = true;
            snprintf(err, errlen, "unsupported PHP %u.%u (thread-safe build)", t->major, t->minor);
            return PP_PHP_UNSUPPORTED;
        }
        t->eg = bias + val[SYM_EG];
        if (val[SYM_EXEC] && size[SYM_EXEC]) {
            t->vm_lo = bias + val[SYM_EXEC];
            t->vm_hi = t->vm_lo + size[SYM_EXEC];
        }
        return PP_PHP_FOUND;
    }
    /* exited while its files were read (a replaced worker): gone, or inside exit(2) with its
     * memory released (not a zombie yet, so "alive") */
    if (!pp_proc_alive(pid) || !pp_proc_has_memory(pid)) {
        snprintf(err, errlen, "process exited (pid %d)", pid);
        return PP_PHP_GONE;
    }
    snprintf(err, errlen, "no PHP engine (executor_globals symbol) in pid %d", pid);
    return PP_PHP_NOT_PHP;
}

int pp_php_version_of(int pid, char *out, size_t cap)
{
    pp_php_target t;
    char err[256];
    pp_php_st st = pp_php_find(pid, &t, err, sizeof(err));
    if ((st != PP_PHP_FOUND && st != PP_PHP_UNSUPPORTED) || !t.version[0])
        return -1;
    snprintf(out, cap, "%s", t.version);
    return 0;
}
