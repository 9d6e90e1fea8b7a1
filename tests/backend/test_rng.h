/* test_rng.h: the kernel tests' random numbers, a fixed xorshift so every run sees the same data. */
#ifndef BRASA_TESTS_BACKEND_TEST_RNG_H
#define BRASA_TESTS_BACKEND_TEST_RNG_H

#include <stdint.h>

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

#endif
