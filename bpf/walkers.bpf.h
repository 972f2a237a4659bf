/* The dispatch to the in-sampler walkers by the walker index of a registered process (struct
 * pp_rt_proc, enum pp_walker_kind). The walkers are runtimes/<rt>/walker.bpf.h, included by
 * build/walkers_gen.bpf.h, which the Makefile generates from the registry (runtimes/registry.h):
 * adding a walker touches only its runtime's folder and the registry. Included by
 * bpf/sampler.bpf.c after struct rt_walk, rt_push and the walkers. A walker fills w (rt_push per
 * frame, innermost first, flags) and returns a PP_CNT_WALK_* outcome. */
#ifndef PP_WALKERS_BPF_H
#define PP_WALKERS_BPF_H

static __always_inline __u32 run_walker(const struct pp_rt_proc *p, __u32 ktid, struct rt_walk *w)
{
    switch (p->walker) {
#define PP_WALK_CASE_(id, sym)                                                                     \
    case PP_WALK_##id:                                                                             \
        return pp_walk_##sym(p, ktid, w);
        PP_WALKER_LIST(PP_WALK_CASE_)
#undef PP_WALK_CASE_
    default:
        return PP_CNT_WALK_NO_THREAD;
    }
}

#endif
