/* quant.h: the tensor element types of GGUF/ggml (numbers as in the file), their block layouts, and
 * the scalar reference kernels: dequantize a row, and dot a quantized row with a float vector.
 * These are plain C on purpose: fast SIMD kernels are tested against them. */
#ifndef BRASA_QUANT_H
#define BRASA_QUANT_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The type numbers stored in GGUF tensor infos. Gaps are types ggml has removed. */
typedef enum quant_type {
    QUANT_F32 = 0,
    QUANT_F16 = 1,
    QUANT_Q4_0 = 2,
    QUANT_Q4_1 = 3,
    QUANT_Q5_0 = 6,
    QUANT_Q5_1 = 7,
    QUANT_Q8_0 = 8,
    QUANT_Q8_1 = 9,
    QUANT_Q2_K = 10,
    QUANT_Q3_K = 11,
    QUANT_Q4_K = 12,
    QUANT_Q5_K = 13,
    QUANT_Q6_K = 14,
    QUANT_Q8_K = 15,
    QUANT_IQ2_XXS = 16,
    QUANT_IQ2_XS = 17,
    QUANT_IQ3_XXS = 18,
    QUANT_IQ1_S = 19,
    QUANT_IQ4_NL = 20,
    QUANT_IQ3_S = 21,
    QUANT_IQ2_S = 22,
    QUANT_IQ4_XS = 23,
    QUANT_I8 = 24,
    QUANT_I16 = 25,
    QUANT_I32 = 26,
    QUANT_I64 = 27,
    QUANT_F64 = 28,
    QUANT_IQ1_M = 29,
    QUANT_BF16 = 30,
    QUANT_TQ1_0 = 34,
    QUANT_TQ2_0 = 35,
    QUANT_MXFP4 = 39,
    QUANT_TYPE_COUNT = 40
} quant_type;

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK_K 256
#define K_SCALE_SIZE 12

/* Block layouts. Scales are IEEE half floats stored as raw bits. */
typedef struct block_q4_0 {
    uint16_t d;             /* scale */
    uint8_t qs[QK4_0 / 2];  /* 4-bit codes: low nibbles are values 0..15, high nibbles 16..31 */
} block_q4_0;
static_assert(sizeof(block_q4_0) == 18, "q4_0 block size");

typedef struct block_q4_1 {
    uint16_t d, m;          /* scale and minimum: x = d*q + m */
    uint8_t qs[QK4_1 / 2];
} block_q4_1;
static_assert(sizeof(block_q4_1) == 20, "q4_1 block size");

typedef struct block_q5_0 {
    uint16_t d;
    uint8_t qh[4];          /* fifth bits, little-endian 32-bit mask */
    uint8_t qs[QK5_0 / 2];
} block_q5_0;
static_assert(sizeof(block_q5_0) == 22, "q5_0 block size");

typedef struct block_q5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
} block_q5_1;
static_assert(sizeof(block_q5_1) == 24, "q5_1 block size");

typedef struct block_q8_0 {
    uint16_t d;
    int8_t qs[QK8_0];
} block_q8_0;
static_assert(sizeof(block_q8_0) == 34, "q8_0 block size");

/* MXFP4 (OCP microscaling, gpt-oss's experts): 32 four-bit E2M1 values sharing one E8M0 exponent.
 * Codes index quant_mxfp4_values (E2M1 doubled, so integers) and the scale is 2^(e - 128), half
 * of the E8M0 value to undo the doubling; low nibbles are values 0..15, high nibbles 16..31. */
#define QK_MXFP4 32
typedef struct block_mxfp4 {
    uint8_t e;              /* shared exponent, E8M0 */
    uint8_t qs[QK_MXFP4 / 2];
} block_mxfp4;
static_assert(sizeof(block_mxfp4) == 17, "mxfp4 block size");

/* E2M1's sixteen values, doubled: sign bit 3, then 0, 0.5, 1, 1.5, 2, 3, 4, 6 times two (the
 * vector kernels load it as their lookup table; 16 bytes, so one 128-bit load). */
extern const int8_t quant_mxfp4_values[16];

/* 2^(e - 128) exactly, as bits: a subnormal for e < 2 (e = 0 is 2^-128), and e = 255 is 2^127,
 * not NaN (ggml's reading of the format, which the files are written for). */
static inline float quant_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* K-quants: 256 values in 8 sub-blocks of 32 (Q4_K, Q5_K) or 16 sub-blocks of 16 (Q6_K). */
typedef struct block_q4_K {
    uint16_t d, dmin;              /* super-block scales for the 6-bit sub-block scales and mins */
    uint8_t scales[K_SCALE_SIZE];  /* 8 scales + 8 mins, 6 bits each, packed */
    uint8_t qs[QK_K / 2];
} block_q4_K;
static_assert(sizeof(block_q4_K) == 144, "q4_K block size");

typedef struct block_q5_K {
    uint16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;
static_assert(sizeof(block_q5_K) == 176, "q5_K block size");

typedef struct block_q6_K {
    uint8_t ql[QK_K / 2];     /* low 4 bits */
    uint8_t qh[QK_K / 4];     /* high 2 bits */
    int8_t scales[QK_K / 16]; /* 8-bit sub-block scales */
    uint16_t d;
} block_q6_K;
static_assert(sizeof(block_q6_K) == 210, "q6_K block size");

/* The j-th (0..7) 6-bit scale and min of a Q4_K/Q5_K block: the first four are stored in the low 6
 * bits of bytes 0..3 (scales) and 4..7 (mins); the last four are split into a nibble in bytes 8..11
 * and the two top bits of bytes 0..7. Inline: the SIMD kernels call it per sub-block. */
static inline void quant_k_scale_min(int j, const uint8_t *q, uint8_t *scale, uint8_t *min) {
    if (j < 4) {
        *scale = q[j] & 63;
        *min = q[j + 4] & 63;
    } else {
        *scale = (uint8_t)((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
        *min = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* All eight at once, the same values as quant_k_scale_min, with word operations: the low six bits
 * of bytes 0-7 hold scales 0-3 and minimums 0-3; bytes 8-11 hold the low four bits of the rest,
 * whose top two bits sit in bits 6-7 of bytes 0-7. Out: four words whose bytes, low first, are
 * scales 0-3, scales 4-7, minimums 0-3, minimums 4-7 (ready for a vector register). */
static inline void quant_k_scales_words(const uint8_t *q, uint32_t out[4]) {
    uint32_t w[3];
    for (int i = 0; i < 3; i++) /* byte by byte: no alignment or byte-order assumption */
        w[i] = (uint32_t)q[4 * i] | (uint32_t)q[4 * i + 1] << 8 | (uint32_t)q[4 * i + 2] << 16 | (uint32_t)q[4 * i + 3] << 24;
    out[0] = w[0] & 0x3f3f3f3fu;
    out[1] = (w[2] & 0x0f0f0f0fu) | ((w[0] >> 6) & 0x03030303u) << 4;
    out[2] = w[1] & 0x3f3f3f3fu;
    out[3] = ((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 6) & 0x03030303u) << 4;
}

static inline void quant_k_scales_unpack(const uint8_t *q, uint8_t scale[8], uint8_t min[8]) {
    uint32_t v[4];
    quant_k_scales_words(q, v);
    for (int i = 0; i < 8; i++) {
        scale[i] = (uint8_t)(v[i / 4] >> 8 * (i % 4));
        min[i] = (uint8_t)(v[2 + i / 4] >> 8 * (i % 4));
    }
}

typedef struct quant_traits {
    const char *name;     /* as ggml names it: "q4_K", "f16"; NULL for an unassigned number */
    int32_t block_size;   /* elements per block */
    int32_t type_size;    /* bytes per block */
    /* Reference kernels, NULL where this build cannot compute with the type. n is a multiple of
     * block_size. */
    void (*dequantize)(const void *blocks, float *out, int64_t n);
} quant_traits;

/* Traits of a type number, or NULL when the number is unknown. */
const quant_traits *quant_get(uint32_t type);
const char *quant_name(uint32_t type); /* "type 41" style text is the caller's job when NULL */

/* Bytes of a row of n elements; false when n is not a whole number of blocks or it overflows. */
bool quant_row_bytes(uint32_t type, int64_t n, uint64_t *bytes);

/* Dequantizes n elements (a whole number of blocks). Returns false for a type without a kernel. */
bool quant_dequantize(uint32_t type, const void *data, float *out, int64_t n);

/* Reference dot product of a quantized row with float x, n elements, accumulated in double. */
bool quant_dot(uint32_t type, const void *row, const float *x, int64_t n, double *result);

/* Kernels of each family, for the traits table. */
void quant_dequantize_f32(const void *src, float *out, int64_t n);
void quant_dequantize_f16(const void *src, float *out, int64_t n);
void quant_dequantize_bf16(const void *src, float *out, int64_t n);
void quant_dequantize_q4_0(const void *src, float *out, int64_t n);
void quant_dequantize_q4_1(const void *src, float *out, int64_t n);
void quant_dequantize_q5_0(const void *src, float *out, int64_t n);
void quant_dequantize_q5_1(const void *src, float *out, int64_t n);
void quant_dequantize_q8_0(const void *src, float *out, int64_t n);
void quant_dequantize_q4_K(const void *src, float *out, int64_t n);
void quant_dequantize_q5_K(const void *src, float *out, int64_t n);
void quant_dequantize_q6_K(const void *src, float *out, int64_t n);
void quant_dequantize_mxfp4(const void *src, float *out, int64_t n);

#endif
