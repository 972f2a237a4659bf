/* Registered in-sampler walks (walks.h). */
#include "runtimes/system/walks.h"

#include <stdlib.h>
#include <string.h>

void pp_walks_init(pp_walks *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->lock, NULL);
}

static void ent_free(pp_walk_ent *e)
{
    if (e->state && e->ops && e->ops->free)
        e->ops->free(e->state);
    e->state = NULL;
}

void pp_walks_destroy(pp_walks *w)
{
    for (size_t i = 0; i < w->n; i++)
        ent_free(&w->v[i]);
    free(w->v);
    free(w->retired);
    pthread_mutex_destroy(&w->lock);
    memset(w, 0, sizeof(*w));
}

/* The index of pid, or where it would go. */
static size_t find(const pp_walks *w, int pid)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

pp_walk_ent *pp_walks_get(pp_walks *w, int pid)
{
    size_t i = find(w, pid);
    return i < w->n && w->v[i].pid == pid ? &w->v[i] : NULL;
}

int pp_walks_put(pp_walks *w, const pp_walk_ent *e)
{
    size_t i = find(w, e->pid);
    if (i < w->n && w->v[i].pid == e->pid) {
        ent_free(&w->v[i]);
        w->v[i] = *e;
        return 0;
    }
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 64;
        pp_walk_ent *nv = realloc(w->v, ncap * sizeof(*nv));
        if (!nv) {
            pp_walk_ent tmp = *e;
            ent_free(&tmp);
            return -1;
        }
        w->v = nv;
        w->cap = ncap;
    }
    memmove(&w->v[i + 1], &w->v[i], (w->n - i) * sizeof(*w->v));
    w->v[i] = *e;
    w->n++;
    return 0;
}

void pp_walks_remove(pp_walks *w, int pid)
{
    size_t i = find(w, pid);
    if (i >= w->n || w->v[i].pid != pid)
        return;
    pp_walk_ent *e = &w->v[i];
    if (e->samples) { /* kept for the next coverage read (lost without memory) */
        if (w->nretired == w->capretired) {
            size_t ncap = w->capretired ? w->capretired * 2 : 16;
            pp_walk_cov *nr = realloc(w->retired, ncap * sizeof(*nr));
            if (nr) {
                w->retired = nr;
                w->capretired = ncap;
            }
        }
        if (w->nretired < w->capretired)
            w->retired[w->nretired++] = (pp_walk_cov){e->pid, e->walker, e->rt_samples, e->samples};
    }
    ent_free(e);
    memmove(&w->v[i], &w->v[i + 1], (w->n - i - 1) * sizeof(*w->v));
    w->n--;
}

size_t pp_walks_coverage(pp_walks *w, pp_walk_cov **out)
{
    *out = NULL;
    size_t k = w->nretired;
    for (size_t i = 0; i < w->n; i++)
        k += w->v[i].samples > 0;
    if (!k || !(*out = calloc(k, sizeof(**out))))
        return 0;
    if (w->nretired)
        memcpy(*out, w->retired, w->nretired * sizeof(**out));
    k = w->nretired;
    w->nretired = 0;
    for (size_t i = 0; i < w->n; i++) {
        pp_walk_ent *e = &w->v[i];
        if (!e->samples)
            continue;
        (*out)[k++] = (pp_walk_cov){e->pid, e->walker, e->rt_samples, e->samples};
        e->samples = e->rt_samples = 0;
    }
    return k;
}
