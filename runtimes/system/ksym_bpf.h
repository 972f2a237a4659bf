/* Kernel address naming through the kernel itself (bpf/ksym.bpf.c): a BPF "syscall" program
 * formats each address with %ps, which looks it up in the kernel's own symbol tables. Used by
 * the BPF sampler instead of parsing /proc/kallsyms, which costs ~50 ms of kernel time per load
 * for a profile that names a few hundred addresses. */
#ifndef PP_KSYM_BPF_H
#define PP_KSYM_BPF_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_ksym_bpf pp_ksym_bpf;

/* Loads the resolver. NULL with a reason in err (old kernel, no CAP_BPF/CAP_PERFMON). */
pp_ksym_bpf *pp_ksym_bpf_open(char *err, size_t errlen);
void pp_ksym_bpf_close(pp_ksym_bpf *k);

/* Names ip: writes the symbol (module suffix removed) into name and returns 0; returns 1 when
 * the kernel has no symbol for ip, -1 when the program could not run. */
int pp_ksym_bpf_name(pp_ksym_bpf *k, uint64_t ip, char *name, size_t len);

/* Same with the pp_kernel_namer signature of runtimes/symbols/symbolizer.h (arg = k). */
int pp_ksym_bpf_namer(void *arg, uint64_t ip, char *name, size_t len);

#endif
