/* Online CPU list and the perf_event_open wrapper shared by both sampler backends. */
#ifndef PP_CPUS_H
#define PP_CPUS_H

#include <linux/perf_event.h>
#include <stddef.h>

/* Fills cpus with the online CPU numbers (from /sys/devices/system/cpu/online). Returns the
 * count, or -1. */
int pp_online_cpus(int *cpus, int max);
/* perf_event_open(2) for a CPU-clock event in frequency mode on one CPU, all processes. */
int pp_open_cpu_clock(int cpu, int frequency, unsigned long long sample_type, int flags_comm);
/* The same with the user registers of regs_mask (PERF_SAMPLE_REGS_USER) and stack_size bytes of
 * the user stack (PERF_SAMPLE_STACK_USER, a multiple of 8) in each sample, and the callchain of
 * the kernel only (user space unwinds from them). */
int pp_open_cpu_clock_stack(int cpu, int frequency, unsigned long long sample_type, int flags_comm,
                            unsigned long long regs_mask, unsigned stack_size);

#endif
