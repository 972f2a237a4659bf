/* The few kernel types the sampler reads, hand-written for CO-RE: field offsets are relocated by
 * libbpf against the running kernel's BTF, so only the names and types used must match. */
#ifndef PP_VMLINUX_MIN_H
#define PP_VMLINUX_MIN_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed int __s32;
typedef signed long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

enum bpf_map_type {
    BPF_MAP_TYPE_HASH = 1,
    BPF_MAP_TYPE_ARRAY = 2,
    BPF_MAP_TYPE_PERCPU_ARRAY = 6,
    BPF_MAP_TYPE_LRU_HASH = 9,
    BPF_MAP_TYPE_LPM_TRIE = 11,
    BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
    BPF_ANY = 0,
    BPF_NOEXIST = 1,
    BPF_EXIST = 2,
};

enum {
    BPF_F_USER_STACK = 256,
};

enum {
    BPF_F_NO_PREALLOC = 1,
    BPF_F_MMAPABLE = 1024,
};

enum {
    BPF_RB_NO_WAKEUP = 1, /* bpf_ringbuf_output: do not wake a waiting reader */
};

struct file;

struct mm_struct {
    struct file *exe_file;
} __attribute__((preserve_access_index));

/* x86_64: the user thread pointer (glibc's struct pthread) is the fs base. */
struct thread_struct {
    unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
    int pid;
    int tgid;
    struct mm_struct *mm;
    struct task_struct *group_leader;
    struct task_struct *real_parent;
    char comm[16];
    struct thread_struct thread;
} __attribute__((preserve_access_index));

/* x86_64: the user registers saved at kernel entry (bpf_task_pt_regs), for walkers of
 * interpreters that keep their state in registers and for the CFI unwinder. */
struct pt_regs {
    unsigned long r15;
    unsigned long r14;
    unsigned long bp;
    unsigned long ip;
    unsigned long sp;
} __attribute__((preserve_access_index));

/* The perf_event programs' context; the verifier knows it by name. Its fields are never read
 * here (the real layout starts with the registers): the one member only gives it a size. */
struct bpf_perf_event_data {
    __u64 do_not_read;
};

struct bpf_pidns_info {
    __u32 pid;
    __u32 tgid;
};

#endif
