/* backend.h: the compute seam between model code and hardware.
 *
 * Four nouns: a device (CPU, a GPU) owns buffers; a tensor is a typed 2-D view of device memory;
 * operations are the device's table of kernels, called on tensors that live on it. Model code only
 * names tensors and calls bk_* operations, so a GPU backend plugs in by filling one bk_device_ops
 * table, and a model can put some layers on one device and the rest on another, moving activations
 * with bk_copy. Tensors are 2-D: ne0 elements per row (contiguous), ne1 rows; a mixture-of-experts
 * weight is 3-D, ne2 experts of ne1 rows each, one after the other (bk_expert views one).
 */
#ifndef BRASA_BACKEND_H
#define BRASA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"

typedef struct bk_device bk_device;
typedef struct bk_buffer bk_buffer;

typedef struct bk_tensor {
    uint32_t type;   /* quant_type: weights may be quantized, activations are f32 (expert ids i32) */
    int64_t ne0;     /* elements per row */
    int64_t ne1;     /* rows (of one expert) */
    int64_t ne2;     /* experts: 1 but for a mixture-of-experts weight */
    size_t row_bytes;
    void *data;      /* device memory (for the CPU, a plain pointer, possibly into a mapped file) */
    bk_device *dev;  /* where the memory is; NULL for host memory */
    bool constant;   /* never written while any device lives (model weights): a device may keep
                      * its own copy in another layout, found again by the address */
} bk_tensor;

typedef enum bk_rope_mode {
    BK_ROPE_NORMAL, /* rotate adjacent pairs (2i, 2i+1): llama as converted to GGUF */
    BK_ROPE_NEOX    /* rotate pairs (i, i + rope_dim/2): qwen2, gemma3 */
} bk_rope_mode;

typedef enum bk_act {
    BK_ACT_SILU,
    BK_ACT_GELU_TANH,
    BK_ACT_GELU_ERF,  /* x/2 * (1 + erf(x/sqrt 2)), the exact GELU that BERT uses */
    BK_ACT_SWIGLU_OAI /* gpt-oss's clamped SwiGLU (cpu_glu_scalar says how): glu only, it needs the up */
} bk_act;

/* Rotary position embedding of n_head heads of head_dim per row; the first rope_dim dims of each
 * head rotate. Pair i's angle at position p, with theta_e = p * base^(-2i/rope_dim) / factor_i:
 * theta = freq_scale * theta_e (linear scaling; 1 for none), or with YaRN (ext_factor > 0) a blend
 * of the two, theta = freq_scale * theta_e * (1 - r) + theta_e * r where r = ext_factor * (1 -
 * clamp((i - corr_low) / max(0.001, corr_high - corr_low), 0, 1)); the rotation is scaled by mscale. */
typedef struct bk_rope_params {
    int32_t n_head, head_dim, rope_dim;
    bk_rope_mode mode;
    float base, freq_scale;
    const bk_tensor *freq_factors; /* NULL, or (rope_dim / 2) f32 per-pair divisors (Llama 3's rope_freqs) on the device */
    float ext_factor;              /* YaRN's extrapolation mix; 0: none */
    float corr_low, corr_high;     /* YaRN: pairs below corr_low extrapolate, above corr_high interpolate */
    float mscale;                  /* multiplies cos and sin: 1, or YaRN's attention factor */
} bk_rope_params;

typedef struct bk_attention_params {
    int32_t n_head, n_head_kv, head_dim;
    float scale;          /* applied to q.k */
    float softcap;        /* 0: none; else scores become softcap * tanh(scores / softcap) */
    int32_t window;       /* 0: full causal; else a query at p sees keys at p - window < j <= p */
    bool bidirectional;   /* every query sees every row of k and v, whatever its position (an
                           * encoder over its own input); window must be 0 */
    const bk_tensor *sinks; /* NULL, or (n_head) f32 on the device: head h's learned logit s_h joins
                             * its softmax's denominator only (gpt-oss's attention sinks), so the
                             * weights are exp(score_j) / (sum_i exp(score_i) + exp(s_h)) */
} bk_attention_params;

/* One product of a group that shares its input (see matmul_group). */
typedef struct bk_matmul_out {
    const bk_tensor *w;
    const bk_tensor *bias; /* NULL for none */
    bk_tensor *y;
} bk_matmul_out;

#define BK_MATMUL_GROUP_MAX 4

/* A batch of at most this many rows gives every row exactly (bit for bit) the result it gets in a
 * batch of its own, in every operation: independent sequences decoded together (the server's
 * continuous batching) then produce the same tokens as each alone. Larger batches may use faster
 * kernels that round differently. */
#define BK_BATCH_EXACT_MAX 15

/* The kernels a device provides. Every operation runs on dev, reads and writes tensors whose memory
 * dev can reach (the CPU reaches host memory, including the mapped model file) and returns a status
 * (a GPU can fail at any call). Shapes: x and y are activations with one row per token. */
typedef struct bk_device_ops {
    const char *name;
    bool host_memory; /* its buffers are plain host memory, which another device copies to and from
                       * directly (the CPU) */
    brasa_status (*buffer_alloc)(bk_device *dev, size_t bytes, bk_buffer **out, brasa_error *err);
    void (*buffer_free)(bk_buffer *buf);
    void *(*buffer_base)(bk_buffer *buf);
    /* host <-> device copies of whole tensors (rows [row0, row0 + n_rows)) */
    brasa_status (*upload)(bk_tensor *dst, const void *src, int64_t row0, int64_t n_rows, brasa_error *err);
    brasa_status (*download)(const bk_tensor *src, void *dst, int64_t row0, int64_t n_rows, brasa_error *err);

    /* y[t] = table[ids[t]] dequantized; y: (n, table->ne0) f32 */
    brasa_status (*get_rows)(bk_device *dev, const bk_tensor *table, const int32_t *ids, int64_t n, bk_tensor *y, brasa_error *err);
    /* y[t][o] = sum_i w[o][i] * x[t][i] (+ bias[o]); w: (n_out, n_in) any type, x: (n_tok, n_in), y: (n_tok, n_out) */
    brasa_status (*matmul)(bk_device *dev, const bk_tensor *w, const bk_tensor *x, const bk_tensor *bias, bk_tensor *y, brasa_error *err);
    /* the same for n (1..BK_MATMUL_GROUP_MAX) products of one input x, e.g. q, k and v: a device
     * can prepare x once and run them as one job, with one synchronization instead of n */
    brasa_status (*matmul_group)(bk_device *dev, const bk_tensor *x, const bk_matmul_out *outs, int n, brasa_error *err);
    /* RMS-normalizes every group of `group` consecutive elements of x and multiplies by w (length
     * group); group = ne0 for whole rows, head_dim for per-head norms. In place allowed. */
    brasa_status (*rms_norm)(bk_device *dev, const bk_tensor *x, const bk_tensor *w, int64_t group, float eps, bk_tensor *y, brasa_error *err);
    /* y = a + b, elementwise (same shapes). In place allowed. */
    brasa_status (*add)(bk_device *dev, const bk_tensor *a, const bk_tensor *b, bk_tensor *y, brasa_error *err);
    /* x *= s, in place */
    brasa_status (*scale)(bk_device *dev, bk_tensor *x, float s, brasa_error *err);
    /* rotary embedding in place (bk_rope_params): each row of x holds p->n_head heads; row t is at pos[t] */
    brasa_status (*rope)(bk_device *dev, bk_tensor *x, const int32_t *pos, const bk_rope_params *p, brasa_error *err);
    /* y = act(gate) * up, elementwise */
    brasa_status (*glu)(bk_device *dev, const bk_tensor *gate, const bk_tensor *up, bk_act act, bk_tensor *y, brasa_error *err);
    /* copies rows of src into dst starting at row dst_row (KV cache append): the same type, or f32
     * rows into an f16 tensor (rounded to nearest even) */
    brasa_status (*copy_rows)(bk_device *dev, const bk_tensor *src, bk_tensor *dst, int64_t dst_row, brasa_error *err);
    /* causal attention of q (n_tok, n_head*head_dim), row t at position pos[t], over the keys and
     * values of positions 0..pos[t] (or the window before it) in k and v (rows, n_head_kv*head_dim;
     * both f32 or both f16), where position j is row j mod rows: the cache of a sliding-window
     * layer may be a ring of at least `window` rows; out like q. With p->bidirectional every
     * query attends over all rows of k and v instead (a device without it refuses). */
    brasa_status (*attention)(bk_device *dev, const bk_tensor *q, const bk_tensor *k, const bk_tensor *v, const int32_t *pos,
                              const bk_attention_params *p, bk_tensor *out, brasa_error *err);
    /* x = cap * tanh(x / cap), in place */
    brasa_status (*softcap)(bk_device *dev, bk_tensor *x, float cap, brasa_error *err);

    /* ---- encoders (BERT); optional: NULL where the device has no kernel, and the engine then
     * refuses such models on it ---- */
    /* LayerNorm of every row: y = (x - mean(x)) / sqrt(var(x) + eps) * w + b, the variance over
     * the row (not unbiased); w and b of length ne0. In place allowed. */
    brasa_status (*layer_norm)(bk_device *dev, const bk_tensor *x, const bk_tensor *w, const bk_tensor *b, float eps,
                               bk_tensor *y, brasa_error *err);
    /* y = act(x), elementwise (an ungated FFN). In place allowed. */
    brasa_status (*act)(bk_device *dev, const bk_tensor *x, bk_act act, bk_tensor *y, brasa_error *err);

    /* ---- routed experts (mixture of experts); ids and weights stay on the device ---- */
    /* For each token t (row of logits, n_expert wide): the k experts of largest logit (ties: the
     * lower index first), in decreasing order, into ids (n_tok, k) i32, and their softmax
     * probabilities over all n_expert into weights (n_tok, k) f32, divided by the k's sum when
     * renorm (which is the softmax over the chosen k's logits). */
    brasa_status (*moe_route)(bk_device *dev, const bk_tensor *logits, int32_t k, bool renorm, bk_tensor *ids,
                              bk_tensor *weights, brasa_error *err);
    /* Products by expert: for token t's slot j (of ids' k), row t*k + j of each outs[i].y is
     * outs[i].w's expert ids[t][j] (w: ne2 experts of (n_out, n_in)) times x's row t when x has
     * n_tok rows (the token's input, shared by its slots), or row t*k + j when x has n_tok*k rows;
     * plus row ids[t][j] of outs[i].bias (ne2 rows of n_out f32) where a product has one.
     * The slots that chose one expert go together, so each expert's weights are read once a batch;
     * a slot's result does not depend on the others (bit for bit up to BK_BATCH_EXACT_MAX tokens).
     * Biases (outs[i].bias) are not taken: NULL. */
    brasa_status (*matmul_id)(bk_device *dev, const bk_tensor *x, const bk_tensor *ids, const bk_matmul_out *outs, int n,
                              brasa_error *err);
    /* out[t] = sum over j of weights[t][j] * y[t*k + j], j in order; y: (n_tok*k, ne0), weights: (n_tok, k) */
    brasa_status (*moe_sum)(bk_device *dev, const bk_tensor *y, const bk_tensor *weights, bk_tensor *out, brasa_error *err);

    /* Optional (NULL: nothing to do). Readies a constant host tensor for use on dev now, as its
     * first use otherwise would (a GPU copies it into device memory), so that a model's weights
     * are uploaded once at context creation, with progress, instead of during the first tokens. */
    brasa_status (*keep)(bk_device *dev, const bk_tensor *t, brasa_error *err);
    /* Optional (NULL: never). Offers the host memory constant tensors live in (the model file's
     * mapping): a GPU that shares the host's memory (an integrated one) maps it and reads the
     * weights in place instead of copying them. Returns whether it does. */
    bool (*map_host)(bk_device *dev, const void *base, size_t bytes);
} bk_device_ops;

struct bk_device {
    const bk_device_ops *ops;
    void *impl; /* the backend's own state */
};

/* The CPU device, running kernels on n_threads threads. */
brasa_status bk_cpu_create(int n_threads, bk_device **out, brasa_error *err);
void bk_cpu_free(bk_device *dev);
/* The CPU device's instruction-set path: "scalar", "avx2". */
const char *bk_cpu_kernels_name(const bk_device *dev);

/* Makes a tensor view: rows of type `type` at data on dev. */
bk_tensor bk_view(bk_device *dev, uint32_t type, int64_t ne0, int64_t ne1, void *data);
/* A 3-D view: ne2 experts of ne1 rows each. */
bk_tensor bk_view3(bk_device *dev, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, void *data);
/* The same tensor restricted to rows [row0, row0 + n) (of a 2-D tensor). */
bk_tensor bk_rows(const bk_tensor *t, int64_t row0, int64_t n);
/* Expert e of a 3-D tensor, as a 2-D tensor of ne1 rows. */
bk_tensor bk_expert(const bk_tensor *t, int64_t e);
/* Bytes of the whole tensor, every expert included; 0 for an absent one (data NULL). */
uint64_t bk_bytes(const bk_tensor *t);

/* Moves rows between tensors on possibly different devices (through the host when needed). */
brasa_status bk_copy(const bk_tensor *src, bk_tensor *dst, brasa_error *err);

#endif
