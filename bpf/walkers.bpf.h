/* The in-sampler walkers, one file per runtime, dispatched by the walker index of a registered
 * process (struct pp_rt_proc, enum pp_walker_kind). Included by bpf/sampler.bpf.c after struct
 * rt_walk and rt_push. A walker fills w (rt_push per frame, innermost first, flags) and returns a
 * PP_CNT_WALK_* outcome. */
#ifndef PP_WALKERS_BPF_H
#define PP_WALKERS_BPF_H

#include "bpf/php.bpf.h"
#include "bpf/python.bpf.h"
#include "bpf/ruby.bpf.h"

static __always_inline __u32 run_walker(const struct pp_rt_proc *p, __u32 ktid, struct rt_walk *w)
{
    switch (p->walker) {
    case PP_WALK_CPYTHON:
        return pp_walk_cpython(p, ktid, w);
    case PP_WALK_RUBY:
        return pp_walk_ruby(p, ktid, w);
    case PP_WALK_PHP:
        return pp_walk_php(p, w);
    default:
        return PP_CNT_WALK_NO_THREAD;
    }
}

#endif
