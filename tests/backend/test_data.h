/* test_data.h: the kernel tests' random data: a fixed xorshift, so every run sees the same numbers,
 * and rows of quantized blocks made from it. */
#ifndef BRASA_TESTS_BACKEND_TEST_DATA_H
#define BRASA_TESTS_BACKEND_TEST_DATA_H

#include <stdint.h>
#include <string.h>

#include "core/f16.h"
#include "quant/quant.h"

static uint64_t rng_state = 0x1234567887654321ull;

static inline uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Uniform in [-1, 1] in steps of 1e-6. */
static inline float rnd_unit(void) {
    return (float)(rnd() % 2000001) / 1000000.0f - 1.0f;
}

/* Random blocks with finite, moderate half-float scales at the type's scale offsets. */
static inline void fill_row(uint32_t type, uint8_t *row, int64_t n) {
    const quant_traits *t = quant_get(type);
    const size_t bytes = (size_t)(n / t->block_size) * (size_t)t->type_size;
    for (size_t i = 0; i < bytes; i++)
        row[i] = (uint8_t)rnd();
    size_t offsets[2] = { 0, 0 };
    int n_off = 0;
    switch (type) {
    case QUANT_F32:
        for (int64_t i = 0; i < n; i++) {
            float v = rnd_unit();
            memcpy(row + 4 * i, &v, 4);
        }
        return;
    case QUANT_F16:
    case QUANT_BF16:
        for (int64_t i = 0; i < n; i++) {
            float v = rnd_unit();
            uint16_t h = type == QUANT_F16 ? f32_to_f16(v) : (uint16_t)(f32_bits(v) >> 16);
            memcpy(row + 2 * i, &h, 2);
        }
        return;
    case QUANT_Q4_0: case QUANT_Q5_0: case QUANT_Q8_0: n_off = 1; break;
    case QUANT_Q4_1: case QUANT_Q5_1: case QUANT_Q4_K: case QUANT_Q5_K: offsets[1] = 2; n_off = 2; break;
    case QUANT_Q6_K: offsets[0] = 208; n_off = 1; break;
    case QUANT_MXFP4: /* the exponent byte: scales 2^-10 .. 2^-6, values up to 0.19 as the others' */
        for (size_t b = 0; b < bytes; b += (size_t)t->type_size)
            row[b] = (uint8_t)(118 + rnd() % 5);
        return;
    default: return;
    }
    for (size_t b = 0; b < bytes; b += (size_t)t->type_size)
        for (int k = 0; k < n_off; k++) {
            uint16_t h = f32_to_f16(rnd_unit() * 0.05f);
            memcpy(row + b + offsets[k], &h, 2);
        }
}

#endif
