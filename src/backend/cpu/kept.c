/* kept.c: the CPU device's weights in their eight-row layout, an open-addressing table from a
 * tensor's address to its layout. Built on first use rather than at load: the device learns its
 * weights only from the products it is asked for. */
#include "backend/cpu/kept.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "platform/platform.h"

typedef struct kept_entry {
    const void *data; /* the tensor's rows; NULL: an empty slot */
    uint32_t type;
    int64_t ne0, ne1;
    char *packed;
} kept_entry;

struct cpu_kept {
    kept_entry *slots; /* (cap), a power of two */
    size_t cap, used;
};

brasa_status cpu_kept_create(cpu_kept **out, brasa_error *err) {
    *out = calloc(1, sizeof **out);
    return *out ? BRASA_OK : err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
}

void cpu_kept_free(cpu_kept *kp) {
    if (!kp)
        return;
    for (size_t i = 0; i < kp->cap; i++)
        free(kp->slots[i].packed);
    free(kp->slots);
    free(kp);
}

static size_t slot_of(const cpu_kept *kp, const void *data) {
    uintptr_t h = (uintptr_t)data;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) & (kp->cap - 1);
}

static kept_entry *lookup(cpu_kept *kp, const void *data) {
    if (!kp->cap)
        return NULL;
    for (size_t i = slot_of(kp, data);; i = (i + 1) & (kp->cap - 1))
        if (kp->slots[i].data == data || !kp->slots[i].data)
            return &kp->slots[i];
}

/* Keeps the load at most one half, so a lookup ends at an empty slot within a few steps. */
static brasa_status grow(cpu_kept *kp, brasa_error *err) {
    if (2 * (kp->used + 1) <= kp->cap)
        return BRASA_OK;
    const size_t cap = kp->cap ? 2 * kp->cap : 64;
    kept_entry *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    cpu_kept old = *kp;
    kp->slots = slots;
    kp->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i].data)
            *lookup(kp, old.slots[i].data) = old.slots[i];
    free(old.slots);
    return BRASA_OK;
}

/* Bytes of rows laid out between two releases of their pages: small next to any model, large
 * enough that the threads' synchronization per slice costs nothing. */
#define KEPT_SLICE_BYTES (4u << 20)

typedef struct repack_job {
    const cpu_kernels *k;
    const bk_tensor *w;
    char *packed;
    size_t group_bytes;
    int64_t g0, g1; /* the groups of this slice */
} repack_job;

static void repack_part(void *ctx, int ith, int nth) {
    const repack_job *j = ctx;
    const int64_t n = j->g1 - j->g0, per = (n + nth - 1) / nth;
    const int64_t lo = j->g0 + (per * ith < n ? per * ith : n);
    const int64_t hi = lo + per < j->g1 ? lo + per : j->g1;
    for (int64_t g = lo; g < hi; g++)
        j->k->x8_repack[j->w->type]((const char *)j->w->data + (size_t)(8 * g) * j->w->row_bytes, j->w->row_bytes,
                                    j->w->ne0, j->packed + (size_t)g * j->group_bytes);
}

brasa_status cpu_kept_find(cpu_kept *kp, const cpu_kernels *k, pool *pl, const bk_tensor *w, const char **packed,
                           brasa_error *err) {
    *packed = NULL;
    if (!kp || !w->constant || w->type >= QUANT_TYPE_COUNT || !k->x8_keep[w->type] || w->ne1 < 8)
        return BRASA_OK;
    kept_entry *e = lookup(kp, w->data);
    if (e && e->data) {
        if (e->type != w->type || e->ne0 != w->ne0 || e->ne1 != w->ne1)
            return BRASA_OK; /* another view of the same memory: the plain rows */
        *packed = e->packed;
        return BRASA_OK;
    }
    brasa_status st = grow(kp, err);
    if (st != BRASA_OK)
        return st;
    const int64_t n_groups = w->ne1 / 8;
    repack_job job = { k, w, NULL, k->x8_bytes[w->type](w->ne0), 0, 0 };
    job.packed = malloc((size_t)n_groups * job.group_bytes);
    if (!job.packed)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory laying out a %lldx%lld weight", (long long)w->ne1,
                       (long long)w->ne0);
    /* slice by slice, the rows read from now on being the layout's: the file's pages behind each
     * slice may leave memory as soon as it is laid out, so the two copies never both stay resident
     * (the rows left over past the last group of eight, and embedding lookups, fault theirs back in);
     * each release reaches back over the previous slice's last pages, which it rounded away */
    const size_t slice_rows = KEPT_SLICE_BYTES / w->row_bytes / 8 * 8, back = 64u << 10;
    const int64_t slice_groups = slice_rows >= 8 ? (int64_t)(slice_rows / 8) : 1;
    size_t released = 0;
    for (job.g0 = 0; job.g0 < n_groups; job.g0 = job.g1) {
        job.g1 = n_groups - job.g0 < slice_groups ? n_groups : job.g0 + slice_groups;
        pool_run(pl, repack_part, &job);
        const size_t done = (size_t)(8 * job.g1) * w->row_bytes;
        plat_pages_release((const char *)w->data + released, done - released);
        released = done > back ? done - back : 0;
    }
    e = lookup(kp, w->data);
    *e = (kept_entry){ w->data, w->type, w->ne0, w->ne1, job.packed };
    kp->used++;
    *packed = job.packed;
    return BRASA_OK;
}
