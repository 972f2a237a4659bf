/* Driver registry and the base application metadata keys. */
#include "runtimes/runtime.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/elfinfo.h"

extern const pp_runtime_driver pp_go_driver;
extern const pp_runtime_driver pp_python_driver;
extern const pp_runtime_driver pp_java_driver;
extern const pp_runtime_driver pp_node_driver;
extern const pp_runtime_driver pp_ruby_driver;

const pp_runtime_driver *pp_runtime_for_kind(pp_proc_kind kind)
{
    switch (kind) {
    case PP_KIND_GO:
        return &pp_go_driver;
    case PP_KIND_PYTHON:
        return &pp_python_driver;
    case PP_KIND_JAVA:
        return &pp_java_driver;
    case PP_KIND_NODE:
        return &pp_node_driver;
    case PP_KIND_RUBY:
        return &pp_ruby_driver;
    default:
        return NULL;
    }
}

/* AT_EXECFN: the auxv entry gives an address in the target; read the string from its memory. */
static int read_execfn(int pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf64_auxv_t av[64];
    ssize_t n = read(fd, av, sizeof(av));
    close(fd);
    unsigned long addr = 0;
    for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(av[0]); i++)
        if (av[i].a_type == AT_EXECFN)
            addr = av[i].a_un.a_val;
    if (!addr)
        return -1;
    struct iovec local = {out, len - 1}, remote = {(void *)addr, len - 1};
    ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (r <= 0) {
        /* The string may end near a page boundary: retry with a short read. */
        remote.iov_len = local.iov_len = 256;
        r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (r <= 0)
            return -1;
    }
    out[r] = '\0';
    out[strnlen(out, (size_t)r)] = '\0';
    return 0;
}

void pp_app_metadata_base(json_t *obj, int pid)
{
    char link[64], exe[PATH_MAX], execfn[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/%d/exe", pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        json_object_set_new(obj, "exe", json_string(exe));
    } else {
        json_object_set_new(obj, "exe", json_string("error: NoSuchProcess"));
    }
    if (read_execfn(pid, execfn, sizeof(execfn)) == 0)
        json_object_set_new(obj, "execfn", json_string(execfn));
    else
        json_object_set_new(obj, "execfn", json_string("error: NoSuchProcess"));
    pp_elfinfo ei;
    if (pp_elfinfo_read(link, &ei) == 0 && ei.arch[0])
        json_object_set_new(obj, "arch", json_string(ei.arch));
    else
        json_object_set_new(obj, "arch", json_string("error: ELFError"));
}

json_t *pp_app_metadata(int pid, pp_proc_kind kind)
{
    const pp_runtime_driver *d = pp_runtime_for_kind(kind);
    if (!d || !d->metadata)
        return NULL;
    json_t *md = d->metadata(pid);
    if (!md)
        return NULL;
    pp_app_metadata_base(md, pid);
    return md;
}
