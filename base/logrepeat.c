#include "base/logrepeat.h"

#include "base/hash.h"

bool pp_logrep_check(pp_logrep *t, uint64_t key, double now, unsigned long long *held,
                     double *since)
{
    pp_logrep_slot *set = &t->slot[(pp_hash_u64(key) % PP_LOGREP_SETS) * PP_LOGREP_WAYS];
    pp_logrep_slot *victim = &set[0];
    t->clock++;
    *held = 0;
    *since = 0;
    for (int w = 0; w < PP_LOGREP_WAYS; w++) {
        pp_logrep_slot *s = &set[w];
        if (s->used && s->key == key) {
            s->used = t->clock;
            if (now - s->logged < PP_LOGREP_INTERVAL) {
                s->held++;
                t->suppressed++;
                return false;
            }
            *held = s->held;
            *since = now - s->logged;
            s->held = 0;
            s->logged = now;
            return true;
        }
        if (victim->used && (!s->used || s->used < victim->used))
            victim = s;
    }
    t->forgotten += victim->held;
    *victim = (pp_logrep_slot){.key = key, .used = t->clock, .logged = now};
    return true;
}

unsigned long long pp_logrep_held(const pp_logrep *t, size_t *keys)
{
    unsigned long long n = t->forgotten;
    size_t k = 0;
    for (size_t i = 0; i < PP_LOGREP_SLOTS; i++) {
        if (t->slot[i].used && t->slot[i].held) {
            n += t->slot[i].held;
            k++;
        }
    }
    if (keys)
        *keys = k;
    return n;
}

void pp_logrep_clear_held(pp_logrep *t)
{
    for (size_t i = 0; i < PP_LOGREP_SLOTS; i++)
        t->slot[i].held = 0;
    t->forgotten = 0;
}
