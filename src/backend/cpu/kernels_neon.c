/* kernels_neon.c: the NEON path for aarch64 (every ARMv8-A core has NEON, so no detection is needed
 * beyond the architecture). Same contract as the AVX2 path: block dot products straight from the
 * blocks with float activations, a register-tiled float product for prefill, integer products with
 * 8-bit activations (kernels_neon_q8.h), and each output summed in one fixed order.
 *
 * kernels_neon_dotprod.c compiles this file a second time with BRASA_NEON_DOTPROD defined: the
 * same kernels for cores with the dot-product extension (ARMv8.2 sdot), chosen at run time. */
#include "backend/cpu/kernels.h"

#if defined(__aarch64__) || defined(_M_ARM64)

#if defined(BRASA_NEON_DOTPROD)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif
#endif

#include <arm_neon.h>
#include <string.h>

#include "core/f16.h"

#if defined(BRASA_NEON_DOTPROD)
#define DOT4(acc, a, b) vdotq_s32((acc), (a), (b))
#define Q8(name) name##_dotprod
#else
/* Without sdot: widen the products to 16 bits (|product| <= 128 * 127, a pair <= 32512) and add
 * pairs of pairs into the lanes, so each lane holds exactly what sdot would put there. */
static inline int32x4_t dot4_widen(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b)), hi = vmull_high_s8(a, b);
    return vpadalq_s16(acc, vpaddq_s16(lo, hi));
}
#define DOT4(acc, a, b) dot4_widen((acc), (a), (b))
#define Q8(name) name##_neon
#endif

/* Values l = 16g .. 16g+15 of each quarter k of a Q6_K half block (ql: its 64 low-nibble bytes, qh:
 * its 32 high-bit bytes) as unsigned 6-bit codes in q[k] (0-63, before the -32). */
static inline void q6_codes16(const uint8_t *ql, const uint8_t *qh, int g, uint8x16_t q[4]) {
    const uint8x16_t l0 = vld1q_u8(ql + 16 * g), l1 = vld1q_u8(ql + 32 + 16 * g), h = vld1q_u8(qh + 16 * g);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m2 = vdupq_n_u8(3);
    q[0] = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(h, m2), 4));
    q[1] = vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m2), 4));
    q[2] = vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m2), 4));
    q[3] = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4));
}

#include "backend/cpu/kernels_neon_q8.h"

static float dot_f32(const float *a, const float *b, int64_t n) {
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

static void axpy_f32(float *y, float a, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* A KV cache in half precision: the conversion instructions round to nearest even (the default
 * rounding mode) and keep subnormals and quiet NaNs as f32_to_f16 does. */
static void half_from_f32(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++)
        y[i] = f32_to_f16(x[i]);
}

static void half_to_f32(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(x + i))));
    for (; i < n; i++)
        y[i] = f16_to_f32(x[i]);
}

/* Partial sums of 16 signed byte codes times x[0..15], in 4 lanes. */
static inline float32x4_t dot16(int8x16_t q, const float *x) {
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
    float32x4_t acc = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vld1q_f32(x));
    acc = vfmaq_f32(acc, vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), vld1q_f32(x + 4));
    acc = vfmaq_f32(acc, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vld1q_f32(x + 8));
    return vfmaq_f32(acc, vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), vld1q_f32(x + 12));
}

static inline float32x4_t sum16(const float *x) {
    return vaddq_f32(vaddq_f32(vld1q_f32(x), vld1q_f32(x + 4)), vaddq_f32(vld1q_f32(x + 8), vld1q_f32(x + 12)));
}

static float dot_q4_0(const void *row, const float *x, int64_t n) {
    const block_q4_0 *b = row;
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
        const uint8x16_t raw = vld1q_u8(b[i].qs);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0f))), vdupq_n_s8(8));
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), vdupq_n_s8(8));
        const float32x4_t s = vaddq_f32(dot16(lo, x), dot16(hi, x + 16));
        acc = vfmaq_f32(acc, s, vdupq_n_f32(f16_to_f32(b[i].d)));
    }
    return vaddvq_f32(acc);
}

static float dot_q4_1(const void *row, const float *x, int64_t n) {
    const block_q4_1 *b = row;
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / QK4_1; i++, x += QK4_1) {
        const uint8x16_t raw = vld1q_u8(b[i].qs);
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0f)));
        const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
        acc = vfmaq_f32(acc, vaddq_f32(dot16(lo, x), dot16(hi, x + 16)), vdupq_n_f32(f16_to_f32(b[i].d)));
        acc = vfmaq_f32(acc, vaddq_f32(sum16(x), sum16(x + 16)), vdupq_n_f32(f16_to_f32(b[i].m)));
    }
    return vaddvq_f32(acc);
}

static float dot_q8_0(const void *row, const float *x, int64_t n) {
    const block_q8_0 *b = row;
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        const float32x4_t s = vaddq_f32(dot16(vld1q_s8(b[i].qs), x), dot16(vld1q_s8(b[i].qs + 16), x + 16));
        acc = vfmaq_f32(acc, s, vdupq_n_f32(f16_to_f32(b[i].d)));
    }
    return vaddvq_f32(acc);
}

static float dot_q4_K(const void *row, const float *x, int64_t n) {
    const block_q4_K *b = row;
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
        for (int j = 0; j < 4; j++, x += 64) {
            uint8_t sc0, mn0, sc1, mn1;
            quant_k_scale_min(2 * j, b[i].scales, &sc0, &mn0);
            quant_k_scale_min(2 * j + 1, b[i].scales, &sc1, &mn1);
            const uint8_t *q = b[i].qs + 32 * j;
            float32x4_t s0 = vdupq_n_f32(0), s1 = s0;
            for (int h = 0; h < 2; h++) {
                const uint8x16_t raw = vld1q_u8(q + 16 * h);
                s0 = vaddq_f32(s0, dot16(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0f))), x + 16 * h));
                s1 = vaddq_f32(s1, dot16(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), x + 32 + 16 * h));
            }
            acc = vfmaq_f32(acc, s0, vdupq_n_f32(d * (float)sc0));
            acc = vfmaq_f32(acc, s1, vdupq_n_f32(d * (float)sc1));
            acc = vfmsq_f32(acc, vaddq_f32(sum16(x), sum16(x + 16)), vdupq_n_f32(dmin * (float)mn0));
            acc = vfmsq_f32(acc, vaddq_f32(sum16(x + 32), sum16(x + 48)), vdupq_n_f32(dmin * (float)mn1));
        }
    }
    return vaddvq_f32(acc);
}

static float dot_q6_K(const void *row, const float *x, int64_t n) {
    const block_q6_K *b = row;
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = f16_to_f32(b[i].d);
        for (int half = 0; half < 2; half++, x += 128) {
            const uint8_t *ql = b[i].ql + 64 * half, *qh = b[i].qh + 32 * half;
            const int8_t *sc = b[i].scales + 8 * half;
            for (int g = 0; g < 2; g++) { /* l in 16g .. 16g+15 */
                uint8x16_t q[4];
                q6_codes16(ql, qh, g, q);
                for (int k = 0; k < 4; k++) {
                    const int8x16_t v = vsubq_s8(vreinterpretq_s8_u8(q[k]), vdupq_n_s8(32));
                    acc = vfmaq_f32(acc, dot16(v, x + 32 * k + 16 * g), vdupq_n_f32(d * (float)sc[2 * k + g]));
                }
            }
        }
    }
    return vaddvq_f32(acc);
}

static float dot_f32_row(const void *row, const float *x, int64_t n) {
    return dot_f32(row, x, n);
}

/* One output of gemm_f32: one 4-lane accumulator, then the tail; the tile sums identically. */
static float dot4(const float *a, const float *b, int64_t k) {
    float32x4_t acc = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 4 <= k; i += 4)
        acc = vfmaq_f32(acc, vld1q_f32(a + i), vld1q_f32(b + i));
    float s = vaddvq_f32(acc);
    for (; i < k; i++)
        s += a[i] * b[i];
    return s;
}

/* 2 weight rows x 4 tokens per register tile, as on x86. */
static void gemm_f32(const float *w, size_t ws, int64_t n_rows, const float *x, size_t xs, int64_t n_tok, int64_t k,
                     float *y, size_t ys) {
    int64_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        const float *w0 = w + (size_t)r * ws, *w1 = w0 + ws;
        int64_t t = 0;
        for (; t + 4 <= n_tok; t += 4) {
            const float *xt[4] = { x + (size_t)t * xs, x + (size_t)(t + 1) * xs, x + (size_t)(t + 2) * xs,
                                   x + (size_t)(t + 3) * xs };
            float32x4_t a[4], c[4];
            for (int j = 0; j < 4; j++)
                a[j] = c[j] = vdupq_n_f32(0);
            int64_t i = 0;
            for (; i + 4 <= k; i += 4) {
                const float32x4_t u = vld1q_f32(w0 + i), v = vld1q_f32(w1 + i);
                for (int j = 0; j < 4; j++) {
                    const float32x4_t xv = vld1q_f32(xt[j] + i);
                    a[j] = vfmaq_f32(a[j], u, xv);
                    c[j] = vfmaq_f32(c[j], v, xv);
                }
            }
            for (int j = 0; j < 4; j++) {
                float s0 = vaddvq_f32(a[j]), s1 = vaddvq_f32(c[j]);
                for (int64_t l = i; l < k; l++) {
                    s0 += w0[l] * xt[j][l];
                    s1 += w1[l] * xt[j][l];
                }
                y[(size_t)(t + j) * ys + (size_t)r] = s0;
                y[(size_t)(t + j) * ys + (size_t)r + 1] = s1;
            }
        }
        for (; t < n_tok; t++) {
            y[(size_t)t * ys + (size_t)r] = dot4(w0, x + (size_t)t * xs, k);
            y[(size_t)t * ys + (size_t)r + 1] = dot4(w1, x + (size_t)t * xs, k);
        }
    }
    for (; r < n_rows; r++)
        for (int64_t t = 0; t < n_tok; t++)
            y[(size_t)t * ys + (size_t)r] = dot4(w + (size_t)r * ws, x + (size_t)t * xs, k);
}

#if defined(BRASA_NEON_DOTPROD)
#define NEON_NAME "neon-dotprod"
#define NEON_TABLE neon_dotprod
#define NEON_GETTER cpu_kernels_neon_dotprod
#else
#define NEON_NAME "neon"
#define NEON_TABLE neon
#define NEON_GETTER cpu_kernels_neon
#endif

static const cpu_kernels NEON_TABLE = {
    .name = NEON_NAME,
    .dot_f32 = dot_f32,
    .axpy_f32 = axpy_f32,
    .f16_from_f32 = half_from_f32,
    .f16_to_f32 = half_to_f32,
    .glu = cpu_glu_scalar,
    .exp_sum = cpu_exp_sum_scalar,
    .quantize_q8_32 = cpu_quantize_q8_32, /* scalar: NEON versions are still to come */
    .quantize_q8_256 = cpu_quantize_q8_256,
    .gemm_f32 = gemm_f32,
    .dot_row = {
        [QUANT_F32] = dot_f32_row, [QUANT_Q4_0] = dot_q4_0, [QUANT_Q4_1] = dot_q4_1, [QUANT_Q8_0] = dot_q8_0,
        [QUANT_Q4_K] = dot_q4_K, [QUANT_Q6_K] = dot_q6_K,
    },
    Q8_TABLES,
};

const cpu_kernels *NEON_GETTER(void) {
    return &NEON_TABLE;
}

#if defined(BRASA_NEON_DOTPROD) && defined(__clang__)
#pragma clang attribute pop
#endif

#elif defined(BRASA_NEON_DOTPROD)
const cpu_kernels *cpu_kernels_neon_dotprod(void) {
    return NULL;
}
#else
const cpu_kernels *cpu_kernels_neon(void) {
    return NULL;
}
#endif
