/* quant_k.c: the K-quant super-block formats Q4_K, Q5_K and Q6_K (256 values per block).
 * Q4_K/Q5_K: 8 sub-blocks of 32, each with a 6-bit scale and 6-bit min scaled by d and dmin;
 * Q6_K: 16 sub-blocks of 16 with 8-bit scales. Arithmetic order matches the NumPy reference. */
#include "core/f16.h"
#include "quant/quant.h"

void quant_dequantize_q4_K(const void *src, float *out, int64_t n) {
    const block_q4_K *b = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs;
        for (int sub = 0; sub < 8; sub += 2, q += 32) {
            uint8_t sc, m;
            quant_k_scale_min(sub, b[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            quant_k_scale_min(sub + 1, b[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                *out++ = d1 * (float)(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; l++)
                *out++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void quant_dequantize_q5_K(const void *src, float *out, int64_t n) {
    const block_q5_K *b = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
        const uint8_t *ql = b[i].qs, *qh = b[i].qh;
        uint8_t bit_lo = 1, bit_hi = 2; /* the fifth bits of sub-blocks 2k and 2k+1 */
        for (int sub = 0; sub < 8; sub += 2, ql += 32, bit_lo <<= 2, bit_hi <<= 2) {
            uint8_t sc, m;
            quant_k_scale_min(sub, b[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            quant_k_scale_min(sub + 1, b[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                *out++ = d1 * (float)((ql[l] & 0x0f) + ((qh[l] & bit_lo) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *out++ = d2 * (float)((ql[l] >> 4) + ((qh[l] & bit_hi) ? 16 : 0)) - m2;
        }
    }
}

void quant_dequantize_q6_K(const void *src, float *out, int64_t n) {
    const block_q6_K *b = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = f16_to_f32(b[i].d);
        const uint8_t *ql = b[i].ql, *qh = b[i].qh;
        const int8_t *sc = b[i].scales;
        /* Two halves of 128 values; in each, value l + 32k takes its low nibble from ql and its
         * two high bits from bits 2k..2k+1 of qh[l]. */
        for (int half = 0; half < 2; half++, out += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                out[l] = (d * (float)sc[is + 0]) * (float)q1;
                out[l + 32] = (d * (float)sc[is + 2]) * (float)q2;
                out[l + 64] = (d * (float)sc[is + 4]) * (float)q3;
                out[l + 96] = (d * (float)sc[is + 6]) * (float)q4;
            }
        }
    }
}
