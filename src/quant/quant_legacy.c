/* quant_legacy.c: the 32-element block formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and MXFP4.
 * Layouts follow ggml's block definitions; each value is scale * code (+ min), computed in float in
 * the same order as the gguf package's NumPy reference so that results are bit-identical. */
#include <string.h>

#include "core/f16.h"
#include "quant/quant.h"

void quant_dequantize_q4_0(const void *src, float *out, int64_t n) {
    const block_q4_0 *b = src;
    for (int64_t i = 0; i < n / QK4_0; i++, out += QK4_0) {
        const float d = f16_to_f32(b[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            out[j] = d * (float)((b[i].qs[j] & 0x0f) - 8);
            out[j + QK4_0 / 2] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}

void quant_dequantize_q4_1(const void *src, float *out, int64_t n) {
    const block_q4_1 *b = src;
    for (int64_t i = 0; i < n / QK4_1; i++, out += QK4_1) {
        const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            out[j] = d * (float)(b[i].qs[j] & 0x0f) + m;
            out[j + QK4_1 / 2] = d * (float)(b[i].qs[j] >> 4) + m;
        }
    }
}

/* The fifth bit of code j (0..31) sits at bit j of the little-endian qh word. */
static uint32_t load_qh(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

void quant_dequantize_q5_0(const void *src, float *out, int64_t n) {
    const block_q5_0 *b = src;
    for (int64_t i = 0; i < n / QK5_0; i++, out += QK5_0) {
        const float d = f16_to_f32(b[i].d);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            int lo = (b[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
            int hi = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            out[j] = d * (float)(lo - 16);
            out[j + QK5_0 / 2] = d * (float)(hi - 16);
        }
    }
}

void quant_dequantize_q5_1(const void *src, float *out, int64_t n) {
    const block_q5_1 *b = src;
    for (int64_t i = 0; i < n / QK5_1; i++, out += QK5_1) {
        const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            int lo = (b[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
            int hi = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            out[j] = d * (float)lo + m;
            out[j + QK5_1 / 2] = d * (float)hi + m;
        }
    }
}

void quant_dequantize_q8_0(const void *src, float *out, int64_t n) {
    const block_q8_0 *b = src;
    for (int64_t i = 0; i < n / QK8_0; i++, out += QK8_0) {
        const float d = f16_to_f32(b[i].d);
        for (int j = 0; j < QK8_0; j++)
            out[j] = d * (float)b[i].qs[j];
    }
}

const int8_t quant_mxfp4_values[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

void quant_dequantize_mxfp4(const void *src, float *out, int64_t n) {
    const block_mxfp4 *b = src;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, out += QK_MXFP4) {
        const float d = quant_e8m0_half(b[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            out[j] = d * (float)quant_mxfp4_values[b[i].qs[j] & 0x0f];
            out[j + QK_MXFP4 / 2] = d * (float)quant_mxfp4_values[b[i].qs[j] >> 4];
        }
    }
}
