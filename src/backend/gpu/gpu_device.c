/* gpu_device.c: the GPU device behind bk_device_ops, one C source for every vendor: runtime calls
 * go through gpu_runtime.h and kernels through gpu_kernels.h. Each backend module (brasa-cuda,
 * brasa-hip) is this file, its vendor's runtime file and the kernels.
 *
 * Activations and KV caches live in device buffers the context allocates here. Weights stay where
 * the model mapped them, in host memory and marked constant; the device keeps its own copy of each,
 * uploaded at first use (or when the context asks, keep) and found again by the host address, so
 * model code is the same on every device. An integrated GPU instead maps the model file (map_host)
 * and reads the weights in place. Token ids and positions arrive in host arrays and are staged
 * through a small buffer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/gpu/gpu_kernels.h"
#include "backend/gpu/gpu_module.h"
#include "backend/gpu/gpu_runtime.h"
#include "core/error.h"
#include "quant/quant.h"

#ifndef BRASA_GPU_TARGETS_BUILT
#define BRASA_GPU_TARGETS_BUILT "unknown"
#endif

/* Decode products run as passes over one kernel up to the batch size the seam promises exact. */
_Static_assert(GK_DECODE_TOKENS_MAX == BK_BATCH_EXACT_MAX, "decode kernels cover the exact batches");

/* A product variant chosen for one weight shape and kind (tuning). */
typedef struct gpu_choice {
    int kind;
    uint32_t type;
    int64_t n_out, n_in;
    int variant;
} gpu_choice;

/* Shapes of products a model has: a few per layer kind, a handful of kinds. */
#define GPU_CHOICES_MAX 256

/* A device copy of one constant host tensor. */
typedef struct gpu_weight {
    const void *host;
    void *dev;
    size_t bytes;
} gpu_weight;

typedef struct gpu_impl {
    bk_gpu_info info;
    gk_exec ex;
    void *stage;       /* device copy of the current call's ids or positions */
    size_t stage_cap;
    int32_t *groups;   /* matmul_id's slots grouped by expert (gk_moe_group), grown to the largest batch */
    size_t groups_cap;
    gpu_weight *weights; /* open addressing by host address; capacity a power of two */
    size_t n_weights, weights_cap;
    gpu_choice choices[GPU_CHOICES_MAX];
    int n_choices;
    const char *host_base; /* host memory mapped for reading in place (map_host), or NULL */
    size_t host_bytes;
    char *host_dev;        /* its device address */
} gpu_impl;

struct bk_buffer {
    void *p;
    size_t bytes;
};

/* Every runtime call through here: a failure becomes an error naming the call, file and line. */
#define GPU_CHECK(call)                                                                                         \
    do {                                                                                                        \
        const int rc_ = (call);                                                                                 \
        if (rc_ != 0)                                                                                           \
            return err_set(err, BRASA_ERR_IO, "%s: %s failed: %s (%s:%d)", gr_vendor(), #call,                  \
                           gr_error_string(rc_), __FILE__, __LINE__);                                           \
    } while (0)

static gpu_impl *impl_of(bk_device *dev) { return dev->impl; }

static brasa_status out_of_memory(size_t bytes, const char *what, brasa_error *err) {
    size_t free_b = 0, total_b = 0;
    gr_memory(&free_b, &total_b);
    return err_set(err, BRASA_ERR_NO_MEMORY, "%s: out of device memory for %s: %.1f MiB asked, %.1f MiB free of %.1f MiB",
                   gr_vendor(), what, (double)bytes / 1048576.0, (double)free_b / 1048576.0, (double)total_b / 1048576.0);
}

static brasa_status gpu_buffer_alloc(bk_device *dev, size_t bytes, bk_buffer **out, brasa_error *err) {
    (void)dev;
    bk_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    if (gr_malloc(&b->p, bytes ? bytes : 1) != 0) {
        free(b);
        return out_of_memory(bytes, "a buffer", err);
    }
    b->bytes = bytes;
    *out = b;
    return BRASA_OK;
}

static void gpu_buffer_free(bk_buffer *buf) {
    if (!buf)
        return;
    gr_free(buf->p);
    free(buf);
}

static void *gpu_buffer_base(bk_buffer *buf) { return buf->p; }

static brasa_status gpu_upload(bk_tensor *dst, const void *src, int64_t row0, int64_t n, brasa_error *err) {
    gpu_impl *g = impl_of(dst->dev);
    GPU_CHECK(gr_copy_to_device((char *)dst->data + (size_t)row0 * dst->row_bytes, src, (size_t)n * dst->row_bytes, g->ex.stream));
    return BRASA_OK;
}

static brasa_status gpu_download(const bk_tensor *src, void *dst, int64_t row0, int64_t n, brasa_error *err) {
    gpu_impl *g = impl_of(src->dev);
    GPU_CHECK(gr_copy_to_host(dst, (const char *)src->data + (size_t)row0 * src->row_bytes, (size_t)n * src->row_bytes, g->ex.stream));
    return BRASA_OK;
}

static size_t hash_slot(const void *p, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static brasa_status weights_grow(gpu_impl *g, brasa_error *err) {
    const size_t cap = g->weights_cap ? 2 * g->weights_cap : 256;
    gpu_weight *w = calloc(cap, sizeof *w);
    if (!w)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < g->weights_cap; i++) {
        if (!g->weights[i].host)
            continue;
        size_t s = hash_slot(g->weights[i].host, cap);
        while (w[s].host)
            s = (s + 1) & (cap - 1);
        w[s] = g->weights[i];
    }
    free(g->weights);
    g->weights = w;
    g->weights_cap = cap;
    return BRASA_OK;
}

/* The device address of a tensor's rows: its own when it lives here, else the device copy of a
 * constant host tensor (made now if this is its first use). */
static brasa_status device_rows(bk_device *dev, const bk_tensor *t, const void **out, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    if (t->dev == dev) {
        *out = t->data;
        return BRASA_OK;
    }
    if (t->dev || !t->constant)
        return err_set(err, BRASA_ERR_INTERNAL, "%s: a tensor of another device, or host memory not marked constant", gr_vendor());
    /* every expert of a 3-D weight: bk_bytes, written out because backend.c is in the program, not
     * in the module (which links no brasa code but error.c) */
    const size_t bytes = (size_t)t->ne2 * (size_t)t->ne1 * t->row_bytes;
    const char *host = t->data;
    if (g->host_base && host >= g->host_base && bytes <= g->host_bytes && (size_t)(host - g->host_base) <= g->host_bytes - bytes) {
        *out = g->host_dev + (host - g->host_base); /* read in place */
        return BRASA_OK;
    }
    if (g->weights_cap) {
        for (size_t s = hash_slot(t->data, g->weights_cap); g->weights[s].host; s = (s + 1) & (g->weights_cap - 1))
            if (g->weights[s].host == t->data && g->weights[s].bytes >= bytes) {
                *out = g->weights[s].dev;
                return BRASA_OK;
            }
    }
    if (2 * (g->n_weights + 1) > g->weights_cap) {
        brasa_status st = weights_grow(g, err);
        if (st != BRASA_OK)
            return st;
    }
    void *p = NULL;
    if (gr_malloc(&p, bytes ? bytes : 1) != 0)
        return out_of_memory(bytes, "a weight", err);
    const int rc = gr_copy_to_device(p, t->data, bytes, g->ex.stream);
    if (rc != 0) {
        gr_free(p);
        GPU_CHECK(rc);
    }
    size_t s = hash_slot(t->data, g->weights_cap);
    while (g->weights[s].host)
        s = (s + 1) & (g->weights_cap - 1);
    g->weights[s] = (gpu_weight){ t->data, p, bytes };
    g->n_weights++;
    *out = p;
    return BRASA_OK;
}

/* Copies a host array of the current call to the device. */
static brasa_status stage(gpu_impl *g, const void *host, size_t bytes, const void **out, brasa_error *err) {
    if (bytes > g->stage_cap) {
        GPU_CHECK(gr_sync(g->ex.stream)); /* the old buffer may still be read by queued kernels */
        gr_free(g->stage);
        g->stage = NULL;
        g->stage_cap = 0;
        const size_t cap = bytes < 4096 ? 4096 : bytes;
        if (gr_malloc(&g->stage, cap) != 0)
            return out_of_memory(cap, "token positions", err);
        g->stage_cap = cap;
    }
    GPU_CHECK(gr_copy_to_device(g->stage, host, bytes, g->ex.stream));
    *out = g->stage;
    return BRASA_OK;
}

/* The device scratch for grouping n_slots slots over n_expert experts, grown (never shrunk) when a
 * batch needs more: once per larger batch, not per token. */
static brasa_status groups_reserve(gpu_impl *g, int n_expert, int64_t n_slots, brasa_error *err) {
    const size_t bytes = gk_moe_groups_bytes(n_expert, n_slots);
    if (bytes <= g->groups_cap)
        return BRASA_OK;
    GPU_CHECK(gr_sync(g->ex.stream)); /* queued products may still read the old groups */
    gr_free(g->groups);
    g->groups = NULL;
    g->groups_cap = 0;
    void *p = NULL;
    if (gr_malloc(&p, bytes) != 0)
        return out_of_memory(bytes, "grouping expert slots", err);
    g->groups = p;
    g->groups_cap = bytes;
    return BRASA_OK;
}

static brasa_status launched(int rc, const char *op, brasa_error *err) {
    if (rc != 0)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s: no GPU kernel for this %s", gr_vendor(), op);
    GPU_CHECK(gr_last_error());
    return BRASA_OK;
}

static brasa_status on_device(bk_device *dev, const bk_tensor *t, const char *op, brasa_error *err) {
    if (t->dev != dev)
        return err_set(err, BRASA_ERR_INTERNAL, "%s %s: activations must be in the device's memory", gr_vendor(), op);
    return BRASA_OK;
}

#define GPU_TRY(x)                                                                                              \
    do {                                                                                                        \
        brasa_status st_ = (x);                                                                                 \
        if (st_ != BRASA_OK)                                                                                    \
            return st_;                                                                                         \
    } while (0)

static int64_t floats(const bk_tensor *t) { return (int64_t)(t->row_bytes / sizeof(float)); }

static brasa_status gpu_get_rows(bk_device *dev, const bk_tensor *table, const int32_t *ids, int64_t n, bk_tensor *y,
                                 brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= table->ne1)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "get_rows: row %d of a %lld-row table", ids[i], (long long)table->ne1);
    const void *td = NULL, *idd = NULL;
    GPU_TRY(on_device(dev, y, "get_rows", err));
    GPU_TRY(device_rows(dev, table, &td, err));
    GPU_TRY(stage(g, ids, (size_t)n * sizeof *ids, &idd, err));
    return launched(gk_get_rows(&g->ex, table->type, td, table->row_bytes, table->ne0, idd, n, y->data, floats(y)), "get_rows", err);
}

/* The slot of a shape's choice, or -1. A model has few shapes: a scan is cheaper than a kernel launch. */
static int choice_find(const gpu_impl *g, int kind, uint32_t type, int64_t n_out, int64_t n_in) {
    for (int i = 0; i < g->n_choices; i++) {
        const gpu_choice *c = &g->choices[i];
        if (c->kind == kind && c->type == type && c->n_out == n_out && c->n_in == n_in)
            return i;
    }
    return -1;
}

static int variant_for(const gpu_impl *g, int kind, uint32_t type, int64_t n_out, int64_t n_in) {
    const int i = choice_find(g, kind, type, n_out, n_in);
    return i >= 0 ? g->choices[i].variant : gk_default_variant((gk_kind)kind, n_out, n_in, g->ex.warp);
}

static brasa_status gpu_matmul(bk_device *dev, const bk_tensor *w, const bk_tensor *x, const bk_tensor *bias, bk_tensor *y,
                               brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    const void *wd = NULL, *bd = NULL;
    GPU_TRY(on_device(dev, x, "matmul", err));
    GPU_TRY(on_device(dev, y, "matmul", err));
    GPU_TRY(device_rows(dev, w, &wd, err));
    if (bias)
        GPU_TRY(device_rows(dev, bias, &bd, err));
    const int variant = variant_for(g, gk_kind_of(x->ne1), w->type, w->ne1, w->ne0);
    return launched(gk_matmul(&g->ex, variant, w->type, wd, w->row_bytes, w->ne1, w->ne0, x->data, floats(x), x->ne1, bd, y->data,
                              floats(y)),
                    "matmul", err);
}

static brasa_status gpu_matmul_group(bk_device *dev, const bk_tensor *x, const bk_matmul_out *outs, int n, brasa_error *err) {
    for (int i = 0; i < n; i++)
        GPU_TRY(gpu_matmul(dev, outs[i].w, x, outs[i].bias, outs[i].y, err));
    return BRASA_OK;
}

static brasa_status gpu_rms_norm(bk_device *dev, const bk_tensor *x, const bk_tensor *w, int64_t group, float eps, bk_tensor *y,
                                 brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    const void *wd = NULL;
    GPU_TRY(on_device(dev, x, "rms_norm", err));
    if (w)
        GPU_TRY(device_rows(dev, w, &wd, err));
    return launched(gk_rms_norm(&g->ex, x->data, floats(x), x->ne1, x->ne0, wd, group, eps, y->data, floats(y)), "rms_norm", err);
}

static brasa_status gpu_add(bk_device *dev, const bk_tensor *a, const bk_tensor *b, bk_tensor *y, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    GPU_TRY(on_device(dev, a, "add", err));
    GPU_TRY(on_device(dev, b, "add", err));
    return launched(gk_add(&g->ex, a->data, floats(a), b->data, floats(b), y->data, floats(y), a->ne1, a->ne0), "add", err);
}

static brasa_status gpu_scale(bk_device *dev, bk_tensor *x, float s, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    GPU_TRY(on_device(dev, x, "scale", err));
    return launched(gk_scale(&g->ex, x->data, floats(x), x->ne1, x->ne0, s), "scale", err);
}

static brasa_status gpu_rope(bk_device *dev, bk_tensor *x, const int32_t *pos, const bk_rope_params *p, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    const void *pd = NULL;
    GPU_TRY(on_device(dev, x, "rope", err));
    if ((int64_t)p->n_head * p->head_dim != x->ne0)
        return err_set(err, BRASA_ERR_INTERNAL, "rope: %d heads of %d in rows of %lld", p->n_head, p->head_dim, (long long)x->ne0);
    gk_rope_params gp = { p->n_head, p->head_dim, p->rope_dim, p->mode == BK_ROPE_NEOX, p->base, p->freq_scale, NULL,
                          p->ext_factor, p->corr_low, p->corr_high, p->mscale };
    if (p->freq_factors) {
        const bk_tensor *f = p->freq_factors;
        if (f->type != QUANT_F32 || f->ne0 * f->ne1 < p->rope_dim / 2)
            return err_set(err, BRASA_ERR_INTERNAL, "rope: %lld frequency factors for %d pairs", (long long)f->ne0 * f->ne1,
                           p->rope_dim / 2);
        const void *fd = NULL;
        GPU_TRY(device_rows(dev, f, &fd, err)); /* a constant host tensor, copied like a weight */
        gp.freq_factors = fd;
    }
    GPU_TRY(stage(g, pos, (size_t)x->ne1 * sizeof *pos, &pd, err));
    return launched(gk_rope(&g->ex, x->data, floats(x), x->ne1, pd, &gp), "rope", err);
}

static brasa_status gpu_glu(bk_device *dev, const bk_tensor *gate, const bk_tensor *up, bk_act act, bk_tensor *y, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    if (act != BK_ACT_SILU && act != BK_ACT_GELU_TANH && act != BK_ACT_SWIGLU_OAI) /* the kernel knows these three */
        return err_set(err, BRASA_ERR_UNSUPPORTED, "glu: the GPU kernels have no activation %d yet", (int)act);
    GPU_TRY(on_device(dev, gate, "glu", err));
    GPU_TRY(on_device(dev, up, "glu", err));
    return launched(gk_glu(&g->ex, gate->data, floats(gate), up->data, floats(up), y->data, floats(y), gate->ne1, gate->ne0,
                           act == BK_ACT_SILU ? 0 : act == BK_ACT_GELU_TANH ? 1 : 2),
                    "glu", err);
}

static brasa_status gpu_copy_rows(bk_device *dev, const bk_tensor *src, bk_tensor *dst, int64_t dst_row, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    const bool same = src->type == dst->type && src->row_bytes == dst->row_bytes;
    const bool to_f16 = src->type == QUANT_F32 && dst->type == QUANT_F16 && src->ne0 == dst->ne0;
    if (dst_row < 0 || dst_row + src->ne1 > dst->ne1 || !(same || to_f16))
        return err_set(err, BRASA_ERR_INTERNAL, "copy_rows: %lld rows at %lld do not fit in %lld rows", (long long)src->ne1,
                       (long long)dst_row, (long long)dst->ne1);
    GPU_TRY(on_device(dev, src, "copy_rows", err));
    GPU_TRY(on_device(dev, dst, "copy_rows", err));
    char *to = (char *)dst->data + (size_t)dst_row * dst->row_bytes;
    if (same) {
        GPU_CHECK(gr_copy_on_device(to, src->data, (size_t)src->ne1 * src->row_bytes, g->ex.stream));
        return BRASA_OK;
    }
    return launched(gk_f32_to_f16_rows(&g->ex, src->data, floats(src), (uint16_t *)to, (int64_t)(dst->row_bytes / 2), src->ne1, src->ne0),
                    "copy_rows", err);
}

static brasa_status gpu_attention(bk_device *dev, const bk_tensor *q, const bk_tensor *k, const bk_tensor *v, const int32_t *pos,
                                  const bk_attention_params *p, bk_tensor *out, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    if (p->bidirectional) /* the kernel takes each query's keys from its position */
        return err_set(err, BRASA_ERR_UNSUPPORTED, "attention: the GPU kernels have no bidirectional attention yet");
    const bool ring_ok = p->window > 0 && k->ne1 >= p->window;
    if (k->ne1 != v->ne1 || k->type != v->type || (k->type != QUANT_F32 && k->type != QUANT_F16))
        return err_set(err, BRASA_ERR_INTERNAL, "attention: key and value caches differ or are neither f32 nor f16");
    for (int64_t t = 0; t < q->ne1; t++)
        if (pos[t] < 0 || (pos[t] >= k->ne1 && !ring_ok))
            return err_set(err, BRASA_ERR_INTERNAL, "attention: position %d outside the %lld-row cache", pos[t], (long long)k->ne1);
    GPU_TRY(on_device(dev, q, "attention", err));
    GPU_TRY(on_device(dev, k, "attention", err));
    GPU_TRY(on_device(dev, v, "attention", err));
    if (p->sinks) {
        if (p->sinks->type != QUANT_F32 || p->sinks->ne0 * p->sinks->ne1 != p->n_head)
            return err_set(err, BRASA_ERR_INTERNAL, "attention: sinks must be %d f32 values", p->n_head);
        GPU_TRY(on_device(dev, p->sinks, "attention", err));
    }
    const void *pd = NULL;
    GPU_TRY(stage(g, pos, (size_t)q->ne1 * sizeof *pos, &pd, err));
    const int64_t kv_stride = (int64_t)(k->row_bytes / (k->type == QUANT_F16 ? 2 : 4));
    return launched(gk_attention(&g->ex, q->data, floats(q), k->data, v->data, k->type == QUANT_F16, kv_stride, k->ne1, pd, q->ne1,
                                 p->n_head, p->n_head_kv, p->head_dim, p->scale, p->softcap, p->window,
                                 p->sinks ? (const float *)p->sinks->data : NULL, out->data, floats(out)),
                    "attention", err);
}

static brasa_status gpu_softcap(bk_device *dev, bk_tensor *x, float cap, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    GPU_TRY(on_device(dev, x, "softcap", err));
    return launched(gk_softcap(&g->ex, x->data, floats(x), x->ne1, x->ne0, cap), "softcap", err);
}

/* ---- routed experts: ids and weights never leave the device ---- */

static brasa_status gpu_moe_route(bk_device *dev, const bk_tensor *logits, int32_t k, bool renorm, bk_tensor *ids, bk_tensor *weights,
                                  brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    GPU_TRY(on_device(dev, logits, "moe_route", err));
    GPU_TRY(on_device(dev, ids, "moe_route", err));
    GPU_TRY(on_device(dev, weights, "moe_route", err));
    if (ids->type != QUANT_I32 || ids->ne0 != k || weights->ne0 != k || ids->ne1 < logits->ne1 || weights->ne1 < logits->ne1)
        return err_set(err, BRASA_ERR_INTERNAL, "moe_route: ids (%lld x %lld) and weights (%lld x %lld) for %lld tokens, %d experts each",
                       (long long)ids->ne1, (long long)ids->ne0, (long long)weights->ne1, (long long)weights->ne0,
                       (long long)logits->ne1, (int)k);
    return launched(gk_moe_route(&g->ex, logits->data, floats(logits), logits->ne1, (int)logits->ne0, k, renorm, ids->data,
                                 (int64_t)(ids->row_bytes / sizeof(int32_t)), weights->data, floats(weights)),
                    "moe_route", err);
}

/* Groups the slots by expert once, on the device, then one product per output over the groups. */
static brasa_status gpu_matmul_id(bk_device *dev, const bk_tensor *x, const bk_tensor *ids, const bk_matmul_out *outs, int n,
                                  brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    const int64_t n_tok = ids->ne1, k = ids->ne0, n_slots = n_tok * k;
    GPU_TRY(on_device(dev, x, "matmul_id", err));
    GPU_TRY(on_device(dev, ids, "matmul_id", err));
    if (n < 1 || n > BK_MATMUL_GROUP_MAX || ids->type != QUANT_I32 || (x->ne1 != n_tok && x->ne1 != n_slots))
        return err_set(err, BRASA_ERR_INTERNAL, "matmul_id: %d outputs, %lld input rows for %lld tokens of %lld slots", n,
                       (long long)x->ne1, (long long)n_tok, (long long)k);
    const int64_t n_expert = outs[0].w->ne2;
    for (int i = 0; i < n; i++) {
        const bk_tensor *w = outs[i].w, *y = outs[i].y;
        GPU_TRY(on_device(dev, y, "matmul_id", err));
        const bk_tensor *b = outs[i].bias;
        if (w->ne2 != n_expert || w->ne0 != x->ne0 || y->ne0 != w->ne1 || y->ne1 < n_slots ||
            (b && (b->type != QUANT_F32 || b->ne0 != w->ne1 || b->ne1 != n_expert)))
            return err_set(err, BRASA_ERR_INTERNAL, "matmul_id: output %d: %lld experts of (%lld, %lld) for x of %lld and y (%lld, %lld)%s",
                           i, (long long)w->ne2, (long long)w->ne1, (long long)w->ne0, (long long)x->ne0, (long long)y->ne1,
                           (long long)y->ne0, b ? " with a bias" : "");
    }
    if (n_expert < 1 || n_expert > GK_EXPERTS_MAX)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s: no GPU kernel for %lld experts (at most %d)", gr_vendor(), (long long)n_expert,
                       GK_EXPERTS_MAX);
    GPU_TRY(groups_reserve(g, (int)n_expert, n_slots, err));
    GPU_TRY(launched(gk_moe_group(&g->ex, ids->data, (int64_t)(ids->row_bytes / sizeof(int32_t)), n_tok, (int)k, (int)n_expert, g->groups),
                     "matmul_id", err));
    for (int i = 0; i < n; i++) {
        const bk_tensor *w = outs[i].w;
        const void *wd = NULL;
        GPU_TRY(device_rows(dev, w, &wd, err));
        /* the rule's variant, never a tuned one: tuning times dense products and skips experts */
        GPU_TRY(launched(gk_matmul_id(&g->ex, GK_VARIANT_DEFAULT, w->type, wd, w->row_bytes, (size_t)w->ne1 * w->row_bytes, w->ne1,
                                      w->ne0, x->data, floats(x), x->ne1 == n_slots, g->groups, (int)n_expert, n_tok, (int)k,
                                      outs[i].y->data, floats(outs[i].y)),
                         "matmul_id", err));
        if (outs[i].bias) {
            const void *bd = NULL;
            GPU_TRY(device_rows(dev, outs[i].bias, &bd, err));
            GPU_TRY(launched(gk_moe_bias(&g->ex, outs[i].y->data, floats(outs[i].y), ids->data, (int64_t)(ids->row_bytes / sizeof(int32_t)),
                                         n_tok, (int)k, bd, (int64_t)(outs[i].bias->row_bytes / sizeof(float)), w->ne1),
                             "matmul_id", err));
        }
    }
    return BRASA_OK;
}

static brasa_status gpu_moe_sum(bk_device *dev, const bk_tensor *y, const bk_tensor *weights, bk_tensor *out, brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    GPU_TRY(on_device(dev, y, "moe_sum", err));
    GPU_TRY(on_device(dev, weights, "moe_sum", err));
    GPU_TRY(on_device(dev, out, "moe_sum", err));
    const int64_t n_tok = out->ne1, k = weights->ne0;
    if (weights->ne1 < n_tok || y->ne1 < n_tok * k || y->ne0 != out->ne0)
        return err_set(err, BRASA_ERR_INTERNAL, "moe_sum: %lld rows of %lld for %lld tokens of %lld slots", (long long)y->ne1,
                       (long long)y->ne0, (long long)n_tok, (long long)k);
    return launched(gk_moe_sum(&g->ex, y->data, floats(y), weights->data, floats(weights), n_tok, (int)k, out->ne0, out->data,
                               floats(out)),
                    "moe_sum", err);
}

static bool gpu_map_host(bk_device *dev, const void *base, size_t bytes) {
    gpu_impl *g = impl_of(dev);
    void *dev_ptr = NULL;
    if (!g->info.unified || g->host_base || !base || bytes == 0)
        return false;
    if (gr_host_register(base, bytes, &dev_ptr) != 0) {
        gr_last_error(); /* clear the failure: the weights are copied instead */
        return false;
    }
    g->host_base = base;
    g->host_bytes = bytes;
    g->host_dev = dev_ptr;
    return true;
}

static brasa_status gpu_keep(bk_device *dev, const bk_tensor *t, brasa_error *err) {
    const void *ignored = NULL;
    return device_rows(dev, t, &ignored, err);
}

static const bk_device_ops gpu_ops = {
    .name = "gpu",
    .buffer_alloc = gpu_buffer_alloc,
    .buffer_free = gpu_buffer_free,
    .buffer_base = gpu_buffer_base,
    .upload = gpu_upload,
    .download = gpu_download,
    .get_rows = gpu_get_rows,
    .matmul = gpu_matmul,
    .matmul_group = gpu_matmul_group,
    .rms_norm = gpu_rms_norm,
    .add = gpu_add,
    .scale = gpu_scale,
    .rope = gpu_rope,
    .glu = gpu_glu,
    .copy_rows = gpu_copy_rows,
    .attention = gpu_attention,
    .softcap = gpu_softcap,
    .moe_route = gpu_moe_route,
    .matmul_id = gpu_matmul_id,
    .moe_sum = gpu_moe_sum,
    .keep = gpu_keep,
    .map_host = gpu_map_host,
};

static int module_device_count(char *why, size_t why_size) { return gr_device_count(why, why_size); }

static brasa_status module_device_info(int index, bk_gpu_info *info, brasa_error *err) {
    memset(info, 0, sizeof *info);
    GPU_CHECK(gr_device_info(index, info));
    return BRASA_OK;
}

static void module_device_free(bk_device *dev) {
    if (!dev)
        return;
    gpu_impl *g = dev->impl;
    gr_sync(g->ex.stream);
    for (size_t i = 0; i < g->weights_cap; i++)
        if (g->weights[i].host)
            gr_free(g->weights[i].dev);
    free(g->weights);
    if (g->host_base)
        gr_host_unregister(g->host_base);
    gr_free(g->stage);
    gr_free(g->groups);
    gr_stream_destroy(g->ex.stream);
    free(g);
    free(dev);
}

/* Runs one small kernel: a module without code for this architecture fails here, at creation,
 * with a reason, not at the first token. */
static brasa_status probe_kernels(gpu_impl *g, brasa_error *err) {
    const float one = 1.0f;
    float back = 0.0f;
    void *p = NULL;
    GPU_CHECK(gr_malloc(&p, sizeof one));
    int rc = gr_copy_to_device(p, &one, sizeof one, g->ex.stream);
    if (rc == 0 && gk_scale(&g->ex, p, 1, 1, 1, 3.0f) == 0)
        rc = gr_last_error();
    if (rc == 0)
        rc = gr_copy_to_host(&back, p, sizeof back, g->ex.stream);
    gr_free(p);
    if (rc != 0)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s: %s (%s) cannot run this module's kernels (built for %s): %s", gr_vendor(),
                       g->info.name, g->info.arch, BRASA_GPU_TARGETS_BUILT, gr_error_string(rc));
    if (back != 3.0f)
        return err_set(err, BRASA_ERR_INTERNAL, "%s: the probe kernel computed %g instead of 3", gr_vendor(), (double)back);
    return BRASA_OK;
}

static brasa_status module_device_create(int index, bk_device **out, brasa_error *err) {
    char why[256] = "";
    const int n = gr_device_count(why, sizeof why);
    if (n < 0)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s: %s", gr_vendor(), why);
    if (index < 0 || index >= n)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: no device %d (%d present)", gr_vendor(), index, n);
    bk_device *dev = calloc(1, sizeof *dev);
    gpu_impl *g = calloc(1, sizeof *g);
    if (!dev || !g) {
        free(dev);
        free(g);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    dev->ops = &gpu_ops;
    dev->impl = g;
    brasa_status st = BRASA_OK;
    int rc = gr_set_device(index);
    if (rc == 0)
        rc = gr_device_info(index, &g->info);
    if (rc == 0)
        rc = gr_stream_create(&g->ex.stream);
    if (rc != 0)
        st = err_set(err, BRASA_ERR_IO, "%s: device %d: %s", gr_vendor(), index, gr_error_string(rc));
    g->ex.warp = g->info.warp;
    if (st == BRASA_OK && g->ex.warp != 32 && g->ex.warp != 64)
        st = err_set(err, BRASA_ERR_UNSUPPORTED, "%s: warps of %d lanes", gr_vendor(), g->ex.warp);
    if (st == BRASA_OK)
        st = probe_kernels(g, err);
    if (st != BRASA_OK) {
        module_device_free(dev);
        return st;
    }
    *out = dev;
    return BRASA_OK;
}

/* ---- tuning ---- */

static int module_variants(int kind) { return kind == GK_DECODE || kind == GK_PREFILL ? gk_variants((gk_kind)kind) : 0; }

static const char *module_variant_name(int kind, int variant) {
    return module_variants(kind) ? gk_variant_name((gk_kind)kind, variant) : "?";
}

static int module_variant_of(bk_device *dev, int kind, uint32_t type, int64_t n_out, int64_t n_in) {
    return variant_for(impl_of(dev), kind, type, n_out, n_in);
}

static brasa_status module_set_variant(bk_device *dev, int kind, uint32_t type, int64_t n_out, int64_t n_in, int variant,
                                       brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    if (!module_variants(kind) || !gk_variant_supports((gk_kind)kind, variant, type) || n_out <= 0 || n_in <= 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: no product variant %d of kind %d for type %u", gr_vendor(), variant,
                       kind, type);
    int i = choice_find(g, kind, type, n_out, n_in);
    if (i < 0) {
        if (g->n_choices == GPU_CHOICES_MAX)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: more than %d tuned shapes", gr_vendor(), GPU_CHOICES_MAX);
        i = g->n_choices++;
    }
    g->choices[i] = (gpu_choice){ kind, type, n_out, n_in, variant };
    return BRASA_OK;
}

static double seconds_now(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static brasa_status module_time_variant(bk_device *dev, const bk_tensor *w, int64_t n_tok, int variant, int reps, double *seconds,
                                        brasa_error *err) {
    gpu_impl *g = impl_of(dev);
    if (n_tok <= 0 || reps <= 0 || variant < 0 || variant >= gk_variants(gk_kind_of(n_tok)))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: cannot time variant %d with %lld tokens", gr_vendor(), variant,
                       (long long)n_tok);
    if (!gk_variant_supports(gk_kind_of(n_tok), variant, w->type))
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s: variant %d has no kernel for this weight type", gr_vendor(), variant);
    const void *wd = NULL;
    GPU_TRY(device_rows(dev, w, &wd, err));
    /* inputs of zeros: a product's time does not depend on the values */
    void *x = NULL, *y = NULL;
    const size_t x_bytes = (size_t)n_tok * (size_t)w->ne0 * sizeof(float), y_bytes = (size_t)n_tok * (size_t)w->ne1 * sizeof(float);
    if (gr_malloc(&x, x_bytes) != 0)
        return out_of_memory(x_bytes, "tuning inputs", err);
    if (gr_malloc(&y, y_bytes) != 0) {
        gr_free(x);
        return out_of_memory(y_bytes, "tuning outputs", err);
    }
    brasa_status st = BRASA_OK;
    int rc = gr_memset(x, 0, x_bytes, g->ex.stream);
    double t0 = 0;
    for (int r = -1; r < reps && rc == 0 && st == BRASA_OK; r++) { /* r = -1: the warm-up */
        if (r == 0) {
            rc = gr_sync(g->ex.stream);
            t0 = seconds_now();
        }
        if (rc == 0)
            st = launched(gk_matmul(&g->ex, variant, w->type, wd, w->row_bytes, w->ne1, w->ne0, x, w->ne0, n_tok, NULL, y, w->ne1),
                          "matmul", err);
    }
    if (rc == 0 && st == BRASA_OK)
        rc = gr_sync(g->ex.stream);
    *seconds = (seconds_now() - t0) / reps;
    gr_free(x);
    gr_free(y);
    if (rc != 0 && st == BRASA_OK)
        st = err_set(err, BRASA_ERR_IO, "%s: timing a product: %s", gr_vendor(), gr_error_string(rc));
    return st;
}

BK_GPU_MODULE_EXPORT const bk_gpu_module *brasa_gpu_module_v1(void);

BK_GPU_MODULE_EXPORT const bk_gpu_module *brasa_gpu_module_v1(void) {
    static bk_gpu_module m;
    m.abi = BK_GPU_MODULE_ABI;
    m.name = gr_vendor();
    m.targets = BRASA_GPU_TARGETS_BUILT;
    m.device_count = module_device_count;
    m.device_info = module_device_info;
    m.device_create = module_device_create;
    m.device_free = module_device_free;
    m.variants = module_variants;
    m.variant_name = module_variant_name;
    m.variant_of = module_variant_of;
    m.set_variant = module_set_variant;
    m.time_variant = module_time_variant;
    return &m;
}
