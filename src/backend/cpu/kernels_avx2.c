/* kernels_avx2.c: the AVX2 + FMA + F16C path (Haswell and later, Zen and later). Compiled with
 * per-function target attributes, so the default build still runs on any x86-64 and this code is
 * only called after cpu_kernels_select has seen the features.
 *
 * Block dot products work on the blocks directly: codes are unpacked to bytes in registers, widened
 * to floats and multiplied with the float activations, and each block's (or sub-block's) sum is
 * scaled once. Activations stay in float, so results differ from the scalar reference only by the
 * order of additions (tested in test_cpu_kernels). */
#include "backend/cpu/kernels.h"

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#include <immintrin.h>
#include <string.h>


#if defined(__GNUC__) || defined(__clang__)
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define AVX2
#endif

AVX2 static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

AVX2 static float dot_f32(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

/* The low 8 signed bytes of v as 8 floats. */
AVX2 static inline __m256 i8x8_ps(__m128i v) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

/* Lane-wise partial sums of q[k] * x[k] for 16 signed byte codes. */
AVX2 static inline __m256 dot16(__m128i q, const float *x) {
    __m256 acc = _mm256_mul_ps(i8x8_ps(q), _mm256_loadu_ps(x));
    return _mm256_fmadd_ps(i8x8_ps(_mm_srli_si128(q, 8)), _mm256_loadu_ps(x + 8), acc);
}

/* The same for 32 codes. */
AVX2 static inline __m256 dot32(__m256i q, const float *x) {
    __m256 lo = dot16(_mm256_castsi256_si128(q), x);
    __m256 hi = dot16(_mm256_extracti128_si256(q, 1), x + 16);
    return _mm256_add_ps(lo, hi);
}

AVX2 static inline __m256 sum32(const float *x) {
    return _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)),
                         _mm256_add_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)));
}

/* 16 bytes of packed nibbles -> 32 byte codes: the low nibbles (values 0..15), then the high ones. */
AVX2 static inline __m256i nibbles32(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

/* 32 bits -> 32 bytes, 0xff where bit i is set: byte i picks byte i/8 of the word and tests its bit. */
AVX2 static inline __m256i bits32(uint32_t bits) {
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128,
                                         1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), pick);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* Half to float with F16C: exact, like f16_to_f32, and one instruction. */
AVX2 static inline float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}

static uint32_t load_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

AVX2 static float dot_q4_0(const void *row, const float *x, int64_t n) {
    const block_q4_0 *b = row;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
        const __m256i q = _mm256_sub_epi8(nibbles32(b[i].qs), _mm256_set1_epi8(8));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].d)), dot32(q, x), acc);
    }
    return hsum(acc);
}

AVX2 static float dot_q4_1(const void *row, const float *x, int64_t n) {
    const block_q4_1 *b = row;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK4_1; i++, x += QK4_1) {
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].d)), dot32(nibbles32(b[i].qs), x), acc);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].m)), sum32(x), acc);
    }
    return hsum(acc);
}

AVX2 static float dot_q5_0(const void *row, const float *x, int64_t n) {
    const block_q5_0 *b = row;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK5_0; i++, x += QK5_0) {
        const __m256i high = _mm256_and_si256(bits32(load_u32(b[i].qh)), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles32(b[i].qs), high), _mm256_set1_epi8(16));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].d)), dot32(q, x), acc);
    }
    return hsum(acc);
}

AVX2 static float dot_q5_1(const void *row, const float *x, int64_t n) {
    const block_q5_1 *b = row;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK5_1; i++, x += QK5_1) {
        const __m256i high = _mm256_and_si256(bits32(load_u32(b[i].qh)), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_or_si256(nibbles32(b[i].qs), high);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].d)), dot32(q, x), acc);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].m)), sum32(x), acc);
    }
    return hsum(acc);
}

AVX2 static float dot_q8_0(const void *row, const float *x, int64_t n) {
    const block_q8_0 *b = row;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)b[i].qs);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b[i].d)), dot32(q, x), acc);
    }
    return hsum(acc);
}

AVX2 static float dot_q4_K(const void *row, const float *x, int64_t n) {
    const block_q4_K *b = row;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
        for (int j = 0; j < 4; j++, x += 64) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * j));
            uint8_t sc0, mn0, sc1, mn1;
            quant_k_scale_min(2 * j, b[i].scales, &sc0, &mn0);
            quant_k_scale_min(2 * j + 1, b[i].scales, &sc1, &mn1);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc0), dot32(_mm256_and_si256(raw, m4), x), acc);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc1), dot32(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), x + 32), acc);
            acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * (float)mn0), sum32(x), acc);
            acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * (float)mn1), sum32(x + 32), acc);
        }
    }
    return hsum(acc);
}

AVX2 static float dot_q5_K(const void *row, const float *x, int64_t n) {
    const block_q5_K *b = row;
    const __m256i m4 = _mm256_set1_epi8(0x0f), five = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
        const __m256i qh = _mm256_loadu_si256((const __m256i *)b[i].qh);
        for (int j = 0; j < 4; j++, x += 64) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * j));
            const __m256i bit_lo = _mm256_set1_epi8((char)(1 << (2 * j))), bit_hi = _mm256_set1_epi8((char)(1 << (2 * j + 1)));
            const __m256i h_lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit_lo), bit_lo), five);
            const __m256i h_hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit_hi), bit_hi), five);
            uint8_t sc0, mn0, sc1, mn1;
            quant_k_scale_min(2 * j, b[i].scales, &sc0, &mn0);
            quant_k_scale_min(2 * j + 1, b[i].scales, &sc1, &mn1);
            const __m256i q_lo = _mm256_or_si256(_mm256_and_si256(raw, m4), h_lo);
            const __m256i q_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), h_hi);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc0), dot32(q_lo, x), acc);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc1), dot32(q_hi, x + 32), acc);
            acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * (float)mn0), sum32(x), acc);
            acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * (float)mn1), sum32(x + 32), acc);
        }
    }
    return hsum(acc);
}

/* The 128 codes of one half of a Q6_K block as 4 x 32 unsigned bytes (0..63, before the -32):
 * value l + 32k takes a nibble of ql and bits 2k..2k+1 of qh[l]. */
AVX2 static inline void q6_unpack(const uint8_t *ql, const uint8_t *qhp, __m256i q[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
    const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
    const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i qh = _mm256_loadu_si256((const __m256i *)qhp);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
}

AVX2 static float dot_q6_K(const void *row, const float *x, int64_t n) {
    const block_q6_K *b = row;
    const __m256i off = _mm256_set1_epi8(32);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(b[i].d);
        for (int half = 0; half < 2; half++, x += 128) {
            const uint8_t *ql = b[i].ql + 64 * half, *qhp = b[i].qh + 32 * half;
            const int8_t *sc = b[i].scales + 8 * half;
            __m256i q[4];
            q6_unpack(ql, qhp, q);
            for (int k = 0; k < 4; k++) {
                const __m256i v = _mm256_sub_epi8(q[k], off);
                /* 16 values per scale */
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[2 * k]), dot16(_mm256_castsi256_si128(v), x + 32 * k), acc);
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[2 * k + 1]),
                                      dot16(_mm256_extracti128_si256(v, 1), x + 32 * k + 16), acc);
            }
        }
    }
    return hsum(acc);
}

AVX2 static float dot_f16(const void *row, const float *x, int64_t n) {
    const uint16_t *h = row;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))), _mm256_loadu_ps(x + i), acc);
    float sum = hsum(acc);
    for (; i < n; i++)
        sum += h2f(h[i]) * x[i];
    return sum;
}

AVX2 static float dot_f32_row(const void *row, const float *x, int64_t n) {
    return dot_f32(row, x, n);
}

/* One output of gemm_f32: one 8-lane accumulator, then the tail; the tile below sums identically. */
AVX2 static float dot8(const float *a, const float *b, int64_t k) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= k; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    float s = hsum(acc);
    for (; i < k; i++)
        s += a[i] * b[i];
    return s;
}

/* Register tile of 2 weight rows x 4 tokens: each loaded vector feeds 4 or 2 FMAs instead of one,
 * which lifts prefill from load-bound to FMA-bound. */
AVX2 static void gemm_f32(const float *w, size_t ws, int64_t n_rows, const float *x, size_t xs, int64_t n_tok, int64_t k,
                          float *y, size_t ys) {
    int64_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        const float *w0 = w + (size_t)r * ws, *w1 = w0 + ws;
        int64_t t = 0;
        for (; t + 4 <= n_tok; t += 4) {
            const float *x0 = x + (size_t)t * xs, *x1 = x0 + xs, *x2 = x1 + xs, *x3 = x2 + xs;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
            int64_t i = 0;
            for (; i + 8 <= k; i += 8) {
                const __m256 u = _mm256_loadu_ps(w0 + i), v = _mm256_loadu_ps(w1 + i);
                __m256 xv = _mm256_loadu_ps(x0 + i);
                a0 = _mm256_fmadd_ps(u, xv, a0);
                b0 = _mm256_fmadd_ps(v, xv, b0);
                xv = _mm256_loadu_ps(x1 + i);
                a1 = _mm256_fmadd_ps(u, xv, a1);
                b1 = _mm256_fmadd_ps(v, xv, b1);
                xv = _mm256_loadu_ps(x2 + i);
                a2 = _mm256_fmadd_ps(u, xv, a2);
                b2 = _mm256_fmadd_ps(v, xv, b2);
                xv = _mm256_loadu_ps(x3 + i);
                a3 = _mm256_fmadd_ps(u, xv, a3);
                b3 = _mm256_fmadd_ps(v, xv, b3);
            }
            float s[8] = { hsum(a0), hsum(a1), hsum(a2), hsum(a3), hsum(b0), hsum(b1), hsum(b2), hsum(b3) };
            for (; i < k; i++) {
                s[0] += w0[i] * x0[i]; s[1] += w0[i] * x1[i]; s[2] += w0[i] * x2[i]; s[3] += w0[i] * x3[i];
                s[4] += w1[i] * x0[i]; s[5] += w1[i] * x1[i]; s[6] += w1[i] * x2[i]; s[7] += w1[i] * x3[i];
            }
            for (int j = 0; j < 4; j++) {
                y[(size_t)(t + j) * ys + (size_t)r] = s[j];
                y[(size_t)(t + j) * ys + (size_t)r + 1] = s[4 + j];
            }
        }
        for (; t < n_tok; t++) {
            y[(size_t)t * ys + (size_t)r] = dot8(w0, x + (size_t)t * xs, k);
            y[(size_t)t * ys + (size_t)r + 1] = dot8(w1, x + (size_t)t * xs, k);
        }
    }
    for (; r < n_rows; r++)
        for (int64_t t = 0; t < n_tok; t++)
            y[(size_t)t * ys + (size_t)r] = dot8(w + (size_t)r * ws, x + (size_t)t * xs, k);
}

/* ---- integer products with 8-bit activations ---- */

/* Sums of u[i] * s[i] (unsigned weight codes < 128, signed activations) as 8 int32 lanes, lane k
 * holding bytes 4k..4k+3. */
AVX2 static inline __m256i dot_u8s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

AVX2 static inline __m256 i32_ps(__m256i v) {
    return _mm256_cvtepi32_ps(v);
}

AVX2 static float q8_q4_0(const void *row, const void *xq, int64_t n) {
    const block_q4_0 *w = row;
    const act_q8_32 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    float corr = 0.0f;
    for (int64_t b = 0; b < n / 32; b++) {
        const float dd = h2f(w[b].d) * x[b].d;
        const __m256i p = dot_u8s8(nibbles32(w[b].qs), _mm256_loadu_si256((const __m256i *)x[b].q));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), i32_ps(p), acc);
        corr += dd * (float)(8 * x[b].sum);
    }
    return hsum(acc) - corr;
}

AVX2 static float q8_q4_1(const void *row, const void *xq, int64_t n) {
    const block_q4_1 *w = row;
    const act_q8_32 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / 32; b++) {
        const __m256i p = dot_u8s8(nibbles32(w[b].qs), _mm256_loadu_si256((const __m256i *)x[b].q));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w[b].d) * x[b].d), i32_ps(p), acc);
        mins += h2f(w[b].m) * x[b].d * (float)x[b].sum;
    }
    return hsum(acc) + mins;
}

AVX2 static float q8_q5_0(const void *row, const void *xq, int64_t n) {
    const block_q5_0 *w = row;
    const act_q8_32 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    float corr = 0.0f;
    for (int64_t b = 0; b < n / 32; b++) {
        const float dd = h2f(w[b].d) * x[b].d;
        const __m256i high = _mm256_and_si256(bits32(load_u32(w[b].qh)), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_or_si256(nibbles32(w[b].qs), high);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), i32_ps(dot_u8s8(q, _mm256_loadu_si256((const __m256i *)x[b].q))), acc);
        corr += dd * (float)(16 * x[b].sum);
    }
    return hsum(acc) - corr;
}

AVX2 static float q8_q8_0(const void *row, const void *xq, int64_t n) {
    const block_q8_0 *w = row;
    const act_q8_32 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const __m256i qw = _mm256_loadu_si256((const __m256i *)w[b].qs);
        const __m256i qx = _mm256_loadu_si256((const __m256i *)x[b].q);
        /* signed x signed: move the weights' signs onto the activations */
        const __m256i p = dot_u8s8(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w[b].d) * x[b].d), i32_ps(p), acc);
    }
    return hsum(acc);
}

AVX2 static float q8_q4_K(const void *row, const void *xq, int64_t n) {
    const block_q4_K *w = row;
    const act_q8_256 *x = xq;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        __m256i isum = _mm256_setzero_si256();
        int32_t im = 0;
        for (int j = 0; j < 4; j++) {
            uint8_t sc0, m0, sc1, m1;
            quant_k_scale_min(2 * j, w[b].scales, &sc0, &m0);
            quant_k_scale_min(2 * j + 1, w[b].scales, &sc1, &m1);
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * j));
            const __m256i p0 = dot_u8s8(_mm256_and_si256(raw, m4), _mm256_loadu_si256((const __m256i *)(x[b].q + 64 * j)));
            const __m256i p1 = dot_u8s8(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4),
                                        _mm256_loadu_si256((const __m256i *)(x[b].q + 64 * j + 32)));
            isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(p0, _mm256_set1_epi32(sc0)));
            isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(p1, _mm256_set1_epi32(sc1)));
            im += m0 * (x[b].bsums[4 * j] + x[b].bsums[4 * j + 1]) + m1 * (x[b].bsums[4 * j + 2] + x[b].bsums[4 * j + 3]);
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w[b].d) * x[b].d), i32_ps(isum), acc);
        mins += h2f(w[b].dmin) * x[b].d * (float)im;
    }
    return hsum(acc) - mins;
}

AVX2 static float q8_q6_K(const void *row, const void *xq, int64_t n) {
    const block_q6_K *w = row;
    const act_q8_256 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        __m256i isum = _mm256_setzero_si256();
        int32_t offset = 0; /* the codes are stored +32: subtract 32 * sum of the activations */
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = w[b].ql + 64 * half;
            const int8_t *sc = w[b].scales + 8 * half, *q8 = x[b].q + 128 * half;
            __m256i q[4];
            q6_unpack(ql, w[b].qh + 32 * half, q);
            for (int k = 0; k < 4; k++) {
                const __m256i p = dot_u8s8(q[k], _mm256_loadu_si256((const __m256i *)(q8 + 32 * k)));
                /* lanes 0-3 are the first 16 values (one scale), lanes 4-7 the next 16 */
                const __m256i scales = _mm256_setr_epi32(sc[2 * k], sc[2 * k], sc[2 * k], sc[2 * k], sc[2 * k + 1],
                                                         sc[2 * k + 1], sc[2 * k + 1], sc[2 * k + 1]);
                isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(p, scales));
                offset += sc[2 * k] * x[b].bsums[8 * half + 2 * k] + sc[2 * k + 1] * x[b].bsums[8 * half + 2 * k + 1];
            }
        }
        const float dd = h2f(w[b].d) * x[b].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), i32_ps(isum), acc);
        acc = _mm256_sub_ps(acc, _mm256_setr_ps(dd * (float)(32 * offset), 0, 0, 0, 0, 0, 0, 0));
    }
    return hsum(acc);
}

static const cpu_kernels avx2 = {
    .name = "avx2",
    .dot_f32 = dot_f32,
    .gemm_f32 = gemm_f32,
    .dot_row = {
        [QUANT_F32] = dot_f32_row, [QUANT_F16] = dot_f16, [QUANT_Q4_0] = dot_q4_0, [QUANT_Q4_1] = dot_q4_1,
        [QUANT_Q5_0] = dot_q5_0, [QUANT_Q5_1] = dot_q5_1, [QUANT_Q8_0] = dot_q8_0, [QUANT_Q4_K] = dot_q4_K,
        [QUANT_Q5_K] = dot_q5_K, [QUANT_Q6_K] = dot_q6_K,
    },
    .dot_q8 = {
        [QUANT_Q4_0] = q8_q4_0, [QUANT_Q4_1] = q8_q4_1, [QUANT_Q5_0] = q8_q5_0, [QUANT_Q8_0] = q8_q8_0,
        [QUANT_Q4_K] = q8_q4_K, [QUANT_Q6_K] = q8_q6_K,
    },
};

const cpu_kernels *cpu_kernels_avx2(void) {
    return &avx2;
}

#else
const cpu_kernels *cpu_kernels_avx2(void) {
    return NULL;
}
#endif
