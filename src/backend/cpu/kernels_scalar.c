/* kernels_scalar.c: the scalar path, the reference every SIMD path is tested against: block dot
 * products are literally dequantize-then-multiply, one block at a time. Also the feature detection
 * and the choice of path. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "platform/platform.h"
#include "core/f16.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define BRASA_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

/* A dot product with eight running sums: the fixed order keeps results reproducible. */
static float dot_f32_scalar(const float *a, const float *b, int64_t n) {
    float s[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            s[k] += a[i + k] * b[i + k];
    float sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

/* exp(x) in the steps cpu_glu_scalar names (cpu_exp_sum_scalar's too). The clamp keeps 2^n a
 * normal float (NaN becomes the low end, as the vectors' max does; the activations' v carries the
 * NaN through; a softmax's far tail gets e^-87 for about 0). The polynomial's
 * coefficients are the classic minimax ones for e^r - 1 - r on [-ln2/2, ln2/2]. Every step is a
 * separate multiply or add, each rounded once: no fused multiply-add, whose C library version is
 * not correctly rounded everywhere (MinGW's differs from the vectors' instruction). */
static float exp_steps(float x) {
    x = x > CPU_EXP_LO ? x : CPU_EXP_LO;
    x = x < CPU_EXP_HI ? x : CPU_EXP_HI;
    const float n = rintf(x * CPU_EXP_LOG2E);
    float r = x - n * CPU_EXP_LN2_HI; /* ln 2 in two parts: n times the first is exact */
    r = r + n * CPU_EXP_LN2_LO;
    float p = CPU_EXP_P5;
    p = p * r + CPU_EXP_P4;
    p = p * r + CPU_EXP_P3;
    p = p * r + CPU_EXP_P2;
    p = p * r + CPU_EXP_P1;
    p = p * r + CPU_EXP_P0;
    p = (p * (r * r) + r) + 1.0f;
    const int32_t bits = ((int32_t)n + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

void cpu_glu_scalar(cpu_glu_kind kind, const float *g, const float *u, float *y, int64_t n) {
    if (kind == CPU_GLU_SWIGLU_OAI) {
        for (int64_t i = 0; i < n; i++) {
            const float v = g[i] < SWIGLU_OAI_LIMIT ? g[i] : SWIGLU_OAI_LIMIT;
            const float a = v / (1.0f + exp_steps(-SWIGLU_OAI_ALPHA * v));
            if (!u) {
                y[i] = a;
                continue;
            }
            float w = u[i] < SWIGLU_OAI_LIMIT ? u[i] : SWIGLU_OAI_LIMIT;
            w = w > -SWIGLU_OAI_LIMIT ? w : -SWIGLU_OAI_LIMIT;
            y[i] = a * (w + 1.0f);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const float v = g[i];
        /* the argument of exp: -v for SiLU, -2u = -v (2k + 2k 0.044715 v^2) for GELU, k = sqrt(2/pi) */
        const float arg = kind == CPU_GLU_SILU ? -v : -v * (0.0713548162726008f * (v * v) + 1.5957691216057308f);
        const float a = v / (1.0f + exp_steps(arg));
        y[i] = u ? a * u[i] : a;
    }
}

float cpu_exp_sum_scalar(float *s, int64_t n, float m) {
    float lane[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            const float x = s[i + k] - m;
            s[i + k] = x != x ? x : exp_steps(x); /* a NaN score stays NaN (exp_steps clamps it) */
            lane[k] += s[i + k];
        }
    float tail = 0.0f;
    for (; i < n; i++) {
        const float x = s[i] - m;
        s[i] = x != x ? x : exp_steps(x);
        tail += s[i];
    }
    return (((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]))) + tail;
}

/* One generic fused kernel per type: dequantize a block into registers-sized scratch, multiply. */
static float dot_row_generic(uint32_t type, const void *row, const float *x, int64_t n) {
    const quant_traits *t = quant_get(type);
    float tmp[QK_K];
    const int64_t step = t->block_size == 1 ? QK_K : t->block_size;
    const uint8_t *p = row;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i += step) {
        const int64_t m = n - i < step ? n - i : step;
        t->dequantize(p, tmp, m);
        sum += dot_f32_scalar(tmp, x + i, m);
        p += (size_t)(m / t->block_size) * (size_t)t->type_size;
    }
    return sum;
}

#define GENERIC(T, name) \
    static float dot_row_##name(const void *row, const float *x, int64_t n) { return dot_row_generic(T, row, x, n); }
GENERIC(QUANT_F16, f16)
GENERIC(QUANT_BF16, bf16)
GENERIC(QUANT_Q4_0, q4_0)
GENERIC(QUANT_Q4_1, q4_1)
GENERIC(QUANT_Q5_0, q5_0)
GENERIC(QUANT_Q5_1, q5_1)
GENERIC(QUANT_Q8_0, q8_0)
GENERIC(QUANT_Q4_K, q4_K)
GENERIC(QUANT_Q5_K, q5_K)
GENERIC(QUANT_Q6_K, q6_K)
GENERIC(QUANT_MXFP4, mxfp4)

static float dot_row_f32(const void *row, const float *x, int64_t n) {
    return dot_f32_scalar(row, x, n);
}

static void gemm_f32_scalar(const float *w, size_t ws, int64_t n_rows, const float *x, size_t xs, int64_t n_tok,
                            int64_t k, float *y, size_t ys) {
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t t = 0; t < n_tok; t++)
            y[(size_t)t * ys + (size_t)r] = dot_f32_scalar(w + (size_t)r * ws, x + (size_t)t * xs, k);
}

/* ---- 8-bit activations ---- */

static int8_t round_q(float v) {
    if (v != v)
        return 0; /* NaN (a broken model's activations): no code to convert, and no undefined cast */
    float r = roundf(v);
    return (int8_t)(r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r);
}

void cpu_q8_32_scale(float amax, float *d, float *id) {
    if (!(amax < INFINITY))
        amax = 0.0f; /* infinite activations: all codes 0 rather than a NaN scale */
    *d = amax / 127.0f;
    *id = *d > 0.0f ? 1.0f / *d : 0.0f;
}

void cpu_q8_256_scales(const float sub[8], float *d, int16_t s[8], float id[8]) {
    float amax = 0.0f;
    for (int j = 0; j < 8; j++)
        amax = sub[j] > amax ? sub[j] : amax;
    if (!(amax < INFINITY))
        amax = 0.0f;
    /* the largest sub-block gets s = 127 and codes up to 127; smaller ones a smaller s */
    *d = amax / (127.0f * 127.0f);
    for (int j = 0; j < 8; j++) {
        float sj = amax > 0.0f ? ceilf(127.0f * sub[j] / amax) : 1.0f;
        sj = sj < 1.0f ? 1.0f : sj > 127.0f ? 127.0f : sj;
        s[j] = (int16_t)sj;
        id[j] = *d > 0.0f ? 1.0f / (*d * sj) : 0.0f;
    }
}

void cpu_quantize_q8_32(const float *x, act_q8_32 *out, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float amax = 0.0f, d, id;
        for (int i = 0; i < 32; i++)
            amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
        cpu_q8_32_scale(amax, &d, &id);
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) {
            out[b].q[i] = round_q(x[i] * id);
            sum += out[b].q[i];
        }
        out[b].d = d;
        out[b].s = d * (float)sum;
    }
}

void cpu_quantize_q8_256(const float *x, act_q8_256 *out, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++, x += 256) {
        float sub[8] = { 0 }, id[8];
        for (int i = 0; i < 256; i++)
            sub[i / 32] = fabsf(x[i]) > sub[i / 32] ? fabsf(x[i]) : sub[i / 32];
        cpu_q8_256_scales(sub, &out[b].d, out[b].s, id);
        for (int j = 0; j < 16; j++)
            out[b].sp[j] = out[b].s[j / 2];
        for (int i = 0; i < 256; i++)
            out[b].q[i] = round_q(x[i] * id[i / 32]);
        /* each 16 codes' sum from its two halves as neg_off8 splits them */
        for (int g = 0; g < 16; g++) {
            int32_t half[2] = { 0, 0 };
            for (int i = 0; i < 16; i++)
                half[i / 4 % 2] += out[b].q[16 * g + i];
            out[b].neg_off8[2 * g] = -32 * half[0];
            out[b].neg_off8[2 * g + 1] = -32 * half[1];
            out[b].bsums[g] = (int16_t)(half[0] + half[1]);
        }
        cpu_q8_256_products(&out[b]);
    }
}

void cpu_q8_256_products(act_q8_256 *a) {
    for (int j = 0; j < 8; j++) { /* |s * sum| < 127 * 32 * 127 < 2^24: exact in float */
        a->ms[j] = (float)(a->s[j] * (a->bsums[2 * j] + a->bsums[2 * j + 1]));
        a->ds[j] = a->d * (float)a->s[j];
    }
    for (int p = 0; p < 4; p++)
        for (int m = 0; m < 8; m++) {
            memcpy(a->qx + 64 * p + 8 * m, a->q + 64 * p + 4 * m, 4);
            memcpy(a->qx + 64 * p + 8 * m + 4, a->q + 64 * p + 32 + 4 * m, 4);
        }
}

/* The scalar integer products: exact integer sums per block, then the block's float scales. */

/* sum of code(j) * q[j] over a 32-value block of nibbles qs (low nibbles are elements 0-15, high
 * ones 16-31), with the fifth bits of qh (bit j for element j) when qh is not NULL */
static int32_t dot_codes32(const uint8_t *qs, const uint8_t *qh, const int8_t *q) {
    uint32_t h = 0;
    if (qh)
        memcpy(&h, qh, 4);
    int32_t is = 0;
    for (int j = 0; j < 16; j++) {
        const int lo = (qs[j] & 0x0f) | (int)(((h >> j) & 1) << 4);
        const int hi = (qs[j] >> 4) | (int)(((h >> (j + 16)) & 1) << 4);
        is += lo * q[j] + hi * q[j + 16];
    }
    return is;
}

static float dot_q8_q4_0(const void *row, const void *xq, int64_t n) {
    const block_q4_0 *w = row;
    const act_q8_32 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; b++)
        sum += f16_to_f32(w[b].d) * x[b].d * (float)dot_codes32(w[b].qs, NULL, x[b].q) - 8.0f * f16_to_f32(w[b].d) * x[b].s;
    return sum;
}

/* MXFP4: the codes' values are integers (E2M1 doubled), so the block's sum is exact in integers
 * and the shared exponent's power of two scales it once. */
static float dot_q8_mxfp4(const void *row, const void *xq, int64_t n) {
    const block_mxfp4 *w = row;
    const act_q8_32 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK_MXFP4; b++) {
        int32_t is = 0;
        for (int j = 0; j < QK_MXFP4 / 2; j++)
            is += quant_mxfp4_values[w[b].qs[j] & 0x0f] * x[b].q[j] + quant_mxfp4_values[w[b].qs[j] >> 4] * x[b].q[j + 16];
        sum += quant_e8m0_half(w[b].e) * x[b].d * (float)is;
    }
    return sum;
}

static float dot_q8_q4_1(const void *row, const void *xq, int64_t n) {
    const block_q4_1 *w = row;
    const act_q8_32 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; b++)
        sum += f16_to_f32(w[b].d) * x[b].d * (float)dot_codes32(w[b].qs, NULL, x[b].q) + f16_to_f32(w[b].m) * x[b].s;
    return sum;
}

static float dot_q8_q5_0(const void *row, const void *xq, int64_t n) {
    const block_q5_0 *w = row;
    const act_q8_32 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; b++)
        sum += f16_to_f32(w[b].d) * x[b].d * (float)dot_codes32(w[b].qs, w[b].qh, x[b].q) - 16.0f * f16_to_f32(w[b].d) * x[b].s;
    return sum;
}

static float dot_q8_q5_1(const void *row, const void *xq, int64_t n) {
    const block_q5_1 *w = row;
    const act_q8_32 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; b++)
        sum += f16_to_f32(w[b].d) * x[b].d * (float)dot_codes32(w[b].qs, w[b].qh, x[b].q) + f16_to_f32(w[b].m) * x[b].s;
    return sum;
}

static float dot_q8_q8_0(const void *row, const void *xq, int64_t n) {
    const block_q8_0 *w = row;
    const act_q8_32 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / 32; b++) {
        int32_t is = 0;
        for (int j = 0; j < 32; j++)
            is += w[b].qs[j] * x[b].q[j];
        sum += f16_to_f32(w[b].d) * x[b].d * (float)is;
    }
    return sum;
}

/* K-quant products: integer sums per sub-block times the weight and activation sub-scales, summed
 * exactly in 64 bits (a hostile file's extreme codes could overflow 32), then the block's floats. */
/* One Q4_K or Q5_K block (qh NULL for Q4_K): its integer sums times the weight and activation
 * sub-scales, then the block's floats. */
static float dot_q8_block_q45_K(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint16_t d, uint16_t dmin,
                                const act_q8_256 *x) {
    int64_t is = 0, im = 0;
    for (int s = 0; s < 8; s++) {
        uint8_t sc, m;
        quant_k_scale_min(s, scales, &sc, &m);
        const uint8_t *q = qs + 32 * (s / 2);
        int32_t dot = 0;
        for (int l = 0; l < 32; l++) {
            const int low = (s & 1) ? q[l] >> 4 : q[l] & 0x0f;
            dot += (low | (qh ? ((qh[l] >> s) & 1) << 4 : 0)) * x->q[32 * s + l];
        }
        is += (int64_t)sc * x->s[s] * dot;
        im += (int64_t)m * x->s[s] * (x->bsums[2 * s] + x->bsums[2 * s + 1]);
    }
    return f16_to_f32(d) * x->d * (float)is - f16_to_f32(dmin) * x->d * (float)im;
}

static float dot_q8_q4_K(const void *row, const void *xq, int64_t n) {
    const block_q4_K *w = row;
    const act_q8_256 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++)
        sum += dot_q8_block_q45_K(w[b].scales, w[b].qs, NULL, w[b].d, w[b].dmin, &x[b]);
    return sum;
}

static float dot_q8_q5_K(const void *row, const void *xq, int64_t n) {
    const block_q5_K *w = row;
    const act_q8_256 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++)
        sum += dot_q8_block_q45_K(w[b].scales, w[b].qs, w[b].qh, w[b].d, w[b].dmin, &x[b]);
    return sum;
}

static float dot_q8_q6_K(const void *row, const void *xq, int64_t n) {
    const block_q6_K *w = row;
    const act_q8_256 *x = xq;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        int64_t is = 0;
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = w[b].ql + 64 * half, *qh = w[b].qh + 32 * half;
            const int8_t *sc = w[b].scales + 8 * half, *q8 = x[b].q + 128 * half;
            for (int k = 0; k < 4; k++)
                for (int g = 0; g < 2; g++) {
                    int32_t d = 0;
                    for (int l = 16 * g; l < 16 * g + 16; l++) {
                        const int lowbits = k < 2 ? ql[l + 32 * (k & 1)] & 0x0f : ql[l + 32 * (k & 1)] >> 4;
                        const int q = lowbits | (((qh[l] >> (2 * k)) & 3) << 4);
                        d += q * q8[32 * k + l];
                    }
                    d -= 32 * x[b].bsums[8 * half + 2 * k + g];
                    is += (int64_t)sc[2 * k + g] * x[b].s[4 * half + k] * d;
                }
        }
        sum += f16_to_f32(w[b].d) * x[b].d * (float)is;
    }
    return sum;
}

/* Four tokens: the one-token products four times (the reference is the definition). */
CPU_Q8_X4_OF(, dot_q8x4_q4_0, dot_q8_q4_0)
CPU_Q8_X4_OF(, dot_q8x4_mxfp4, dot_q8_mxfp4)
CPU_Q8_X4_OF(, dot_q8x4_q4_1, dot_q8_q4_1)
CPU_Q8_X4_OF(, dot_q8x4_q5_0, dot_q8_q5_0)
CPU_Q8_X4_OF(, dot_q8x4_q5_1, dot_q8_q5_1)
CPU_Q8_X4_OF(, dot_q8x4_q8_0, dot_q8_q8_0)
CPU_Q8_X4_OF(, dot_q8x4_q4_K, dot_q8_q4_K)
CPU_Q8_X4_OF(, dot_q8x4_q5_K, dot_q8_q5_K)
CPU_Q8_X4_OF(, dot_q8x4_q6_K, dot_q8_q6_K)

brasa_status cpu_activations_q8(bool *q8, brasa_error *err) {
    const char *v = getenv("BRASA_CPU_ACTIVATIONS");
    *q8 = true;
    if (!v || !*v || strcmp(v, "q8") == 0)
        return BRASA_OK;
    if (strcmp(v, "f32") == 0) {
        *q8 = false;
        return BRASA_OK;
    }
    return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "BRASA_CPU_ACTIVATIONS='%.32s' is not an activation type (q8, f32)", v);
}

static void axpy_f32_scalar(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

void cpu_f16_from_f32(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] = f32_to_f16(x[i]);
}

void cpu_f16_to_f32(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        y[i] = f16_to_f32(x[i]);
}

static const cpu_kernels scalar = {
    .name = "scalar",
    .dot_f32 = dot_f32_scalar,
    .axpy_f32 = axpy_f32_scalar,
    .f16_from_f32 = cpu_f16_from_f32,
    .f16_to_f32 = cpu_f16_to_f32,
    .glu = cpu_glu_scalar,
    .exp_sum = cpu_exp_sum_scalar,
    .quantize_q8_32 = cpu_quantize_q8_32,
    .quantize_q8_256 = cpu_quantize_q8_256,
    .gemm_f32 = gemm_f32_scalar,
    .dot_row = {
        [QUANT_F32] = dot_row_f32, [QUANT_F16] = dot_row_f16, [QUANT_BF16] = dot_row_bf16,
        [QUANT_Q4_0] = dot_row_q4_0, [QUANT_Q4_1] = dot_row_q4_1, [QUANT_Q5_0] = dot_row_q5_0,
        [QUANT_Q5_1] = dot_row_q5_1, [QUANT_Q8_0] = dot_row_q8_0, [QUANT_Q4_K] = dot_row_q4_K,
        [QUANT_Q5_K] = dot_row_q5_K, [QUANT_Q6_K] = dot_row_q6_K, [QUANT_MXFP4] = dot_row_mxfp4,
    },
    .dot_q8 = {
        [QUANT_Q4_0] = dot_q8_q4_0, [QUANT_Q4_1] = dot_q8_q4_1, [QUANT_Q5_0] = dot_q8_q5_0, [QUANT_Q5_1] = dot_q8_q5_1, [QUANT_Q5_K] = dot_q8_q5_K,
        [QUANT_Q8_0] = dot_q8_q8_0, [QUANT_Q4_K] = dot_q8_q4_K, [QUANT_Q6_K] = dot_q8_q6_K, [QUANT_MXFP4] = dot_q8_mxfp4,
    },
    .dot_q8_x4 = {
        [QUANT_Q4_0] = dot_q8x4_q4_0, [QUANT_Q4_1] = dot_q8x4_q4_1, [QUANT_Q5_0] = dot_q8x4_q5_0,
        [QUANT_Q5_1] = dot_q8x4_q5_1, [QUANT_Q5_K] = dot_q8x4_q5_K, [QUANT_Q8_0] = dot_q8x4_q8_0,
        [QUANT_Q4_K] = dot_q8x4_q4_K, [QUANT_Q6_K] = dot_q8x4_q6_K, [QUANT_MXFP4] = dot_q8x4_mxfp4,
    },
};

const cpu_kernels *cpu_kernels_scalar(void) {
    return &scalar;
}

#ifdef BRASA_X86
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
#if defined(_MSC_VER)
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    for (int i = 0; i < 4; i++)
        r[i] = (unsigned)v[i];
#else
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
#endif
}

/* The register state the operating system saves on context switches (XCR0). */
static uint64_t xcr0(void) {
#if defined(_MSC_VER)
    return _xgetbv(0);
#else
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
#endif
}
#endif

void cpu_detect_features(cpu_features *f) {
    memset(f, 0, sizeof *f);
#ifdef BRASA_X86
    unsigned r[4];
    cpuid(0, 0, r);
    const unsigned max_leaf = r[0];
    cpuid(1, 0, r);
    const bool osxsave = (r[2] >> 27) & 1;
    const uint64_t xs = osxsave ? xcr0() : 0;
    const bool os_avx = (xs & 0x6) == 0x6, os_avx512 = (xs & 0xe6) == 0xe6;
    f->avx = os_avx && ((r[2] >> 28) & 1);
    f->fma = f->avx && ((r[2] >> 12) & 1);
    f->f16c = f->avx && ((r[2] >> 29) & 1);
    if (max_leaf >= 7) {
        cpuid(7, 0, r);
        f->avx2 = f->avx && ((r[1] >> 5) & 1);
        f->avx512f = os_avx512 && ((r[1] >> 16) & 1);
        f->avx512bw = f->avx512f && ((r[1] >> 30) & 1);
        f->avx512vl = f->avx512f && ((r[1] >> 31) & 1);
        f->avx512vnni = f->avx512f && ((r[2] >> 11) & 1);
        unsigned r1[4];
        cpuid(7, 1, r1);
        f->avx512bf16 = f->avx512f && ((r1[0] >> 5) & 1);
    }
#elif defined(__aarch64__) || defined(_M_ARM64)
    f->neon = true;
    f->dotprod = plat_arm_dotprod();
#endif
}

void cpu_features_text(const cpu_features *f, char *buf, size_t size) {
    static const struct { size_t offset; const char *name; } names[] = {
        { offsetof(cpu_features, avx), "avx" }, { offsetof(cpu_features, avx2), "avx2" },
        { offsetof(cpu_features, fma), "fma" }, { offsetof(cpu_features, f16c), "f16c" },
        { offsetof(cpu_features, avx512f), "avx512f" }, { offsetof(cpu_features, avx512bw), "avx512bw" },
        { offsetof(cpu_features, avx512vl), "avx512vl" }, { offsetof(cpu_features, avx512vnni), "avx512vnni" },
        { offsetof(cpu_features, avx512bf16), "avx512bf16" }, { offsetof(cpu_features, neon), "neon" },
        { offsetof(cpu_features, dotprod), "dotprod" },
    };
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (*(const bool *)((const char *)f + names[i].offset) && len + strlen(names[i].name) + 2 < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", names[i].name);
    }
    if (len == 0)
        snprintf(buf, size, "none");
}

brasa_status cpu_kernels_select(const cpu_kernels **out, brasa_error *err) {
    cpu_features f;
    cpu_detect_features(&f);
    const cpu_kernels *avx2 = cpu_kernels_avx2() && f.avx2 && f.fma && f.f16c ? cpu_kernels_avx2() : NULL;
    const cpu_kernels *vnni = avx2 && cpu_kernels_avx512_vnni() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni
                                  ? cpu_kernels_avx512_vnni()
                                  : NULL;
    const cpu_kernels *neon = cpu_kernels_neon() && f.neon ? cpu_kernels_neon() : NULL;
    const cpu_kernels *neon_dot = cpu_kernels_neon_dotprod() && f.neon && f.dotprod ? cpu_kernels_neon_dotprod() : NULL;
    const char *force = getenv("BRASA_CPU_KERNELS");
    if (force && *force) {
        const struct { const char *name; const cpu_kernels *k; } paths[] = {
            { "scalar", &scalar }, { "avx2", avx2 }, { "avx512vnni", vnni }, { "neon", neon }, { "neon-dotprod", neon_dot },
        };
        for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
            if (strcmp(force, paths[i].name) != 0)
                continue;
            if (!paths[i].k)
                return err_set(err, BRASA_ERR_UNSUPPORTED, "BRASA_CPU_KERNELS=%s, but this CPU or build lacks it", force);
            *out = paths[i].k;
            return BRASA_OK;
        }
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "BRASA_CPU_KERNELS='%.32s' is not a kernel path (scalar, avx2, avx512vnni, neon, neon-dotprod)", force);
    }
    *out = vnni ? vnni : avx2 ? avx2 : neon_dot ? neon_dot : neon ? neon : &scalar;
    return BRASA_OK;
}
