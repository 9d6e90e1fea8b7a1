/* kernels_neon_q8.h: the NEON integer products with 8-bit activations, written once and compiled
 * twice: by kernels_neon.c for every ARMv8-A core (DOT4 widens with vmull/vpadal) and by
 * kernels_neon_dotprod.c for cores with the dot-product extension (DOT4 is one sdot). Integer sums
 * are exact either way and the float steps are the same, so both give bit-identical results.
 *
 * Before including: DOT4(acc, a, b) adds the four 4-byte dot products of int8x16 a and b to the
 * int32x4 acc, Q8(name) gives a kernel its path's name, and q6_codes16 unpacks Q6_K codes. */
#include <arm_neon.h>
#include <string.h>

#include "core/f16.h"

/* 32 codes (two int8x16) times 32 activations: int32x4 partial sums. */
static inline int32x4_t Q8(dot32)(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    return DOT4(DOT4(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
}

/* Bit j of the 16 bits as byte j: 0x10 where set (the fifth bit of Q5 codes). */
static inline uint8x16_t Q8(bit5)(uint32_t bits16) {
    static const uint8_t pick[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)bits16), vdup_n_u8((uint8_t)(bits16 >> 8)));
    return vandq_u8(vtstq_u8(v, vld1q_u8(pick)), vdupq_n_u8(0x10));
}

/* A 32-value block's codes: low nibbles (elements 0-15) and high ones (16-31), with the fifth bits
 * of qhp (bit j for element j) unless it is NULL. */
static inline void Q8(codes32)(const uint8_t *qs, const uint8_t *qhp, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t raw = vld1q_u8(qs);
    uint8x16_t l = vandq_u8(raw, vdupq_n_u8(0x0f)), h = vshrq_n_u8(raw, 4);
    if (qhp) {
        uint32_t qh;
        memcpy(&qh, qhp, 4);
        l = vorrq_u8(l, Q8(bit5)(qh & 0xffff));
        h = vorrq_u8(h, Q8(bit5)(qh >> 16));
    }
    *lo = vreinterpretq_s8_u8(l);
    *hi = vreinterpretq_s8_u8(h);
}

/* The 4- and 5-bit formats: the integer dot scaled by d_w * d_x, plus the block's constant term
 * per unit of the activations' d * sum (QH: the fifth bits or NULL; CONST: -8 d and -16 d for the
 * codes stored +8 and +16, the minimum m for the others). */
#define Q8_32_KERNEL(name, block_t, QH, CONST)                                                          \
    static float Q8(name)(const void *row, const void *xq, int64_t n) {                                 \
        const block_t *w = row;                                                                         \
        const act_q8_32 *x = xq;                                                                        \
        float32x4_t acc = vdupq_n_f32(0);                                                               \
        float con = 0.0f;                                                                               \
        for (int64_t b = 0; b < n / 32; b++) {                                                          \
            int8x16_t lo, hi;                                                                           \
            Q8(codes32)(w[b].qs, QH, &lo, &hi);                                                         \
            acc = vfmaq_f32(acc, vcvtq_f32_s32(Q8(dot32)(lo, hi, x[b].q)), vdupq_n_f32(f16_to_f32(w[b].d) * x[b].d)); \
            con += (CONST) * x[b].s;                                                                    \
        }                                                                                               \
        return vaddvq_f32(acc) + con;                                                                   \
    }
Q8_32_KERNEL(q8_q4_0, block_q4_0, NULL, -8.0f * f16_to_f32(w[b].d))
Q8_32_KERNEL(q8_q4_1, block_q4_1, NULL, f16_to_f32(w[b].m))
Q8_32_KERNEL(q8_q5_0, block_q5_0, w[b].qh, -16.0f * f16_to_f32(w[b].d))
Q8_32_KERNEL(q8_q5_1, block_q5_1, w[b].qh, f16_to_f32(w[b].m))
#undef Q8_32_KERNEL

static float Q8(q8_q8_0)(const void *row, const void *xq, int64_t n) {
    const block_q8_0 *w = row;
    const act_q8_32 *x = xq;
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t b = 0; b < n / 32; b++) {
        const int32x4_t p = Q8(dot32)(vld1q_s8(w[b].qs), vld1q_s8(w[b].qs + 16), x[b].q);
        acc = vfmaq_f32(acc, vcvtq_f32_s32(p), vdupq_n_f32(f16_to_f32(w[b].d) * x[b].d));
    }
    return vaddvq_f32(acc);
}

/* Q4_K and Q5_K: per sub-block of 32, the integer dot times (weight scale x activation sub-scale,
 * at most 63 * 127) into int32 lanes (each lane sums 8 products per sub-block: below 2^31 over a
 * block), one float step per block. */
static float Q8(q8_q45_K)(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint16_t d, uint16_t dmin,
                          const act_q8_256 *x, float32x4_t *acc) {
    uint8_t sc[8], mn[8];
    quant_k_scales_unpack(scales, sc, mn);
    const uint8x16_t qh0 = qh ? vld1q_u8(qh) : vdupq_n_u8(0), qh1 = qh ? vld1q_u8(qh + 16) : vdupq_n_u8(0);
    int32x4_t isum = vdupq_n_s32(0);
    int32_t im = 0;
    for (int s = 0; s < 8; s++) {
        const uint8_t *q = qs + 32 * (s / 2);
        uint8x16_t a = vld1q_u8(q), c = vld1q_u8(q + 16);
        a = (s & 1) ? vshrq_n_u8(a, 4) : vandq_u8(a, vdupq_n_u8(0x0f));
        c = (s & 1) ? vshrq_n_u8(c, 4) : vandq_u8(c, vdupq_n_u8(0x0f));
        if (qh) { /* Q5_K: bit s of qh[l] is the fifth bit of element l of sub-block s */
            const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << s)), five = vdupq_n_u8(0x10);
            a = vorrq_u8(a, vandq_u8(vtstq_u8(qh0, bit), five));
            c = vorrq_u8(c, vandq_u8(vtstq_u8(qh1, bit), five));
        }
        const int32x4_t p = Q8(dot32)(vreinterpretq_s8_u8(a), vreinterpretq_s8_u8(c), x->q + 32 * s);
        isum = vmlaq_n_s32(isum, p, (int32_t)sc[s] * x->s[s]);
        im += (int32_t)mn[s] * x->s[s] * (x->bsums[2 * s] + x->bsums[2 * s + 1]);
    }
    *acc = vfmaq_f32(*acc, vcvtq_f32_s32(isum), vdupq_n_f32(f16_to_f32(d) * x->d));
    return f16_to_f32(dmin) * x->d * (float)im;
}

static float Q8(q8_q4_K)(const void *row, const void *xq, int64_t n) {
    const block_q4_K *w = row;
    const act_q8_256 *x = xq;
    float32x4_t acc = vdupq_n_f32(0);
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++)
        mins += Q8(q8_q45_K)(w[b].scales, w[b].qs, NULL, w[b].d, w[b].dmin, &x[b], &acc);
    return vaddvq_f32(acc) - mins;
}

static float Q8(q8_q5_K)(const void *row, const void *xq, int64_t n) {
    const block_q5_K *w = row;
    const act_q8_256 *x = xq;
    float32x4_t acc = vdupq_n_f32(0);
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++)
        mins += Q8(q8_q45_K)(w[b].scales, w[b].qs, w[b].qh, w[b].d, w[b].dmin, &x[b], &acc);
    return vaddvq_f32(acc) - mins;
}

/* Q6_K: sixteen groups of 16 with their own scale; each group's dot (at most 16 * 63 * 127) is
 * reduced to one number and scaled in 64 bits, as products of up to 16256 could overflow 32. */
static float Q8(q8_q6_K)(const void *row, const void *xq, int64_t n) {
    const block_q6_K *w = row;
    const act_q8_256 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        int64_t is = 0;
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = w[b].ql + 64 * half, *qh = w[b].qh + 32 * half;
            const int8_t *sc = w[b].scales + 8 * half, *q8 = x[b].q + 128 * half;
            for (int g = 0; g < 2; g++) { /* elements l in 16g .. 16g+15 of each quarter */
                uint8x16_t q[4];
                q6_codes16(ql, qh, g, q);
                for (int k = 0; k < 4; k++) {
                    const int32x4_t p = DOT4(vdupq_n_s32(0), vreinterpretq_s8_u8(q[k]), vld1q_s8(q8 + 32 * k + 16 * g));
                    const int32_t d = vaddvq_s32(p) - 32 * x[b].bsums[8 * half + 2 * k + g];
                    is += (int64_t)sc[2 * k + g] * x[b].s[4 * half + k] * d;
                }
            }
        }
        sum += f16_to_f32(w[b].d) * x[b].d * (float)is;
    }
    return sum;
}

/* MXFP4: the codes' values (signed integers) looked up by one table instruction per 16 */
static float Q8(q8_mxfp4)(const void *row, const void *xq, int64_t n) {
    const block_mxfp4 *w = row;
    const act_q8_32 *x = xq;
    const int8x16_t lut = vld1q_s8(quant_mxfp4_values);
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t b = 0; b < n / QK_MXFP4; b++) {
        const uint8x16_t raw = vld1q_u8(w[b].qs);
        const int8x16_t lo = vqtbl1q_s8(lut, vandq_u8(raw, vdupq_n_u8(0x0f))), hi = vqtbl1q_s8(lut, vshrq_n_u8(raw, 4));
        acc = vfmaq_f32(acc, vcvtq_f32_s32(Q8(dot32)(lo, hi, x[b].q)), vdupq_n_f32(quant_e8m0_half(w[b].e) * x[b].d));
    }
    return vaddvq_f32(acc);
}

/* Four tokens: the one-token kernel four times (a tile that shares the unpacking is still to come
 * on this path). */
CPU_Q8_X4_OF(, Q8(q8x4_q4_0), Q8(q8_q4_0))
CPU_Q8_X4_OF(, Q8(q8x4_q4_1), Q8(q8_q4_1))
CPU_Q8_X4_OF(, Q8(q8x4_q5_0), Q8(q8_q5_0))
CPU_Q8_X4_OF(, Q8(q8x4_q5_1), Q8(q8_q5_1))
CPU_Q8_X4_OF(, Q8(q8x4_q8_0), Q8(q8_q8_0))
CPU_Q8_X4_OF(, Q8(q8x4_q4_K), Q8(q8_q4_K))
CPU_Q8_X4_OF(, Q8(q8x4_q5_K), Q8(q8_q5_K))
CPU_Q8_X4_OF(, Q8(q8x4_q6_K), Q8(q8_q6_K))
CPU_Q8_X4_OF(, Q8(q8x4_mxfp4), Q8(q8_mxfp4))

#define Q8_TABLES                                                                                          \
    .dot_q8 = {                                                                                            \
        [QUANT_Q4_0] = Q8(q8_q4_0), [QUANT_Q4_1] = Q8(q8_q4_1), [QUANT_Q5_0] = Q8(q8_q5_0),                \
        [QUANT_Q5_1] = Q8(q8_q5_1), [QUANT_Q8_0] = Q8(q8_q8_0), [QUANT_Q4_K] = Q8(q8_q4_K),                \
        [QUANT_Q5_K] = Q8(q8_q5_K), [QUANT_Q6_K] = Q8(q8_q6_K), [QUANT_MXFP4] = Q8(q8_mxfp4),              \
    },                                                                                                     \
    .dot_q8_x4 = {                                                                                         \
        [QUANT_Q4_0] = Q8(q8x4_q4_0), [QUANT_Q4_1] = Q8(q8x4_q4_1), [QUANT_Q5_0] = Q8(q8x4_q5_0),          \
        [QUANT_Q5_1] = Q8(q8x4_q5_1), [QUANT_Q8_0] = Q8(q8x4_q8_0), [QUANT_Q4_K] = Q8(q8x4_q4_K),          \
        [QUANT_Q5_K] = Q8(q8x4_q5_K), [QUANT_Q6_K] = Q8(q8x4_q6_K), [QUANT_MXFP4] = Q8(q8x4_mxfp4),        \
    }
