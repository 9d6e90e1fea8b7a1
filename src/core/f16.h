/* f16.h: IEEE half and bfloat16 to float, bit-exact (subnormals, infinities and NaN payloads kept),
 * so that dequantized weights equal NumPy's float16 -> float32 conversion. */
#ifndef BRASA_CORE_F16_H
#define BRASA_CORE_F16_H

#include <stdint.h>

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f); /* round to nearest even, as NumPy does */

static inline float bf16_to_f32(uint16_t b) {
    union { uint32_t u; float f; } v = { (uint32_t)b << 16 };
    return v.f;
}

static inline uint32_t f32_bits(float f) {
    union { float f; uint32_t u; } v = { f };
    return v.u;
}

static inline float f32_from_bits(uint32_t u) {
    union { uint32_t u; float f; } v = { u };
    return v.f;
}

#endif
