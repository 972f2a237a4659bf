// SPDX-License-Identifier: GPL-2.0
/* Kernel symbol resolver: names a batch of kernel addresses with the kernel's own %ps
 * formatting (bpf_snprintf), so polyprof never has to read and parse all of /proc/kallsyms
 * (~120,000 lines, ~50 ms of kernel time) to name the few hundred addresses a profile holds.
 * Run on demand with BPF_PROG_TEST_RUN; input and output live in the global data section,
 * which user space reads and writes through the skeleton's mmap. */
#include "bpf/vmlinux_min.h"

#include <bpf/bpf_helpers.h>

#include "bpf/ksym.h"

char LICENSE[] SEC("license") = "GPL";

__u32 count = 0;
__u64 addrs[PP_KSYM_BATCH];
char names[PP_KSYM_BATCH][PP_KSYM_LEN];

SEC("syscall")
int pp_ksym_resolve(void *ctx)
{
    for (__u32 i = 0; i < PP_KSYM_BATCH; i++) {
        if (i >= count)
            break;
        bpf_snprintf(names[i], PP_KSYM_LEN, "%ps", &addrs[i], sizeof(addrs[i]));
    }
    return 0;
}
