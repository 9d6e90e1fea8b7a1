/* quant_float.c: the unquantized element types, F32, F16 and BF16. */
#include <string.h>

#include "core/f16.h"
#include "quant/quant.h"

void quant_dequantize_f32(const void *src, float *out, int64_t n) {
    memcpy(out, src, (size_t)n * sizeof(float));
}

void quant_dequantize_f16(const void *src, float *out, int64_t n) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2); /* tensors are 32-byte aligned, but keep the reference alignment-free */
        out[i] = f16_to_f32(h);
    }
}

void quant_dequantize_bf16(const void *src, float *out, int64_t n) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t b;
        memcpy(&b, p + 2 * i, 2);
        out[i] = bf16_to_f32(b);
    }
}
