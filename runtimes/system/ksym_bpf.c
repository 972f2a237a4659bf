/* Kernel address naming with a BPF program (see ksym_bpf.h and bpf/ksym.bpf.c). */
#include "runtimes/system/ksym_bpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/ksym.h"
#include "ksym.skel.h"

struct pp_ksym_bpf {
    struct ksym_bpf *skel;
    int prog_fd;
};

pp_ksym_bpf *pp_ksym_bpf_open(char *err, size_t errlen)
{
    pp_ksym_bpf *k = calloc(1, sizeof(*k));
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    k->skel = ksym_bpf__open_and_load();
    if (!k->skel) {
        snprintf(err, errlen, "cannot load the kernel symbol resolver: %s", strerror(errno));
        free(k);
        return NULL;
    }
    k->prog_fd = bpf_program__fd(k->skel->progs.pp_ksym_resolve);
    /* Check that it works (the kernel may refuse to run it). */
    char name[PP_KSYM_LEN];
    if (pp_ksym_bpf_name(k, 1, name, sizeof(name)) < 0) {
        snprintf(err, errlen, "the kernel symbol resolver does not run: %s", strerror(errno));
        pp_ksym_bpf_close(k);
        return NULL;
    }
    return k;
}

void pp_ksym_bpf_close(pp_ksym_bpf *k)
{
    if (!k)
        return;
    ksym_bpf__destroy(k->skel);
    free(k);
}

int pp_ksym_bpf_name(pp_ksym_bpf *k, uint64_t ip, char *name, size_t len)
{
    struct ksym_bpf__bss *bss = k->skel->bss;
    bss->addrs[0] = ip;
    bss->names[0][0] = '\0';
    bss->count = 1;
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    if (bpf_prog_test_run_opts(k->prog_fd, &opts) != 0)
        return -1;
    char out[PP_KSYM_LEN];
    memcpy(out, (const char *)bss->names[0], sizeof(out));
    out[sizeof(out) - 1] = '\0';
    /* "name [module]" -> "name"; an address without a symbol prints as "0x..." */
    out[strcspn(out, " \t")] = '\0';
    if (!out[0] || strncmp(out, "0x", 2) == 0)
        return 1;
    snprintf(name, len, "%s", out);
    return 0;
}

int pp_ksym_bpf_namer(void *arg, uint64_t ip, char *name, size_t len)
{
    return pp_ksym_bpf_name(arg, ip, name, len);
}
