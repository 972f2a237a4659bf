/* Stub of the per-file cache (interface only): every file is FAILED. The implementation follows. */
#include "runtimes/unwind/filecache.h"

#include <stdlib.h>
#include <string.h>

struct pp_filecache {
    size_t cap;
};

pp_filecache *pp_filecache_new(size_t max_bytes, size_t threads)
{
    (void)threads;
    pp_filecache *c = calloc(1, sizeof(*c));
    if (c)
        c->cap = max_bytes ? max_bytes : PP_FILECACHE_DEFAULT_BYTES;
    return c;
}

void pp_filecache_free(pp_filecache *c)
{
    free(c);
}

pp_fc_state pp_filecache_map(pp_filecache *c, int pid, const pp_fc_mapping *m, uint32_t *id)
{
    (void)c;
    (void)pid;
    (void)m;
    *id = 0;
    return PP_FC_FAILED;
}

void pp_filecache_release_pid(pp_filecache *c, int pid)
{
    (void)c;
    (void)pid;
}

pp_fc_state pp_filecache_state(pp_filecache *c, uint32_t id)
{
    (void)c;
    (void)id;
    return PP_FC_NONE;
}

const pp_fc_file *pp_filecache_acquire(pp_filecache *c, uint32_t id)
{
    (void)c;
    (void)id;
    return NULL;
}

void pp_filecache_put(pp_filecache *c, const pp_fc_file *f)
{
    (void)c;
    (void)f;
}

uint64_t pp_filecache_generation(pp_filecache *c)
{
    (void)c;
    return 0;
}

uint64_t pp_filecache_foreach(pp_filecache *c, void (*cb)(void *arg, const pp_fc_info *info),
                              void *arg)
{
    (void)c;
    (void)cb;
    (void)arg;
    return 0;
}

void pp_filecache_stats(pp_filecache *c, pp_fc_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->cap_bytes = c->cap;
}

size_t pp_filecache_pending(pp_filecache *c)
{
    (void)c;
    return 0;
}
