/* map.c - a string-keyed hash map (open addressing, linear probing) for
 * the frontend's name tables: value names, functions, value_info. Keys are
 * borrowed, so lookups cost no allocation; the table doubles at half load,
 * keeping probes short even for hostile inputs with millions of names. */
#include "frontend/internal.h"

#include <stdlib.h>
#include <string.h>

struct fe_map_slot {
    const char *key;
    uint64_t hash;
    void *val;
};

/* FNV-1a, 64-bit. */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

static struct fe_map_slot *find(const fe_map *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct fe_map_slot *s = &m->slots[i];
        if (!s->key || (s->hash == h && !strcmp(s->key, key)))
            return s;
    }
}

void *fe_map_get(const fe_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    struct fe_map_slot *s = find(m, key, hash_str(key));
    return s->key ? s->val : NULL;
}

static int grow(fe_map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 64;
    struct fe_map_slot *old = m->slots, *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return -1;
    size_t oc = m->cap;
    m->slots = ns;
    m->cap = nc;
    for (size_t i = 0; i < oc; i++)
        if (old[i].key)
            *find(m, old[i].key, old[i].hash) = old[i];
    free(old);
    return 0;
}

int fe_map_put(fe_map *m, const char *key, void *val)
{
    if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    uint64_t h = hash_str(key);
    struct fe_map_slot *s = find(m, key, h);
    if (!s->key) {
        s->key = key;
        s->hash = h;
        m->n++;
    }
    s->val = val;
    return 0;
}

void fe_map_free(fe_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}
