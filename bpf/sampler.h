/* Definitions shared by the BPF sampler program and its user-space loader. */
#ifndef PP_BPF_SAMPLER_DEFS_H
#define PP_BPF_SAMPLER_DEFS_H

#define PP_TASK_COMM_LEN 16
#define PP_MAX_STACK_DEPTH 127
#define PP_COUNTS_ENTRIES 16384       /* the most; user space sizes counts and threads maps */
#define PP_KNOWN_ENTRIES 32768        /* the fewest stack hashes kept (user space sizes it) */
#define PP_STACKS_RB_MIN (256 * 1024) /* the stack-trace ring buffer; user space sizes it */
#define PP_THREADS_ENTRIES 16384
#define PP_SEEN_ENTRIES 16384
#define PP_NEWS_BYTES (64 * 1024)

/* Aggregation key: identical (pid, user stack, kernel stack) samples share one entry. A stack
 * is named by a 64-bit hash of its addresses; its trace is sent once on the `stacks` ring
 * buffer (struct pp_stack_rec). */
struct pp_sample_key {
    unsigned int pid; /* tgid, in the sampler's pid namespace */
    unsigned int pad;
    unsigned long long user_stack;   /* stack hash; 0 when unavailable */
    unsigned long long kernel_stack; /* stack hash; 0 when unavailable */
};

/* A stack trace, sent the first time its hash is seen (only nr ips are sent). */
struct pp_stack_rec {
    unsigned long long hash;
    unsigned int nr; /* addresses in ips, innermost first */
    unsigned int pad;
    unsigned long long ips[PP_MAX_STACK_DEPTH];
};

struct pp_sample_val {
    unsigned long long count;
    char comm[PP_TASK_COMM_LEN]; /* the thread group leader's comm */
};

/* Per-thread activity, for runtime samplers that need to know which threads ran on a CPU. */
struct pp_thread_val {
    unsigned int pid;
    unsigned int pad;
    unsigned long long count;
    unsigned long long last_ns;
};

/* Index of the drop counters (per-CPU array). */
enum pp_counter {
    PP_CNT_SAMPLES = 0,  /* samples seen */
    PP_CNT_MAP_FULL,     /* counts map full: sample dropped */
    PP_CNT_USTACK_LOST,  /* user stack trace not handed over (ring buffer full) */
    PP_CNT_KSTACK_LOST,  /* kernel stack trace not handed over */
    PP_CNT_USTACK_ERROR, /* other user stack errors (no user stack: kernel threads, idle) */
    PP_CNT_THREADS_FULL, /* threads map full */
    PP_CNT_FILTERED,     /* samples of pids outside --pids */
    PP_CNT_NEWS_LOST,    /* new-process notices lost (ring buffer full) */
    PP_CNT_KNOWN_FULL,   /* a trace sent unregistered: the known-hash map was full */
    PP_CNT_MAX
};

#endif
