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

/* In-sampler walkers (docs/ARCHITECTURE.md, "In-sampler walkers"): for a process registered in
 * the `rt_procs` map, the sampler also walks the sampled thread's interpreter frames with the
 * walker its entry names, and counts the sample under that runtime trace's hash as well. */
#define PP_RT_PROCS_ENTRIES 4096
#define PP_TID_PIDS_ENTRIES 4096 /* processes counted per thread (least recently used dropped) */
#define PP_RT_INFO_BYTES 192     /* a walker's per-process data (addresses, offsets) */
#define PP_RT_MAX_FRAMES 160     /* runtime frames recorded; deeper stacks are marked truncated */
#define PP_RT_MAX_WORDS (1 + 2 * PP_RT_MAX_FRAMES)
#define PP_RT_TSTATE_ENTRIES 16384
/* A process that is not registered is walked with the data of its parent or grandparent when
 * that one is registered and the process is its fork (same executable file, no exec since):
 * the layout and addresses are the parent's (pre-forking servers' workers, found at once). */
#define PP_RT_FORK_DEPTH 2

/* Walker indexes (bpf/walkers.bpf.h dispatches on them). */
enum pp_walker_kind {
    PP_WALK_NONE = 0,
    PP_WALK_CPYTHON = 1, /* bpf/cpython.bpf.h, info: struct pp_cpython_info (bpf/cpython.h) */
    PP_WALK_RUBY = 2,    /* bpf/ruby.bpf.h, info: struct pp_ruby_info (bpf/ruby.h) */
    PP_WALK_PHP = 3,     /* bpf/php.bpf.h, info: struct pp_php_info (bpf/php.h) */
    PP_WALK_COUNT
};

/* One registered process: its walker and the walker's data. */
struct pp_rt_proc {
    unsigned int walker;   /* enum pp_walker_kind */
    unsigned int stale;    /* set by the sampler: the pid now has another address space */
    unsigned long long mm; /* the address space first walked (0 until then) */
    unsigned char info[PP_RT_INFO_BYTES];
};

/* A runtime trace as sent on the `stacks` ring (the header of struct pp_stack_rec): words[0]
 * is PP_RT_HDR(walker, frames, flags), then two words per frame, innermost first, whose meaning
 * is the walker's. */
struct pp_rt_rec {
    unsigned long long hash;
    unsigned int nr; /* words */
    unsigned int pad;
    unsigned long long words[PP_RT_MAX_WORDS];
};
#define PP_RT_TRUNCATED 1u   /* frames beyond PP_RT_MAX_FRAMES (or the walk's bound) were cut */
#define PP_RT_READ_FAILED 2u /* a read failed mid-walk: the root-side frames are missing */
#define PP_RT_HDR(walker, frames, flags)                                                           \
    ((unsigned long long)(flags) | ((unsigned long long)(walker) << 8) |                           \
     ((unsigned long long)(frames) << 16) | (0x7274ull << 48))
#define PP_RT_HDR_MAGIC(h) (((h) >> 48) == 0x7274ull)
#define PP_RT_HDR_FLAGS(h) ((unsigned)((h)&0xff))
#define PP_RT_HDR_WALKER(h) ((unsigned)(((h) >> 8) & 0xff))
#define PP_RT_HDR_FRAMES(h) ((unsigned)(((h) >> 16) & 0xffff))

/* Aggregation key: identical (pid, user stack, kernel stack) samples share one entry. A stack
 * is named by a 64-bit hash of its addresses; its trace is sent once on the `stacks` ring
 * buffer (struct pp_stack_rec). */
struct pp_sample_key {
    unsigned int pid;    /* tgid, in the sampler's pid namespace */
    unsigned int rt_pid; /* the registered ancestor pid was walked as a fork of (a child forked
                            from it that did not exec), rt_stack 0 when that walk gave nothing;
                            0: pid's own entry, or none */
    unsigned long long user_stack;   /* stack hash; 0 when unavailable */
    unsigned long long kernel_stack; /* stack hash; 0 when unavailable */
    unsigned long long rt_stack;     /* runtime trace hash (in-sampler walker); 0: none */
    unsigned int tid; /* the sampled thread, for pids in `tid_pids` (per-thread merge); else 0 */
    unsigned int pad;
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
    /* in-sampler walks of registered processes, by outcome */
    PP_CNT_WALK_OK,        /* runtime frames recorded */
    PP_CNT_WALK_NO_THREAD, /* the sampled thread has no thread state (not a runtime thread) */
    PP_CNT_WALK_IDLE,      /* its thread state has no frame (runs no runtime code now) */
    PP_CNT_WALK_READ,      /* a read of the target's memory failed (before any frame) */
    PP_CNT_WALK_PARTIAL,   /* a read failed mid-stack: leaf-side frames kept */
    PP_CNT_WALK_TRUNCATED, /* deeper than PP_RT_MAX_FRAMES: root-side frames cut */
    PP_CNT_WALK_LOST,      /* its trace could not be sent (ring buffer full) */
    PP_CNT_WALK_STALE,     /* the pid execed (or was reused) since it was registered */
    PP_CNT_WALK_INHERITED, /* walked with a registered ancestor's data (a fork of it) */
    /* the CFI unwinder of user stacks (bpf/unwind.bpf.h) */
    PP_CNT_UNW_CFI_FRAMES,  /* frames unwound by CFI rows */
    PP_CNT_UNW_FP_FRAMES,   /* frames unwound by frame pointers (no row for their pc) */
    PP_CNT_UNW_FALLBACK,    /* samples with at least one frame-pointer frame */
    PP_CNT_UNW_CFI_SAMPLES, /* samples unwound by CFI rows only */
    PP_CNT_UNW_TRUNCATED,   /* samples cut at PP_MAX_STACK_DEPTH frames */
    PP_CNT_UNW_UNLOADED,    /* samples of processes whose mappings are not loaded: all by frame
                               pointers (bpf_get_stack) */
    PP_CNT_MAX
};

#endif
