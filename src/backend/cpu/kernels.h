/* kernels.h: the CPU kernel table. Each instruction-set path (scalar, AVX2, AVX-512 VNNI, NEON, NEON with sdot)
 * fills one table with the same signatures; the table is chosen once per device from the CPU's
 * features, or forced by the BRASA_CPU_KERNELS environment variable (scalar, avx2, avx512vnni,
 * neon, neon-dotprod) so tests can compare every path with the scalar reference on one machine. */
#ifndef BRASA_CPU_KERNELS_H
#define BRASA_CPU_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "brasa.h"
#include "quant/quant.h"

/* Activations quantized to 8 bits for integer products with the weight blocks (decode). One scale
 * per block of the weights' size, and the code sums that the formats' offsets and minimums need. */
typedef struct act_q8_32 {
    float d;      /* x ~ d * q */
    float s;      /* d * the sum of the 32 codes, right after d: kernels load the pair at once */
    int8_t q[32];
} act_q8_32;

/* For K-quants: one float scale per 256 and an integer scale per 32 (1..127), so that one large
 * activation (Qwen2.5's hidden states have a few channels a hundred times the rest) does not
 * flatten the other 255 values of its block to a few steps, while the products stay integer up to
 * the block: x[i] ~ d * s[i / 32] * q[i]. */
typedef struct act_q8_256 {
    float d;
    int16_t bsums[16]; /* sums of each 16 codes q */
    int16_t s[8];      /* sub-block scales */
    int16_t sp[16];    /* the same, each twice (one per 16 values): the layout the kernels multiply by */
    float ms[8];       /* s[j] * the sum of sub-block j's codes, exactly: the term a K-quant's minimums
                        * multiply, made once per token instead of once per eight weight rows */
    float ds[8];       /* d * s[j], the sub-block's float scale, made once per token */
    int32_t neg_off8[32];  /* -32 * the sum of codes 16g + 4e + (0..3, 8..11) (neg_off8[2g + e]): what a
                            * lane of the VNNI eight-row Q6_K layout adds to take off its codes'
                            * +32, negated here so that its sums start from it */
    int8_t q[256];
    int8_t qx[256]; /* q with each 64 values' halves interleaved four by four: qx[64p + 8m + i] =
                     * q[64p + 4m + i], qx[64p + 8m + 4 + i] = q[64p + 32 + 4m + i] (m < 8, i < 4), so
                     * that 8 bytes hold four values of sub-block 2p and the same four of 2p + 1:
                     * what a lane pair of the VNNI Q4_K/Q5_K layout takes, one sub-block a lane */
} act_q8_256;

/* The scalar quantizers: n floats (a multiple of 32 or 256), round to nearest with ties away from
 * zero; NaN becomes code 0 and infinite blocks all zeros. Each path's table has its own, which
 * must give these bytes exactly (tested), so paths differ only in their products. */
void cpu_quantize_q8_32(const float *x, act_q8_32 *out, int64_t n);
void cpu_quantize_q8_256(const float *x, act_q8_256 *out, int64_t n);
/* The scales both take from a block's (sub-blocks') largest magnitude, shared by every path. */
void cpu_q8_32_scale(float amax, float *d, float *id);
void cpu_q8_256_scales(const float sub[8], float *d, int16_t s[8], float id[8]);
/* A 256-value block's per-token products of d, s, bsums and q the kernels read (ms, ds, qx), set once
 * those are; shared by every quantizer, so every path has the same bytes. */
void cpu_q8_256_products(act_q8_256 *a);
/* The gated activations the paths vectorize. GELU is its tanh form, written as v * sigmoid(2u)
 * (the same function: (1 + tanh u) / 2 = 1 / (1 + exp(-2u))), so both need only exp. */
typedef enum cpu_glu_kind { CPU_GLU_SILU, CPU_GLU_GELU_TANH, CPU_GLU_SWIGLU_OAI } cpu_glu_kind;
/* The clamped SwiGLU's limit and its sigmoid's slope (OpenAI's constants). */
#define SWIGLU_OAI_LIMIT 7.0f
#define SWIGLU_OAI_ALPHA 1.702f
/* y[i] = act(g[i]) * u[i] (u NULL: act(g[i])), scalar. gpt-oss's clamped SwiGLU is
 * g' sigmoid(1.702 g') (u' + 1), g' = min(g, 7), u' = u clamped to [-7, 7] (OpenAI's reference
 * implementation, gpt_oss/torch/model.py swiglu(x, alpha=1.702, limit=7.0); llama.cpp's
 * ggml_swiglu_oai; a NaN clamps to the limit as the vectors' min and max do).  exp is brasa's own: a clamp to [-87, 88],
 * n = rint(x log2 e), x - n ln 2 in two steps, a degree-7 polynomial, times 2^n; within a few ulp
 * of the true exp, and made of single correctly rounded operations (multiply, add, divide: no
 * fused multiply-add, whose library versions differ) that every path's vectors repeat in the same
 * order, so every path, on every system, gives these bits. */
void cpu_glu_scalar(cpu_glu_kind kind, const float *g, const float *u, float *y, int64_t n);
/* The exp both take (kernels_scalar.c's exp_steps) and every path's vectors repeat step for step:
 * its clamp, log2(e), ln 2 in two parts (n times the first is exact), and the minimax
 * coefficients of e^r - 1 - r on [-ln2/2, ln2/2], highest first. One table, so the twins cannot
 * drift apart. */
#define CPU_EXP_LO (-87.0f)
#define CPU_EXP_HI 88.0f
#define CPU_EXP_LOG2E 1.44269504088896341f
#define CPU_EXP_LN2_HI 0.693359375f
#define CPU_EXP_LN2_LO 2.12194440e-4f
#define CPU_EXP_P5 1.9875691500e-4f
#define CPU_EXP_P4 1.3981999507e-3f
#define CPU_EXP_P3 8.3334519073e-3f
#define CPU_EXP_P2 4.1665795894e-2f
#define CPU_EXP_P1 1.6666665459e-1f
#define CPU_EXP_P0 5.0000001201e-1f
/* Attention's softmax over a tile of scores: s[i] = exp(s[i] - m) in cpu_glu_scalar's exp (a NaN
 * stays NaN), and their sum: the first n - n % 8 in eight lanes (lane i % 8) reduced as the
 * vectors' hsum does, ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), plus the rest summed in
 * order. One call per tile instead of libm's expf per score (a tenth of a prompt's attention). */
float cpu_exp_sum_scalar(float *s, int64_t n, float m);
/* The scalar half-precision conversions (core/f16.h in a loop), for paths without their own. */
void cpu_f16_from_f32(const float *x, uint16_t *y, int64_t n);
void cpu_f16_to_f32(const uint16_t *x, float *y, int64_t n);

/* The x8_gemm call a thread makes next: its weights' format, eight-row groups, row width and group
 * count. A product's weights come from memory once per block of tokens, and a call that starts on
 * weights nobody asked for waits on them: the call before fetches them while it computes. */
typedef struct x8_next {
    uint32_t type;
    const void *packed;
    int64_t k, n8;
} x8_next;

/* A prompt's attention, many queries over the same keys: the queries of a block of tokens sharing
 * a KV head held in lanes (ATTN_LANES_MAX at most, in vectors of the path's width), so that each
 * key and value multiplies all of them in one register tile and the softmax steps run across the
 * queries. Arrays [i][lane] are lanes floats apart. */
#define ATTN_LANES_MAX 96
#define ATTN_LANES_TILE 64 /* keys a tile takes at most */
typedef struct attn_lanes {
    int lanes, head_dim;
    float scale;
    const float *qt;          /* [head_dim][lane]: the queries, transposed */
    const int32_t *first;     /* [lane]: the first and last key each query sees (last < first: none) */
    const int32_t *last;
    float *max, *sum;         /* [lane]: the running maximum and sum of the softmax */
    float *acc;               /* [head_dim][lane]: the outputs so far, times sum */
    float *s;                 /* [ATTN_LANES_TILE][lane]: scratch for the scores */
} attn_lanes;

typedef struct cpu_kernels {
    const char *name;
    /* sum_i a[i] * b[i] */
    float (*dot_f32)(const float *a, const float *b, int64_t n);
    /* y[i] += a * x[i] (attention's weighted sum of values) */
    void (*axpy_f32)(float *y, float a, const float *x, int64_t n);
    /* Attention over a run of n cache rows (xs floats apart), bit for bit the one-row kernels in a
     * loop, without a call per row and with q or y held in registers: out[r] = dot_f32(q, x + r * xs,
     * n_el); and y += a[r] * (x + r * xs) for r = 0 .. n - 1 in that order. NULL: the loop. */
    void (*dot_rows_f32)(const float *q, const float *x, size_t xs, int n, int64_t n_el, float *out);
    void (*axpy_rows_f32)(float *y, const float *a, const float *x, size_t xs, int n, int64_t n_el);
    /* n values between float and half precision (a KV cache in f16): exactly f32_to_f16 (round to
     * nearest even) and f16_to_f32, so every path stores and reads the same bits; never NULL */
    void (*f16_from_f32)(const float *x, uint16_t *y, int64_t n);
    void (*f16_to_f32)(const uint16_t *x, float *y, int64_t n);
    /* The run kernels over rows of halves (an f16 KV cache, xs halves apart), for n_el a multiple
     * of 8: bit for bit the f32 ones on the converted rows. NULL: the backend converts each tile. */
    void (*dot_rows_f16)(const float *q, const uint16_t *x, size_t xs, int n, int64_t n_el, float *out);
    void (*axpy_rows_f16)(float *y, const float *a, const uint16_t *x, size_t xs, int n, int64_t n_el);
    /* cpu_glu_scalar, bit for bit; never NULL */
    void (*glu)(cpu_glu_kind kind, const float *g, const float *u, float *y, int64_t n);
    /* cpu_exp_sum_scalar, bit for bit; never NULL */
    float (*exp_sum)(float *s, int64_t n, float m);
    /* The same over the same rows for nq (1..f16_heads_max) query heads at once (a group sharing a
     * KV head): each value converted once serves every head, and each head's results are bit for
     * bit the one-head kernels' (out[h][r], y[h] with weights a[h]). NULL: the one-head kernels
     * per head. */
    void (*dot_rows_f16_heads)(const float *const *q, int nq, const uint16_t *x, size_t xs, int n, int64_t n_el,
                               float *const *out);
    void (*axpy_rows_f16_heads)(float *const *y, const float *const *a, int nq, const uint16_t *x, size_t xs, int n,
                                int64_t n_el);
    int f16_heads_max;
    /* One tile of n keys (key0 .. key0 + n - 1; n <= ATTN_LANES_TILE, a multiple of 8, the rows past
     * the last real key zero and past every query's last) for a's queries: k and v rows of head_dim
     * floats (head_dim a multiple of 8). The scores scaled, those outside a query's keys left out,
     * the maximum and sum carried on (online softmax) and the outputs rescaled and added to. lanes
     * a multiple of attn_width.
     * NULL: the backend takes one query at a time. */
    void (*attn_tile)(const attn_lanes *a, int64_t key0, int n, const float *k, const float *v);
    int attn_width;
    /* the activation quantizers above, bit for bit; never NULL */
    void (*quantize_q8_32)(const float *x, act_q8_32 *out, int64_t n);
    void (*quantize_q8_256)(const float *x, act_q8_256 *out, int64_t n);
    /* sum_i dequant(row)[i] * x[i] straight from the blocks (n a whole number of blocks); NULL for
     * types without a fused kernel, which fall back to dequantize + dot_f32 */
    float (*dot_row[QUANT_TYPE_COUNT])(const void *row, const float *x, int64_t n);
    /* y[t * ys + r] = sum_i w[r * ws + i] * x[t * xs + i] for r < n_rows, t < n_tok (strides in
     * floats). Each output is summed in the same order whatever n_rows and n_tok are, so splitting
     * the rows between threads never changes a result. */
    void (*gemm_f32)(const float *w, size_t ws, int64_t n_rows, const float *x, size_t xs, int64_t n_tok, int64_t k,
                     float *y, size_t ys);
    /* sum_i dequant(row)[i] * dequant(xq)[i] with integer products inside each block; xq is
     * act_q8_32 for 32-element weight blocks, act_q8_256 for K-quants. NULL where not provided. */
    float (*dot_q8[QUANT_TYPE_COUNT])(const void *row, const void *xq, int64_t n);
    /* dot_q8 of one row with four tokens' activations (xq, xq + xs, ... in bytes): y[t * ys] for
     * t < 4, bit for bit what dot_q8 gives for each, with the row's codes unpacked once (prefill).
     * NULL where not provided. */
    void (*dot_q8_x4[QUANT_TYPE_COUNT])(const void *row, const void *xq, size_t xs, int64_t n, float *y, size_t ys);
    /* Prefill by eight rows, where a path has a faster layout for it: x8_repack lays out rows
     * (eight, row_bytes apart, k values each) in x8_bytes(k) bytes of scratch, and x8_gemm multiplies
     * n8 such groups, one after another, with n_tok tokens' activations: y[t * ys + 8g + r] for
     * group g and r < 8 (a path may take several groups at once; each row's bits are the same
     * whatever n8). The integer sums are exact; the float steps differ in order from dot_q8's
     * (within 1e-5 of the sum of |w x|, tested). NULL where not provided.
     * next, where not NULL, is the call the thread makes after this one, whose first weights this
     * one asks the caches for while it computes (a path may ignore it; it never changes a result). */
    size_t (*x8_bytes[QUANT_TYPE_COUNT])(int64_t k);
    void (*x8_repack[QUANT_TYPE_COUNT])(const void *rows, size_t row_bytes, int64_t k, void *packed);
    void (*x8_gemm[QUANT_TYPE_COUNT])(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y,
                                      size_t ys, const x8_next *next);
    /* Values of each row x8_gemm takes at a time across all of a call's groups before the next ones
     * (0: whole rows, group by group): a call's tokens' activations are held one such slice at a
     * time, which is what decides how many tokens a call can take from the second-level cache. */
    int32_t x8_slice[QUANT_TYPE_COUNT];
    /* Where true, the eight-row layout is no larger than the rows and x8_gemm gives each token the
     * same bits whatever n_tok is: the backend builds the layout once per weight tensor, keeps it
     * (in place of the file's pages) and uses it for every product, one token or a prompt, so a
     * sequence decoded beside others gets exactly what it gets alone. */
    bool x8_keep[QUANT_TYPE_COUNT];
} cpu_kernels;

/* A four-token product (dot_q8_x4) made of four one-token ones, for formats or paths without a
 * tile that shares the unpacking: bit for bit dot_q8 by construction. attr: the path's function
 * attributes (its instruction-set target), or nothing. */
#define CPU_Q8_X4_OF(attr, x4, one)                                                                     \
    attr static void x4(const void *row, const void *xq, size_t xs, int64_t n, float *y, size_t ys) {  \
        for (int t = 0; t < 4; t++)                                                                     \
            y[(size_t)t * ys] = one(row, (const char *)xq + (size_t)t * xs, n);                         \
    }

/* What this CPU and operating system support (x86: cpuid and xgetbv). */
typedef struct cpu_features {
    bool avx, avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16, neon, dotprod;
} cpu_features;

void cpu_detect_features(cpu_features *f);
/* The features as text, e.g. "avx2 fma f16c avx512f" ("none" when there are none). */
void cpu_features_text(const cpu_features *f, char *buf, size_t size);

/* Whether the products quantize activations to 8 bits and use integer block products (the
 * default, BRASA_CPU_ACTIVATIONS=q8: about 2.5x faster decode and 1.9x faster prefill on Qwen2.5
 * 1.5B, perplexity within about 3%) or keep them in float (BRASA_CPU_ACTIVATIONS=f32: exact to
 * float rounding, what the reference forward pass is compared with). Any other value is an error. */
brasa_status cpu_activations_q8(bool *q8, brasa_error *err);

/* The best table this machine runs, or the one named by BRASA_CPU_KERNELS; an error when that one
 * is unknown or unsupported here. */
brasa_status cpu_kernels_select(const cpu_kernels **out, brasa_error *err);

/* The paths, for tests and for cpu_kernels_select; NULL in builds for another architecture. */
const cpu_kernels *cpu_kernels_scalar(void);
const cpu_kernels *cpu_kernels_avx2(void);
const cpu_kernels *cpu_kernels_avx512_vnni(void); /* the AVX2 kernels with VNNI byte products */
const cpu_kernels *cpu_kernels_neon(void);
const cpu_kernels *cpu_kernels_neon_dotprod(void);

#endif
