// SPDX-License-Identifier: GPL-2.0
/* polyprof system-wide sampler: attached to one CPU-clock perf event per CPU. Each sample is
 * counted in a hash map keyed by (pid, user stack id, kernel stack id), so user space reads
 * aggregates. Two sets of maps are used alternately: user space flips `active` and drains the
 * idle set, so draining never races with counting.
 *
 * The first sample of a process (or of a new image after exec) is announced on the `news` ring
 * buffer, so that user space reads its mappings at once: a process that exits before the next
 * drain keeps named frames. */
#include "bpf/vmlinux_min.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "bpf/sampler.h"

char LICENSE[] SEC("license") = "GPL";

#define EEXIST 17

/* Set by user space before load. */
const volatile __u32 filter_pids = 0; /* 1: only pids in the `pids` map */
const volatile __u64 pidns_dev = 0;   /* non-zero: report pids of this pid namespace */
const volatile __u64 pidns_ino = 0;

/* Written by user space: which map set is being filled (0 or 1). */
volatile __u32 active = 0;

struct counts_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PP_COUNTS_ENTRIES);
    __type(key, struct pp_sample_key);
    __type(value, struct pp_sample_val);
};

struct stacks_map {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, PP_STACKS_ENTRIES);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, PP_MAX_STACK_DEPTH * sizeof(__u64));
};

struct threads_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PP_THREADS_ENTRIES);
    __type(key, __u32);
    __type(value, struct pp_thread_val);
};

struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");
struct stacks_map stacks0 SEC(".maps");
struct stacks_map stacks1 SEC(".maps");
struct threads_map threads0 SEC(".maps");
struct threads_map threads1 SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u8);
} pids SEC(".maps");

/* pid -> the mm it was last announced with (a new mm means a new process or an exec) */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, PP_SEEN_ENTRIES);
    __type(key, __u32);
    __type(value, __u64);
} seen SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, PP_NEWS_BYTES);
} news SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, PP_CNT_MAX);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

static __always_inline void bump(__u32 idx)
{
    __u64 *v = bpf_map_lookup_elem(&counters, &idx);
    if (v)
        (*v)++;
}

static __always_inline int record(void *ctx, void *counts, void *stacks, void *threads, __u32 pid,
                                  __u32 tid)
{
    struct pp_sample_key key = {};
    key.pid = pid;
    key.kernel_stack = bpf_get_stackid(ctx, stacks, 0);
    if (key.kernel_stack == -EEXIST)
        bump(PP_CNT_KSTACK_COLLISION);
    key.user_stack = bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
    if (key.user_stack == -EEXIST)
        bump(PP_CNT_USTACK_COLLISION);
    else if (key.user_stack < 0 && pid != 0)
        bump(PP_CNT_USTACK_ERROR);

    struct pp_sample_val *val = bpf_map_lookup_elem(counts, &key);
    if (val) {
        __sync_fetch_and_add(&val->count, 1);
    } else {
        struct pp_sample_val nv = {.count = 1};
        struct task_struct *task = (struct task_struct *)bpf_get_current_task();
        struct task_struct *leader = BPF_CORE_READ(task, group_leader);
        if (leader)
            BPF_CORE_READ_STR_INTO(&nv.comm, leader, comm);
        else
            bpf_get_current_comm(&nv.comm, sizeof(nv.comm));
        if (bpf_map_update_elem(counts, &key, &nv, BPF_NOEXIST) != 0) {
            val = bpf_map_lookup_elem(counts, &key);
            if (val)
                __sync_fetch_and_add(&val->count, 1);
            else
                bump(PP_CNT_MAP_FULL);
        }
    }

    if (pid != 0) {
        struct pp_thread_val *tv = bpf_map_lookup_elem(threads, &tid);
        __u64 now = bpf_ktime_get_ns();
        if (tv) {
            __sync_fetch_and_add(&tv->count, 1);
            tv->last_ns = now;
        } else {
            struct pp_thread_val ntv = {.pid = pid, .count = 1, .last_ns = now};
            if (bpf_map_update_elem(threads, &tid, &ntv, BPF_NOEXIST) != 0)
                bump(PP_CNT_THREADS_FULL);
        }
    }
    return 0;
}

/* Announces pid when its address space is one we have not announced yet. */
static __always_inline void announce(__u32 pid)
{
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    __u64 mm = (__u64)BPF_CORE_READ(task, mm);
    if (!mm)
        return; /* kernel thread */
    __u64 *old = bpf_map_lookup_elem(&seen, &pid);
    if (old && *old == mm)
        return;
    bpf_map_update_elem(&seen, &pid, &mm, BPF_ANY);
    if (bpf_ringbuf_output(&news, &pid, sizeof(pid), 0) != 0)
        bump(PP_CNT_NEWS_LOST);
}

SEC("perf_event")
int pp_sample(void *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 pid = id >> 32, tid = (__u32)id;

    if (pidns_dev) {
        struct bpf_pidns_info ns = {};
        if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)) == 0) {
            pid = ns.tgid;
            tid = ns.pid;
        } else if (pid != 0) {
            return 0; /* a task outside our pid namespace: we could not name it in /proc */
        }
    }
    bump(PP_CNT_SAMPLES);
    if (filter_pids && pid != 0) {
        if (!bpf_map_lookup_elem(&pids, &pid)) {
            bump(PP_CNT_FILTERED);
            return 0;
        }
    } else if (filter_pids) {
        bump(PP_CNT_FILTERED);
        return 0;
    }

    if (pid != 0)
        announce(pid);
    if (active == 0)
        return record(ctx, &counts0, &stacks0, &threads0, pid, tid);
    return record(ctx, &counts1, &stacks1, &threads1, pid, tid);
}
