/* strmap.c: linear probing with a power-of-two table and FNV-1a hashing, fixed size, no deletion. */
#include "core/strmap.h"

#include <stdlib.h>
#include <string.h>

uint64_t hash_bytes(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static size_t capacity_for(size_t n) {
    size_t cap = 16;
    while (cap < n * 2 + 1 && cap < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
        cap <<= 1;
    return cap;
}

bool smap_init(smap *m, size_t n) {
    size_t cap = capacity_for(n);
    m->slots = calloc(cap, sizeof *m->slots);
    m->mask = cap - 1;
    m->count = 0;
    return m->slots != NULL;
}

void smap_free(smap *m) {
    free(m->slots);
    m->slots = NULL;
}

bool smap_put(smap *m, const char *key, uint32_t len, int32_t value) {
    size_t i = (size_t)hash_bytes(key, len) & m->mask;
    while (m->slots[i].key) {
        if (m->slots[i].len == len && memcmp(m->slots[i].key, key, len) == 0)
            return false;
        i = (i + 1) & m->mask;
    }
    m->slots[i] = (smap_slot){ key, len, value };
    m->count++;
    return true;
}

int32_t smap_get(const smap *m, const char *key, size_t len) {
    size_t i = (size_t)hash_bytes(key, len) & m->mask;
    while (m->slots[i].key) {
        if (m->slots[i].len == len && memcmp(m->slots[i].key, key, len) == 0)
            return m->slots[i].value;
        i = (i + 1) & m->mask;
    }
    return -1;
}

static size_t u64_slot(uint64_t key, size_t mask) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & mask;
}

bool u64map_init(u64map *m, size_t n) {
    size_t cap = capacity_for(n);
    m->slots = malloc(cap * sizeof *m->slots);
    m->mask = cap - 1;
    m->count = 0;
    if (!m->slots)
        return false;
    for (size_t i = 0; i < cap; i++)
        m->slots[i].key = UINT64_MAX;
    return true;
}

void u64map_free(u64map *m) {
    free(m->slots);
    m->slots = NULL;
}

bool u64map_put(u64map *m, uint64_t key, uint64_t value) {
    size_t i = u64_slot(key, m->mask);
    while (m->slots[i].key != UINT64_MAX) {
        if (m->slots[i].key == key)
            return false;
        i = (i + 1) & m->mask;
    }
    m->slots[i] = (u64map_slot){ key, value };
    m->count++;
    return true;
}

bool u64map_get(const u64map *m, uint64_t key, uint64_t *value) {
    size_t i = u64_slot(key, m->mask);
    while (m->slots[i].key != UINT64_MAX) {
        if (m->slots[i].key == key) {
            *value = m->slots[i].value;
            return true;
        }
        i = (i + 1) & m->mask;
    }
    return false;
}
