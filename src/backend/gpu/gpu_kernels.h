/* gpu_kernels.h: the GPU kernels' launchers, callable from C. One source (gpu_kernels.cu) built
 * by nvcc for NVIDIA, by hipcc for AMD and as plain C++ for the tests' CPU executor.
 *
 * Every pointer is device memory; activations are f32 rows given with their stride in elements;
 * weights are rows of one quantization type (quant.h) given with their stride in bytes. Launchers
 * enqueue on the stream of `ex` and return at once; they return 0, or -1 for a type or shape they
 * have no kernel for (checked before anything is enqueued). Launch failures surface at the next
 * runtime call, which the backend checks.
 */
#ifndef BRASA_GPU_KERNELS_H
#define BRASA_GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gk_exec {
    void *stream; /* cudaStream_t / hipStream_t; NULL for the default stream */
    int warp;     /* the device's warp width: 32 (NVIDIA, RDNA) or 64 (CDNA) */
} gk_exec;

/* Longest head the attention kernel takes (each lane holds head_dim / warp of it). */
#define GK_HEAD_DIM_MAX 256
/* A matrix-vector pass reads each weight row once for up to this many tokens. */
#define GK_MATVEC_TOKENS_MAX 8
/* Up to this many tokens a product is matrix-vector passes (decode), every token summed in the
 * same order whatever the batch (bk's exact-batch promise); beyond, tiled matrix-matrix (prefill). */
#define GK_DECODE_TOKENS_MAX 15

/* Routed experts: at most this many experts in a layer and chosen per token (arch.h's
 * ARCH_MAX_EXPERTS and ARCH_MAX_EXPERTS_USED; the router keeps a token's logits in its warp's
 * registers, GK_EXPERTS_MAX / 32 a lane, and marks the chosen in one 32-bit word a lane). */
#define GK_EXPERTS_MAX 1024
#define GK_EXPERTS_USED_MAX 64

/* Whether matmul and get_rows have kernels for weights of this type. */
int gk_supports(uint32_t type);

/* The products come in variants, all computing the same sums: for decode, lanes per row (a row per
 * warp, or two or four rows sharing one) and warps per block; for prefill, the tile size, and
 * float or int8 arithmetic (the quantized formats' codes against activations quantized to 8 bits
 * per 32 values, with integer dot products; not for float weights). A variant
 * is a number from 0 to gk_variants(kind) - 1 for its kind; GK_VARIANT_DEFAULT lets a rule pick one
 * from the shape with no measuring. */
typedef enum gk_kind { GK_DECODE, GK_PREFILL } gk_kind;
#define GK_VARIANT_DEFAULT (-1)
int gk_variants(gk_kind kind);
/* Whether a variant has a kernel for weights of this type. */
int gk_variant_supports(gk_kind kind, int variant, uint32_t type);
/* A short name for a variant ("4 rows/warp, 8 warps/block", "32x32 tiles"); "?" for none. */
const char *gk_variant_name(gk_kind kind, int variant);
/* The variant the rule picks for a shape on a warp of `warp` lanes. */
int gk_default_variant(gk_kind kind, int64_t n_out, int64_t n_in, int warp);
/* The kind of product n_tok tokens make. */
gk_kind gk_kind_of(int64_t n_tok);

/* y[t][o] = sum_i w[o][i] * x[t][i] (+ bias[o]); w: (n_out, n_in), x: (n_tok, n_in), y: (n_tok, n_out),
 * with the given variant of its kind (or GK_VARIANT_DEFAULT) */
int gk_matmul(const gk_exec *ex, int variant, uint32_t type, const void *w, size_t w_row_bytes, int64_t n_out, int64_t n_in,
              const float *x, int64_t x_stride, int64_t n_tok, const float *bias, float *y, int64_t y_stride);
/* y[t] = table[ids[t]] dequantized; table: rows of ne0 values; ids on the device */
int gk_get_rows(const gk_exec *ex, uint32_t type, const void *table, size_t row_bytes, int64_t ne0, const int32_t *ids,
                int64_t n, float *y, int64_t y_stride);
/* RMS norm of every group of `group` values of each row, times w (length group, or NULL) */
int gk_rms_norm(const gk_exec *ex, const float *x, int64_t x_stride, int64_t n_rows, int64_t ne0, const float *w,
                int64_t group, float eps, float *y, int64_t y_stride);
int gk_add(const gk_exec *ex, const float *a, int64_t a_stride, const float *b, int64_t b_stride, float *y, int64_t y_stride,
           int64_t n_rows, int64_t ne0);
int gk_scale(const gk_exec *ex, float *x, int64_t x_stride, int64_t n_rows, int64_t ne0, float s);
int gk_softcap(const gk_exec *ex, float *x, int64_t x_stride, int64_t n_rows, int64_t ne0, float cap);
/* y = act(gate) * up; act 0: SiLU, 1: GELU (tanh approximation), 2: gpt-oss's clamped SwiGLU (its
 * own use of up), as bk_act */
int gk_glu(const gk_exec *ex, const float *gate, int64_t gate_stride, const float *up, int64_t up_stride, float *y,
           int64_t y_stride, int64_t n_rows, int64_t ne0, int act);
/* bk_rope_params with device pointers: the angle of pair i as that struct's comment gives it */
typedef struct gk_rope_params {
    int n_head, head_dim, rope_dim;
    int neox;                  /* pairs (i, i + rope_dim/2), else (2i, 2i+1) */
    float base, freq_scale;
    const float *freq_factors; /* NULL, or (rope_dim / 2) per-pair divisors */
    float ext_factor;          /* YaRN's mix; 0: none */
    float corr_low, corr_high;
    float mscale;              /* multiplies cos and sin */
} gk_rope_params;
/* rotary embedding in place, as bk_device_ops.rope; x: (n_tok, n_head * head_dim); pos on the device */
int gk_rope(const gk_exec *ex, float *x, int64_t x_stride, int64_t n_tok, const int32_t *pos, const gk_rope_params *p);
/* f32 rows into f16 rows (round to nearest even): the KV cache append */
int gk_f32_to_f16_rows(const gk_exec *ex, const float *src, int64_t src_stride, uint16_t *dst, int64_t dst_stride,
                       int64_t n_rows, int64_t ne0);
/* causal attention as bk_device_ops.attention: k and v are kv_rows rows of n_head_kv * head_dim
 * values (f32, or f16 when kv_f16), position j at row j mod kv_rows; pos, and sinks (NULL, or n_head
 * logits), on the device */
int gk_attention(const gk_exec *ex, const float *q, int64_t q_stride, const void *k, const void *v, int kv_f16,
                 int64_t kv_stride, int64_t kv_rows, const int32_t *pos, int64_t n_tok, int n_head, int n_head_kv,
                 int head_dim, float scale, float softcap, int window, const float *sinks, float *out, int64_t out_stride);

/* ---- routed experts (bk_device_ops.moe_route, matmul_id, moe_sum) ---- */

/* Each token's k experts of largest logit (ties: the lower index) in decreasing order into ids
 * (n_tok, k), their softmax probabilities over all n_expert into weights (n_tok, k), divided by
 * the k's sum when renorm; logits: (n_tok, n_expert) */
int gk_moe_route(const gk_exec *ex, const float *logits, int64_t logits_stride, int64_t n_tok, int n_expert, int k, int renorm,
                 int32_t *ids, int64_t ids_stride, float *weights, int64_t weights_stride);

/* A batch's slots (slot s = t * k + j is token t's j-th expert) grouped by expert, which
 * gk_moe_group writes into device memory of gk_moe_groups_bytes and gk_matmul_id reads: the number
 * of experts chosen (n_active), each expert's first slot in the order (offsets, n_expert + 1), the
 * chosen experts in increasing order (active, n_active of n_expert) and the slots sorted by expert,
 * each expert's in increasing order (perm, n_tok * k). Slots whose id is outside [0, n_expert) are
 * in no group (their outputs are not written). */
size_t gk_moe_groups_bytes(int n_expert, int64_t n_slots);
int gk_moe_group(const gk_exec *ex, const int32_t *ids, int64_t ids_stride, int64_t n_tok, int k, int n_expert, int32_t *groups);
/* y[s] = expert e's w times x's row s (x_per_slot) or s / k (the token's), for every slot s of
 * every expert e of groups; w: n_expert experts of (n_out, n_in), w_expert_bytes apart; y: (n_tok *
 * k, n_out). Matrix-vector passes over each expert's slots, GK_MATVEC_TOKENS_MAX at a time, with a
 * decode variant (GK_VARIANT_DEFAULT: the rule's): a slot's sums are, whatever the batch, the bits
 * gk_matmul's decode products give its input and expert with that variant. */
int gk_matmul_id(const gk_exec *ex, int variant, uint32_t type, const void *w, size_t w_row_bytes, size_t w_expert_bytes,
                 int64_t n_out, int64_t n_in, const float *x, int64_t x_stride, int x_per_slot, const int32_t *groups, int n_expert,
                 int64_t n_tok, int k, float *y, int64_t y_stride);
/* y[t * k + j] += bias[ids[t][j]] for every slot: the chosen experts' biases (bias: experts' rows
 * of n_out) */
int gk_moe_bias(const gk_exec *ex, float *y, int64_t y_stride, const int32_t *ids, int64_t ids_stride, int64_t n_tok, int k,
                const float *bias, int64_t bias_stride, int64_t n_out);
/* out[t] = sum over j in order of weights[t][j] * y[t * k + j]; y: (n_tok * k, ne0), out: (n_tok, ne0) */
int gk_moe_sum(const gk_exec *ex, const float *y, int64_t y_stride, const float *weights, int64_t weights_stride, int64_t n_tok,
               int k, int64_t ne0, float *out, int64_t out_stride);

#ifdef __cplusplus
}
#endif

#endif
