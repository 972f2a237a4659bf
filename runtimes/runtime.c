/* The registry table, backend choice, options by name and the base application metadata. */
#include "runtimes/runtime.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/elfinfo.h"
#include "bpf/sampler.h"
#include "runtimes/appid.h"
#include "runtimes/system/sampler.h"

#define PP_RT_EXTERN_(id, sym) extern const pp_runtime pp_rt_##sym;
PP_RUNTIME_LIST(PP_RT_EXTERN_)
#undef PP_RT_EXTERN_

static const pp_runtime *const registry[PP_KIND_COUNT] = {
#define PP_RT_ROW_(id, sym) [PP_KIND_##id] = &pp_rt_##sym,
    PP_RUNTIME_LIST(PP_RT_ROW_)
#undef PP_RT_ROW_
};

const pp_runtime *pp_runtime_get(pp_proc_kind kind)
{
    return (unsigned)kind < PP_KIND_COUNT ? registry[kind] : NULL;
}

const char *pp_proc_kind_name(pp_proc_kind kind)
{
    if (kind == PP_KIND_NATIVE)
        return "native";
    const pp_runtime *rt = pp_runtime_get(kind);
    return rt ? rt->name : "unknown";
}

const char *pp_runtime_opt(const pp_runtime_ctx *ctx, const char *name)
{
    for (size_t i = ctx ? ctx->nvalues : 0; i-- > 0;)
        if (strcmp(ctx->values[i].name, name) == 0)
            return ctx->values[i].value ? ctx->values[i].value : "";
    for (size_t i = 0; ctx && ctx->rt && i < ctx->rt->noptions; i++)
        if (strcmp(ctx->rt->options[i].name, name) == 0)
            return ctx->rt->options[i].def_str;
    return NULL;
}

static bool serves(const pp_backend *b, const char *mode)
{
    for (const char *const *m = b->modes; m && *m; m++)
        if (strcmp(*m, mode) == 0)
            return true;
    return false;
}

const pp_backend *pp_runtime_backend(const pp_runtime *rt, const char *mode, char *why, size_t len)
{
    if (why && len)
        why[0] = '\0';
    if (!rt || !mode || strcmp(mode, "disabled") == 0)
        return NULL;
    bool auto_mode = strcmp(mode, "auto") == 0;
    for (const pp_backend *const *b = rt->backends; b && *b; b++) {
        if (!auto_mode && !serves(*b, mode))
            continue;
        char tmp[1024] = "";
        bool ok = !(*b)->available || (*b)->available(tmp, sizeof(tmp));
        if (ok || !auto_mode) {
            if (!ok && why && len)
                snprintf(why, len, "%s", tmp);
            return *b;
        }
    }
    if (why && len)
        snprintf(why, len, "%s has no %s for mode %s", rt->label,
                 rt->backends ? "available profiler" : "profiler yet", mode);
    return NULL;
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
    const pp_runtime *rt = pp_runtime_get(kind);
    if (!rt || !rt->metadata)
        return NULL;
    json_t *md = rt->metadata(pid);
    if (!md)
        return NULL;
    pp_app_metadata_base(md, pid);
    return md;
}

char *pp_runtime_appid(int pid, pp_proc_kind kind)
{
    const pp_runtime *rt = pp_runtime_get(kind);
    return rt && rt->appid ? pp_appid_for_pid(pid, rt->appid) : NULL;
}

bool pp_inwalk_possible(const pp_runtime_ctx *ctx)
{
    return ctx && ctx->rt && ctx->rt->walker && pp_sampler_can_walk(ctx->sampler);
}

void pp_runtime_count_threads(const pp_runtime_ctx *ctx, int pid)
{
    if (ctx)
        pp_sampler_count_threads(ctx->sampler, pid);
}

pp_inwalk_status pp_inwalk_attach(const pp_runtime_ctx *ctx, const pp_proc *p, char *err,
                                  size_t errlen)
{
    if (!pp_inwalk_possible(ctx)) {
        snprintf(err, errlen, "the system sampler cannot walk %s frames (it needs BPF mode)",
                 ctx && ctx->rt ? ctx->rt->label : "runtime");
        return PP_INWALK_ERROR;
    }
    if (pp_sampler_walk_attached(ctx->sampler, p->pid, p->start_ticks))
        return PP_INWALK_OK;
    const pp_inwalker *w = ctx->rt->walker;
    unsigned char info[PP_RT_INFO_BYTES] = {0};
    pp_inwalk_status st = PP_INWALK_ERROR;
    void *state = w->prepare(ctx, p->pid, info, sizeof(info), &st, err, errlen);
    if (!state)
        return st == PP_INWALK_OK ? PP_INWALK_ERROR : st;
    if (pp_sampler_walk_attach(ctx->sampler, p->pid, p->start_ticks, w->kind, info, sizeof(info),
                               w->ops, state, err, errlen) < 0)
        return PP_INWALK_ERROR;
    return PP_INWALK_OK;
}
