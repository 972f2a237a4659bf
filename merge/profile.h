/* A profile: for each pid, its comm, container name, appid, application metadata and a table of
 * distinct stacks (sequences of interned frame ids, root first, without the comm) with counts.
 * Every profile owns its string table, so profiles built in different threads never share
 * state; merging re-interns frames. Beside the stacks, the files native frames were found in
 * (mappings, for the pprof export): each (file, build-id) interned once, and per (pid, frame)
 * the mapping it came from; the stacks and the .col do not change with them. */
#ifndef PP_PROFILE_H
#define PP_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge/strtab.h"

typedef struct pp_stack_table pp_stack_table;

typedef struct pp_pid_profile {
    int pid;
    uint32_t comm;        /* string id */
    uint32_t container;   /* string id; 0 ("") when not in a container */
    uint32_t appid;       /* string id; 0 when none (without the "appid: " prefix) */
    json_t *app_metadata; /* owned reference; NULL means null (index 0) */
    const char *runtime;  /* static name of the profiler that produced the stacks, NULL = system */
    const char *profiler; /* static name of the runtime profiler ("jfr", "py-spy"), NULL = unknown:
                             the low-coverage frame of the merge (merge/scale.h) names it */
    /* set by the merge when part of the pid kept its native stacks for want of runtime samples
     * (merge/scale.h): the runtime samples and the sampler samples of that part */
    uint64_t uncovered_rt, uncovered_of;
    int fork_of; /* 0, or the process this one is a fork of (no exec since): when it is gone
                    before its identity is read, it takes that process's */
    pp_stack_table *stacks;
} pp_pid_profile;

typedef struct pp_profile pp_profile;

pp_profile *pp_profile_new(void);
void pp_profile_free(pp_profile *p);
/* A number that names this profile for as long as the process runs: never 0 and never given to
 * another profile, even one later allocated at the same address. Caches of frame or string ids
 * key on it, never on the profile's pointer. */
uint64_t pp_profile_generation(const pp_profile *p);
pp_strtab *pp_profile_strings(pp_profile *p);
const char *pp_profile_str(const pp_profile *p, uint32_t id);
uint32_t pp_profile_intern(pp_profile *p, const char *s);

/* The pid's entry; with create, added (in insertion order) when absent. NULL if absent/OOM. */
pp_pid_profile *pp_profile_get(pp_profile *p, int pid, bool create);
size_t pp_profile_npids(const pp_profile *p);
pp_pid_profile *pp_profile_at(const pp_profile *p, size_t i);
/* Removes a pid's entry (keeps the order of the others). */
void pp_profile_remove(pp_profile *p, int pid);

/* Adds count to the stack frames[0..n) (root first). Returns 0, or -1 on OOM. */
int pp_pid_add(pp_pid_profile *pp, const uint32_t *frames, size_t n, uint64_t count);
/* The same for samples taken on thread tid (0: not recorded): the same frames on two threads are
 * two entries, until pp_pid_drop_tids folds them (the per-thread merge, merge/scale.h, needs
 * them apart; the output does not). */
int pp_pid_add_tid(pp_pid_profile *pp, uint32_t tid, const uint32_t *frames, size_t n,
                   uint64_t count);
/* The thread of the i-th stack (0: not recorded). */
uint32_t pp_pid_stack_tid(const pp_pid_profile *pp, size_t i);
/* Whether any stack of the pid has a thread. */
bool pp_pid_has_tids(const pp_pid_profile *pp);
/* Forgets the threads: stacks with the same frames become one (first-insertion order kept).
 * 0, or -1 on OOM (the pid is then unchanged). */
int pp_pid_drop_tids(pp_pid_profile *pp);
size_t pp_pid_nstacks(const pp_pid_profile *pp);
/* The i-th distinct stack, in first-insertion order. */
const uint32_t *pp_pid_stack(const pp_pid_profile *pp, size_t i, size_t *n, uint64_t *count);
/* Replaces the count of the i-th stack (0 drops it from output). */
void pp_pid_set_count(pp_pid_profile *pp, size_t i, uint64_t count);
uint64_t pp_pid_total(const pp_pid_profile *pp);
void pp_pid_clear(pp_pid_profile *pp);

/* Copies every stack of src (another profile's pid entry) into dst, re-interning frames from
 * src_strings into dst's profile, multiplying nothing; threads are kept, and so are the frames'
 * mappings. Returns 0 or -1 on OOM. */
int pp_pid_add_all(pp_profile *dst_profile, pp_pid_profile *dst, const pp_profile *src_profile,
                   const pp_pid_profile *src);

/* pp_pid_drop_tids for every pid (before output). 0, or -1 on OOM. */
int pp_profile_drop_tids(pp_profile *p);

/* ---- mappings: the file a native frame was found in ---- */

/* Frames every process shares (the kernel's) are recorded under this pid. */
#define PP_ANY_PID (-1)

/* The id (1, 2, ...) of the mapping (file as mapped, build-id as lowercase hex or "" when
 * unknown), added when new: each pair is held once per profile, its strings interned.
 * UINT32_MAX on OOM. */
uint32_t pp_profile_mapping(pp_profile *p, const char *file, const char *build_id);
size_t pp_profile_nmappings(const pp_profile *p);
/* The string ids of mapping id's file and build-id (id in 1..pp_profile_nmappings). */
void pp_profile_mapping_get(const pp_profile *p, uint32_t id, uint32_t *file, uint32_t *build_id);
/* Records that frame (a string id) of process pid (or of every process: PP_ANY_PID) was found in
 * mapping; the first mapping recorded for a (pid, frame) stays (a name found in two files of
 * one process keeps the first). 0, or -1 on OOM. */
int pp_profile_set_frame_mapping(pp_profile *p, int pid, uint32_t frame, uint32_t mapping);
/* The mapping of frame in process pid (else the one recorded for every process); 0: none. */
uint32_t pp_profile_frame_mapping(const pp_profile *p, int pid, uint32_t frame);

/* Total bytes held (strings, tables), for memory accounting. */
size_t pp_profile_bytes(const pp_profile *p);

#endif
