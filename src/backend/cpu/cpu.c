/* cpu.c: the CPU device. Products split their work across the thread pool by chunks of output
 * rows and attention by (token, heads) or key ranges, so every output value is computed by exactly
 * one thread in a fixed order: results are bit-identical for any thread count. Per-thread scratch
 * grows on first use and is then reused, so the per-token path does not allocate. The arithmetic
 * itself comes from the instruction-set path's kernel table (kernels.h), chosen at creation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/kept.h"
#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/pool.h"
#include "platform/platform.h"
#include "quant/quant.h"

typedef struct cpu_scratch {
    float *data;
    size_t cap; /* floats */
} cpu_scratch;

typedef struct cpu_impl {
    const cpu_kernels *k; /* the instruction-set path, chosen at creation */
    pool *pool;
    int n_threads;
    cpu_scratch *scratch; /* (n_threads) */
    bool q8;              /* decode quantizes activations to 8 bits */
    void *act;            /* the quantized activations of the current product */
    size_t act_cap;
    char name[32];        /* the path and activation type, "avx2+q8" */
    float *attn;          /* partial attention results when a token's keys are split */
    size_t attn_cap;
    cpu_kept *kept;       /* weights in the path's eight-row layout, for every product */
    struct matmul_item *items; /* a job's products when more than a group's (routed experts) */
    size_t items_cap;
    void *moe;            /* routed experts: slots ordered by expert, gathered inputs and outputs */
    size_t moe_cap;
    struct rope_table *rope; /* (ROPE_TABLES) the rotations of recent batches (see rope_rotations) */
    int rope_next;           /* the table to replace next */
} cpu_impl;

struct bk_buffer {
    void *base;
    size_t bytes;
};

/* Makes sure each thread has at least n floats of scratch. */
static brasa_status reserve_scratch(cpu_impl *c, size_t n, brasa_error *err) {
    for (int i = 0; i < c->n_threads; i++) {
        if (c->scratch[i].cap >= n)
            continue;
        float *p = realloc(c->scratch[i].data, n * sizeof *p);
        if (!p)
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory for CPU scratch (%zu floats)", n);
        c->scratch[i].data = p;
        c->scratch[i].cap = n;
    }
    return BRASA_OK;
}

static void split(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi) {
    int64_t per = (n + nth - 1) / nth;
    *lo = per * ith < n ? per * ith : n;
    *hi = *lo + per < n ? *lo + per : n;
}

/* Row-wise operations (norms, rope, residual adds) shared out by rows when a batch has this many
 * values: below, a synchronization costs more than the work. Each row is one thread's, computed as
 * alone, so the split never changes a result. */
#define ROWS_PARALLEL_MIN 16384

typedef struct rows_job {
    void (*fn)(void *ctx, int64_t r0, int64_t r1);
    void *ctx;
    int64_t n;
} rows_job;

static void rows_part(void *ctx, int ith, int nth) {
    const rows_job *j = ctx;
    int64_t lo, hi;
    split(j->n, ith, nth, &lo, &hi);
    if (lo < hi)
        j->fn(j->ctx, lo, hi);
}

/* fn over rows [0, n): shared out by rows between every thread when `parallel` (the caller's
 * measure of whether the work pays for a synchronization), else here. */
static void run_rows(pool *p, int64_t n, bool parallel, void (*fn)(void *, int64_t, int64_t), void *ctx) {
    rows_job job = { fn, ctx, n };
    if (parallel && n > 1)
        pool_run(p, rows_part, &job);
    else if (n > 0)
        fn(ctx, 0, n);
}

/* Whether n rows of width values are worth sharing out (ROWS_PARALLEL_MIN). */
static bool rows_worth_sharing(int64_t n, int64_t width) {
    return n * width >= ROWS_PARALLEL_MIN;
}

/* ---- buffers ---- */

static brasa_status cpu_buffer_alloc(bk_device *dev, size_t bytes, bk_buffer **out, brasa_error *err) {
    (void)dev;
    bk_buffer *b = malloc(sizeof *b);
    /* written through now, not left to the first touch: a context that does not fit fails (or the
     * system says so) at creation rather than deep into a conversation, and its memory shows */
    void *base = malloc(bytes ? bytes : 1);
    if (base)
        memset(base, 0, bytes);
    if (!b || !base) {
        free(b);
        free(base);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory allocating %zu bytes", bytes);
    }
    b->base = base;
    b->bytes = bytes;
    *out = b;
    return BRASA_OK;
}

static void cpu_buffer_free(bk_buffer *b) {
    if (b) {
        free(b->base);
        free(b);
    }
}

static void *cpu_buffer_base(bk_buffer *b) {
    return b->base;
}

static brasa_status cpu_upload(bk_tensor *dst, const void *src, int64_t row0, int64_t n, brasa_error *err) {
    (void)err;
    memcpy((char *)dst->data + (size_t)row0 * dst->row_bytes, src, (size_t)n * dst->row_bytes);
    return BRASA_OK;
}

static brasa_status cpu_download(const bk_tensor *src, void *dst, int64_t row0, int64_t n, brasa_error *err) {
    (void)err;
    memcpy(dst, (const char *)src->data + (size_t)row0 * src->row_bytes, (size_t)n * src->row_bytes);
    return BRASA_OK;
}

/* ---- kernels ---- */

static brasa_status cpu_get_rows(bk_device *dev, const bk_tensor *table, const int32_t *ids, int64_t n, bk_tensor *y, brasa_error *err) {
    for (int64_t t = 0; t < n; t++) {
        if (ids[t] < 0 || ids[t] >= table->ne1)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "token %d is outside the %lld-row embedding", ids[t],
                           (long long)table->ne1);
        const char *row = (const char *)table->data + (size_t)ids[t] * table->row_bytes;
        if (!quant_dequantize(table->type, row, (float *)((char *)y->data + (size_t)t * y->row_bytes), table->ne0))
            return err_set(err, BRASA_ERR_UNSUPPORTED, "no CPU kernel for %s tensors", quant_name(table->type));
    }
    return BRASA_OK;
}

/* One product of a job: its weights, its input (rows of the job's input), where its quantized
 * activations are, and its share of the job's chunks of rows. */
typedef struct matmul_item {
    bk_tensor w, x, y;
    const float *bias;    /* w's rows' biases (ne1 floats), NULL for none */
    int64_t x_row0;       /* x is rows x_row0 .. of the job's input */
    const char *act;      /* this product's 8-bit activations, NULL when it uses the floats */
    size_t act_offset;    /* where they start in cpu_impl.act */
    size_t act_row_bytes; /* bytes of one token's quantized activations, 0 for none */
    const char *kept;     /* w's rows in groups of eight (kept.h), NULL when it has none */
    int64_t chunk0;       /* the job's first chunk index belonging to this product */
} matmul_item;

/* Products of one input, run as one pool job: threads take chunks of rows from a shared counter
 * until none are left (a prompt's one ahead: matmul_part), so a thread that falls behind (memory
 * contention, an interrupt) is helped by the other instead of being waited for. Each output is
 * still computed by one thread in a fixed order, so the results do not depend on which thread
 * takes which chunk. */
typedef struct matmul_job {
    matmul_item *items;
    int n_items;
    cpu_impl *c;
    int64_t chunk_rows, n_chunks;
    int64_t x8_tokens;    /* tokens per pass over a chunk's eight-row groups */
    int64_t row_chunks;   /* chunks of rows over all items; n_chunks is this times the token blocks */
    int64_t chunk_tokens; /* tokens per chunk (INT64_MAX: all of them) */
    bool take_ahead;      /* a prompt on kept weights: each thread holds its next chunk (matmul_part) */
    volatile int32_t next; /* the next chunk to take */
} matmul_job;

/* Float activations: batches below this many tokens use the fused block kernels token by token;
 * larger ones dequantize each weight row once and reuse it for every token. Below it (and below the
 * eight-row threshold) every token's result is bit-identical to a batch of one: BK_BATCH_EXACT_MAX. */
#define MATMUL_REUSE_MIN_TOKENS (BK_BATCH_EXACT_MAX + 1)

/* 8-bit activations: four tokens per weight row from this many (bit-identical to one at a time),
 * eight rows laid out per batch from the next threshold (not bit-identical, so above
 * BK_BATCH_EXACT_MAX). Weights the device keeps laid out use that layout for any count. */
#define MATMUL_X4_MIN_TOKENS 4
#define MATMUL_X8_MIN_TOKENS (BK_BATCH_EXACT_MAX + 1)

/* Activations of this many tokens are quantized by every thread; fewer are not worth a
 * synchronization (each row is quantized alone, so the split never changes a result). */
#define QUANTIZE_PARALLEL_MIN_TOKENS 4

/* Weight rows dequantized together for the prefill product (their floats stay in L1/L2). */
#define MATMUL_ROW_TILE 2

/* Chunks per thread for the largest product of a job: enough to even out the threads, few enough
 * that taking one stays cheap next to computing it. */
#define MATMUL_CHUNKS_PER_THREAD 4

/* Rows per chunk in a batch: a chunk's weight rows stay in cache while every token of the batch
 * passes over them. A multiple of 16 (the eight-row kernels, two groups at a time). */
#define MATMUL_BATCH_CHUNK_ROWS 16

/* Tokens per pass over a chunk's eight-row groups: at most 64, and no more than whose 8-bit
 * activations fit MATMUL_X8_ACT_BYTES, so that they stay in the second-level cache (1 MB and up on
 * the CPUs with the eight-row kernels) while each group of the chunk passes over them: whole rows'
 * activations, or a slice's where the kernel takes every group of a call over one slice of the
 * rows before the next (x8_slice). Where whole rows take fewer (wide rows: 25 KB a token for
 * Qwen2.5 1.5B's 8960-wide down projection), a chunk takes MATMUL_BATCH_WIDE_ROWS rows, so that
 * more rows share each fetch of the activations. One thread, 64 rows of 8960 Q4_K by 16 tokens at
 * a time: 289 G multiply-adds/s against 211 by 64 (Zen 5), whole rows; the VNNI K-quant kernels'
 * slices (12 blocks: 40 tokens a pass for those rows) took the same product by 12 tokens at a time
 * to 40 from 268-276 to 270-290, and Q6_K's from 180-185 to 204-245. */
#define MATMUL_X8_TOKENS 64
#define MATMUL_X8_ACT_BYTES (384 * 1024)
#define MATMUL_BATCH_WIDE_ROWS 64

/* The kept groups of eight rows at row lo (a multiple of eight) of an item, and how many of them
 * lie in [lo, hi): a group never reaches past the last whole one. */
static const char *kept_groups(const cpu_kernels *k, const matmul_item *it, int64_t lo, int64_t hi, int64_t *n8) {
    const int64_t end = hi < 8 * (it->w.ne1 / 8) ? hi : 8 * (it->w.ne1 / 8);
    *n8 = end > lo ? (end - lo) / 8 : 0;
    return it->kept + (size_t)(lo / 8) * k->x8_bytes[it->w.type](it->w.ne0);
}

/* Rows [lo, hi) of one product by all of its tokens (it: the whole product or one block of its
 * tokens); next, where not NULL, is the eight-row call this thread makes after them. */
static void matmul_rows(const matmul_job *j, const matmul_item *it, int64_t lo, int64_t hi, float *rows, const x8_next *next) {
    const bk_tensor *w = &it->w, *x = &it->x, *y = &it->y;
    const cpu_kernels *k = j->c->k;
    float *yd = y->data;
    const size_t ys = y->row_bytes / sizeof(float), xs = x->row_bytes / sizeof(float);
    float (*fused)(const void *, const float *, int64_t) = k->dot_row[w->type];
    if (it->act && (it->kept || x->ne1 >= MATMUL_X4_MIN_TOKENS)) {
        /* prefill with 8-bit activations: four tokens per weight row, the row's codes unpacked once;
         * the chunk's rows and four tokens' activations stay in the first-level caches */
        void (*dot4)(const void *, const void *, size_t, int64_t, float *, size_t) = k->dot_q8_x4[w->type];
        float (*dot)(const void *, const void *, int64_t) = k->dot_q8[w->type];
        const size_t ab = it->act_row_bytes;
        /* groups of eight rows in the path's interleaved layout (kept, or laid out here for this
         * batch), then tokens in blocks whose activations stay in cache while every group of the
         * chunk passes over them; kept groups serve any number of tokens (chunks start at a
         * multiple of eight, and a group never reaches past the last whole one) */
        const char *groups = NULL;
        int64_t n8 = 0;
        const size_t gb = k->x8_bytes[w->type] ? k->x8_bytes[w->type](w->ne0) : 0;
        if (it->kept) {
            groups = kept_groups(k, it, lo, hi, &n8);
        } else if (k->x8_gemm[w->type] && x->ne1 >= MATMUL_X8_MIN_TOKENS) {
            n8 = (hi - lo) / 8;
            for (int64_t g = 0; g < n8; g++)
                k->x8_repack[w->type]((const char *)w->data + (size_t)(lo + 8 * g) * w->row_bytes, w->row_bytes, w->ne0,
                                      (char *)rows + (size_t)g * gb);
            groups = (const char *)rows;
        }
        const x8_next again = { w->type, groups, w->ne0, n8 }; /* the same groups, the next tokens */
        for (int64_t t0 = 0; n8 && t0 < x->ne1; t0 += j->x8_tokens) {
            const int64_t nt = x->ne1 - t0 < j->x8_tokens ? x->ne1 - t0 : j->x8_tokens;
            k->x8_gemm[w->type](groups, w->ne0, n8, it->act + (size_t)t0 * ab, ab, nt, yd + (size_t)t0 * ys + (size_t)lo, ys,
                                t0 + nt < x->ne1 ? &again : next);
        }
        const int64_t first = lo + 8 * n8;
        /* rows left over: four tokens at a time, then one (the same bits either way) */
        int64_t t = 0;
        for (; t + 4 <= x->ne1; t += 4)
            for (int64_t o = first; o < hi; o++)
                dot4((const char *)w->data + (size_t)o * w->row_bytes, it->act + (size_t)t * ab, ab, w->ne0,
                     yd + (size_t)t * ys + (size_t)o, ys);
        for (; t < x->ne1; t++)
            for (int64_t o = first; o < hi; o++)
                yd[(size_t)t * ys + (size_t)o] = dot((const char *)w->data + (size_t)o * w->row_bytes, it->act + (size_t)t * ab, w->ne0);
    } else if (it->act) {
        /* decode with 8-bit activations: integer products inside each block */
        float (*dot)(const void *, const void *, int64_t) = k->dot_q8[w->type];
        for (int64_t o = lo; o < hi; o++) {
            const char *wrow = (const char *)w->data + (size_t)o * w->row_bytes;
            for (int64_t t = 0; t < x->ne1; t++)
                yd[(size_t)t * ys + (size_t)o] = dot(wrow, it->act + (size_t)t * it->act_row_bytes, w->ne0);
        }
    } else if (x->ne1 < MATMUL_REUSE_MIN_TOKENS && fused) {
        /* decode: straight from the blocks, each weight read once */
        for (int64_t o = lo; o < hi; o++) {
            const char *wrow = (const char *)w->data + (size_t)o * w->row_bytes;
            for (int64_t t = 0; t < x->ne1; t++)
                yd[(size_t)t * ys + (size_t)o] = fused(wrow, (const float *)x->data + (size_t)t * xs, w->ne0);
        }
    } else {
        /* prefill: dequantize a few rows once, multiply them with every token */
        for (int64_t o = lo; o < hi; o += MATMUL_ROW_TILE) {
            const int64_t n_rows = hi - o < MATMUL_ROW_TILE ? hi - o : MATMUL_ROW_TILE;
            for (int64_t r = 0; r < n_rows; r++)
                quant_dequantize(w->type, (const char *)w->data + (size_t)(o + r) * w->row_bytes, rows + r * w->ne0, w->ne0);
            k->gemm_f32(rows, (size_t)w->ne0, n_rows, x->data, xs, x->ne1, w->ne0, yd + o, ys);
        }
    }
    if (it->bias) {
        const float *bias = it->bias;
        for (int64_t t = 0; t < x->ne1; t++)
            for (int64_t o = lo; o < hi; o++)
                yd[(size_t)t * ys + (size_t)o] += bias[o];
    }
}

/* Job chunk `taken`: token block by token block, every row chunk of one before the next. Its
 * product (the last whose first chunk is at or before its row chunk), first token and rows. */
static const matmul_item *chunk_span(const matmul_job *j, int64_t taken, int64_t *t0, int64_t *lo, int64_t *hi) {
    const int64_t chunk = taken % j->row_chunks;
    int a = 0, b = j->n_items - 1;
    while (a < b) {
        const int mid = (a + b + 1) / 2;
        if (j->items[mid].chunk0 <= chunk)
            a = mid;
        else
            b = mid - 1;
    }
    const matmul_item *it = &j->items[a];
    *t0 = taken / j->row_chunks * j->chunk_tokens;
    *lo = (chunk - it->chunk0) * j->chunk_rows;
    *hi = *lo + j->chunk_rows < it->w.ne1 ? *lo + j->chunk_rows : it->w.ne1;
    return it;
}

/* The eight-row call job chunk `taken` starts with, where it has one on kept weights. */
static bool chunk_first_call(const matmul_job *j, int64_t taken, x8_next *out) {
    if (taken >= j->n_chunks)
        return false;
    int64_t t0, lo, hi, n8;
    const matmul_item *it = chunk_span(j, taken, &t0, &lo, &hi);
    if (!it->kept || t0 >= it->x.ne1)
        return false;
    const char *groups = kept_groups(j->c->k, it, lo, hi, &n8);
    *out = (x8_next){ it->w.type, groups, it->w.ne0, n8 };
    return n8 > 0;
}

static void matmul_part(void *ctx, int ith, int nth) {
    matmul_job *j = ctx;
    float *rows = j->c->scratch[ith].data;
    /* a prompt's chunks taken one ahead, so that the next one's weights are asked for while this one
     * computes (x8_next), except near the end, where a chunk held ahead could wait while the other
     * threads have none left */
    int64_t after = (int64_t)plat_atomic_add(&j->next, 1) - 1;
    for (;;) {
        const int64_t taken = after;
        if (taken >= j->n_chunks)
            return;
        const bool ahead = j->take_ahead && (int64_t)plat_atomic_load(&j->next) + nth < j->n_chunks;
        after = ahead ? (int64_t)plat_atomic_add(&j->next, 1) - 1 : -1;
        x8_next next_call;
        const x8_next *next = ahead && chunk_first_call(j, after, &next_call) ? &next_call : NULL;
        int64_t t0, lo, hi;
        const matmul_item *it = chunk_span(j, taken, &t0, &lo, &hi);
        if (t0 >= it->x.ne1) {
            /* an item with fewer tokens (routed experts) */
        } else if (t0 == 0 && it->x.ne1 <= j->chunk_tokens) {
            matmul_rows(j, it, lo, hi, rows, next);
        } else { /* the item's view of this block of tokens */
            const int64_t nt = it->x.ne1 - t0 < j->chunk_tokens ? it->x.ne1 - t0 : j->chunk_tokens;
            matmul_item part = *it;
            part.x = bk_rows(&it->x, t0, nt);
            part.y = bk_rows(&it->y, t0, nt);
            if (it->act)
                part.act = it->act + (size_t)t0 * it->act_row_bytes;
            matmul_rows(j, &part, lo, hi, rows, next);
        }
        if (!ahead)
            after = (int64_t)plat_atomic_add(&j->next, 1) - 1;
    }
}

typedef struct quantize_job {
    const cpu_kernels *k;
    const bk_tensor *x;
    char *out;
    size_t row_bytes;
    bool k_quant;
} quantize_job;

static void quantize_rows(void *ctx, int64_t lo, int64_t hi) {
    const quantize_job *j = ctx;
    for (int64_t t = lo; t < hi; t++) {
        const float *xt = (const float *)((const char *)j->x->data + (size_t)t * j->x->row_bytes);
        void *dst = j->out + (size_t)t * j->row_bytes;
        if (j->k_quant)
            j->k->quantize_q8_256(xt, dst, j->x->ne0);
        else
            j->k->quantize_q8_32(xt, dst, j->x->ne0);
    }
}

/* x quantized to 8 bits in one block layout (32 or 256 elements), at offset bytes into c->act;
 * batches are split between the threads, a single token is not worth a synchronization. */
static brasa_status quantize_activations(cpu_impl *c, const bk_tensor *x, bool k_quant, size_t offset, size_t row_bytes,
                                         brasa_error *err) {
    const size_t need = offset + row_bytes * (size_t)x->ne1;
    if (need > c->act_cap) {
        void *p = realloc(c->act, need);
        if (!p)
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory for quantized activations");
        c->act = p;
        c->act_cap = need;
    }
    quantize_job job = { c->k, x, (char *)c->act + offset, row_bytes, k_quant };
    run_rows(c->pool, x->ne1, x->ne1 >= QUANTIZE_PARALLEL_MIN_TOKENS, quantize_rows, &job);
    return BRASA_OK;
}

/* Tokens whose 8-bit activations of act_bytes each fit MATMUL_X8_ACT_BYTES: 4 to MATMUL_X8_TOKENS. */
static int64_t x8_tokens_fitting(size_t act_bytes) {
    if (act_bytes == 0)
        return MATMUL_X8_TOKENS;
    const int64_t n = (int64_t)(MATMUL_X8_ACT_BYTES / act_bytes) / 4 * 4;
    return n < 4 ? 4 : n > MATMUL_X8_TOKENS ? MATMUL_X8_TOKENS : n;
}

/* Runs products as one pool job: item i multiplies its weights by its rows of x (items[i].x,
 * starting at x_row0), each filled in with w, x, y and bias. Quantizes x once per block layout. */
static brasa_status run_products(cpu_impl *c, const bk_tensor *x, matmul_item *items, int n, brasa_error *err) {
    matmul_job job = { .items = items, .n_items = n, .c = c };
    int64_t max_in = 0, max_rows = 0, max_tokens = 0;
    for (int i = 0; i < n; i++) {
        const bk_tensor *w = &items[i].w, *xi = &items[i].x, *y = &items[i].y;
        const quant_traits *q = quant_get(w->type);
        if (!q || !q->dequantize)
            return err_set(err, BRASA_ERR_UNSUPPORTED, "no CPU kernel for %s weights", quant_name(w->type));
        if (xi->ne0 != w->ne0 || y->ne0 != w->ne1 || y->ne1 != xi->ne1)
            return err_set(err, BRASA_ERR_INTERNAL, "matmul shapes: w %lldx%lld, x %lldx%lld, y %lldx%lld",
                           (long long)w->ne1, (long long)w->ne0, (long long)xi->ne1, (long long)xi->ne0,
                           (long long)y->ne1, (long long)y->ne0);
        items[i].act = NULL;
        items[i].act_row_bytes = 0;
        items[i].kept = NULL;
        max_in = w->ne0 > max_in ? w->ne0 : max_in;
        max_rows = w->ne1 > max_rows ? w->ne1 : max_rows;
        max_tokens = xi->ne1 > max_tokens ? xi->ne1 : max_tokens;
    }
    /* tokens per pass over a chunk's groups (the products' activations are 8-bit blocks of 256
     * values or fewer, about 2.8 bytes a value at most): those whose whole rows fit, or where the
     * kernel holds a slice of them at a time (x8_slice), whose slices fit */
    size_t act_row_max = 0, act_held_max = 0;
    for (int i = 0; i < n; i++) {
        const int64_t in = items[i].w.ne0, slice = c->k->x8_slice[items[i].w.type];
        const size_t row = (size_t)in / QK_K * sizeof(act_q8_256) + sizeof(act_q8_256);
        const size_t held = slice && slice < in ? (size_t)slice / QK_K * sizeof(act_q8_256) + sizeof(act_q8_256) : row;
        act_row_max = row > act_row_max ? row : act_row_max;
        act_held_max = held > act_held_max ? held : act_held_max;
    }
    job.x8_tokens = x8_tokens_fitting(act_held_max);
    /* rows too wide for a full pass of tokens: chunks of more rows, which share each slice's
     * activations while they are in cache */
    const int64_t batch_rows = x8_tokens_fitting(act_row_max) < MATMUL_X8_TOKENS ? MATMUL_BATCH_WIDE_ROWS : MATMUL_BATCH_CHUNK_ROWS;
    /* scratch: dequantized rows (float prefill) or a chunk's rows in an eight-row layout */
    size_t need = MATMUL_ROW_TILE * (size_t)max_in;
    for (int i = 0; i < n; i++)
        if (c->k->x8_bytes[items[i].w.type]) {
            const size_t x8 = (size_t)(batch_rows / 8) * c->k->x8_bytes[items[i].w.type](items[i].w.ne0) / sizeof(float) + 1;
            need = x8 > need ? x8 : need;
        }
    brasa_status st = reserve_scratch(c, need, err);
    if (st != BRASA_OK)
        return st;
    /* 8-bit activations: at most two layouts (32- and 256-element blocks), each quantized once */
    const bool batch = max_tokens >= MATMUL_X4_MIN_TOKENS;
    int n_kept = 0;
    if (c->q8) {
        size_t offset[2] = { 0, 0 }, row_bytes[2] = { 0, 0 }, used = 0;
        for (int i = 0; i < n; i++) {
            const bk_tensor *w = &items[i].w;
            const quant_traits *q = quant_get(w->type);
            const bool item_batch = items[i].x.ne1 >= MATMUL_X4_MIN_TOKENS;
            if (!c->k->dot_q8[w->type] || (item_batch && !c->k->dot_q8_x4[w->type]))
                continue; /* the float kernels */
            const int kq = q->block_size == QK_K;
            if (!row_bytes[kq]) {
                row_bytes[kq] = (size_t)(x->ne0 / q->block_size) * (kq ? sizeof(act_q8_256) : sizeof(act_q8_32));
                offset[kq] = used;
                st = quantize_activations(c, x, kq, offset[kq], row_bytes[kq], err);
                if (st != BRASA_OK)
                    return st;
                used += row_bytes[kq] * (size_t)x->ne1;
            }
            items[i].act_offset = offset[kq] + (size_t)items[i].x_row0 * row_bytes[kq];
            items[i].act_row_bytes = row_bytes[kq];
            st = cpu_kept_find(c->kept, c->k, c->pool, w, &items[i].kept, err);
            if (st != BRASA_OK)
                return st;
            n_kept += items[i].kept != NULL;
        }
        for (int i = 0; i < n; i++) /* c->act may have moved while growing: pointers only now */
            if (items[i].act_row_bytes)
                items[i].act = (const char *)c->act + items[i].act_offset;
    }
    const int64_t per = (int64_t)c->n_threads * MATMUL_CHUNKS_PER_THREAD;
    int64_t rows = (max_rows + per - 1) / per;
    /* a batch's rows go eight at a time in fixed chunks, whatever the thread count; kept layouts
     * give the same bits for any chunking, and a batch of one pass of tokens (a few sequences
     * decoding together) does not need small chunks to reuse rows from cache, so it takes few
     * large ones, as a single token does: thousands of tiny chunks a step cost more to hand out
     * than to compute */
    if (batch && !(n_kept == n && max_tokens <= job.x8_tokens))
        rows = batch_rows;
    const int64_t align = n_kept ? 8 : MATMUL_ROW_TILE; /* a kept layout's groups are not split */
    job.chunk_rows = (rows + align - 1) / align * align;
    if (job.chunk_rows < MATMUL_ROW_TILE)
        job.chunk_rows = MATMUL_ROW_TILE;
    for (int i = 0; i < n; i++) {
        items[i].chunk0 = job.row_chunks;
        job.row_chunks += (items[i].w.ne1 + job.chunk_rows - 1) / job.chunk_rows;
    }
    /* a prompt's tokens in blocks too, where every product has a kept layout (which gives each
     * token the same bits however they are split): the threads go over every row chunk with one
     * block's activations, which stay in their second-level caches, instead of streaming every
     * token's from the third level once per chunk of 16 rows (one thread, 16 rows of 1536 Q4_K:
     * 345 G multiply-adds/s by 64 tokens, 257 by 512) */
    job.chunk_tokens = batch && n_kept == n && max_tokens > MATMUL_X8_TOKENS ? MATMUL_X8_TOKENS : INT64_MAX;
    job.take_ahead = n_kept > 0 && max_tokens >= MATMUL_X8_MIN_TOKENS;
    job.n_chunks = job.row_chunks * (job.chunk_tokens == INT64_MAX ? 1 : (max_tokens + job.chunk_tokens - 1) / job.chunk_tokens);
    if (job.n_chunks > INT32_MAX / 2)
        return err_set(err, BRASA_ERR_INTERNAL, "matmul of %lld chunks", (long long)job.n_chunks);
    pool_run(c->pool, matmul_part, &job);
    return BRASA_OK;
}

static brasa_status cpu_matmul_group(bk_device *dev, const bk_tensor *x, const bk_matmul_out *outs, int n, brasa_error *err) {
    if (n < 1 || n > BK_MATMUL_GROUP_MAX)
        return err_set(err, BRASA_ERR_INTERNAL, "matmul group of %d products", n);
    matmul_item items[BK_MATMUL_GROUP_MAX];
    for (int i = 0; i < n; i++)
        items[i] = (matmul_item){ .w = *outs[i].w, .x = *x, .y = *outs[i].y, .bias = outs[i].bias ? outs[i].bias->data : NULL };
    return run_products(dev->impl, x, items, n, err);
}

static brasa_status cpu_matmul(bk_device *dev, const bk_tensor *w, const bk_tensor *x, const bk_tensor *bias, bk_tensor *y,
                               brasa_error *err) {
    const bk_matmul_out one = { w, bias, y };
    return cpu_matmul_group(dev, x, &one, 1, err);
}

/* ---- routed experts ---- */

typedef struct moe_route_job {
    const bk_tensor *logits;
    int32_t k;
    bool renorm;
    bk_tensor *ids, *weights;
} moe_route_job;

static void moe_route_part(void *ctx, int ith, int nth) {
    const moe_route_job *j = ctx;
    const int64_t n_expert = j->logits->ne0;
    const int32_t k = j->k;
    int64_t lo, hi;
    split(j->logits->ne1, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        const float *l = (const float *)((const char *)j->logits->data + (size_t)t * j->logits->row_bytes);
        int32_t *id = (int32_t *)((char *)j->ids->data + (size_t)t * j->ids->row_bytes);
        float *w = (float *)((char *)j->weights->data + (size_t)t * j->weights->row_bytes);
        /* the k largest in decreasing order, a tie to the lower index: selection, k is small */
        for (int32_t s = 0; s < k; s++) {
            int32_t best = -1;
            for (int32_t e = 0; e < n_expert; e++) {
                bool taken = false;
                for (int32_t i = 0; i < s && !taken; i++)
                    taken = id[i] == e;
                if (!taken && (best < 0 || l[e] > l[best]))
                    best = e;
            }
            id[s] = best;
        }
        /* softmax over all experts (or, renormalized, over the chosen: the same ratios) */
        const double top = l[id[0]];
        double sum = 0.0, chosen = 0.0;
        for (int64_t e = 0; e < n_expert; e++)
            sum += exp((double)l[e] - top);
        for (int32_t s = 0; s < k; s++)
            chosen += exp((double)l[id[s]] - top);
        for (int32_t s = 0; s < k; s++)
            w[s] = (float)(exp((double)l[id[s]] - top) / (j->renorm ? chosen : sum));
    }
}

/* Tokens routed by every thread from this many; fewer (a decode step) by one. */
#define MOE_ROUTE_PARALLEL_TOKENS 16

static brasa_status cpu_moe_route(bk_device *dev, const bk_tensor *logits, int32_t k, bool renorm, bk_tensor *ids,
                                  bk_tensor *weights, brasa_error *err) {
    cpu_impl *c = dev->impl;
    const int64_t n_expert = logits->ne0;
    if (k < 1 || k > n_expert || ids->type != QUANT_I32 || ids->ne0 != k || weights->ne0 != k || ids->ne1 != logits->ne1 ||
        weights->ne1 != logits->ne1)
        return err_set(err, BRASA_ERR_INTERNAL, "moe_route: %d of %lld experts into ids %lldx%lld", k, (long long)n_expert,
                       (long long)ids->ne1, (long long)ids->ne0);
    moe_route_job job = { logits, k, renorm, ids, weights };
    if (logits->ne1 >= MOE_ROUTE_PARALLEL_TOKENS)
        pool_run(c->pool, moe_route_part, &job);
    else
        moe_route_part(&job, 0, 1);
    return BRASA_OK;
}

/* Grows the routed experts' scratch to at least bytes. */
static brasa_status reserve_moe(cpu_impl *c, size_t bytes, brasa_error *err) {
    if (bytes <= c->moe_cap)
        return BRASA_OK;
    void *p = realloc(c->moe, bytes);
    if (!p)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory for routed experts (%zu bytes)", bytes);
    c->moe = p;
    c->moe_cap = bytes;
    return BRASA_OK;
}

static size_t align64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

/* Rows moved between slot order and expert order, split between the threads: gathered (row r of
 * dst from row order[r] / div of src) or scattered (row order[r] of dst from row r of src). */
typedef struct moe_move {
    const char *src;
    char *dst;
    size_t src_stride, dst_stride, bytes;
    const int32_t *order;
    int64_t n, div;
    bool scatter;
} moe_move;

static void moe_move_range(void *ctx, int64_t lo, int64_t hi) {
    const moe_move *m = ctx;
    for (int64_t r = lo; r < hi; r++) {
        const int64_t to = m->scatter ? m->order[r] : r, from = m->scatter ? r : m->order[r] / m->div;
        memcpy(m->dst + (size_t)to * m->dst_stride, m->src + (size_t)from * m->src_stride, m->bytes);
    }
}

/* Rows this many bytes in all are moved (or summed) by every thread; fewer (a decode step) by one. */
#define MOE_MOVE_PARALLEL_BYTES (256u << 10)

static void moe_move_rows(cpu_impl *c, moe_move *m) {
    run_rows(c->pool, m->n, (uint64_t)m->n * m->bytes >= MOE_MOVE_PARALLEL_BYTES, moe_move_range, m);
}

/* The slots that chose each expert are gathered into consecutive rows (in slot order, so a slot's
 * place among them never changes its sums: each product is row by row), every chosen expert's
 * products run as one pool job, and the results go back to their slots. */
static brasa_status cpu_matmul_id(bk_device *dev, const bk_tensor *x, const bk_tensor *ids, const bk_matmul_out *outs, int n,
                                  brasa_error *err) {
    cpu_impl *c = dev->impl;
    const int64_t k = ids->ne0, n_tok = ids->ne1, n_slots = k * n_tok;
    if (n < 1 || n > BK_MATMUL_GROUP_MAX || ids->type != QUANT_I32 || (x->ne1 != n_tok && x->ne1 != n_slots))
        return err_set(err, BRASA_ERR_INTERNAL, "matmul_id: %d products, ids %lldx%lld, x of %lld rows", n, (long long)n_tok,
                       (long long)k, (long long)x->ne1);
    const int64_t n_expert = outs[0].w->ne2;
    for (int i = 0; i < n; i++) {
        const bk_tensor *b = outs[i].bias;
        if (outs[i].w->ne2 != n_expert || outs[i].y->ne1 != n_slots || outs[i].w->ne0 != x->ne0 ||
            (b && (b->type != QUANT_F32 || b->ne0 != outs[i].w->ne1 || b->ne1 != n_expert)))
            return err_set(err, BRASA_ERR_INTERNAL, "matmul_id: product %d's shapes disagree", i);
    }
    /* scratch: the slot order by expert, each expert's first slot, the gathered inputs and outputs */
    const size_t order_at = 0, first_at = align64((size_t)n_slots * sizeof(int32_t));
    const size_t next_at = first_at + align64((size_t)(n_expert + 1) * sizeof(int32_t));
    const size_t x_at = next_at + align64((size_t)n_expert * sizeof(int32_t));
    size_t y_at[BK_MATMUL_GROUP_MAX], end = x_at + align64((size_t)n_slots * (size_t)x->ne0 * sizeof(float));
    for (int i = 0; i < n; i++) {
        y_at[i] = end;
        end += align64((size_t)n_slots * (size_t)outs[i].y->ne0 * sizeof(float));
    }
    brasa_status st = reserve_moe(c, end, err);
    if (st != BRASA_OK)
        return st;
    char *base = c->moe;
    int32_t *order = (int32_t *)(base + order_at), *first = (int32_t *)(base + first_at);
    memset(first, 0, (size_t)(n_expert + 1) * sizeof *first);
    for (int64_t s = 0; s < n_slots; s++) {
        const int32_t e = ((const int32_t *)((const char *)ids->data + (size_t)(s / k) * ids->row_bytes))[s % k];
        if (e < 0 || e >= n_expert)
            return err_set(err, BRASA_ERR_INTERNAL, "matmul_id: expert %d of %lld", e, (long long)n_expert);
        first[e + 1]++;
    }
    int used = 0;
    for (int64_t e = 0; e < n_expert; e++) {
        used += first[e + 1] > 0;
        first[e + 1] += first[e];
    }
    /* counting sort, stable: slots in order within each expert */
    int32_t *next = (int32_t *)(base + next_at);
    memcpy(next, first, (size_t)n_expert * sizeof *next);
    for (int64_t s = 0; s < n_slots; s++)
        order[next[((const int32_t *)((const char *)ids->data + (size_t)(s / k) * ids->row_bytes))[s % k]]++] = (int32_t)s;
    float *xg = (float *)(base + x_at);
    moe_move gather = { .src = x->data, .dst = (char *)xg, .src_stride = x->row_bytes,
                        .dst_stride = (size_t)x->ne0 * sizeof(float), .bytes = (size_t)x->ne0 * sizeof(float),
                        .order = order, .n = n_slots, .div = x->ne1 == n_tok ? k : 1 /* slots sharing an input row */ };
    moe_move_rows(c, &gather);
    const size_t n_items = (size_t)used * (size_t)n;
    if (n_items > c->items_cap) {
        matmul_item *p = realloc(c->items, n_items * sizeof *p);
        if (!p)
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory for routed experts");
        c->items = p;
        c->items_cap = n_items;
    }
    const bk_tensor xg_all = bk_view(dev, QUANT_F32, x->ne0, n_slots, xg);
    size_t m = 0;
    for (int64_t e = 0; e < n_expert; e++) {
        const int64_t r0 = first[e], rows = first[e + 1] - first[e];
        if (rows == 0)
            continue;
        for (int i = 0; i < n; i++) {
            const bk_tensor yg = bk_view(dev, QUANT_F32, outs[i].y->ne0, n_slots, base + y_at[i]);
            const bk_tensor *b = outs[i].bias; /* expert e's biases: row e */
            c->items[m++] = (matmul_item){ .w = bk_expert(outs[i].w, e), .x = bk_rows(&xg_all, r0, rows),
                                           .y = bk_rows(&yg, r0, rows), .x_row0 = r0,
                                           .bias = b ? (const float *)((const char *)b->data + (size_t)e * b->row_bytes) : NULL };
        }
    }
    if ((st = run_products(c, &xg_all, c->items, (int)m, err)) != BRASA_OK)
        return st;
    for (int i = 0; i < n; i++) {
        const size_t bytes = (size_t)outs[i].y->ne0 * sizeof(float);
        moe_move scatter = { .src = base + y_at[i], .dst = outs[i].y->data, .src_stride = bytes,
                             .dst_stride = outs[i].y->row_bytes, .bytes = bytes, .order = order, .n = n_slots,
                             .div = 1, .scatter = true };
        moe_move_rows(c, &scatter);
    }
    return BRASA_OK;
}

typedef struct moe_sum_job {
    const bk_tensor *y, *weights;
    bk_tensor *out;
} moe_sum_job;

static void moe_sum_rows(void *ctx, int64_t lo, int64_t hi) {
    const moe_sum_job *j = ctx;
    const int64_t k = j->weights->ne0;
    for (int64_t t = lo; t < hi; t++) {
        const float *w = (const float *)((const char *)j->weights->data + (size_t)t * j->weights->row_bytes);
        float *o = (float *)((char *)j->out->data + (size_t)t * j->out->row_bytes);
        for (int64_t s = 0; s < k; s++) {
            const float *yr = (const float *)((const char *)j->y->data + (size_t)(t * k + s) * j->y->row_bytes);
            for (int64_t i = 0; i < j->out->ne0; i++)
                o[i] = s == 0 ? w[0] * yr[i] : o[i] + w[s] * yr[i];
        }
    }
}

static brasa_status cpu_moe_sum(bk_device *dev, const bk_tensor *y, const bk_tensor *weights, bk_tensor *out, brasa_error *err) {
    cpu_impl *c = dev->impl;
    const int64_t k = weights->ne0;
    if (y->ne1 != weights->ne1 * k || out->ne1 != weights->ne1 || out->ne0 != y->ne0)
        return err_set(err, BRASA_ERR_INTERNAL, "moe_sum: %lld slots for %lld tokens of %lld", (long long)y->ne1,
                       (long long)weights->ne1, (long long)k);
    moe_sum_job job = { y, weights, out };
    /* a token's sum is one thread's, in slot order: the same bits split or not */
    run_rows(c->pool, out->ne1, (uint64_t)y->ne1 * (uint64_t)y->ne0 * sizeof(float) >= MOE_MOVE_PARALLEL_BYTES, moe_sum_rows,
             &job);
    return BRASA_OK;
}

typedef struct norm_job {
    const bk_tensor *x, *y;
    const float *w;
    int64_t group;
    float eps;
} norm_job;

#define RMS_NORM_SUMS 8

static void rms_norm_rows(void *ctx, int64_t t0, int64_t t1) {
    const norm_job *j = ctx;
    for (int64_t t = t0; t < t1; t++) {
        const float *xr = (const float *)((const char *)j->x->data + (size_t)t * j->x->row_bytes);
        float *yr = (float *)((char *)j->y->data + (size_t)t * j->y->row_bytes);
        for (int64_t g = 0; g < j->x->ne0; g += j->group) {
            /* eight sums, so that the additions do not wait on one another (one chain of them was
             * 3% of Gemma 3 270M's prompt), added pairwise */
            double part[RMS_NORM_SUMS] = { 0.0 };
            int64_t i = 0;
            for (; i + RMS_NORM_SUMS <= j->group; i += RMS_NORM_SUMS)
                for (int l = 0; l < RMS_NORM_SUMS; l++)
                    part[l] += (double)xr[g + i + l] * (double)xr[g + i + l];
            for (; i < j->group; i++)
                part[0] += (double)xr[g + i] * (double)xr[g + i];
            for (int w = RMS_NORM_SUMS / 2; w > 0; w /= 2)
                for (int l = 0; l < w; l++)
                    part[l] += part[l + w];
            const double ss = part[0];
            const float scale = (float)(1.0 / sqrt(ss / (double)j->group + (double)j->eps));
            for (i = 0; i < j->group; i++)
                yr[g + i] = j->w ? xr[g + i] * scale * j->w[i] : xr[g + i] * scale;
        }
    }
}

static brasa_status cpu_rms_norm(bk_device *dev, const bk_tensor *x, const bk_tensor *w, int64_t group, float eps, bk_tensor *y,
                                 brasa_error *err) {
    if (group <= 0 || x->ne0 % group != 0 || (w && w->ne0 != group))
        return err_set(err, BRASA_ERR_INTERNAL, "rms_norm: group %lld does not divide rows of %lld", (long long)group,
                       (long long)x->ne0);
    const cpu_impl *c = dev->impl;
    norm_job job = { x, y, w ? (const float *)w->data : NULL, group, eps };
    run_rows(c->pool, x->ne1, rows_worth_sharing(x->ne1, x->ne0), rms_norm_rows, &job);
    return BRASA_OK;
}

/* In double, as rms_norm: a row's mean and variance are sums over hundreds of values of both
 * signs, where float loses the digits BERT's LayerNorm (epsilon 1e-12) keeps. */
static brasa_status cpu_layer_norm(bk_device *dev, const bk_tensor *x, const bk_tensor *w, const bk_tensor *b, float eps,
                                   bk_tensor *y, brasa_error *err) {
    (void)dev;
    if (w->ne0 != x->ne0 || b->ne0 != x->ne0 || y->ne0 != x->ne0 || y->ne1 != x->ne1)
        return err_set(err, BRASA_ERR_INTERNAL, "layer_norm: rows of %lld with weights of %lld and biases of %lld",
                       (long long)x->ne0, (long long)w->ne0, (long long)b->ne0);
    const float *wf = w->data, *bf = b->data;
    const int64_t n = x->ne0;
    for (int64_t t = 0; t < x->ne1; t++) {
        const float *xr = (const float *)((const char *)x->data + (size_t)t * x->row_bytes);
        float *yr = (float *)((char *)y->data + (size_t)t * y->row_bytes);
        double sum = 0.0;
        for (int64_t i = 0; i < n; i++)
            sum += (double)xr[i];
        const double mean = sum / (double)n;
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++)
            ss += ((double)xr[i] - mean) * ((double)xr[i] - mean);
        const double inv = 1.0 / sqrt(ss / (double)n + (double)eps);
        for (int64_t i = 0; i < n; i++)
            yr[i] = (float)(((double)xr[i] - mean) * inv) * wf[i] + bf[i];
    }
    return BRASA_OK;
}

typedef struct add_job {
    const bk_tensor *a, *b, *y;
    float s; /* scale: y = a * s when b is NULL */
} add_job;

static void add_rows(void *ctx, int64_t t0, int64_t t1) {
    const add_job *j = ctx;
    for (int64_t t = t0; t < t1; t++) {
        const float *ar = (const float *)((const char *)j->a->data + (size_t)t * j->a->row_bytes);
        float *yr = (float *)((char *)j->y->data + (size_t)t * j->y->row_bytes);
        if (j->b) {
            const float *br = (const float *)((const char *)j->b->data + (size_t)t * j->b->row_bytes);
            for (int64_t i = 0; i < j->a->ne0; i++)
                yr[i] = ar[i] + br[i];
        } else {
            for (int64_t i = 0; i < j->a->ne0; i++)
                yr[i] = ar[i] * j->s;
        }
    }
}

static brasa_status cpu_add(bk_device *dev, const bk_tensor *a, const bk_tensor *b, bk_tensor *y, brasa_error *err) {
    (void)err;
    const cpu_impl *c = dev->impl;
    add_job job = { a, b, y, 1.0f };
    run_rows(c->pool, a->ne1, rows_worth_sharing(a->ne1, a->ne0), add_rows, &job);
    return BRASA_OK;
}

static brasa_status cpu_scale(bk_device *dev, bk_tensor *x, float s, brasa_error *err) {
    (void)err;
    const cpu_impl *c = dev->impl;
    add_job job = { x, NULL, x, s };
    run_rows(c->pool, x->ne1, rows_worth_sharing(x->ne1, x->ne0), add_rows, &job);
    return BRASA_OK;
}

/* Pair i's angle at position pos and the rotation's scale (bk_rope_params), in double: at long
 * positions float loses the low bits of pos * frequency. */
static void rope_angle(const bk_rope_params *p, const float *factors, int32_t pos, int i, double *theta, double *mscale) {
    double extrap = (double)pos * pow((double)p->base, -2.0 * i / p->rope_dim);
    if (factors)
        extrap /= (double)factors[i];
    const double interp = (double)p->freq_scale * extrap;
    *theta = interp;
    *mscale = (double)p->mscale;
    if (p->ext_factor != 0.0f) {
        const double span = (double)p->corr_high - (double)p->corr_low;
        double y = ((double)i - (double)p->corr_low) / (span > 0.001 ? span : 0.001);
        y = y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
        const double mix = (1.0 - y) * (double)p->ext_factor;
        *theta = interp * (1.0 - mix) + extrap * mix;
    }
}

/* The rotations (cos, sin per pair and token) of a batch's positions under one set of parameters,
 * kept for the next calls: every layer rotates the same positions, queries and keys alike, with
 * one or two sets (Gemma's local and global bases), so a prompt computes its angles once or twice
 * instead of twice per layer. */
#define ROPE_TABLES 2

typedef struct rope_table {
    bk_rope_params p;
    const void *factors; /* the divisors' data, NULL for none (p.freq_factors is a view's address) */
    int32_t *pos;        /* (n) */
    float *cs;           /* (n, rope_dim / 2, 2) */
    int64_t n;           /* tokens; -1 while being filled */
    size_t pos_cap, cs_cap; /* what pos and cs have room for */
} rope_table;

static bool rope_same(const rope_table *t, const bk_rope_params *p, const int32_t *pos, int64_t n) {
    const void *factors = p->freq_factors ? p->freq_factors->data : NULL;
    return t->n == n && t->factors == factors && t->p.rope_dim == p->rope_dim && t->p.base == p->base &&
           t->p.freq_scale == p->freq_scale && t->p.ext_factor == p->ext_factor && t->p.corr_low == p->corr_low &&
           t->p.corr_high == p->corr_high && t->p.mscale == p->mscale && memcmp(t->pos, pos, (size_t)n * sizeof *pos) == 0;
}

static void rope_table_rows(void *ctx, int64_t t0, int64_t t1) {
    const rope_table *t = ctx;
    const float *factors = t->factors;
    const int half = t->p.rope_dim / 2;
    for (int64_t r = t0; r < t1; r++)
        for (int i = 0; i < half; i++) {
            double theta, mscale;
            rope_angle(&t->p, factors, t->pos[r], i, &theta, &mscale);
            t->cs[((size_t)r * (size_t)half + (size_t)i) * 2] = (float)(cos(theta) * mscale);
            t->cs[((size_t)r * (size_t)half + (size_t)i) * 2 + 1] = (float)(sin(theta) * mscale);
        }
}

/* The table for these positions and parameters: a kept one, or the older replaced. NULL when
 * out of memory. */
static const rope_table *rope_rotations(cpu_impl *c, const bk_rope_params *p, const int32_t *pos, int64_t n) {
    if (!c->rope && !(c->rope = calloc(ROPE_TABLES, sizeof *c->rope)))
        return NULL;
    for (int i = 0; i < ROPE_TABLES; i++)
        if (rope_same(&c->rope[i], p, pos, n))
            return &c->rope[i];
    rope_table *t = &c->rope[c->rope_next];
    c->rope_next = (c->rope_next + 1) % ROPE_TABLES;
    const int64_t pairs = p->rope_dim / 2;
    const size_t cs_need = (size_t)n * (size_t)pairs * 2;
    if ((size_t)n > t->pos_cap || cs_need > t->cs_cap) {
        free(t->pos);
        free(t->cs);
        *t = (rope_table){ .pos = malloc((size_t)n * sizeof *t->pos), .cs = malloc(cs_need * sizeof *t->cs) };
        if (!t->pos || !t->cs) {
            free(t->pos);
            free(t->cs);
            *t = (rope_table){ 0 };
            return NULL;
        }
        t->pos_cap = (size_t)n;
        t->cs_cap = cs_need;
    }
    t->n = -1; /* not valid until filled */
    t->p = *p;
    t->factors = p->freq_factors ? p->freq_factors->data : NULL;
    memcpy(t->pos, pos, (size_t)n * sizeof *pos);
    run_rows(c->pool, n, rows_worth_sharing(n, pairs * 64), rope_table_rows, t); /* an angle costs about as much as 64 adds */
    t->n = n;
    return t;
}

typedef struct rope_job {
    const bk_tensor *x;
    const bk_rope_params *p;
    const rope_table *t;
} rope_job;

static void rope_rows(void *ctx, int64_t t0, int64_t t1) {
    const rope_job *j = ctx;
    const bk_rope_params *p = j->p;
    const int half = p->rope_dim / 2;
    for (int64_t t = t0; t < t1; t++) {
        float *r = (float *)((char *)j->x->data + (size_t)t * j->x->row_bytes);
        const float *cs = j->t->cs + (size_t)t * (size_t)half * 2;
        for (int i = 0; i < half; i++) {
            const float c = cs[2 * i], s = cs[2 * i + 1];
            const int a = p->mode == BK_ROPE_NEOX ? i : 2 * i;
            const int b = p->mode == BK_ROPE_NEOX ? i + half : 2 * i + 1;
            for (int h = 0; h < p->n_head; h++) {
                float *v = r + (size_t)h * (size_t)p->head_dim;
                const float x0 = v[a], x1 = v[b];
                v[a] = x0 * c - x1 * s;
                v[b] = x0 * s + x1 * c;
            }
        }
    }
}

static brasa_status cpu_rope(bk_device *dev, bk_tensor *x, const int32_t *pos, const bk_rope_params *p, brasa_error *err) {
    if (p->rope_dim > p->head_dim || p->rope_dim < 2 || p->rope_dim % 2 != 0 || (int64_t)p->n_head * p->head_dim != x->ne0 ||
        (p->freq_factors && p->freq_factors->ne0 * p->freq_factors->ne1 < p->rope_dim / 2))
        return err_set(err, BRASA_ERR_INTERNAL, "rope: bad dims (%d of %d, %d heads, row %lld)", p->rope_dim, p->head_dim,
                       p->n_head, (long long)x->ne0);
    cpu_impl *c = dev->impl;
    const rope_table *t = rope_rotations(c, p, pos, x->ne1);
    if (!t)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory: rope table for %lld tokens", (long long)x->ne1);
    rope_job job = { x, p, t };
    run_rows(c->pool, x->ne1, rows_worth_sharing(x->ne1, x->ne0), rope_rows, &job);
    return BRASA_OK;
}

typedef struct glu_job {
    const bk_tensor *gate, *up; /* up NULL: y = act(gate) alone */
    bk_tensor *y;
    bk_act act;
    const cpu_kernels *k;
} glu_job;

/* y = act(g) * u (u NULL: act(g)) over n values: the path's vectors for SiLU and GELU's tanh form,
 * the C library's erf for the exact GELU (BERT's, outside any decoder's hot loop). */
static void glu_run(const glu_job *j, const float *g, const float *u, float *y, int64_t n) {
    if (j->act != BK_ACT_GELU_ERF) {
        j->k->glu(j->act == BK_ACT_SILU ? CPU_GLU_SILU : j->act == BK_ACT_GELU_TANH ? CPU_GLU_GELU_TANH : CPU_GLU_SWIGLU_OAI, g, u, y, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const float a = 0.5f * g[i] * (1.0f + erff(g[i] * 0.70710678118654752f));
        y[i] = u ? a * u[i] : a;
    }
}

/* Thread ith's share of the elements, row-major over all tokens: each value stands alone. */
static void glu_part(void *ctx, int ith, int nth) {
    const glu_job *j = ctx;
    const int64_t n = j->gate->ne0;
    int64_t lo, hi;
    split(n * j->gate->ne1, ith, nth, &lo, &hi);
    for (int64_t e = lo; e < hi;) {
        const int64_t t = e / n, i0 = e % n, i1 = hi - t * n < n ? hi - t * n : n;
        const float *g = (const float *)((const char *)j->gate->data + (size_t)t * j->gate->row_bytes);
        const float *u = j->up ? (const float *)((const char *)j->up->data + (size_t)t * j->up->row_bytes) : NULL;
        float *yr = (float *)((char *)j->y->data + (size_t)t * j->y->row_bytes);
        glu_run(j, g + i0, u ? u + i0 : NULL, yr + i0, i1 - i0);
        e = t * n + i1;
    }
}

/* Elements of one activation per thread from this many: below, a synchronization costs more than
 * the exponentials it shares out. */
#define GLU_PARALLEL_MIN 1024

static brasa_status cpu_glu(bk_device *dev, const bk_tensor *gate, const bk_tensor *up, bk_act act, bk_tensor *y, brasa_error *err) {
    (void)err;
    cpu_impl *c = dev->impl;
    glu_job job = { gate, up, y, act, c->k };
    if (gate->ne0 * gate->ne1 >= GLU_PARALLEL_MIN)
        pool_run(c->pool, glu_part, &job);
    else
        glu_part(&job, 0, 1);
    return BRASA_OK;
}

static brasa_status cpu_act(bk_device *dev, const bk_tensor *x, bk_act act, bk_tensor *y, brasa_error *err) {
    cpu_impl *c = dev->impl;
    if (act == BK_ACT_SWIGLU_OAI)
        return err_set(err, BRASA_ERR_INTERNAL, "act: the clamped SwiGLU needs its up projection (glu)");
    glu_job job = { x, NULL, y, act, c->k };
    if (x->ne0 * x->ne1 >= GLU_PARALLEL_MIN)
        pool_run(c->pool, glu_part, &job);
    else
        glu_part(&job, 0, 1);
    return BRASA_OK;
}

static brasa_status cpu_copy_rows(bk_device *dev, const bk_tensor *src, bk_tensor *dst, int64_t dst_row, brasa_error *err) {
    const bool same = src->type == dst->type && src->row_bytes == dst->row_bytes;
    const bool to_f16 = src->type == QUANT_F32 && dst->type == QUANT_F16 && src->ne0 == dst->ne0;
    if (dst_row < 0 || dst_row + src->ne1 > dst->ne1 || !(same || to_f16))
        return err_set(err, BRASA_ERR_INTERNAL, "copy_rows: %lld %s rows at %lld do not fit in %lld %s rows",
                       (long long)src->ne1, quant_get(src->type)->name, (long long)dst_row, (long long)dst->ne1,
                       quant_get(dst->type)->name);
    char *out = (char *)dst->data + (size_t)dst_row * dst->row_bytes;
    if (same) {
        memcpy(out, src->data, (size_t)src->ne1 * src->row_bytes);
        return BRASA_OK;
    }
    const cpu_impl *c = dev->impl; /* a step's few new keys and values, rounded into an f16 cache */
    for (int64_t r = 0; r < src->ne1; r++)
        c->k->f16_from_f32((const float *)((const char *)src->data + (size_t)r * src->row_bytes),
                           (uint16_t *)(out + (size_t)r * dst->row_bytes), src->ne0);
    return BRASA_OK;
}

typedef struct attn_job {
    const bk_tensor *q, *k, *v, *out;
    const int32_t *pos;
    const bk_attention_params *p;
    cpu_impl *c;
    int heads_per_item; /* query heads one work item handles: 1, or all those sharing a KV head */
    int n_split;        /* key ranges per (token, heads): above 1, items leave partial results */
    float *partial;     /* n_split > 1: per item and head, max, sum and head_dim accumulators */
    volatile int32_t next; /* work items handed out so far (see attention_part) */
} attn_job;

/* Work items a thread takes at a time, at most: a prompt's items differ in cost (a causal token
 * attends over its position), so a fixed split would leave the thread with the first half idle
 * for most of the second's time; taken from a shared counter, the latest (dearest) first, the
 * threads finish within about one item of each other. */
#define ATTN_ITEMS_PER_TAKE 8

/* Keys scored together before their values are added: the scores of one tile stay in L1. */
#define ATTN_TILE 64

/* Query heads one item handles together at most; larger groups go one head at a time. */
#define ATTN_GROUP_MAX 16

/* Rows of one KV head in a cache tile, as the run kernels read them: floats or halves, xs apart. */
typedef struct kv_run {
    const void *p;
    size_t xs;
    bool half;
} kv_run;

/* Row `row` of KV head hk of cache t as head_dim floats at out. */
static void kv_row_f32(const cpu_kernels *k, const bk_tensor *t, int64_t row, int hk, int hd, float *out) {
    const char *base = (const char *)t->data + (size_t)row * t->row_bytes;
    if (t->type == QUANT_F32)
        memcpy(out, (const float *)base + (size_t)hk * (size_t)hd, (size_t)hd * sizeof *out);
    else
        k->f16_to_f32((const uint16_t *)base + (size_t)hk * (size_t)hd, out, hd);
}

/* Rows [row, row + n) of KV head hk in the cache t: in place for an f32 cache, and for an f16 one
 * where the path reads halves itself; else converted into buf (hd floats apart), once per tile
 * for all the query heads that read them. Either way an f16 cache costs half the memory traffic
 * and the products stay f32. */
static kv_run kv_rows(const attn_job *j, const bk_tensor *t, int64_t row, int n, int hk, float *buf) {
    const size_t hd = (size_t)j->p->head_dim;
    const char *base = (const char *)t->data + (size_t)row * t->row_bytes;
    if (t->type == QUANT_F32)
        return (kv_run){ (const float *)base + (size_t)hk * hd, t->row_bytes / sizeof(float), false };
    if (j->c->k->dot_rows_f16 && j->c->k->axpy_rows_f16 && hd % 8 == 0)
        return (kv_run){ (const uint16_t *)base + (size_t)hk * hd, t->row_bytes / sizeof(uint16_t), true };
    for (int r = 0; r < n; r++)
        kv_row_f32(j->c->k, t, row + r, hk, (int)hd, buf + (size_t)r * hd);
    return (kv_run){ buf, hd, false };
}

/* The path's run kernels, or the one-row ones in a loop (the same bits either way). */
static void rows_dot(const cpu_kernels *k, const float *q, kv_run x, int n, int64_t n_el, float *out) {
    if (x.half) {
        k->dot_rows_f16(q, x.p, x.xs, n, n_el, out);
    } else if (k->dot_rows_f32) {
        k->dot_rows_f32(q, x.p, x.xs, n, n_el, out);
    } else {
        for (int r = 0; r < n; r++)
            out[r] = k->dot_f32(q, (const float *)x.p + (size_t)r * x.xs, n_el);
    }
}

static void rows_axpy(const cpu_kernels *k, float *y, const float *a, kv_run x, int n, int64_t n_el) {
    if (x.half) {
        k->axpy_rows_f16(y, a, x.p, x.xs, n, n_el);
    } else if (k->axpy_rows_f32) {
        k->axpy_rows_f32(y, a, x.p, x.xs, n, n_el);
    } else {
        for (int r = 0; r < n; r++)
            k->axpy_f32(y, a[r], (const float *)x.p + (size_t)r * x.xs, n_el);
    }
}

/* The run kernels for the nh heads of a group over the same rows: a cache of halves through the
 * path's several-head kernels, as many heads at a time as they take, where it has them (each converted value
 * serves them all); the same bits as one head at a time either way. */
static void rows_dot_heads(const cpu_kernels *k, const float *const *q, int nh, kv_run x, int n, int64_t n_el, float *const *out) {
    if (x.half && k->dot_rows_f16_heads && nh > 1) {
        const int most = k->f16_heads_max;
        for (int g = 0; g < nh; g += most)
            k->dot_rows_f16_heads(q + g, nh - g < most ? nh - g : most, x.p, x.xs, n, n_el, out + g);
        return;
    }
    for (int g = 0; g < nh; g++)
        rows_dot(k, q[g], x, n, n_el, out[g]);
}

static void rows_axpy_heads(const cpu_kernels *k, float *const *y, const float *const *a, int nh, kv_run x, int n, int64_t n_el) {
    if (x.half && k->axpy_rows_f16_heads && nh > 1) {
        const int most = k->f16_heads_max;
        for (int g = 0; g < nh; g += most)
            k->axpy_rows_f16_heads(y + g, a + g, nh - g < most ? nh - g : most, x.p, x.xs, n, n_el);
        return;
    }
    for (int g = 0; g < nh; g++)
        rows_axpy(k, y[g], a[g], x, n, n_el);
}

/* Attention of query heads h0 .. h0 + nh - 1 of token t, which share KV head hk, over the keys
 * [first, last]: one pass in tiles with a running maximum and sum per head (the softmax never
 * needs all scores at once, and exp never sees a positive argument), each key and value row read
 * once for all nh heads. Leaves per head its maximum, sum and unnormalized output in max, sum and
 * acc (nh * head_dim). Scratch: nh * ATTN_TILE floats of scores, ATTN_TILE * head_dim of rows. */
static void attention_heads(const attn_job *j, int64_t t, int h0, int nh, int hk, int64_t first, int64_t last,
                            float *scores, float *rows, float *max, float *sum, float *acc) {
    const bk_attention_params *p = j->p;
    const int hd = p->head_dim;
    const float *q[ATTN_GROUP_MAX];
    for (int g = 0; g < nh; g++) {
        q[g] = (const float *)((const char *)j->q->data + (size_t)t * j->q->row_bytes) + (size_t)(h0 + g) * (size_t)hd;
        max[g] = -INFINITY;
        sum[g] = 0.0f;
    }
    memset(acc, 0, (size_t)nh * (size_t)hd * sizeof *acc);
    for (int64_t s0 = first; s0 <= last; s0 += ATTN_TILE) {
        const int n = (int)(last + 1 - s0 < ATTN_TILE ? last + 1 - s0 : ATTN_TILE);
        const int64_t r0 = s0 % j->k->ne1; /* a ring cache holds position p at row p mod rows */
        /* the tile's rows in at most two runs: up to the ring's end, then from its start */
        const int run0 = (int)(j->k->ne1 - r0 < n ? j->k->ne1 - r0 : n), n_runs = run0 < n ? 2 : 1;
        const int run_first[2] = { 0, run0 }, run_len[2] = { run0, n - run0 };
        const int64_t run_row[2] = { r0, 0 };
        for (int u = 0; u < n_runs; u++) {
            const kv_run k = kv_rows(j, j->k, run_row[u], run_len[u], hk, rows);
            float *out[ATTN_GROUP_MAX];
            for (int g = 0; g < nh; g++)
                out[g] = scores + g * ATTN_TILE + run_first[u];
            rows_dot_heads(j->c->k, q, nh, k, run_len[u], hd, out);
        }
        for (int g = 0; g < nh; g++) {
            float *sc = scores + g * ATTN_TILE, m = max[g];
            for (int i = 0; i < n; i++)
                sc[i] *= p->scale;
            if (p->softcap > 0)
                for (int i = 0; i < n; i++)
                    sc[i] = p->softcap * tanhf(sc[i] / p->softcap);
            for (int i = 0; i < n; i++)
                m = sc[i] > m ? sc[i] : m;
            /* rescale what was summed under the old maximum (exp(-inf) = 0 on the first tile) */
            const float keep = expf(max[g] - m);
            sum[g] = sum[g] * keep + j->c->k->exp_sum(sc, n, m);
            max[g] = m;
            if (keep != 1.0f)
                for (int d = 0; d < hd; d++)
                    acc[g * hd + d] *= keep;
        }
        for (int u = 0; u < n_runs; u++) { /* the value cache is a ring of the same rows */
            const kv_run v = kv_rows(j, j->v, run_row[u], run_len[u], hk, rows);
            float *y[ATTN_GROUP_MAX];
            const float *a[ATTN_GROUP_MAX];
            for (int g = 0; g < nh; g++) {
                y[g] = acc + (size_t)g * (size_t)hd;
                a[g] = scores + g * ATTN_TILE + run_first[u];
            }
            rows_axpy_heads(j->c->k, y, a, nh, v, run_len[u], hd);
        }
    }
}

/* Head h's attention sink under the maximum m its sum was taken under: exp(s_h - m), its share of
 * the denominator (0 without sinks). A sink far above every score gives infinity, and so an output
 * of 0, which is the limit. */
static float sink_weight(const bk_attention_params *p, int h, float m) {
    return p->sinks ? expf(((const float *)p->sinks->data)[h] - m) : 0.0f;
}

/* Work items: (token, query head) for a single token, so that a few heads still spread over every
 * thread; (token, KV head) for batches, where there are items enough and each KV row is then read
 * once for its whole group of query heads; and for a single token with a long cache, (KV head, key
 * range) with a merge afterwards, so both threads share each group's cache reads. */
static void attention_part(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    const bk_attention_params *p = j->p;
    const int group = p->n_head / p->n_head_kv, per = j->heads_per_item, items_per_tok = p->n_head / per;
    const int hd = p->head_dim;
    const int64_t n_items = j->q->ne1 * items_per_tok * j->n_split;
    int64_t take = n_items / (8 * (int64_t)nth);
    take = take < 1 ? 1 : take > ATTN_ITEMS_PER_TAKE ? ATTN_ITEMS_PER_TAKE : take;
    float *scores = j->c->scratch[ith].data, *local = scores + (size_t)per * ATTN_TILE;
    float *rows = local + (size_t)per * (size_t)(hd + 2);
    for (int64_t taken = 0, left = 0, item = 0;;) {
        if (left == 0) { /* the next run of items, counted down from the last */
            taken = (int64_t)plat_atomic_add(&j->next, (int32_t)take) - take;
            if (taken >= n_items)
                return;
            left = n_items - taken < take ? n_items - taken : take;
            item = n_items - 1 - taken;
        } else {
            item--;
        }
        left--;
        const int64_t ts = item / j->n_split, t = ts / items_per_tok;
        const int part = (int)(item % j->n_split), h0 = (int)(ts % items_per_tok) * per;
        const int64_t last = p->bidirectional ? j->k->ne1 - 1 : j->pos[t];
        const int64_t first = p->window > 0 && last - p->window + 1 > 0 ? last - p->window + 1 : 0;
        /* this item's share of the keys, in whole tiles */
        const int64_t tiles = (last - first + ATTN_TILE) / ATTN_TILE, per_part = (tiles + j->n_split - 1) / j->n_split;
        const int64_t k0 = first + part * per_part * ATTN_TILE, k1 = k0 + per_part * ATTN_TILE - 1 < last ? k0 + per_part * ATTN_TILE - 1 : last;
        float *res = j->n_split > 1 ? j->partial + (size_t)item * (size_t)per * (size_t)(hd + 2) : local;
        float *max = res, *sum = res + per, *acc = res + 2 * per;
        if (k0 > last) { /* nothing left for this range */
            for (int g = 0; g < per; g++) {
                max[g] = -INFINITY;
                sum[g] = 0.0f;
            }
            memset(acc, 0, (size_t)per * (size_t)hd * sizeof *acc);
            continue;
        }
        attention_heads(j, t, h0, per, h0 / group, k0, k1, scores, rows, max, sum, acc);
        if (j->n_split > 1)
            continue;
        for (int g = 0; g < per; g++) {
            float *o = (float *)((char *)j->out->data + (size_t)t * j->out->row_bytes) + (size_t)(h0 + g) * (size_t)hd;
            const float inv = 1.0f / (sum[g] + sink_weight(p, h0 + g, max[g]));
            for (int d = 0; d < hd; d++)
                o[d] = acc[g * hd + d] * inv;
        }
    }
}

/* Combines the key ranges' partial results: each range's sum and output scaled by exp(its
 * maximum - the overall maximum). */
static void attention_merge(const attn_job *j) {
    const bk_attention_params *p = j->p;
    const int per = j->heads_per_item, items_per_tok = p->n_head / per, hd = p->head_dim;
    for (int64_t ts = 0; ts < j->q->ne1 * items_per_tok; ts++) {
        const int64_t t = ts / items_per_tok;
        const int h0 = (int)(ts % items_per_tok) * per;
        for (int g = 0; g < per; g++) {
            float m = -INFINITY, total = 0.0f;
            for (int part = 0; part < j->n_split; part++) {
                const float *res = j->partial + (size_t)(ts * j->n_split + part) * (size_t)per * (size_t)(hd + 2);
                m = res[g] > m ? res[g] : m;
            }
            float *o = (float *)((char *)j->out->data + (size_t)t * j->out->row_bytes) + (size_t)(h0 + g) * (size_t)hd;
            memset(o, 0, (size_t)hd * sizeof *o);
            for (int part = 0; part < j->n_split; part++) {
                const float *res = j->partial + (size_t)(ts * j->n_split + part) * (size_t)per * (size_t)(hd + 2);
                if (res[per + g] == 0.0f)
                    continue;
                const float w = expf(res[g] - m);
                total += res[per + g] * w;
                j->c->k->axpy_f32(o, w, res + 2 * per + (size_t)g * (size_t)hd, hd);
            }
            const float inv = 1.0f / (total + sink_weight(p, h0 + g, m));
            for (int d = 0; d < hd; d++)
                o[d] *= inv;
        }
    }
}

/* ---- a prompt's attention with the queries in lanes ----
 * Items are (block of tokens, KV head), the latest first: a block's queries of that head's group
 * go in lanes (attn_lanes), each key and value row converted once for all of them. Against one
 * query's heads at a time (alternated, 2 threads, batches of 64): Qwen2.5 1.5B's attention 0.35 ->
 * 0.24 s over 800 calls, Gemma 3 270M's 0.12 -> 0.10 s over 500; pp512 365-370 -> 373-382 and
 * 2977-3018 -> 3017-3132 tokens/s, pp2048 295 -> 325 and 2342 -> 2602 (Zen 5). A query's keys
 * are taken in tiles at fixed positions (multiples of ATTN_LANES_TILE), and a tile it sees none of
 * leaves its maximum, sum and outputs exactly as they were (a factor of exactly 1, sums of 0), so
 * a token gets the same bits whatever block or batch it is in. Batches of BK_BATCH_EXACT_MAX tokens
 * or fewer (sequences decoding side by side) take the one-query path, as one token alone does. */
typedef struct lanes_job {
    const bk_tensor *q, *k, *v, *out;
    const int32_t *pos;
    const bk_attention_params *p;
    cpu_impl *c;
    int block, lanes;     /* tokens per item, and lanes for their queries (a multiple of the width) */
    int64_t n_items;
    volatile int32_t next;
} lanes_job;

/* Items a thread gets at least, where a batch has tokens enough. */
#define ATTN_LANES_ITEMS 4

/* Floats of a thread's scratch for a lanes job: the queries and outputs transposed, a tile of
 * scores, a tile of keys and of values as floats, the running maximum and sum, first and last. */
static size_t lanes_scratch(int lanes, int hd) {
    return 2 * (size_t)lanes * (size_t)hd + (size_t)ATTN_LANES_TILE * (size_t)lanes + 2 * (size_t)ATTN_LANES_TILE * (size_t)hd +
           4 * (size_t)lanes;
}

static void attention_lanes_part(void *ctx, int ith, int nth) {
    (void)nth;
    lanes_job *j = ctx;
    const bk_attention_params *p = j->p;
    const cpu_kernels *k = j->c->k;
    const int hd = p->head_dim, group = p->n_head / p->n_head_kv, L = j->lanes;
    float *qt = j->c->scratch[ith].data, *acc = qt + (size_t)L * (size_t)hd, *s = acc + (size_t)L * (size_t)hd;
    float *kf = s + (size_t)ATTN_LANES_TILE * (size_t)L, *vf = kf + (size_t)ATTN_LANES_TILE * (size_t)hd;
    float *max = vf + (size_t)ATTN_LANES_TILE * (size_t)hd, *sum = max + L;
    int32_t *first = (int32_t *)(sum + L), *last = first + L;
    for (;;) {
        const int64_t taken = (int64_t)plat_atomic_add(&j->next, 1) - 1;
        if (taken >= j->n_items)
            return;
        const int64_t item = j->n_items - 1 - taken, t0 = item / p->n_head_kv * j->block;
        const int hk = (int)(item % p->n_head_kv);
        const int nq = (int)((j->q->ne1 - t0 < j->block ? j->q->ne1 - t0 : j->block) * group);
        int64_t lo = INT64_MAX, hi = -1; /* the keys any query sees */
        for (int l = 0; l < L; l++) {
            max[l] = -INFINITY;
            sum[l] = 0.0f;
            if (l >= nq) { /* padding: sees nothing */
                first[l] = 0;
                last[l] = -1;
                for (int d = 0; d < hd; d++)
                    qt[(size_t)d * L + l] = 0.0f;
                continue;
            }
            const int64_t t = t0 + l / group;
            const int h = hk * group + l % group;
            const float *qh = (const float *)((const char *)j->q->data + (size_t)t * j->q->row_bytes) + (size_t)h * (size_t)hd;
            for (int d = 0; d < hd; d++)
                qt[(size_t)d * L + l] = qh[d];
            const int64_t end = p->bidirectional ? j->k->ne1 - 1 : j->pos[t];
            const int64_t start = p->window > 0 && end - p->window + 1 > 0 ? end - p->window + 1 : 0;
            first[l] = (int32_t)start;
            last[l] = (int32_t)end;
            lo = start < lo ? start : lo;
            hi = end > hi ? end : hi;
        }
        memset(acc, 0, (size_t)L * (size_t)hd * sizeof *acc);
        const attn_lanes a = { L, hd, p->scale, qt, first, last, max, sum, acc, s };
        for (int64_t s0 = lo / ATTN_LANES_TILE * ATTN_LANES_TILE; s0 <= hi; s0 += ATTN_LANES_TILE) {
            const int n = (int)(hi + 1 - s0 < ATTN_LANES_TILE ? hi + 1 - s0 : ATTN_LANES_TILE), n8 = (n + 7) / 8 * 8;
            for (int r = 0; r < n; r++) { /* a ring cache holds position p at row p mod rows */
                kv_row_f32(k, j->k, (s0 + r) % j->k->ne1, hk, hd, kf + (size_t)r * (size_t)hd);
                kv_row_f32(k, j->v, (s0 + r) % j->v->ne1, hk, hd, vf + (size_t)r * (size_t)hd);
            }
            memset(kf + (size_t)n * (size_t)hd, 0, (size_t)(n8 - n) * (size_t)hd * sizeof *kf);
            memset(vf + (size_t)n * (size_t)hd, 0, (size_t)(n8 - n) * (size_t)hd * sizeof *vf);
            k->attn_tile(&a, s0, n8, kf, vf);
        }
        for (int l = 0; l < nq; l++) {
            const int64_t t = t0 + l / group;
            const int h = hk * group + l % group;
            float *o = (float *)((char *)j->out->data + (size_t)t * j->out->row_bytes) + (size_t)h * (size_t)hd;
            const float inv = 1.0f / (sum[l] + sink_weight(p, h, max[l]));
            for (int d = 0; d < hd; d++)
                o[d] = acc[(size_t)d * L + l] * inv;
        }
    }
}

/* The lanes path where the kernels have it and it applies: a prompt's batch, no softcap (its tanh
 * per score stays on the one-query path), groups that fit the lanes. */
static brasa_status attention_lanes(cpu_impl *c, const bk_tensor *q, const bk_tensor *k, const bk_tensor *v, const int32_t *pos,
                                    const bk_attention_params *p, bk_tensor *out, bool *done, brasa_error *err) {
    const int group = p->n_head / p->n_head_kv, width = c->k->attn_width;
    *done = false;
    if (!c->k->attn_tile || q->ne1 <= BK_BATCH_EXACT_MAX || p->softcap > 0 || group > ATTN_LANES_MAX || p->head_dim % 8 != 0 ||
        width <= 0)
        return BRASA_OK;
    /* as many tokens a block as fill the lanes, fewer where that leaves under ATTN_LANES_ITEMS items
     * a thread (a batch of 64 of Gemma 3's single KV head would be three items for two threads): a
     * token's bits do not depend on its block */
    const int64_t want = ((int64_t)ATTN_LANES_ITEMS * c->n_threads + p->n_head_kv - 1) / p->n_head_kv;
    int64_t block = (q->ne1 + want - 1) / want;
    block = block > ATTN_LANES_MAX / group ? ATTN_LANES_MAX / group : block < 1 ? 1 : block;
    const int lanes = (int)((block * group + width - 1) / width * width);
    brasa_status st = reserve_scratch(c, lanes_scratch(lanes, p->head_dim), err);
    if (st != BRASA_OK)
        return st;
    lanes_job job = { q, k, v, out, pos, p, c, (int)block, lanes, (q->ne1 + block - 1) / block * p->n_head_kv, 0 };
    if (job.n_items > INT32_MAX / 2)
        return err_set(err, BRASA_ERR_INTERNAL, "attention of %lld items", (long long)job.n_items);
    pool_run(c->pool, attention_lanes_part, &job);
    *done = true;
    return BRASA_OK;
}

/* A single token's keys are split between the threads once the cache holds this many tiles per
 * thread: below that, one head per item keeps the threads busy at less cost. */
#define ATTN_SPLIT_MIN_TILES 4

static brasa_status cpu_attention(bk_device *dev, const bk_tensor *q, const bk_tensor *k, const bk_tensor *v, const int32_t *pos,
                                  const bk_attention_params *p, bk_tensor *out, brasa_error *err) {
    if (p->n_head_kv <= 0 || p->n_head % p->n_head_kv != 0)
        return err_set(err, BRASA_ERR_INTERNAL, "attention: %d heads over %d KV heads", p->n_head, p->n_head_kv);
    /* a cache shorter than the positions is a ring, which must hold a whole window */
    const bool ring_ok = p->window > 0 && k->ne1 >= p->window;
    if (k->ne1 != v->ne1 || k->ne1 < 1 || k->type != v->type || (k->type != QUANT_F32 && k->type != QUANT_F16))
        return err_set(err, BRASA_ERR_INTERNAL, "attention: key and value caches differ or are neither f32 nor f16");
    if (p->bidirectional && p->window != 0)
        return err_set(err, BRASA_ERR_INTERNAL, "attention: a bidirectional one has no window");
    if (p->sinks && (p->sinks->type != QUANT_F32 || p->sinks->ne0 * p->sinks->ne1 != p->n_head))
        return err_set(err, BRASA_ERR_INTERNAL, "attention: sinks must be %d f32 values", p->n_head);
    for (int64_t t = 0; t < q->ne1 && !p->bidirectional; t++)
        if (pos[t] < 0 || (pos[t] >= k->ne1 && !ring_ok))
            return err_set(err, BRASA_ERR_INTERNAL, "attention: position %d outside the %lld-row cache", pos[t],
                           (long long)k->ne1);
    cpu_impl *c = dev->impl;
    bool done = false;
    brasa_status lanes_st = attention_lanes(c, q, k, v, pos, p, out, &done, err);
    if (lanes_st != BRASA_OK || done)
        return lanes_st;
    /* keys the first query sees, which decides whether one token's keys are split */
    const int64_t keys0 = p->bidirectional ? k->ne1 : (int64_t)pos[0] + 1;
    const int group = p->n_head / p->n_head_kv;
    int per = 1, n_split = 1;
    if (group <= ATTN_GROUP_MAX) {
        if (q->ne1 >= 2 * c->n_threads) {
            per = group;
        } else if (q->ne1 == 1 && c->n_threads > 1 && keys0 / ATTN_TILE >= ATTN_SPLIT_MIN_TILES * c->n_threads) {
            per = group;
            n_split = (2 * c->n_threads + p->n_head_kv - 1) / p->n_head_kv;
        }
    }
    const size_t partial = n_split > 1 ? (size_t)p->n_head_kv * (size_t)n_split * (size_t)per * (size_t)(p->head_dim + 2) : 0;
    const size_t tile_rows = k->type == QUANT_F16 ? (size_t)ATTN_TILE * (size_t)p->head_dim : 0;
    brasa_status st = reserve_scratch(c, (size_t)per * (ATTN_TILE + 2 + (size_t)p->head_dim) + tile_rows, err);
    if (st == BRASA_OK && partial > c->attn_cap) {
        float *np = realloc(c->attn, partial * sizeof *np);
        if (!np)
            st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory for attention (%zu floats)", partial);
        else {
            c->attn = np;
            c->attn_cap = partial;
        }
    }
    if (st != BRASA_OK)
        return st;
    attn_job job = { q, k, v, out, pos, p, c, per, n_split, c->attn, 0 };
    pool_run(c->pool, attention_part, &job);
    if (n_split > 1)
        attention_merge(&job);
    return BRASA_OK;
}

static brasa_status cpu_softcap(bk_device *dev, bk_tensor *x, float cap, brasa_error *err) {
    (void)err;
    for (int64_t t = 0; t < x->ne1; t++) {
        float *r = (float *)((char *)x->data + (size_t)t * x->row_bytes);
        for (int64_t i = 0; i < x->ne0; i++)
            r[i] = cap * tanhf(r[i] / cap);
    }
    return BRASA_OK;
}

/* Lays a weight out for the path's kernels now (kept.h) rather than on its first product: a
 * mixture's experts are first chosen at random moments, and each first use would stall a token. */
static brasa_status cpu_keep(bk_device *dev, const bk_tensor *t, brasa_error *err) {
    cpu_impl *c = dev->impl;
    if (!c->q8) /* float activations read the weights as they are */
        return BRASA_OK;
    for (int64_t e = 0; e < t->ne2; e++) {
        const bk_tensor w = bk_expert(t, e);
        const char *packed = NULL;
        brasa_status st = cpu_kept_find(c->kept, c->k, c->pool, &w, &packed, err);
        if (st != BRASA_OK)
            return st;
    }
    return BRASA_OK;
}

static const bk_device_ops cpu_ops = {
    .name = "cpu",
    .host_memory = true,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_base = cpu_buffer_base,
    .upload = cpu_upload,
    .download = cpu_download,
    .get_rows = cpu_get_rows,
    .matmul = cpu_matmul,
    .matmul_group = cpu_matmul_group,
    .rms_norm = cpu_rms_norm,
    .add = cpu_add,
    .scale = cpu_scale,
    .rope = cpu_rope,
    .glu = cpu_glu,
    .copy_rows = cpu_copy_rows,
    .attention = cpu_attention,
    .softcap = cpu_softcap,
    .layer_norm = cpu_layer_norm,
    .act = cpu_act,
    .moe_route = cpu_moe_route,
    .matmul_id = cpu_matmul_id,
    .moe_sum = cpu_moe_sum,
    .keep = cpu_keep,
};

brasa_status bk_cpu_create(int n_threads, bk_device **out, brasa_error *err) {
    *out = NULL;
    bk_device *dev = calloc(1, sizeof *dev);
    cpu_impl *c = calloc(1, sizeof *c);
    if (!dev || !c) {
        free(dev);
        free(c);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    dev->ops = &cpu_ops;
    dev->impl = c;
    brasa_status st = cpu_kernels_select(&c->k, err);
    if (st == BRASA_OK)
        st = cpu_activations_q8(&c->q8, err);
    if (st == BRASA_OK)
        snprintf(c->name, sizeof c->name, "%s%s", c->k->name, c->q8 ? "+q8" : "");
    if (st == BRASA_OK)
        st = pool_create(n_threads, &c->pool, err);
    if (st == BRASA_OK)
        st = cpu_kept_create(&c->kept, err);
    if (st == BRASA_OK) {
        c->n_threads = n_threads;
        c->scratch = calloc((size_t)n_threads, sizeof *c->scratch);
        if (!c->scratch)
            st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    if (st != BRASA_OK) {
        bk_cpu_free(dev);
        return st;
    }
    *out = dev;
    return BRASA_OK;
}

void bk_cpu_free(bk_device *dev) {
    if (!dev)
        return;
    cpu_impl *c = dev->impl;
    if (c) {
        pool_free(c->pool);
        for (int i = 0; c->scratch && i < c->n_threads; i++)
            free(c->scratch[i].data);
        free(c->scratch);
        free(c->act);
        free(c->attn);
        free(c->items);
        free(c->moe);
        cpu_kept_free(c->kept);
        for (int i = 0; c->rope && i < ROPE_TABLES; i++) {
            free(c->rope[i].pos);
            free(c->rope[i].cs);
        }
        free(c->rope);
        free(c);
    }
    free(dev);
}

const char *bk_cpu_kernels_name(const bk_device *dev) {
    const cpu_impl *c = dev->impl;
    return c->name;
}
