// SPDX-License-Identifier: GPL-2.0
/* polyprof system-wide sampler: attached to one CPU-clock perf event per CPU. Each sample is
 * counted in a hash map keyed by (pid, user stack hash, kernel stack hash), so user space reads
 * aggregates. Two sets of count maps are used alternately: user space flips `active` and drains
 * the idle set, so draining never races with counting.
 *
 * Stack traces are not kept in stack-trace maps (which user space would have to read and
 * delete one syscall per trace, every drain): a trace is hashed here and sent once on the
 * `stacks` ring buffer, which user space reads from shared memory; its hash is then registered
 * in `known` until user space empties that map (see runtimes/system/stackcache.h).
 *
 * The first sample of a process (or of a new image after exec) is announced on the `news` ring
 * buffer, so that user space reads its mappings at once: a process that exits before the next
 * drain keeps named frames.
 *
 * A process registered in `rt_procs` also has its interpreter frames walked at the sample, by the
 * walker its entry names (bpf/walkers.bpf.h): the runtime trace is hashed and sent like a stack
 * trace, and its hash is the third part of the counts key.
 *
 * User stacks are unwound by CFI (bpf/unwind.bpf.h) unless user space chose frame pointers
 * (--perf-mode fp), or the process's mappings are not loaded yet. */
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

struct threads_map {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PP_THREADS_ENTRIES);
    __type(key, __u32);
    __type(value, struct pp_thread_val);
};

struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");
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

/* stack hashes whose trace was sent */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PP_KNOWN_ENTRIES);
    __type(key, __u64);
    __type(value, __u8);
} known SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, PP_STACKS_RB_MIN); /* resized by user space before load */
} stacks SEC(".maps");

/* where a trace is taken and hashed (too large for the BPF stack) */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pp_stack_rec);
} scratch SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, PP_CNT_MAX);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

static __always_inline void add(__u32 idx, __u64 n)
{
    __u64 *v = bpf_map_lookup_elem(&counters, &idx);
    if (v)
        *v += n;
}

static __always_inline void bump(__u32 idx)
{
    add(idx, 1);
}

/* Processes whose samples are counted per thread (pid -> 1; filled by user space for runtime
 * profilers that report threads, so that the merge can scale them per thread). */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, PP_TID_PIDS_ENTRIES);
    __type(key, __u32);
    __type(value, __u8);
} tid_pids SEC(".maps");

/* Processes whose runtime frames are walked in the sampler (filled by user space). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PP_RT_PROCS_ENTRIES);
    __type(key, __u32); /* pid, in the sampler's pid namespace */
    __type(value, struct pp_rt_proc);
} rt_procs SEC(".maps");

/* Processes walked with an ancestor's data (forked_from): pid -> that ancestor's pid. Deleted
 * when the pid is seen in another image; user space leaves these to the sampler. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, PP_RT_PROCS_ENTRIES);
    __type(key, __u32);
    __type(value, __u32);
} rt_forks SEC(".maps");

/* A walker's output and scratch space (too large for the BPF stack). */
#define RT_WORDS_MASK 512 /* a power of two above PP_RT_MAX_WORDS */
struct rt_walk {
    struct pp_rt_rec r;
    __u64 slack[RT_WORDS_MASK + 1 - PP_RT_MAX_WORDS];
    __u64 h;
    __u32 n; /* frames pushed */
    __u32 flags;
    __u8 buf[288]; /* walkers' scratch (two reads of up to 128 bytes, with slack) */
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct rt_walk);
} rt_scratch SEC(".maps");

static __always_inline __u64 mix(__u64 h, __u64 v)
{
    h ^= v;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* Appends one frame (two words) to a walk; the caller checked w->n < PP_RT_MAX_FRAMES. */
static __always_inline void rt_push(struct rt_walk *w, __u64 a, __u64 b)
{
    __u32 n = w->n;
    if (n >= PP_RT_MAX_FRAMES)
        return;
    /* The mask is for the verifier (its bound of 1 + 2 * n is too loose to prove the check
     * above): `slack` keeps any masked index inside the map value. */
    __u32 i = (1 + 2 * n) & (RT_WORDS_MASK - 1);
    w->r.words[i] = a;
    w->r.words[i + 1] = b;
    w->h = mix(mix(w->h, a), b);
    w->n = n + 1;
}

/* The hash of the current user (flags BPF_F_USER_STACK) or kernel stack, its trace sent on
 * `stacks` the first time; STACK_NONE when there is none, STACK_LOST when its trace could not
 * be sent. A global function: the verifier checks it once, not at each of its four call
 * sites (which made loading several times slower). */
#define STACK_NONE 0
#define STACK_LOST 1

/* Sends a trace record (struct pp_stack_rec or pp_rt_rec: a hash, a count of words, the words)
 * of hash h once: the first time h is seen it goes on `stacks` and into `known`. Returns the
 * hash (never STACK_NONE or STACK_LOST), or STACK_LOST when it could not be sent. */
static __always_inline __u64 send_trace(void *rec, __u64 h, __u32 nr, __u64 cap)
{
    struct pp_stack_rec *r = rec; /* the header both record types share */
    if (h <= STACK_LOST)
        h += 2;
    if (bpf_map_lookup_elem(&known, &h))
        return h;
    __u8 one = 1;
    long rc = bpf_map_update_elem(&known, &h, &one, BPF_NOEXIST);
    if (rc == -EEXIST)
        return h; /* another CPU registered it this instant, and sends it */
    if (rc < 0)
        bump(PP_CNT_KNOWN_FULL); /* sent unregistered; user space empties `known` at its drain */
    r->hash = h;
    r->nr = nr;
    __u64 size = sizeof(*r) - sizeof(r->ips) + (__u64)nr * sizeof(__u64);
    if (size > cap)
        size = cap;
    if (bpf_ringbuf_output(&stacks, r, size, BPF_RB_NO_WAKEUP) != 0) {
        if (rc == 0)
            bpf_map_delete_elem(&known, &h); /* sent again next time */
        return STACK_LOST;
    }
    return h;
}
__noinline __u64 take_stack(struct bpf_perf_event_data *ctx, __u64 flags)
{
    __u32 zero = 0;
    struct pp_stack_rec *r = bpf_map_lookup_elem(&scratch, &zero);
    if (!r)
        return STACK_NONE;
    long n = bpf_get_stack(ctx, r->ips, sizeof(r->ips), flags);
    if (n <= 0)
        return STACK_NONE;
    __u32 nr = (__u32)n / sizeof(__u64);
    /* Every slot, whatever nr: bpf_get_stack zeroes the rest of the buffer, and a loop without
     * a data-dependent exit keeps the verifier from checking the code after it once per
     * possible depth (that made loading take ~20 ms). */
    __u64 h = 0x9e3779b97f4a7c15ULL ^ nr;
#pragma unroll
    for (__u32 i = 0; i < PP_MAX_STACK_DEPTH; i++)
        h = mix(h, r->ips[i]);
    return send_trace(r, h, nr, sizeof(*r));
}

#include "bpf/unwind.bpf.h"

/* The sampled task's thread pointer (pthread_self() on x86_64 glibc: the fs base), which the
 * walkers match against the runtime's record of its threads; 0 where it is not read yet. */
static __always_inline __u64 rt_thread_pointer(void)
{
#ifdef __TARGET_ARCH_x86
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    return BPF_CORE_READ(task, thread.fsbase);
#else
    return 0; /* the thread pointer is only read on x86_64 yet */
#endif
}

/* The sampled task's user registers (where its user code was interrupted, or entered the
 * kernel): pc, sp and the frame pointer, for walkers that start from them. 0 when there are none
 * (a kernel thread). */
static __always_inline int rt_user_regs(__u64 *pc, __u64 *sp, __u64 *fp)
{
    struct task_struct *task = bpf_get_current_task_btf();
    if (!BPF_CORE_READ(task, mm))
        return 0;
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
    *pc = BPF_CORE_READ(regs, ip);
    *sp = BPF_CORE_READ(regs, sp);
    *fp = BPF_CORE_READ(regs, bp);
    return *pc != 0;
}

/* The walkers of the registry's runtimes (runtimes/<rt>/walker.bpf.h) and their dispatch. */
#include "walkers_gen.bpf.h"

#include "bpf/walkers.bpf.h"

/* The registered entry of an ancestor of the current task (up to PP_RT_FORK_DEPTH levels) whose
 * fork it is: same executable file (an exec opens another), the ancestor's image the one it was
 * registered with. Its pid in *via. Only where pids are the kernel's (no pid namespace
 * translation: an ancestor's pid could not be named in the sampler's namespace). */
static __always_inline struct pp_rt_proc *forked_from(struct task_struct *task, __u32 *via)
{
    if (pidns_dev)
        return 0;
    struct file *exe = BPF_CORE_READ(task, mm, exe_file);
    struct task_struct *t = task;
#pragma unroll
    for (int i = 0; i < PP_RT_FORK_DEPTH; i++) {
        t = BPF_CORE_READ(t, group_leader, real_parent);
        if (!t)
            return 0;
        __u32 ppid = (__u32)BPF_CORE_READ(t, tgid);
        struct pp_rt_proc *p = ppid > 1 ? bpf_map_lookup_elem(&rt_procs, &ppid) : 0;
        if (!p)
            continue;
        struct mm_struct *pmm = BPF_CORE_READ(t, mm);
        if (!exe || !pmm || BPF_CORE_READ(pmm, exe_file) != exe || p->stale ||
            (p->mm && p->mm != (__u64)pmm))
            return 0;
        if (!p->mm)
            p->mm = (__u64)pmm;
        *via = ppid;
        return p;
    }
    return 0;
}

/* The hash of the sampled thread's runtime trace when pid (or the ancestor it is a fork of, in
 * *via) is registered in `rt_procs`, else 0. A global function: verified once. */
__noinline __u64 take_runtime_stack(__u32 pid, __u32 ktid, __u32 *via)
{
    if (!via) /* the verifier treats a global function's pointer argument as maybe NULL */
        return 0;
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    __u64 mm = (__u64)BPF_CORE_READ(task, mm);
    /* An exiting thread runs on in the kernel after exit_mm() has let go of the process's
     * memory: nothing to walk, and not another image (taken as one, every process whose
     * threads come and go stopped being walked within seconds). */
    if (!mm)
        return 0;
    struct pp_rt_proc *p = bpf_map_lookup_elem(&rt_procs, &pid);
    if (!p) {
        p = forked_from(task, via);
        if (!p) {
            bpf_map_delete_elem(&rt_forks, &pid); /* (an exec since it was walked as a fork) */
            return 0;
        }
        bpf_map_update_elem(&rt_forks, &pid, via, BPF_ANY);
        bump(PP_CNT_WALK_INHERITED);
    } else {
        if (!p->mm) {
            p->mm = mm;
        } else if (p->mm != mm) { /* its data describes another image: user space drops it */
            p->stale = 1;
            bump(PP_CNT_WALK_STALE);
            return 0;
        }
    }
    __u32 zero = 0;
    struct rt_walk *w = bpf_map_lookup_elem(&rt_scratch, &zero);
    if (!w)
        return 0;
    w->n = 0;
    w->flags = 0;
    w->h = 0x9e3779b97f4a7c15ULL ^ p->walker;
    __u32 outcome = run_walker(p, ktid, w);
    if (outcome != PP_CNT_WALK_OK) {
        bump(outcome);
        return 0;
    }
    if (w->flags & PP_RT_READ_FAILED)
        bump(PP_CNT_WALK_PARTIAL);
    else if (w->flags & PP_RT_TRUNCATED)
        bump(PP_CNT_WALK_TRUNCATED);
    else
        bump(PP_CNT_WALK_OK);
    __u32 n = w->n;
    if (n > PP_RT_MAX_FRAMES)
        return 0;
    __u64 hdr = PP_RT_HDR(p->walker, n, w->flags);
    w->r.words[0] = hdr;
    __u64 h = send_trace(&w->r, mix(w->h, hdr), 1 + 2 * n, sizeof(w->r));
    if (h == STACK_LOST) {
        bump(PP_CNT_WALK_LOST);
        return 0;
    }
    return h;
}

static __always_inline int record(struct bpf_perf_event_data *ctx, void *counts, void *threads,
                                  __u32 pid, __u32 tid, __u32 ktid)
{
    struct pp_sample_key key = {};
    key.pid = pid;
    if (pid != 0 && bpf_map_lookup_elem(&tid_pids, &pid))
        key.tid = tid;
    key.kernel_stack = take_stack(ctx, 0);
    if (key.kernel_stack == STACK_LOST) {
        bump(PP_CNT_KSTACK_LOST);
        key.kernel_stack = STACK_NONE;
    }
    /* the user stack before the runtime's: a walker may start where the unwind met JIT code
     * (rt_jit_regs) */
    key.user_stack = take_user_stack(ctx, pid);
    if (key.user_stack == STACK_LOST) {
        bump(PP_CNT_USTACK_LOST);
        key.user_stack = STACK_NONE;
    } else if (key.user_stack == STACK_NONE && pid != 0) {
        bump(PP_CNT_USTACK_ERROR);
    }
    if (pid != 0) {
        __u32 via = 0;
        key.rt_stack = take_runtime_stack(pid, ktid, &via);
        key.rt_pid = via; /* also when the walk gave nothing: the sample is still the fork's */
    }

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
int pp_sample(struct bpf_perf_event_data *ctx)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 pid = id >> 32, tid = (__u32)id, ktid = (__u32)id;

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
        return record(ctx, &counts0, &threads0, pid, tid, ktid);
    return record(ctx, &counts1, &threads1, pid, tid, ktid);
}
