#include "runtimes/system/cpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int pp_online_cpus(int *cpus, int max)
{
    FILE *f = fopen("/sys/devices/system/cpu/online", "re");
    if (!f)
        return -1;
    char buf[4096];
    int n = 0;
    if (fgets(buf, sizeof(buf), f)) {
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save)) {
            int a, b;
            if (sscanf(tok, "%d-%d", &a, &b) == 2) {
            } else if (sscanf(tok, "%d", &a) == 1) {
                b = a;
            } else {
                continue;
            }
            for (int c = a; c <= b && n < max; c++)
                cpus[n++] = c;
        }
    }
    fclose(f);
    return n > 0 ? n : -1;
}

static int open_clock(int cpu, int frequency, unsigned long long sample_type, int flags_comm,
                      unsigned long long regs_mask, unsigned stack_size)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.freq = 1;
    attr.sample_freq = (unsigned long long)frequency;
    attr.sample_type = sample_type;
    attr.comm = flags_comm ? 1 : 0;
    attr.comm_exec = flags_comm ? 1 : 0;
    attr.wakeup_events = 8;
    if (stack_size) {
        attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        attr.sample_regs_user = regs_mask;
        attr.sample_stack_user = stack_size;
        attr.exclude_callchain_user = 1;
    }
    return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int pp_open_cpu_clock(int cpu, int frequency, unsigned long long sample_type, int flags_comm)
{
    return open_clock(cpu, frequency, sample_type, flags_comm, 0, 0);
}

int pp_open_cpu_clock_stack(int cpu, int frequency, unsigned long long sample_type, int flags_comm,
                            unsigned long long regs_mask, unsigned stack_size)
{
    return open_clock(cpu, frequency, sample_type, flags_comm, regs_mask, stack_size);
}
