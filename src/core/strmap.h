/* strmap.h: open-addressing hash maps sized once at creation: byte-string keys (borrowed, not
 * copied: they must outlive the map) to int32 values, and uint64 keys to uint64 values. The
 * tokenizer uses them for text -> token id and (left id, right id) -> merge. */
#ifndef BRASA_CORE_STRMAP_H
#define BRASA_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct smap_slot {
    const char *key;
    uint32_t len;
    int32_t value;
} smap_slot;

typedef struct smap {
    smap_slot *slots;
    size_t mask; /* capacity - 1, capacity a power of two */
    size_t count;
} smap;

/* Room for at least n keys at under 50% load. Returns false when out of memory. */
bool smap_init(smap *m, size_t n);
void smap_free(smap *m);
/* Inserts key unless present. Returns false when the key was already there (value unchanged). */
bool smap_put(smap *m, const char *key, uint32_t len, int32_t value);
/* Returns the value, or -1 when absent. */
int32_t smap_get(const smap *m, const char *key, size_t len);

typedef struct u64map_slot {
    uint64_t key; /* UINT64_MAX marks an empty slot */
    uint64_t value;
} u64map_slot;

typedef struct u64map {
    u64map_slot *slots;
    size_t mask;
    size_t count;
} u64map;

bool u64map_init(u64map *m, size_t n);
void u64map_free(u64map *m);
bool u64map_put(u64map *m, uint64_t key, uint64_t value);  /* false when already present */
bool u64map_get(const u64map *m, uint64_t key, uint64_t *value);

uint64_t hash_bytes(const void *data, size_t len);

#endif
