/* kernels_avx2.c: the AVX2 + FMA + F16C path (Haswell and later, Zen and later). Compiled with
 * per-function target attributes, so the default build still runs on any x86-64 and this code is
 * only called after cpu_kernels_select has seen the features.
 *
 * Block dot products work on the blocks directly, in two kinds. With float activations, codes are
 * unpacked to bytes in registers, widened to floats and multiplied with the activations; results
 * differ from the scalar reference only by the order of additions. With 8-bit activations (the
 * default), maddubs/madd form exact integer sums per block or sub-block and only the scaling is
 * float. Both are tested against the scalar path in test_cpu_kernels. */
#include "backend/cpu/kernels.h"
#include <math.h>

/* kernels_avx512.c compiles this file again for CPUs with AVX-512 VNNI: X86_VNNI then turns the
 * two-step byte products (maddubs to 16 bits, madd to 32) into one vpdpbusd, whose exact 32-bit
 * sums are the same numbers, so that path gives this one's results bit for bit. */
#ifndef X86_VNNI
#define X86_VNNI 0
#define X86_PATH_NAME "avx2"
#define X86_PATH_TABLE cpu_kernels_avx2
#if defined(__GNUC__) || defined(__clang__)
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define AVX2
#endif
#endif

/* Kernels written once for a few constant counts, each count its own straight-line code. UNROLL
 * makes a loop straight-line whatever the compiler's size limits, for loops whose counters index
 * sums that must stay in registers (past its limits GCC keeps the loop, and the sums in memory). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KERNEL_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KERNEL_SANITIZED 1
#endif
#if defined(__GNUC__) || defined(__clang__)
#define KERNEL_INLINE inline __attribute__((always_inline))
#define KERNEL_PRAGMA(x) _Pragma(#x)
#if defined(KERNEL_SANITIZED)
/* a sanitized build keeps the loops: unrolled and instrumented, the kernels took clang-19 a
 * quarter of an hour to compile; the results are the same either way */
#define UNROLL(n)
#else
#define UNROLL(n) KERNEL_PRAGMA(GCC unroll n)
#endif
#else
#define KERNEL_INLINE inline
#define UNROLL(n)
#endif

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#include <immintrin.h>
#include <string.h>

AVX2 static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#if X86_VNNI
/* The float run kernels' four eight-lane sums over 32-value steps, s0 .. s3, are two 512-bit ones
 * here, [s0 | s1] and [s2 | s3]: the same lanes taking the same values in the same order, so the
 * same bits as the AVX2 path, in half the instructions (and twice the products a cycle where the
 * units are 512 bits wide, as on Zen 5). */
AVX2 static inline __m256 hi256(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* 16 halves as floats */
AVX2 static inline __m512 ld_h16(const uint16_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
#endif

/* 8 halves as floats */
AVX2 static inline __m256 ld_h8(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Values i .. i + 7 of a row of floats, or of halves converted (half: constant after inlining). */
AVX2 static KERNEL_INLINE __m256 ld_row8(const void *b, bool half, int64_t i) {
    return half ? ld_h8((const uint16_t *)b + i) : _mm256_loadu_ps((const float *)b + i);
}

#if X86_VNNI
AVX2 static KERNEL_INLINE __m512 ld_row16(const void *b, bool half, int64_t i) {
    return half ? ld_h16((const uint16_t *)b + i) : _mm512_loadu_ps((const float *)b + i);
}
#endif

/* A row's products summed into eight lanes, the row b of floats or of halves: what dot_f32
 * reduces, for the n - n % 8 first values. */
AVX2 static KERNEL_INLINE __m256 dot_lanes_of(bool half, const float *a, const void *b, int64_t n) {
    int64_t i = 0;
#if X86_VNNI
    __m512 s01 = _mm512_setzero_ps(), s23 = _mm512_setzero_ps();
    for (; i + 32 <= n; i += 32) {
        s01 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), ld_row16(b, half, i), s01);
        s23 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), ld_row16(b, half, i + 16), s23);
    }
    __m256 s0 = _mm512_castps512_ps256(s01), s1 = hi256(s01), s2 = _mm512_castps512_ps256(s23), s3 = hi256(s23);
#else
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), ld_row8(b, half, i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), ld_row8(b, half, i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), ld_row8(b, half, i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), ld_row8(b, half, i + 24), s3);
    }
#endif
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), ld_row8(b, half, i), s0);
    return _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
}

AVX2 static inline __m256 dot_lanes(const float *a, const float *b, int64_t n) {
    return dot_lanes_of(false, a, b, n);
}

AVX2 static float dot_f32(const float *a, const float *b, int64_t n) {
    float sum = hsum(dot_lanes(a, b, n));
    for (int64_t i = n - n % 8; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

/* hsum of eight vectors at once, lane r holding v[r]'s: each sum takes hsum's additions in hsum's
 * order (upper half onto lower, then lanes 2-3 onto 0-1, then lane 1 onto 0), so the results are
 * dot_f32's bit for bit, in about a fifth of the instructions. */
AVX2 static inline __m256 hsum8(const __m256 v[8]) {
    __m256 t[4]; /* t[i]: v[i]'s four half sums in the low half, v[i + 4]'s in the high */
    for (int i = 0; i < 4; i++)
        t[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[i], v[i + 4], 0x20), _mm256_permute2f128_ps(v[i], v[i + 4], 0x31));
    const __m256 p = _mm256_add_ps(_mm256_shuffle_ps(t[0], t[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm256_shuffle_ps(t[0], t[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 q = _mm256_add_ps(_mm256_shuffle_ps(t[2], t[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm256_shuffle_ps(t[2], t[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(_mm256_shuffle_ps(p, q, _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(p, q, _MM_SHUFFLE(3, 1, 3, 1)));
}

AVX2 static void axpy_f32(float *y, float a, const float *x, int64_t n) {
    const __m256 av = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* A KV cache in half precision: F16C's conversions round to nearest even like f32_to_f16 and keep
 * subnormals, infinities and quiet NaNs the same way, so every path stores the same bits. */
AVX2 static void half_from_f32(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++)
        y[i] = (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0);
}

AVX2 static void half_to_f32(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; i++)
        y[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(x[i])));
}

/* cpu_glu_scalar on eight values at once, step for step (each multiply and add rounded once, as
 * the twin's; rounding to nearest even as rintf does), so every value gets the scalar twin's bits;
 * the tail is the twin. */
AVX2 static inline __m256 exp8(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(CPU_EXP_LO)); /* x > lo ? x : lo, NaN to lo like the twin */
    x = _mm256_min_ps(x, _mm256_set1_ps(CPU_EXP_HI));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(CPU_EXP_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(CPU_EXP_LN2_HI)));
    r = _mm256_add_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(CPU_EXP_LN2_LO)));
    __m256 p = _mm256_set1_ps(CPU_EXP_P5);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(CPU_EXP_P4));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(CPU_EXP_P3));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(CPU_EXP_P2));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(CPU_EXP_P1));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(CPU_EXP_P0));
    p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

AVX2 static void glu(cpu_glu_kind kind, const float *g, const float *u, float *y, int64_t n) {
    int64_t i = 0;
    if (kind == CPU_GLU_SWIGLU_OAI) { /* min and max: the twin's comparisons, a NaN to the limit */
        const __m256 limit = _mm256_set1_ps(SWIGLU_OAI_LIMIT), low = _mm256_set1_ps(-SWIGLU_OAI_LIMIT);
        for (; i + 8 <= n; i += 8) {
            const __m256 v = _mm256_min_ps(_mm256_loadu_ps(g + i), limit);
            __m256 a = _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_mul_ps(_mm256_set1_ps(-SWIGLU_OAI_ALPHA), v))));
            if (u)
                a = _mm256_mul_ps(a, _mm256_add_ps(_mm256_max_ps(_mm256_min_ps(_mm256_loadu_ps(u + i), limit), low), _mm256_set1_ps(1.0f)));
            _mm256_storeu_ps(y + i, a);
        }
        cpu_glu_scalar(kind, g + i, u ? u + i : NULL, y + i, n - i);
        return;
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(g + i);
        const __m256 neg = _mm256_xor_ps(v, _mm256_set1_ps(-0.0f)); /* -v, as the twin's */
        const __m256 arg = kind == CPU_GLU_SILU
                               ? neg
                               : _mm256_mul_ps(neg, _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.0713548162726008f), _mm256_mul_ps(v, v)),
                                                                  _mm256_set1_ps(1.5957691216057308f)));
        __m256 a = _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(arg)));
        if (u)
            a = _mm256_mul_ps(a, _mm256_loadu_ps(u + i));
        _mm256_storeu_ps(y + i, a);
    }
    cpu_glu_scalar(kind, g + i, u ? u + i : NULL, y + i, n - i);
}

AVX2 static float exp_sum(float *s, int64_t n, float m) {
    const __m256 mv = _mm256_set1_ps(m);
    __m256 lanes = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(s + i), mv);
        const __m256 e = _mm256_blendv_ps(exp8(x), x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); /* NaN stays */
        _mm256_storeu_ps(s + i, e);
        lanes = _mm256_add_ps(lanes, e);
    }
    /* the twin on fewer than eight gives 0 + its tail in order: the tail exactly */
    return hsum(lanes) + cpu_exp_sum_scalar(s + i, n - i, m);
}

/* Attention scores are dots of short rows (head sizes of 64 to 256), where dot_f32's own
 * reduction costs about as much as the products: eight rows share one. */
AVX2 static void dot_rows_f32(const float *q, const float *x, size_t xs, int n, int64_t n_el, float *out) {
    int r = 0;
    if (n_el % 8 == 0)
        for (; r + 8 <= n; r += 8) {
            __m256 v[8];
            for (int i = 0; i < 8; i++)
                v[i] = dot_lanes(q, x + (size_t)(r + i) * xs, n_el);
            _mm256_storeu_ps(out + r, hsum8(v));
        }
    for (; r < n; r++)
        out[r] = dot_f32(q, x + (size_t)r * xs, n_el);
}

/* Rows of up to 128 values keep y in registers for the whole run; each element sees the same
 * fused multiply-adds in the same order as axpy_f32 row by row. */
/* y += a[r] * row r, for r in order: y in registers, 128 values at a time (a head of 256 in two
 * passes over the rows, which stay in the first-level cache), so each value's sum takes the same
 * fused steps in the same order as axpy_f32 row by row, without a load and a store of y per row. */
AVX2 static void axpy_rows_f32(float *y, const float *a, const float *x, size_t xs, int n, int64_t n_el) {
    if (n_el % 8 != 0) {
        for (int r = 0; r < n; r++)
            axpy_f32(y, a[r], x + (size_t)r * xs, n_el);
        return;
    }
    for (int64_t s0 = 0; s0 < n_el; s0 += 128) {
        const int nv = (int)((n_el - s0 < 128 ? n_el - s0 : 128) / 8);
        __m256 acc[16];
        for (int v = 0; v < nv; v++)
            acc[v] = _mm256_loadu_ps(y + s0 + 8 * v);
        for (int r = 0; r < n; r++) {
            const __m256 av = _mm256_set1_ps(a[r]);
            const float *xr = x + (size_t)r * xs + s0;
            for (int v = 0; v < nv; v++)
                acc[v] = _mm256_fmadd_ps(av, _mm256_loadu_ps(xr + 8 * v), acc[v]);
        }
        for (int v = 0; v < nv; v++)
            _mm256_storeu_ps(y + s0 + 8 * v, acc[v]);
    }
}

/* Query heads the several-head f16 kernels take at once: eight in 512-bit registers (a group of
 * six, as Qwen2.5's, in one pass over its rows), four in AVX2's. */
#if X86_VNNI
#define F16_HEADS_MAX 8
#else
#define F16_HEADS_MAX 4
#endif

/* The run kernels over an f16 cache (rows of halves, xs apart; n_el a multiple of 8): each load of
 * eight values becomes one conversion, so the cache is read at two bytes a value with no pass
 * through memory, and the products are the f32 kernels' in their order, bit for bit what those
 * give on the converted rows. */

AVX2 static inline __m256 dot_lanes_h(const float *a, const uint16_t *b, int64_t n) {
    return dot_lanes_of(true, a, b, n);
}

AVX2 static void dot_rows_f16(const float *q, const uint16_t *x, size_t xs, int n, int64_t n_el, float *out) {
    int r = 0;
    for (; r + 8 <= n; r += 8) {
        __m256 v[8];
        for (int i = 0; i < 8; i++)
            v[i] = dot_lanes_h(q, x + (size_t)(r + i) * xs, n_el);
        _mm256_storeu_ps(out + r, hsum8(v));
    }
    for (; r < n; r++)
        out[r] = hsum(dot_lanes_h(q, x + (size_t)r * xs, n_el));
}

AVX2 static void axpy_rows_f16(float *y, const float *a, const uint16_t *x, size_t xs, int n, int64_t n_el) {
    for (int64_t s0 = 0; s0 < n_el; s0 += 128) { /* as axpy_rows_f32 */
        const int nv = (int)((n_el - s0 < 128 ? n_el - s0 : 128) / 8);
        __m256 acc[16];
        for (int v = 0; v < nv; v++)
            acc[v] = _mm256_loadu_ps(y + s0 + 8 * v);
        for (int r = 0; r < n; r++) {
            const __m256 av = _mm256_set1_ps(a[r]);
            const uint16_t *xr = x + (size_t)r * xs + s0;
            for (int v = 0; v < nv; v++)
                acc[v] = _mm256_fmadd_ps(av, ld_h8(xr + 8 * v), acc[v]);
        }
        for (int v = 0; v < nv; v++)
            _mm256_storeu_ps(y + s0 + 8 * v, acc[v]);
    }
}

#if X86_VNNI
/* dot_rows_f16_nq for a head size of 32 * N32 values (constant: 64, 128, 256), two rows at a time
 * for up to four heads: the loops straight-line, so that both rows' sums stay in registers and the
 * two rows' chains of dependent multiply-adds overlap (one row's chain of N32 steps alone waits on
 * each step); one row at a time for more heads, whose sums fill the registers. Each head's lanes
 * take the same steps as in dot_lanes_h. */
AVX2 static KERNEL_INLINE void dot_rows_f16_fixed(int NQ, int N32, const float *const *q, const uint16_t *x, size_t xs, int n,
                                                  float *const *out) {
    const int RR = NQ > 4 ? 1 : 2;
    for (int r0 = 0; r0 < n; r0 += 8) {
        const int nr = n - r0 < 8 ? n - r0 : 8;
        __m256 lanes[F16_HEADS_MAX][8];
        for (int r = 0; r < nr; r += RR) {
            const int R = nr - r < RR ? nr - r : RR;
            __m512 s01[2][F16_HEADS_MAX], s23[2][F16_HEADS_MAX];
            UNROLL(2)
            for (int i = 0; i < 2; i++)
                UNROLL(8)
                for (int h = 0; h < NQ; h++)
                    s01[i][h] = s23[i][h] = _mm512_setzero_ps();
            UNROLL(8)
            for (int c = 0; c < N32; c++)
                UNROLL(2)
                for (int i = 0; i < 2; i++) {
                    if (i >= R)
                        break;
                    const uint16_t *b = x + (size_t)(r0 + r + i) * xs + 32 * c;
                    const __m512 k01 = ld_h16(b), k23 = ld_h16(b + 16);
                    UNROLL(8)
                    for (int h = 0; h < NQ; h++) {
                        s01[i][h] = _mm512_fmadd_ps(_mm512_loadu_ps(q[h] + 32 * c), k01, s01[i][h]);
                        s23[i][h] = _mm512_fmadd_ps(_mm512_loadu_ps(q[h] + 32 * c + 16), k23, s23[i][h]);
                    }
                }
            UNROLL(2)
            for (int i = 0; i < 2; i++)
                UNROLL(8)
                for (int h = 0; h < NQ && i < R; h++)
                    lanes[h][r + i] = _mm256_add_ps(_mm256_add_ps(_mm512_castps512_ps256(s01[i][h]), hi256(s01[i][h])),
                                                    _mm256_add_ps(_mm512_castps512_ps256(s23[i][h]), hi256(s23[i][h])));
        }
        for (int h = 0; h < NQ; h++) {
            if (nr == 8) {
                _mm256_storeu_ps(out[h] + r0, hsum8(lanes[h]));
            } else {
                for (int r = 0; r < nr; r++)
                    out[h][r0 + r] = hsum(lanes[h][r]);
            }
        }
    }
}
#endif

/* dot_rows_f16 for NQ heads (inlined with a constant count): per row, each group of eight halves
 * converted once and multiplied into every head's four running sums, which are dot_lanes_h's,
 * added as it adds them; eight rows' lanes then reduced per head by hsum8, the rest by hsum. */
AVX2 static KERNEL_INLINE void dot_rows_f16_nq(int NQ, const float *const *q, const uint16_t *x, size_t xs, int n, int64_t n_el,
                                               float *const *out) {
#if X86_VNNI
    switch (n_el) {
    case 64: dot_rows_f16_fixed(NQ, 2, q, x, xs, n, out); return;
    case 128: dot_rows_f16_fixed(NQ, 4, q, x, xs, n, out); return;
    case 256: dot_rows_f16_fixed(NQ, 8, q, x, xs, n, out); return;
    default: break;
    }
#endif
    for (int r0 = 0; r0 < n; r0 += 8) {
        const int nr = n - r0 < 8 ? n - r0 : 8;
        __m256 lanes[F16_HEADS_MAX][8];
        for (int r = 0; r < nr; r++) {
            const uint16_t *b = x + (size_t)(r0 + r) * xs;
            __m256 s[F16_HEADS_MAX][4];
            int64_t i = 0;
#if X86_VNNI
            __m512 s01[F16_HEADS_MAX], s23[F16_HEADS_MAX]; /* as dot_lanes: [s0 | s1], [s2 | s3] */
            for (int h = 0; h < NQ; h++)
                s01[h] = s23[h] = _mm512_setzero_ps();
            for (; i + 32 <= n_el; i += 32) {
                const __m512 k01 = ld_h16(b + i), k23 = ld_h16(b + i + 16);
                for (int h = 0; h < NQ; h++) {
                    s01[h] = _mm512_fmadd_ps(_mm512_loadu_ps(q[h] + i), k01, s01[h]);
                    s23[h] = _mm512_fmadd_ps(_mm512_loadu_ps(q[h] + i + 16), k23, s23[h]);
                }
            }
            for (int h = 0; h < NQ; h++) {
                s[h][0] = _mm512_castps512_ps256(s01[h]);
                s[h][1] = hi256(s01[h]);
                s[h][2] = _mm512_castps512_ps256(s23[h]);
                s[h][3] = hi256(s23[h]);
            }
#else
            for (int h = 0; h < NQ; h++)
                s[h][0] = s[h][1] = s[h][2] = s[h][3] = _mm256_setzero_ps();
            for (; i + 32 <= n_el; i += 32) {
                const __m256 k0 = ld_h8(b + i), k1 = ld_h8(b + i + 8), k2 = ld_h8(b + i + 16), k3 = ld_h8(b + i + 24);
                for (int h = 0; h < NQ; h++) {
                    s[h][0] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + i), k0, s[h][0]);
                    s[h][1] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + i + 8), k1, s[h][1]);
                    s[h][2] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + i + 16), k2, s[h][2]);
                    s[h][3] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + i + 24), k3, s[h][3]);
                }
            }
#endif
            for (; i + 8 <= n_el; i += 8) {
                const __m256 k0 = ld_h8(b + i);
                for (int h = 0; h < NQ; h++)
                    s[h][0] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + i), k0, s[h][0]);
            }
            for (int h = 0; h < NQ; h++)
                lanes[h][r] = _mm256_add_ps(_mm256_add_ps(s[h][0], s[h][1]), _mm256_add_ps(s[h][2], s[h][3]));
        }
        for (int h = 0; h < NQ; h++) {
            if (nr == 8) {
                _mm256_storeu_ps(out[h] + r0, hsum8(lanes[h]));
            } else {
                for (int r = 0; r < nr; r++)
                    out[h][r0 + r] = hsum(lanes[h][r]);
            }
        }
    }
}

AVX2 static void dot_rows_f16_heads(const float *const *q, int nq, const uint16_t *x, size_t xs, int n, int64_t n_el,
                                    float *const *out) {
    switch (nq) {
    case 1: dot_rows_f16_nq(1, q, x, xs, n, n_el, out); break;
    case 2: dot_rows_f16_nq(2, q, x, xs, n, n_el, out); break;
#if X86_VNNI
    case 3: dot_rows_f16_nq(3, q, x, xs, n, n_el, out); break;
    case 4: dot_rows_f16_nq(4, q, x, xs, n, n_el, out); break;
    case 5: dot_rows_f16_nq(5, q, x, xs, n, n_el, out); break;
    case 6: dot_rows_f16_nq(6, q, x, xs, n, n_el, out); break;
    case 7: dot_rows_f16_nq(7, q, x, xs, n, n_el, out); break;
    default: dot_rows_f16_nq(8, q, x, xs, n, n_el, out); break;
#else
    /* two heads at a time: three or four heads' sums (12, 16 registers) and the converted values
     * spill */
    default:
        dot_rows_f16_nq(2, q, x, xs, n, n_el, out);
        dot_rows_f16_heads(q + 2, nq - 2, x, xs, n, n_el, out + 2);
        break;
#endif
    }
}

#if !X86_VNNI
/* One step of axpy_rows_f16_nq, AVX2: NV vectors of 8 values from value s0 of every head, over
 * every row in order. Inlined with constant NQ and NV. */
AVX2 static KERNEL_INLINE void axpy_f16_step8(int NQ, int NV, float *const *y, const float *const *a, const uint16_t *x, size_t xs,
                                              int n, int64_t s0) {
    __m256 acc[4][4];
    UNROLL(4)
    for (int h = 0; h < NQ; h++)
        UNROLL(4)
        for (int v = 0; v < NV; v++)
            acc[h][v] = _mm256_loadu_ps(y[h] + s0 + 8 * v);
    for (int r = 0; r < n; r++) {
        const uint16_t *xr = x + (size_t)r * xs;
        __m256 k[4];
        UNROLL(4)
        for (int v = 0; v < NV; v++)
            k[v] = ld_h8(xr + 8 * v);
        UNROLL(4)
        for (int h = 0; h < NQ; h++) {
            const __m256 av = _mm256_set1_ps(a[h][r]);
            UNROLL(4)
            for (int v = 0; v < NV; v++)
                acc[h][v] = _mm256_fmadd_ps(av, k[v], acc[h][v]);
        }
    }
    UNROLL(4)
    for (int h = 0; h < NQ; h++)
        UNROLL(4)
        for (int v = 0; v < NV; v++)
            _mm256_storeu_ps(y[h] + s0 + 8 * v, acc[h][v]);
}
#endif

#if X86_VNNI
/* One step of axpy_rows_f16_nq: NV vectors of 16 values (the last masked by last) from value s0
 * of every head, over every row in order. Inlined with constant NQ and NV. */
AVX2 static KERNEL_INLINE void axpy_f16_step(int NQ, int NV, float *const *y, const float *const *a, const uint16_t *x, size_t xs,
                                             int n, int64_t s0, __mmask16 last) {
    __m512 acc[F16_HEADS_MAX][4];
    UNROLL(8)
    for (int h = 0; h < NQ; h++)
        UNROLL(4)
        for (int v = 0; v < NV; v++)
            acc[h][v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, y[h] + s0 + 16 * v);
    for (int r = 0; r < n; r++) {
        const uint16_t *xr = x + (size_t)r * xs;
        __m512 k[4];
        UNROLL(4)
        for (int v = 0; v < NV; v++)
            k[v] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(v == NV - 1 ? last : 0xffff, xr + 16 * v));
        UNROLL(8)
        for (int h = 0; h < NQ; h++) {
            const __m512 av = _mm512_set1_ps(a[h][r]);
            UNROLL(4)
            for (int v = 0; v < NV; v++)
                acc[h][v] = _mm512_fmadd_ps(av, k[v], acc[h][v]);
        }
    }
    UNROLL(8)
    for (int h = 0; h < NQ; h++)
        UNROLL(4)
        for (int v = 0; v < NV; v++)
            _mm512_mask_storeu_ps(y[h] + s0 + 16 * v, v == NV - 1 ? last : 0xffff, acc[h][v]);
}
#endif

/* axpy_rows_f16 for NQ heads: 32 values of every head in registers at a time, each converted
 * group of eight added into all of them, row after row in order: each value takes the same fused
 * steps in the same order as in the one-head kernel. */
AVX2 static KERNEL_INLINE void axpy_rows_f16_nq(int NQ, float *const *y, const float *const *a, const uint16_t *x, size_t xs, int n,
                                                int64_t n_el) {
#if X86_VNNI
    /* 64 values of every head a step in 512-bit registers (a constant count, so that the sums
     * stay in registers: with a count known only at run time they went through memory, at a
     * quarter of the speed), the last step's vectors masked to what is left: each value's steps
     * are the same whatever the vectors' width */
    /* up to four heads 64 values a step, more 32: their sums fill the registers */
    int64_t s0 = 0;
    for (; NQ <= 4 && s0 + 64 <= n_el; s0 += 64)
        axpy_f16_step(NQ, 4, y, a, x + s0, xs, n, s0, 0xffff);
    for (; NQ > 4 && s0 + 32 <= n_el; s0 += 32)
        axpy_f16_step(NQ, 2, y, a, x + s0, xs, n, s0, 0xffff);
    if (s0 < n_el) {
        const int64_t w = n_el - s0;
        const int nv = (int)((w + 15) / 16);
        const __mmask16 last = (__mmask16)(w % 16 ? (1u << (w % 16)) - 1 : 0xffff);
        switch (nv) {
        case 1: axpy_f16_step(NQ, 1, y, a, x + s0, xs, n, s0, last); break;
        case 2: axpy_f16_step(NQ, 2, y, a, x + s0, xs, n, s0, last); break;
        case 3: axpy_f16_step(NQ, 3, y, a, x + s0, xs, n, s0, last); break;
        default: axpy_f16_step(NQ, 4, y, a, x + s0, xs, n, s0, last); break;
        }
    }
#else
    /* 32 values a step for up to two heads, 16 for more (constant counts: the sums stay in the 16
     * registers), then what is left */
    int64_t s0 = 0;
    for (; NQ <= 2 && s0 + 32 <= n_el; s0 += 32)
        axpy_f16_step8(NQ, 4, y, a, x + s0, xs, n, s0);
    for (; NQ > 2 && s0 + 16 <= n_el; s0 += 16)
        axpy_f16_step8(NQ, 2, y, a, x + s0, xs, n, s0);
    switch ((n_el - s0) / 8) {
    case 1: axpy_f16_step8(NQ, 1, y, a, x + s0, xs, n, s0); break;
    case 2: axpy_f16_step8(NQ, 2, y, a, x + s0, xs, n, s0); break;
    case 3: axpy_f16_step8(NQ, 3, y, a, x + s0, xs, n, s0); break;
    default: break;
    }
#endif
}

AVX2 static void axpy_rows_f16_heads(float *const *y, const float *const *a, int nq, const uint16_t *x, size_t xs, int n,
                                     int64_t n_el) {
    switch (nq) {
    case 1: axpy_rows_f16_nq(1, y, a, x, xs, n, n_el); break;
    case 2: axpy_rows_f16_nq(2, y, a, x, xs, n, n_el); break;
    case 3: axpy_rows_f16_nq(3, y, a, x, xs, n, n_el); break;
#if X86_VNNI
    case 4: axpy_rows_f16_nq(4, y, a, x, xs, n, n_el); break;
    case 5: axpy_rows_f16_nq(5, y, a, x, xs, n, n_el); break;
    case 6: axpy_rows_f16_nq(6, y, a, x, xs, n, n_el); break;
    case 7: axpy_rows_f16_nq(7, y, a, x, xs, n, n_el); break;
    default: axpy_rows_f16_nq(8, y, a, x, xs, n, n_el); break;
#else
    default: axpy_rows_f16_nq(4, y, a, x, xs, n, n_el); break;
#endif
    }
}


#if X86_VNNI
/* ---- A prompt's attention with the queries in lanes (attn_lanes) ----
 * One query at a time, a key row converted or loaded serves only the heads of its group (six for
 * Qwen2.5, four for Gemma 3), and each score is a reduction across a row: the several-head kernels
 * ran at about 45% of the multiply-add peak. With a block of tokens' queries in lanes, a tile of
 * four keys by up to six vectors of sixteen queries is 24 registers of sums, each step a load per
 * vector of queries and a broadcast per key, and the softmax steps run sixteen queries at a time. */

/* exp8's steps on sixteen values. */
AVX2 static inline __m512 exp16(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(CPU_EXP_LO));
    x = _mm512_min_ps(x, _mm512_set1_ps(CPU_EXP_HI));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(CPU_EXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(CPU_EXP_LN2_HI)));
    r = _mm512_add_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(CPU_EXP_LN2_LO)));
    __m512 p = _mm512_set1_ps(CPU_EXP_P5);
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(CPU_EXP_P4));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(CPU_EXP_P3));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(CPU_EXP_P2));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(CPU_EXP_P1));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(CPU_EXP_P0));
    p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r), _mm512_set1_ps(1.0f));
    const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

#define ATTN_VECS (ATTN_LANES_MAX / 16)

/* Values of a score summed in one chain before it is added to the rest: one chain over a head of
 * 128 doubled the largest error of Qwen2.5's logits against the reference (3.9e-6 -> 7.1e-6 of
 * their range); chains of 16 added in turn keep it as the one-query kernels' lanes do. */
#define ATTN_CHAIN 16

/* Values d0 .. d0 + ATTN_CHAIN - 1 of the scores of keys r0 .. r0 + R - 1 for the NV vectors of
 * queries: s[r][lane] (+)= k_r[d0 ..] . q_lane[d0 ..]. R * NV sums fill the registers: R = 8 for up
 * to three vectors, so that each load of queries serves eight keys. */
AVX2 static KERNEL_INLINE void attn_scores_r(int R, int NV, const attn_lanes *a, const float *k, int r0, int d0) {
    const int L = a->lanes, hd = a->head_dim, d1 = hd - d0 < ATTN_CHAIN ? hd : d0 + ATTN_CHAIN;
    __m512 acc[8][ATTN_VECS];
    UNROLL(8)
    for (int i = 0; i < R; i++)
        UNROLL(6)
        for (int v = 0; v < NV; v++)
            acc[i][v] = _mm512_setzero_ps();
    for (int d = d0; d < d1; d++) {
        __m512 q[ATTN_VECS];
        UNROLL(6)
        for (int v = 0; v < NV; v++)
            q[v] = _mm512_loadu_ps(a->qt + (size_t)d * L + 16 * v);
        UNROLL(8)
        for (int i = 0; i < R; i++) {
            const __m512 kb = _mm512_set1_ps(k[(size_t)(r0 + i) * hd + d]);
            UNROLL(6)
            for (int v = 0; v < NV; v++)
                acc[i][v] = _mm512_fmadd_ps(kb, q[v], acc[i][v]);
        }
    }
    UNROLL(8)
    for (int i = 0; i < R; i++)
        UNROLL(6)
        for (int v = 0; v < NV; v++) {
            float *o = a->s + (size_t)(r0 + i) * L + 16 * v;
            _mm512_storeu_ps(o, d0 ? _mm512_add_ps(_mm512_loadu_ps(o), acc[i][v]) : acc[i][v]);
        }
}

/* Outputs d0 .. d0 + R - 1 of the NV vectors of queries plus the n rows of v weighted by s (R as
 * attn_scores_r's). */
AVX2 static KERNEL_INLINE void attn_values_r(int R, int NV, const attn_lanes *a, const float *v, int n, int d0) {
    const int L = a->lanes, hd = a->head_dim;
    __m512 acc[8][ATTN_VECS];
    UNROLL(8)
    for (int i = 0; i < R; i++)
        UNROLL(6)
        for (int u = 0; u < NV; u++)
            acc[i][u] = _mm512_loadu_ps(a->acc + (size_t)(d0 + i) * L + 16 * u);
    for (int r = 0; r < n; r++) {
        __m512 p[ATTN_VECS];
        UNROLL(6)
        for (int u = 0; u < NV; u++)
            p[u] = _mm512_loadu_ps(a->s + (size_t)r * L + 16 * u);
        UNROLL(8)
        for (int i = 0; i < R; i++) {
            const __m512 vb = _mm512_set1_ps(v[(size_t)r * hd + d0 + i]);
            UNROLL(6)
            for (int u = 0; u < NV; u++)
                acc[i][u] = _mm512_fmadd_ps(vb, p[u], acc[i][u]);
        }
    }
    UNROLL(8)
    for (int i = 0; i < R; i++)
        UNROLL(6)
        for (int u = 0; u < NV; u++)
            _mm512_storeu_ps(a->acc + (size_t)(d0 + i) * L + 16 * u, acc[i][u]);
}

/* Both products of a tile over the NV vectors of queries (the softmax between them). */
AVX2 static KERNEL_INLINE void attn_tile_vecs(int NV, const attn_lanes *a, int64_t key0, int n, const float *k, const float *v) {
    const int L = a->lanes, hd = a->head_dim;
    /* a chain's queries (ATTN_CHAIN rows of qt) stay in the first-level cache over every key: for
     * a head of 256 all of qt (96 KB) does not */
    const int R = NV <= 3 ? 8 : 4;
    for (int d0 = 0; d0 < hd; d0 += ATTN_CHAIN)
        for (int r0 = 0; r0 < n; r0 += R)
            attn_scores_r(R, NV, a, k, r0, d0);
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY), scale = _mm512_set1_ps(a->scale);
    __m512 keep[ATTN_VECS];
    for (int u = 0; u < NV; u++) {
        const int off = 16 * u;
        const __m512i first = _mm512_loadu_si512(a->first + off), last = _mm512_loadu_si512(a->last + off);
        const __m512 m_old = _mm512_loadu_ps(a->max + off);
        __m512 m = m_old;
        for (int r = 0; r < n; r++) {
            const __m512i key = _mm512_set1_epi32((int32_t)(key0 + r));
            const __mmask16 seen = _mm512_cmpge_epi32_mask(key, first) & _mm512_cmple_epi32_mask(key, last);
            float *sr = a->s + (size_t)r * L + off;
            const __m512 sc = _mm512_mask_blend_ps(seen, neg_inf, _mm512_mul_ps(_mm512_loadu_ps(sr), scale));
            _mm512_storeu_ps(sr, sc);
            m = _mm512_max_ps(m, sc);
        }
        /* what was summed under the old maximum, rescaled (1 where nothing is seen yet, whose
         * difference of infinities would be NaN; exactly 1 where the maximum stays) */
        const __mmask16 any = _mm512_cmp_ps_mask(m, neg_inf, _CMP_NEQ_OQ);
        keep[u] = _mm512_mask_blend_ps(any, _mm512_set1_ps(1.0f), exp16(_mm512_sub_ps(m_old, m)));
        __m512 sum = _mm512_mul_ps(_mm512_loadu_ps(a->sum + off), keep[u]);
        for (int r = 0; r < n; r++) {
            float *sr = a->s + (size_t)r * L + off;
            const __m512 sc = _mm512_loadu_ps(sr);
            const __m512 e = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(sc, neg_inf, _CMP_NEQ_OQ), exp16(_mm512_sub_ps(sc, m)));
            _mm512_storeu_ps(sr, e);
            sum = _mm512_add_ps(sum, e);
        }
        _mm512_storeu_ps(a->sum + off, sum);
        _mm512_storeu_ps(a->max + off, m);
    }
    for (int d = 0; d < hd; d++)
        for (int u = 0; u < NV; u++) {
            float *o = a->acc + (size_t)d * L + 16 * u;
            _mm512_storeu_ps(o, _mm512_mul_ps(_mm512_loadu_ps(o), keep[u]));
        }
    for (int d0 = 0; d0 < hd; d0 += R)
        attn_values_r(R, NV, a, v, n, d0);
}

AVX2 static void attn_tile(const attn_lanes *a, int64_t key0, int n, const float *k, const float *v) {
    switch (a->lanes / 16) {
    case 1: attn_tile_vecs(1, a, key0, n, k, v); break;
    case 2: attn_tile_vecs(2, a, key0, n, k, v); break;
    case 3: attn_tile_vecs(3, a, key0, n, k, v); break;
    case 4: attn_tile_vecs(4, a, key0, n, k, v); break;
    case 5: attn_tile_vecs(5, a, key0, n, k, v); break;
    default: attn_tile_vecs(6, a, key0, n, k, v); break;
    }
}
#endif

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

AVX2 static float dot_mxfp4(const void *row, const float *x, int64_t n) {
    const block_mxfp4 *b = row;
    const __m128i v = _mm_loadu_si128((const __m128i *)quant_mxfp4_values);
    const __m256i lut = _mm256_set_m128i(v, v);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_MXFP4; i++, x += QK_MXFP4) {
        const __m256i q = _mm256_shuffle_epi8(lut, nibbles32(b[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(quant_e8m0_half(b[i].e)), dot32(q, x), acc);
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

/* ---- activation quantizers: the scalar ones' bytes, eight floats at a time ---- */

AVX2 static inline __m256 abs_ps(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

/* The largest |x| of 32 floats; NaN is passed over as the scalar loop does (max_ps returns its
 * second operand when either is NaN). */
AVX2 static inline float amax32(const float *x) {
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < 32; i += 8)
        m = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + i)), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ps(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
}

/* x * id rounded as roundf rounds (half away from zero: trunc, then one step out when the exact
 * remainder is at least a half), NaN to 0, clamped to +-127, as int32 lanes. */
AVX2 static inline __m256i round8(const float *x, __m256 id) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), id);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 half = _mm256_cmp_ps(abs_ps(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 step = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));
    __m256 r = _mm256_add_ps(t, _mm256_and_ps(half, step));
    r = _mm256_and_ps(r, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvtps_epi32(r);
}

/* 32 codes from four int32 vectors, in order, and their sum. */
AVX2 static inline int32_t pack32(__m256i a, __m256i b, __m256i c, __m256i d, int8_t *q) {
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    const __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, p);
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
    return _mm_cvtsi128_si32(h);
}

AVX2 static void quantize_q8_32(const float *x, act_q8_32 *out, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float d, id;
        cpu_q8_32_scale(amax32(x), &d, &id);
        const __m256 idv = _mm256_set1_ps(id);
        const int32_t sum = pack32(round8(x, idv), round8(x + 8, idv), round8(x + 16, idv), round8(x + 24, idv), out[b].q);
        out[b].d = d;
        out[b].s = d * (float)sum;
    }
}

/* cpu_q8_256_products in vectors, the same bytes: ms and ds are one exact integer product and one
 * rounded float product each, as the scalar's; qx the same moves of four bytes (the scalar loop of
 * them was 2% of Gemma 3 270M's prompt). */
AVX2 static inline void q8_256_products(act_q8_256 *a) {
    const __m256i s = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)a->s));
    const __m256i bs = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)a->bsums)); /* bsums 0..7 */
    const __m256i bs2 = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(a->bsums + 8)));
    /* pairs' sums: lanes (0+1, 2+3, 8+9, 10+11 | 4+5, 6+7, 12+13, 14+15), into sub-block order */
    const __m256i pairs = _mm256_permute4x64_epi64(_mm256_hadd_epi32(bs, bs2), 0xd8);
    _mm256_storeu_ps(a->ms, _mm256_cvtepi32_ps(_mm256_mullo_epi32(s, pairs)));
    _mm256_storeu_ps(a->ds, _mm256_mul_ps(_mm256_set1_ps(a->d), _mm256_cvtepi32_ps(s)));
    for (int p = 0; p < 4; p++) {
        const __m256i lo = _mm256_loadu_si256((const __m256i *)(a->q + 64 * p));
        const __m256i hi = _mm256_loadu_si256((const __m256i *)(a->q + 64 * p + 32));
        const __m256i u0 = _mm256_unpacklo_epi32(lo, hi), u1 = _mm256_unpackhi_epi32(lo, hi);
        _mm256_storeu_si256((__m256i *)(a->qx + 64 * p), _mm256_permute2x128_si256(u0, u1, 0x20));
        _mm256_storeu_si256((__m256i *)(a->qx + 64 * p + 32), _mm256_permute2x128_si256(u0, u1, 0x31));
    }
}

AVX2 static void quantize_q8_256(const float *x, act_q8_256 *out, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++, x += 256) {
        float sub[8], id[8];
        for (int j = 0; j < 8; j++)
            sub[j] = amax32(x + 32 * j);
        cpu_q8_256_scales(sub, &out[b].d, out[b].s, id);
        const __m128i s8 = _mm_loadu_si128((const __m128i *)out[b].s);
        _mm256_storeu_si256((__m256i *)out[b].sp, _mm256_set_m128i(_mm_unpackhi_epi16(s8, s8), _mm_unpacklo_epi16(s8, s8)));
        for (int j = 0; j < 8; j++) {
            const __m256 idv = _mm256_set1_ps(id[j]);
            const float *xj = x + 32 * j;
            const __m256i a = round8(xj, idv), c = round8(xj + 8, idv), e = round8(xj + 16, idv), g = round8(xj + 24, idv);
            pack32(a, c, e, g, out[b].q + 32 * j);
            /* the halves neg_off8 splits each 16 codes into (values 0-3 and 8-11, 4-7 and 12-15),
             * then their sums */
            const __m256i s0 = _mm256_add_epi32(a, c), s1 = _mm256_add_epi32(e, g);
            const __m256i h = _mm256_hadd_epi32(s0, s1); /* lanes: s0 pairs, s1 pairs, per 128 half */
            const __m256i h2 = _mm256_hadd_epi32(h, h);  /* halves of the first 16 and the second, per 128 half */
            const __m128i lo = _mm256_castsi256_si128(h2), hi = _mm256_extracti128_si256(h2, 1);
            _mm_storeu_si128((__m128i *)(out[b].neg_off8 + 4 * j),
                             _mm_sub_epi32(_mm_setzero_si128(), _mm_slli_epi32(_mm_unpacklo_epi32(lo, hi), 5)));
            const __m128i r = _mm_add_epi32(lo, hi);
            out[b].bsums[2 * j] = (int16_t)_mm_cvtsi128_si32(r);
            out[b].bsums[2 * j + 1] = (int16_t)_mm_extract_epi32(r, 1);
        }
        q8_256_products(&out[b]);
    }
}

/* ---- integer products with 8-bit activations ---- */

/* How far ahead in a weight row the integer kernels ask for memory: the hardware prefetcher
 * alone leaves two streaming cores at about 22 GB/s here, this brings them to 26-28. */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 2048
#endif

/* Sums of u[i] * s[i] (unsigned weight codes < 128, signed activations) as 8 int32 lanes, lane k
 * holding bytes 4k..4k+3. */
AVX2 static inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if X86_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

AVX2 static inline __m256 i32_ps(__m256i v) {
    return _mm256_cvtepi32_ps(v);
}

/* 16 bytes of packed nibbles -> 32 byte codes, read once into both halves: the low half keeps the
 * low nibbles, the high half is shifted right by 4 first. */
AVX2 static inline __m256i nibbles32_bcast(const uint8_t *qs) {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
}

/* The float factors of one 32-value block, from the weights' half-float scale (and minimum, where
 * the format has one, stored right after it) and the activations' (d, s = d * sum of codes):
 * lane 0 = d_w * d_x scales the integer dot, lane 1 = d_w * s_x (formats with an offset) or
 * m_w * s_x (formats with a minimum) is the block's constant term. One conversion, one multiply. */
AVX2 static inline __m128 block_factors(const void *block, bool has_min, const act_q8_32 *x) {
    /* the block's first bytes: d, then m where the format has one (read as bytes: they are two fields) */
    uint16_t dm[2];
    memcpy(dm, block, has_min ? 4 : 2);
    const uint32_t bits = has_min ? (uint32_t)dm[0] | (uint32_t)dm[1] << 16 : (uint32_t)dm[0] * 0x10001u;
    const __m128 w = _mm_cvtph_ps(_mm_cvtsi32_si128((int)bits));
    return _mm_mul_ps(w, _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)&x->d)));
}

AVX2 static inline __m128 factors_d(const void *block, const act_q8_32 *x) {
    return block_factors(block, false, x);
}

AVX2 static inline __m128 factors_dm(const void *block, const act_q8_32 *x) {
    return block_factors(block, true, x);
}

/* MXFP4's scale is a power of two, 2^(e - 128), in place of an f16 */
AVX2 static inline __m128 factors_mxfp4(const void *block, const act_q8_32 *x) {
    const __m128 w = _mm_set1_ps(quant_e8m0_half(((const block_mxfp4 *)block)->e));
    return _mm_mul_ps(w, _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)&x->d)));
}

/* Block codes of the 32-value formats as unsigned bytes, and the offset their integer dot carries
 * (Q4_0 codes are stored +8, Q5_0 +16, MXFP4's values -12..12 are looked up +12, the others have
 * none). */
AVX2 static inline __m256i codes_q4(const void *blk) {
    return nibbles32_bcast(((const block_q4_0 *)blk)->qs);
}

/* quant_mxfp4_values + 12 in both 128-bit halves: one shuffle looks up 32 codes */
AVX2 static inline __m256i mxfp4_lut(void) {
    const __m128i v = _mm_add_epi8(_mm_loadu_si128((const __m128i *)quant_mxfp4_values), _mm_set1_epi8(12));
    return _mm256_set_m128i(v, v);
}

AVX2 static inline __m256i codes_mxfp4(const void *blk) {
    return _mm256_shuffle_epi8(mxfp4_lut(), nibbles32_bcast(((const block_mxfp4 *)blk)->qs));
}

AVX2 static inline __m256i codes_q4_1(const void *blk) {
    return nibbles32_bcast(((const block_q4_1 *)blk)->qs);
}

AVX2 static inline __m256i codes_q5_0(const void *blk) {
    const block_q5_0 *b = blk;
    return _mm256_or_si256(nibbles32_bcast(b->qs), _mm256_and_si256(bits32(load_u32(b->qh)), _mm256_set1_epi8(0x10)));
}

AVX2 static inline __m256i codes_q5_1(const void *blk) {
    const block_q5_1 *b = blk;
    return _mm256_or_si256(nibbles32_bcast(b->qs), _mm256_and_si256(bits32(load_u32(b->qh)), _mm256_set1_epi8(0x10)));
}

/* One block's contribution: acc += (d_w d_x) * dot, con += the constant term (lane 1). Two
 * interleaved accumulator pairs per row (even and odd blocks) so the additions do not wait on each
 * other. */
static_assert(offsetof(block_q4_1, m) == 2 && offsetof(block_q5_1, m) == 2, "minimum right after the scale");
static_assert(offsetof(block_q4_0, d) == 0 && offsetof(block_q5_0, d) == 0 && offsetof(block_q8_0, d) == 0,
              "scale first");

#define Q8_32_KERNEL(name, block_t, codes, factors, has_min, offset)                                                     \
    AVX2 static float name(const void *row, const void *xq, int64_t n) {                                      \
        const block_t *w = row;                                                                                 \
        const act_q8_32 *x = xq;                                                                                \
        __m256 acc[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };                                         \
        __m128 con[2] = { _mm_setzero_ps(), _mm_setzero_ps() };                                               \
        const int64_t nb = n / 32;                                                                              \
        for (int64_t b = 0; b < nb; b += 2) {                                                                   \
            _mm_prefetch((const char *)(w + b) + PREFETCH_AHEAD, _MM_HINT_T0);                                  \
            for (int e = 0; e < 2 && b + e < nb; e++) {                                                          \
                const __m128 f = factors(&w[b + e], &x[b + e]);                                 \
                const __m256i p = dot_u8s8(codes(&w[b + e]), _mm256_loadu_si256((const __m256i *)x[b + e].q)); \
                acc[e] = _mm256_fmadd_ps(_mm256_broadcastss_ps(f), i32_ps(p), acc[e]);                         \
                con[e] = _mm_add_ps(con[e], f);                                                                 \
            }                                                                                                   \
        }                                                                                                       \
        const __m128 c = _mm_add_ps(con[0], con[1]);                                                          \
        return hsum(_mm256_add_ps(acc[0], acc[1])) + (has_min ? 1.0f : -(float)(offset)) * _mm_cvtss_f32(_mm_shuffle_ps(c, c, 1)); \
    }                                                                                                           \
    /* four tokens, each summed exactly as above */                                                            \
    AVX2 static void name##_x4(const void *row, const void *xq, size_t xs, int64_t n, float *y, size_t ys) {   \
        const block_t *w = row;                                                                                 \
        const act_q8_32 *x[4];                                                                                  \
        __m256 acc[4][2];                                                                                       \
        __m128 con[4][2];                                                                                       \
        for (int t = 0; t < 4; t++) {                                                                           \
            x[t] = (const act_q8_32 *)((const char *)xq + t * xs);                                              \
            acc[t][0] = acc[t][1] = _mm256_setzero_ps();                                                        \
            con[t][0] = con[t][1] = _mm_setzero_ps();                                                           \
        }                                                                                                       \
        const int64_t nb = n / 32;                                                                              \
        for (int64_t b = 0; b < nb; b += 2)                                                                     \
            for (int e = 0; e < 2 && b + e < nb; e++) {                                                          \
                const __m256i u = codes(&w[b + e]);                                                            \
                for (int t = 0; t < 4; t++) {                                                                   \
                    const __m128 f = factors(&w[b + e], &x[t][b + e]);                          \
                    const __m256i p = dot_u8s8(u, _mm256_loadu_si256((const __m256i *)x[t][b + e].q));          \
                    acc[t][e] = _mm256_fmadd_ps(_mm256_broadcastss_ps(f), i32_ps(p), acc[t][e]);                \
                    con[t][e] = _mm_add_ps(con[t][e], f);                                                       \
                }                                                                                               \
            }                                                                                                   \
        for (int t = 0; t < 4; t++) {                                                                           \
            const __m128 c = _mm_add_ps(con[t][0], con[t][1]);                                                \
            y[t * ys] = hsum(_mm256_add_ps(acc[t][0], acc[t][1])) +                                            \
                        (has_min ? 1.0f : -(float)(offset)) * _mm_cvtss_f32(_mm_shuffle_ps(c, c, 1));           \
        }                                                                                                       \
    }

Q8_32_KERNEL(q8_q4_0, block_q4_0, codes_q4, factors_d, false, 8)
Q8_32_KERNEL(q8_q4_1, block_q4_1, codes_q4_1, factors_dm, true, 0)
Q8_32_KERNEL(q8_q5_0, block_q5_0, codes_q5_0, factors_d, false, 16)
Q8_32_KERNEL(q8_q5_1, block_q5_1, codes_q5_1, factors_dm, true, 0)
Q8_32_KERNEL(q8_mxfp4, block_mxfp4, codes_mxfp4, factors_mxfp4, false, 12)

/* Q8_0: signed weights; the weights' signs move onto the activations (maddubs needs one unsigned
 * side). No constant term. */
AVX2 static inline __m256i q8_0_dot(const block_q8_0 *w, const __m256i qx) {
    const __m256i qw = _mm256_loadu_si256((const __m256i *)w->qs);
    return dot_u8s8(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
}

AVX2 static float q8_q8_0(const void *row, const void *xq, int64_t n) {
    const block_q8_0 *w = row;
    const act_q8_32 *x = xq;
    __m256 acc[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    const int64_t nb = n / 32;
    for (int64_t b = 0; b < nb; b += 2) {
        _mm_prefetch((const char *)(w + b) + PREFETCH_AHEAD, _MM_HINT_T0);
        for (int e = 0; e < 2 && b + e < nb; e++) {
            const __m128 f = block_factors(&w[b + e], false, &x[b + e]);
            const __m256i p = q8_0_dot(&w[b + e], _mm256_loadu_si256((const __m256i *)x[b + e].q));
            acc[e] = _mm256_fmadd_ps(_mm256_broadcastss_ps(f), i32_ps(p), acc[e]);
        }
    }
    return hsum(_mm256_add_ps(acc[0], acc[1]));
}

/* Shuffle masks that broadcast 16-bit lane j (0..7) of each 128-bit half to the whole half. */
AVX2 static inline __m256i lane16_mask(int j) {
    return _mm256_set1_epi16((short)((2 * j) | ((2 * j + 1) << 8)));
}

/* Broadcasts 16-bit lane a of the low half to the low half and lane b to the high half. */
AVX2 static inline __m256i lanes16_mask(int a, int b) {
    const short lo = (short)((2 * a) | ((2 * a + 1) << 8)), hi = (short)((2 * b) | ((2 * b + 1) << 8));
    return _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi);
}

/* u (codes < 64) times s (signed activations) in pairs, then times a 16-bit scale per pair: eight
 * int32 lanes. maddubs cannot saturate here: 2 * 63 * 128 < 32768. */
AVX2 static inline __m256i dot_scaled(__m256i u, __m256i s, __m256i scale16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16);
}

/* An activation block's sub-scales as 16-bit lanes, each twice (s0 s0 s1 s1 ... s7 s7): one per
 * 16 values, as the minimums and the Q6_K scales are laid out. */
AVX2 static inline __m256i act_scales_pairs(const act_q8_256 *x) {
    return _mm256_loadu_si256((const __m256i *)x->sp);
}

/* One Q4_K or Q5_K block (qh NULL for Q4_K; both callers pass a constant, so the test folds away)
 * added to acc. */
AVX2 static inline __m256 q8_block_q45_K(const void *blk, const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                                         uint16_t d, uint16_t dmin, const act_q8_256 *x, __m256 acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), five = _mm256_set1_epi8(0x10);
    _mm_prefetch((const char *)blk + PREFETCH_AHEAD, _MM_HINT_T0);
    _mm_prefetch((const char *)blk + PREFETCH_AHEAD + 64, _MM_HINT_T0);
    _mm_prefetch((const char *)blk + PREFETCH_AHEAD + 128, _MM_HINT_T0);
    uint32_t sm[4];
    quant_k_scales_words(scales, sm);
    const __m128i v = _mm_setr_epi32((int)sm[0], (int)sm[1], (int)sm[2], (int)sm[3]);
    /* weight scale times activation sub-scale, per 32 values (at most 63 * 127) */
    const __m256i sc = _mm256_broadcastsi128_si256(_mm_mullo_epi16(_mm_cvtepu8_epi16(v), _mm_loadu_si128((const __m128i *)x->s)));
    /* minimums: each covers two 16-value sums of the activations */
    const __m256i mins = _mm256_mullo_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v)), act_scales_pairs(x));
    const __m256i pm = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)x->bsums));
    const __m256i high = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    __m256i isum = _mm256_setzero_si256();
    for (int j = 0; j < 4; j++) {
        const __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        __m256i q_lo = _mm256_and_si256(raw, m4), q_hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        if (qh) { /* Q5_K: bit 2j (2j + 1) of qh[l] is the fifth bit of element l of sub-block 2j (2j + 1) */
            const __m256i bit_lo = _mm256_set1_epi8((char)(1 << (2 * j))), bit_hi = _mm256_set1_epi8((char)(1 << (2 * j + 1)));
            q_lo = _mm256_or_si256(q_lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(high, bit_lo), bit_lo), five));
            q_hi = _mm256_or_si256(q_hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(high, bit_hi), bit_hi), five));
        }
        const __m256i p0 = dot_scaled(q_lo, _mm256_loadu_si256((const __m256i *)(x->q + 64 * j)),
                                      _mm256_shuffle_epi8(sc, lane16_mask(2 * j)));
        const __m256i p1 = dot_scaled(q_hi, _mm256_loadu_si256((const __m256i *)(x->q + 64 * j + 32)),
                                      _mm256_shuffle_epi8(sc, lane16_mask(2 * j + 1)));
        isum = _mm256_add_epi32(isum, _mm256_add_epi32(p0, p1));
    }
    /* (d_w * sums - dmin_w * minimum sums) * d_x: the weights' part, then the activations' */
    const __m256 wpart = _mm256_fnmadd_ps(_mm256_set1_ps(h2f(dmin)), i32_ps(pm), _mm256_mul_ps(_mm256_set1_ps(h2f(d)), i32_ps(isum)));
    return _mm256_fmadd_ps(_mm256_set1_ps(x->d), wpart, acc);
}

AVX2 static float q8_q4_K(const void *row, const void *xq, int64_t n) {
    const block_q4_K *w = row;
    const act_q8_256 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++)
        acc = q8_block_q45_K(&w[b], w[b].scales, w[b].qs, NULL, w[b].d, w[b].dmin, &x[b], acc);
    return hsum(acc);
}

AVX2 static float q8_q5_K(const void *row, const void *xq, int64_t n) {
    const block_q5_K *w = row;
    const act_q8_256 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++)
        acc = q8_block_q45_K(&w[b], w[b].scales, w[b].qs, w[b].qh, w[b].d, w[b].dmin, &x[b], acc);
    return hsum(acc);
}

AVX2 static float q8_q6_K(const void *row, const void *xq, int64_t n) {
    const block_q6_K *w = row;
    const act_q8_256 *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        _mm_prefetch((const char *)(w + b) + PREFETCH_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b) + PREFETCH_AHEAD + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b) + PREFETCH_AHEAD + 128, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b) + PREFETCH_AHEAD + 192, _MM_HINT_T0);
        /* one scale per 16 values, times the activations' sub-scale (at most 128 * 127) */
        const __m256i sc16 = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales)),
                                                act_scales_pairs(&x[b]));
        /* the codes are stored +32: subtract 32 * sum of scale * activation sums */
        const __m256i off = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)x[b].bsums));
        const float dd = h2f(w[b].d) * x[b].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(-32.0f * dd), i32_ps(off), acc);
        for (int half = 0; half < 2; half++) {
            /* each half in its own int32 sums: four products of up to 2 * 63 * 127 * 16256 per lane */
            const __m256i sh = _mm256_broadcastsi128_si256(half ? _mm256_extracti128_si256(sc16, 1) : _mm256_castsi256_si128(sc16));
            const int8_t *q8 = x[b].q + 128 * half;
            __m256i q[4], isum = _mm256_setzero_si256();
            q6_unpack(w[b].ql + 64 * half, w[b].qh + 32 * half, q);
            for (int k = 0; k < 4; k++) {
                /* bytes 0-15 take scale 2k of this half, bytes 16-31 scale 2k + 1 */
                const __m256i s = _mm256_shuffle_epi8(sh, lanes16_mask(2 * k, 2 * k + 1));
                isum = _mm256_add_epi32(isum, dot_scaled(q[k], _mm256_loadu_si256((const __m256i *)(q8 + 32 * k)), s));
            }
            acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), i32_ps(isum), acc);
        }
    }
    return hsum(acc);
}

/* ---- the same integer products for four tokens at once (prefill) ----
 * Each weight block is unpacked once and multiplied with the four tokens' activations; every
 * token's sums are formed exactly as in the one-token kernel above (same lanes, same order), so
 * prefill and token-by-token decode give bit-identical outputs. */

#define X4 4




AVX2 static void q8x4_q8_0(const void *row, const void *xq, size_t xs, int64_t n, float *y, size_t ys) {
    const block_q8_0 *w = row;
    const act_q8_32 *x[X4];
    __m256 acc[X4][2];
    for (int t = 0; t < X4; t++) {
        x[t] = (const act_q8_32 *)((const char *)xq + t * xs);
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    }
    const int64_t nb = n / 32;
    for (int64_t b = 0; b < nb; b += 2)
        for (int e = 0; e < 2 && b + e < nb; e++) {
            const __m256i qw = _mm256_loadu_si256((const __m256i *)w[b + e].qs);
            const __m256i aw = _mm256_sign_epi8(qw, qw);
            for (int t = 0; t < X4; t++) {
                const __m128 f = block_factors(&w[b + e], false, &x[t][b + e]);
                const __m256i qx = _mm256_loadu_si256((const __m256i *)x[t][b + e].q);
                const __m256i p = dot_u8s8(aw, _mm256_sign_epi8(qx, qw));
                acc[t][e] = _mm256_fmadd_ps(_mm256_broadcastss_ps(f), i32_ps(p), acc[t][e]);
            }
        }
    for (int t = 0; t < X4; t++)
        y[t * ys] = hsum(_mm256_add_ps(acc[t][0], acc[t][1]));
}

AVX2 static void q8x4_q4_K(const void *row, const void *xq, size_t xs, int64_t n, float *y, size_t ys) {
    const block_q4_K *w = row;
    const act_q8_256 *x[X4];
    for (int t = 0; t < X4; t++)
        x[t] = (const act_q8_256 *)((const char *)xq + t * xs);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[X4];
    for (int t = 0; t < X4; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        uint32_t sm[4];
        quant_k_scales_words(w[b].scales, sm);
        const __m128i v = _mm_setr_epi32((int)sm[0], (int)sm[1], (int)sm[2], (int)sm[3]);
        const __m128i sc = _mm_cvtepu8_epi16(v);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v));
        __m256i isum[X4], scales[X4];
        for (int t = 0; t < X4; t++) {
            isum[t] = _mm256_setzero_si256();
            scales[t] = _mm256_broadcastsi128_si256(_mm_mullo_epi16(sc, _mm_loadu_si128((const __m128i *)x[t][b].s)));
        }
        for (int j = 0; j < 4; j++) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * j));
            const __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            for (int t = 0; t < X4; t++) {
                const __m256i p0 = dot_scaled(lo, _mm256_loadu_si256((const __m256i *)(x[t][b].q + 64 * j)),
                                              _mm256_shuffle_epi8(scales[t], lane16_mask(2 * j)));
                const __m256i p1 = dot_scaled(hi, _mm256_loadu_si256((const __m256i *)(x[t][b].q + 64 * j + 32)),
                                              _mm256_shuffle_epi8(scales[t], lane16_mask(2 * j + 1)));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(p0, p1));
            }
        }
        const __m256 dwv = _mm256_set1_ps(h2f(w[b].d)), dmv = _mm256_set1_ps(h2f(w[b].dmin));
        for (int t = 0; t < X4; t++) {
            const __m256i pm = _mm256_madd_epi16(_mm256_mullo_epi16(mins, act_scales_pairs(&x[t][b])),
                                                 _mm256_loadu_si256((const __m256i *)x[t][b].bsums));
            const __m256 wpart = _mm256_fnmadd_ps(dmv, i32_ps(pm), _mm256_mul_ps(dwv, i32_ps(isum[t])));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(x[t][b].d), wpart, acc[t]);
        }
    }
    for (int t = 0; t < X4; t++)
        y[t * ys] = hsum(acc[t]);
}

AVX2 static void q8x4_q6_K(const void *row, const void *xq, size_t xs, int64_t n, float *y, size_t ys) {
    const block_q6_K *w = row;
    const act_q8_256 *x[X4];
    for (int t = 0; t < X4; t++)
        x[t] = (const act_q8_256 *)((const char *)xq + t * xs);
    __m256 acc[X4];
    for (int t = 0; t < X4; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        const __m256i wsc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[b].scales));
        const float dw = h2f(w[b].d);
        __m256i sc16[X4];
        float dd[X4];
        for (int t = 0; t < X4; t++) {
            sc16[t] = _mm256_mullo_epi16(wsc, act_scales_pairs(&x[t][b]));
            dd[t] = dw * x[t][b].d;
            const __m256i off = _mm256_madd_epi16(sc16[t], _mm256_loadu_si256((const __m256i *)x[t][b].bsums));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(-32.0f * dd[t]), i32_ps(off), acc[t]);
        }
        for (int half = 0; half < 2; half++) {
            __m256i q[4], isum[X4];
            q6_unpack(w[b].ql + 64 * half, w[b].qh + 32 * half, q);
            for (int t = 0; t < X4; t++)
                isum[t] = _mm256_setzero_si256();
            for (int k = 0; k < 4; k++)
                for (int t = 0; t < X4; t++) {
                    const __m256i sh = _mm256_broadcastsi128_si256(half ? _mm256_extracti128_si256(sc16[t], 1)
                                                                         : _mm256_castsi256_si128(sc16[t]));
                    const __m256i s = _mm256_shuffle_epi8(sh, lanes16_mask(2 * k, 2 * k + 1));
                    isum[t] = _mm256_add_epi32(isum[t], dot_scaled(q[k], _mm256_loadu_si256((const __m256i *)(x[t][b].q + 128 * half + 32 * k)), s));
                }
            for (int t = 0; t < X4; t++)
                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dd[t]), i32_ps(isum[t]), acc[t]);
        }
    }
    for (int t = 0; t < X4; t++)
        y[t * ys] = hsum(acc[t]);
}

/* Formats without a dedicated four-token kernel: the one-token kernel four times. */
CPU_Q8_X4_OF(AVX2, q8x4_q5_K, q8_q5_K)

/* ---- prefill by eight rows ---- */

/* The minimums' part of eight rows' block for one token, taken from acc: per row dmin * d_x * the
 * sum over sub-blocks of min * (sub-scale * the sub-block's code sum). */
AVX2 static inline __m256 q4_K_rows_minimums(const float mn[8][8], const float dmin[8], const act_q8_256 *x, __m256 acc) {
    __m256 m = _mm256_setzero_ps();
    for (int s = 0; s < 8; s++)
        m = _mm256_fmadd_ps(_mm256_loadu_ps(mn[s]), _mm256_broadcast_ss(&x->ms[s]), m);
    return _mm256_fnmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(dmin), _mm256_set1_ps(x->d)), m, acc);
}


/* Q4_0, Q4_1, Q5_0 and Q5_1 by eight rows in a layout no larger than the rows themselves, kept by
 * the backend for the life of the weights and used for every product, a single token's included.
 * A block's codes stay packed two per byte: byte j of a row holds values j (low nibble) and j + 16
 * (high), so vector h, with row r's bytes 4h .. 4h + 3 in 32-bit lane r, gives groups h and h + 4
 * with one mask and one shift, shared by the tokens of a pass. The 5-bit formats keep their fifth
 * bits as one 32-bit mask per such half vector (bit 4r + i: row r's byte i), which VNNI's masked
 * byte add applies directly and AVX2 spreads with a shuffle and a compare. Scales (and minimums)
 * stay half floats. A token's result does not depend on how many tokens share the pass (each has
 * its own sums and float steps), so sequences decoded together get exactly what each gets alone;
 * and the AVX2 and VNNI builds agree bit for bit, the integer sums being exact. Offsets in a
 * packed block: codes 0, the fifth bits 128 (32 bytes), then d, then m. */
typedef struct x8p_q4_0 {
    uint8_t codes[4][32]; /* [h][row * 4 + i]: row r's byte 4h + i */
    uint16_t d[8];        /* [row] half-float scale */
} x8p_q4_0;

typedef struct x8p_q4_1 {
    uint8_t codes[4][32];
    uint16_t d[8], m[8]; /* [row] half-float scale and minimum */
} x8p_q4_1;

typedef struct x8p_q5_0 {
    uint8_t codes[4][32];
    uint32_t qh[8]; /* [h]: the fifth bits of vector h's low nibbles; [4 + h]: of its high ones */
    uint16_t d[8];
} x8p_q5_0;

typedef struct x8p_q5_1 {
    uint8_t codes[4][32];
    uint32_t qh[8];
    uint16_t d[8], m[8];
} x8p_q5_1;

/* MXFP4 the same way: its nibbles index quant_mxfp4_values, looked up + 12 (unsigned, 0..24) by one
 * shuffle per half vector, the offset coming back out through the activations' d * sum (-12 per
 * row, as Q4_0's -8); the rows' exponents stay bytes. */
typedef struct x8p_mxfp4 {
    uint8_t codes[4][32];
    uint8_t e[8]; /* [row] E8M0 exponent */
} x8p_mxfp4;

static_assert(sizeof(x8p_q4_0) == 8 * sizeof(block_q4_0) && sizeof(x8p_q4_1) == 8 * sizeof(block_q4_1) &&
                  sizeof(x8p_q5_0) == 8 * sizeof(block_q5_0) && sizeof(x8p_q5_1) == 8 * sizeof(block_q5_1) &&
                  sizeof(x8p_mxfp4) == 8 * sizeof(block_mxfp4),
              "the kept layouts are exactly the rows' bytes");

/* A 32-value format's kept block: its size, where its scale is, whether it has a minimum and
 * fifth bits, or is MXFP4 (a one-byte exponent for the scale, codes looked up). */
typedef struct x8p_shape {
    size_t bytes, d_at, src_bytes, src_qs, src_qh; /* src: the file's block, src_qh 0 for none */
    bool has_min, five, mx;
} x8p_shape;

static x8p_shape x8p_shape_of(uint32_t type) {
    switch (type) {
    case QUANT_Q4_1: return (x8p_shape){ sizeof(x8p_q4_1), 128, sizeof(block_q4_1), 4, 0, true, false, false };
    case QUANT_Q5_0: return (x8p_shape){ sizeof(x8p_q5_0), 160, sizeof(block_q5_0), 6, 2, false, true, false };
    case QUANT_Q5_1: return (x8p_shape){ sizeof(x8p_q5_1), 160, sizeof(block_q5_1), 8, 4, true, true, false };
    case QUANT_MXFP4: return (x8p_shape){ sizeof(x8p_mxfp4), 128, sizeof(block_mxfp4), 1, 0, false, false, true };
    default: return (x8p_shape){ sizeof(x8p_q4_0), 128, sizeof(block_q4_0), 2, 0, false, false, false };
    }
}

/* What a format without a minimum takes off its codes, as a multiple of d (Q4_0's 8, Q5_0's 16,
 * MXFP4's 12 of its doubled values). */
static float x8p_code_offset(x8p_shape sh) {
    return sh.five ? -16.0f : sh.mx ? -12.0f : -8.0f;
}

static size_t x8p_bytes_q4_0(int64_t k) {
    return (size_t)(k / 32) * sizeof(x8p_q4_0);
}
static size_t x8p_bytes_q4_1(int64_t k) {
    return (size_t)(k / 32) * sizeof(x8p_q4_1);
}
static size_t x8p_bytes_q5_0(int64_t k) {
    return (size_t)(k / 32) * sizeof(x8p_q5_0);
}
static size_t x8p_bytes_q5_1(int64_t k) {
    return (size_t)(k / 32) * sizeof(x8p_q5_1);
}
static size_t x8p_bytes_mxfp4(int64_t k) {
    return (size_t)(k / 32) * sizeof(x8p_mxfp4);
}

/* The file's blocks: d first (MXFP4: its exponent byte), then m (Q4_1, Q5_1), then the fifth bits
 * (Q5_*), then 16 code bytes. */
static void x8p_repack_b(uint32_t type, const void *rows, size_t row_bytes, int64_t k, void *packed) {
    const x8p_shape sh = x8p_shape_of(type);
    for (int64_t b = 0; b < k / 32; b++) {
        uint8_t *out = (uint8_t *)packed + (size_t)b * sh.bytes;
        uint16_t *d = (uint16_t *)(out + sh.d_at), *m = d + 8;
        uint32_t qh[8] = { 0 };
        for (int r = 0; r < 8; r++) {
            const uint8_t *blk = (const uint8_t *)rows + (size_t)r * row_bytes + (size_t)b * sh.src_bytes;
            if (sh.mx)
                out[sh.d_at + r] = blk[0];
            else
                memcpy(&d[r], blk, 2);
            if (sh.has_min)
                memcpy(&m[r], blk + 2, 2);
            for (int h = 0; h < 4; h++)
                memcpy(out + 32 * h + 4 * r, blk + sh.src_qs + 4 * h, 4);
            if (sh.five) {
                const uint32_t bits = (uint32_t)blk[sh.src_qh] | (uint32_t)blk[sh.src_qh + 1] << 8 |
                                      (uint32_t)blk[sh.src_qh + 2] << 16 | (uint32_t)blk[sh.src_qh + 3] << 24;
                for (int h = 0; h < 4; h++) {
                    qh[h] |= (bits >> (4 * h) & 0xfu) << (4 * r);
                    qh[4 + h] |= (bits >> (16 + 4 * h) & 0xfu) << (4 * r);
                }
            }
        }
        if (sh.five)
            memcpy(out + 128, qh, sizeof qh);
    }
}

static void x8p_repack_q4_0(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8p_repack_b(QUANT_Q4_0, rows, row_bytes, k, packed);
}
static void x8p_repack_q4_1(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8p_repack_b(QUANT_Q4_1, rows, row_bytes, k, packed);
}
static void x8p_repack_q5_0(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8p_repack_b(QUANT_Q5_0, rows, row_bytes, k, packed);
}
static void x8p_repack_q5_1(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8p_repack_b(QUANT_Q5_1, rows, row_bytes, k, packed);
}
static void x8p_repack_mxfp4(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8p_repack_b(QUANT_MXFP4, rows, row_bytes, k, packed);
}


/* Eight E8M0 exponents as quant_e8m0_half's floats: 2^(e - 128), a subnormal below e = 2. */
AVX2 static inline __m256 e8m0_half8(const uint8_t *e8) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)e8));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}

#if !X86_VNNI
/* A fifth-bit mask as bytes: 16 where bit 4r + i is set (byte i of lane r), 0 elsewhere. */
AVX2 static inline __m256i fifth_bits(uint32_t m) {
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)m), sel), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(b, bit), _mm256_set1_epi8(0x10));
}
#endif

/* One pass of NT (1..4) tokens over every block: y[t * ys + r]. Inlined with constant NT and
 * format, so each gets its own straight-line code. */
AVX2 static KERNEL_INLINE void x8p_pass_b(uint32_t type, int NT, const void *packed, int64_t nb, const act_q8_32 *const x[4],
                                          float *y, size_t ys) {
    const x8p_shape sh = x8p_shape_of(type);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i lut = sh.mx ? mxfp4_lut() : m4;
    __m256 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = (const uint8_t *)packed + (size_t)b * sh.bytes;
        uint32_t qh[8];
        if (sh.five)
            memcpy(qh, blk + 128, sizeof qh);
        __m256i isum[4];
        for (int t = 0; t < NT; t++)
            isum[t] = _mm256_setzero_si256();
#if !X86_VNNI
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i a16[4];
        for (int t = 0; t < NT; t++)
            a16[t] = _mm256_setzero_si256();
#endif
        for (int h = 0; h < 4; h++) {
            const __m256i p = _mm256_loadu_si256((const __m256i *)(blk + 32 * h));
            __m256i lo = _mm256_and_si256(p, m4), hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
            if (sh.mx) {
                lo = _mm256_shuffle_epi8(lut, lo);
                hi = _mm256_shuffle_epi8(lut, hi);
            }
            if (sh.five) {
#if X86_VNNI
                const __m256i sixteen = _mm256_set1_epi8(16);
                lo = _mm256_mask_add_epi8(lo, (__mmask32)qh[h], lo, sixteen);
                hi = _mm256_mask_add_epi8(hi, (__mmask32)qh[4 + h], hi, sixteen);
#else
                lo = _mm256_or_si256(lo, fifth_bits(qh[h]));
                hi = _mm256_or_si256(hi, fifth_bits(qh[4 + h]));
#endif
            }
            for (int t = 0; t < NT; t++) {
                int32_t a, c;
                memcpy(&a, x[t][b].q + 4 * h, 4);
                memcpy(&c, x[t][b].q + 16 + 4 * h, 4);
#if X86_VNNI
                isum[t] = _mm256_dpbusd_epi32(isum[t], lo, _mm256_set1_epi32(a));
                isum[t] = _mm256_dpbusd_epi32(isum[t], hi, _mm256_set1_epi32(c));
#else
                /* per 16-bit lane, 8 products of 15 * 127 at most, or 8 of 31 * 127 (24 * 127 for
                 * MXFP4) between the flushes every second h: no saturation */
                a16[t] = _mm256_add_epi16(a16[t], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(a)));
                a16[t] = _mm256_add_epi16(a16[t], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(c)));
#endif
            }
#if !X86_VNNI
            if (h == 3 || ((sh.five || sh.mx) && h == 1))
                for (int t = 0; t < NT; t++) {
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(a16[t], ones));
                    a16[t] = _mm256_setzero_si256();
                }
#endif
        }
        const __m256 d = sh.mx ? e8m0_half8(blk + sh.d_at) : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + sh.d_at)));
        const __m256 cst = sh.has_min ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + sh.d_at + 16)))
                                      : _mm256_mul_ps(d, _mm256_set1_ps(x8p_code_offset(sh)));
        for (int t = 0; t < NT; t++) {
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[t][b].d)), i32_ps(isum[t]), acc[t]);
            acc[t] = _mm256_fmadd_ps(cst, _mm256_set1_ps(x[t][b].s), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++)
        _mm256_storeu_ps(y + (size_t)t * ys, acc[t]);
}

#if X86_VNNI
/* x8p_pass_b over two groups at once, gb bytes apart, their rows in one 512-bit vector (the first
 * group's eight in the low half): each broadcast of four activations serves sixteen rows, and the
 * float steps take sixteen rows at a time. The lanes take the same steps as x8p_pass_b's, so each
 * row gets the same bits. One group's pass was bound by the broadcasts (one per 256-bit vpdpbusd):
 * one thread, 16 rows of 640 by 64 tokens, Q5_0 119 -> 215 G multiply-adds/s and Q4_1 149 -> 272
 * (streamed from memory, 115-118 -> 187-196 and 130 -> 203-213); Gemma 3 270M pp512 (mostly Q5_0)
 * 2084-2090 -> 2882-2936 tokens/s, SmolLM2 (Q4_1) 1657-1676 -> 2563-2597 (Zen 5). Not MXFP4 (its
 * scales take another step) nor Q8_0 (its own layout). */
AVX2 static KERNEL_INLINE void x8p_pass_b2(uint32_t type, int NT, const void *packed, size_t gb, int64_t nb,
                                           const act_q8_32 *const x[4], float *y, size_t ys) {
    const x8p_shape sh = x8p_shape_of(type);
    const __m512i m4 = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
    __m512 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = (const uint8_t *)packed + (size_t)b * sh.bytes, *blk2 = blk + gb;
        uint32_t qh[2][8];
        if (sh.five) {
            memcpy(qh[0], blk + 128, sizeof qh[0]);
            memcpy(qh[1], blk2 + 128, sizeof qh[1]);
        }
        __m512i isum[4];
        for (int t = 0; t < NT; t++)
            isum[t] = _mm512_setzero_si512();
        for (int h = 0; h < 4; h++) {
            const __m512i p = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(blk + 32 * h))),
                                                 _mm256_loadu_si256((const __m256i *)(blk2 + 32 * h)), 1);
            __m512i lo = _mm512_and_si512(p, m4), hi = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
            if (sh.five) {
                lo = _mm512_mask_add_epi8(lo, (__mmask64)((uint64_t)qh[1][h] << 32 | qh[0][h]), lo, sixteen);
                hi = _mm512_mask_add_epi8(hi, (__mmask64)((uint64_t)qh[1][4 + h] << 32 | qh[0][4 + h]), hi, sixteen);
            }
            for (int t = 0; t < NT; t++) {
                int32_t a, c;
                memcpy(&a, x[t][b].q + 4 * h, 4);
                memcpy(&c, x[t][b].q + 16 + 4 * h, 4);
                isum[t] = _mm512_dpbusd_epi32(isum[t], lo, _mm512_set1_epi32(a));
                isum[t] = _mm512_dpbusd_epi32(isum[t], hi, _mm512_set1_epi32(c));
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(blk + sh.d_at))),
                                                                 _mm_loadu_si128((const __m128i *)(blk2 + sh.d_at)), 1));
        const __m512 cst = sh.has_min ? _mm512_cvtph_ps(_mm256_inserti128_si256(
                                            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(blk + sh.d_at + 16))),
                                            _mm_loadu_si128((const __m128i *)(blk2 + sh.d_at + 16)), 1))
                                      : _mm512_mul_ps(d, _mm512_set1_ps(x8p_code_offset(sh)));
        for (int t = 0; t < NT; t++) {
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[t][b].d)), _mm512_cvtepi32_ps(isum[t]), acc[t]);
            acc[t] = _mm512_fmadd_ps(cst, _mm512_set1_ps(x[t][b].s), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++)
        _mm512_storeu_ps(y + (size_t)t * ys, acc[t]);
}
#endif

/* Q8_0 the same way, for the output head that most small models keep in 8 bits: the codes of
 * eight rows interleaved four bytes at a time (vector h, lane r: row r's bytes 4h .. 4h + 3) and
 * stored as unsigned c = q + 128, so that one vpdpbusd multiplies them with the signed activations;
 * the offset comes back out through the activations' d * sum (-128 d per row). Exactly the bytes of
 * the rows it replaces. AVX2 has no unsigned-by-signed sum that holds 255 * 127 twice, so it takes
 * the codes' two nibbles apart: the same integer sums, so the same bits as VNNI. */
typedef struct x8p_q8_0 {
    uint8_t codes[8][32]; /* [h][row * 4 + i]: row r's code 4h + i, plus 128 */
    uint16_t d[8];        /* [row] half-float scale */
} x8p_q8_0;

static size_t x8p_bytes_q8_0(int64_t k) {
    return (size_t)(k / 32) * sizeof(x8p_q8_0);
}

/* Bytes of a group of the 32-value formats' layouts. */
static size_t x8p_group_bytes(uint32_t type, int64_t k) {
    return type == QUANT_Q8_0 ? x8p_bytes_q8_0(k) : (size_t)(k / 32) * x8p_shape_of(type).bytes;
}

static void x8p_repack_q8_0(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    for (int64_t b = 0; b < k / 32; b++) {
        x8p_q8_0 *out = (x8p_q8_0 *)packed + b;
        for (int r = 0; r < 8; r++) {
            const block_q8_0 *blk = (const block_q8_0 *)((const char *)rows + (size_t)r * row_bytes) + b;
            out->d[r] = blk->d;
            for (int i = 0; i < 32; i++)
                out->codes[i / 4][4 * r + i % 4] = (uint8_t)((int)blk->qs[i] + 128);
        }
    }
}

AVX2 static KERNEL_INLINE void x8p_pass_q8_0(int NT, const x8p_q8_0 *packed, int64_t nb, const act_q8_32 *const x[4], float *y,
                                             size_t ys) {
    __m256 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const x8p_q8_0 *blk = packed + b;
        __m256i isum[4];
#if X86_VNNI
        for (int t = 0; t < NT; t++)
            isum[t] = _mm256_setzero_si256();
        for (int h = 0; h < 8; h++) {
            const __m256i c = _mm256_loadu_si256((const __m256i *)blk->codes[h]);
            for (int t = 0; t < NT; t++) {
                int32_t a;
                memcpy(&a, x[t][b].q + 4 * h, 4);
                isum[t] = _mm256_dpbusd_epi32(isum[t], c, _mm256_set1_epi32(a));
            }
        }
#else
        /* nibble sums: 8 groups of 2 * 15 * 128 per 16-bit lane at most, no saturation */
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        __m256i lo16[4], hi16[4];
        for (int t = 0; t < NT; t++)
            lo16[t] = hi16[t] = _mm256_setzero_si256();
        for (int h = 0; h < 8; h++) {
            const __m256i c = _mm256_loadu_si256((const __m256i *)blk->codes[h]);
            const __m256i lo = _mm256_and_si256(c, m4), hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), m4);
            for (int t = 0; t < NT; t++) {
                int32_t a;
                memcpy(&a, x[t][b].q + 4 * h, 4);
                const __m256i xa = _mm256_set1_epi32(a);
                lo16[t] = _mm256_add_epi16(lo16[t], _mm256_maddubs_epi16(lo, xa));
                hi16[t] = _mm256_add_epi16(hi16[t], _mm256_maddubs_epi16(hi, xa));
            }
        }
        for (int t = 0; t < NT; t++)
            isum[t] = _mm256_add_epi32(_mm256_madd_epi16(lo16[t], _mm256_set1_epi16(1)),
                                       _mm256_madd_epi16(hi16[t], _mm256_set1_epi16(16)));
#endif
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk->d));
        const __m256 cst = _mm256_mul_ps(d, _mm256_set1_ps(-128.0f));
        for (int t = 0; t < NT; t++) {
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[t][b].d)), i32_ps(isum[t]), acc[t]);
            acc[t] = _mm256_fmadd_ps(cst, _mm256_set1_ps(x[t][b].s), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++)
        _mm256_storeu_ps(y + (size_t)t * ys, acc[t]);
}

/* The pass of one format, constant after inlining. */
AVX2 static KERNEL_INLINE void x8p_pass(uint32_t type, int NT, const void *packed, int64_t nb, const act_q8_32 *const x[4],
                                        float *y, size_t ys) {
    if (type == QUANT_Q8_0)
        x8p_pass_q8_0(NT, packed, nb, x, y, ys);
    else
        x8p_pass_b(type, NT, packed, nb, x, y, ys);
}

/* Weights a pass over tokens asks the second-level cache for while it computes, those of what
 * comes after it: up to two ranges of whole lines, step bytes at a time. A prompt's product reads
 * each weight from memory once per block of tokens, and a pass that starts on weights nobody asked
 * for waits on them (the hardware's prefetcher does not follow a thread from one chunk of rows to
 * the next, nor the K-quant kernels' slices). Spread over the passes after the first (of a slice,
 * or of a group of the 32-value formats), one thread streaming from a 31 MB product in chunks as a
 * prompt's are (16 rows of 1536 by 64 tokens, or 64 rows of 8960 by 40): Q4_K 266-277 -> 306-315
 * G multiply-adds/s narrow and 257-271 -> 302-306 wide, Q6_K 200-203 -> 224-233 wide; 16 rows by
 * 64 tokens, Q5_0 640 wide 107 -> 117-118, Q4_1 2048 wide 121-122 -> 132-134 (Zen 5). */
typedef struct x8_ahead {
    const char *p[2];
    size_t left[2];
    size_t step;
} x8_ahead;

/* [first, first + bytes) as range r of a, in whole lines. */
static void x8_ahead_range(x8_ahead *a, int r, const char *first, size_t bytes) {
    const uintptr_t lo = (uintptr_t)first & ~(uintptr_t)63, hi = ((uintptr_t)first + bytes + 63) & ~(uintptr_t)63;
    a->p[r] = (const char *)lo;
    a->left[r] = (size_t)(hi - lo);
}

/* a's step spread over n steps. */
static void x8_ahead_spread(x8_ahead *a, size_t n) {
    n = n ? n : 1;
    a->step = ((a->left[0] + a->left[1]) / 64 + n - 1) / n * 64;
}

/* step more bytes of a's ranges asked for. */
AVX2 static inline void x8_ahead_go(x8_ahead *a) {
    size_t n = a->step;
    for (int r = 0; r < 2 && n; r++)
        for (; a->left[r] && n; a->p[r] += 64, a->left[r] -= 64, n -= 64)
            _mm_prefetch(a->p[r], _MM_HINT_T1);
}

/* What a call next (where not NULL) reads first: its first group, or a K-quant's first slice of
 * its first two (the order x8k_tokens reads them in). Defined with the K-quant layouts. */
static x8_ahead x8_first(const x8_next *next);

/* One pass of G groups gb bytes apart: one (x8p_pass), or two at once on VNNI (x8p_pass_b2).
 * Constant G, NT and format after inlining. */
AVX2 static KERNEL_INLINE void x8p_pass_g(uint32_t type, int G, int NT, const void *packed, size_t gb, int64_t nb,
                                          const act_q8_32 *const x[4], float *y, size_t ys) {
#if X86_VNNI
    if (G == 2) {
        x8p_pass_b2(type, NT, packed, gb, nb, x, y, ys);
        return;
    }
#endif
    (void)G;
    (void)gb;
    x8p_pass(type, NT, packed, nb, x, y, ys);
}

/* G groups by every token, four at a time, the last pass with the one to three left. */
AVX2 static KERNEL_INLINE void x8p_gemm_32(uint32_t type, int G, const void *packed, size_t gb, int64_t k, const void *xq, size_t xs,
                                           int64_t n_tok, float *y, size_t ys, x8_ahead ahead) {
    /* what comes next asked for after each pass but the first, which reads these groups in */
    const int64_t passes = (n_tok + 3) / 4;
    x8_ahead_spread(&ahead, (size_t)(passes > 1 ? passes - 1 : 1));
    for (int64_t t0 = 0; t0 < n_tok; t0 += 4) {
        if (t0 > 0 || passes == 1)
            x8_ahead_go(&ahead);
        const int nt = n_tok - t0 < 4 ? (int)(n_tok - t0) : 4;
        const act_q8_32 *x[4];
        for (int t = 0; t < 4; t++)
            x[t] = (const act_q8_32 *)((const char *)xq + (size_t)(t0 + (t < nt ? t : 0)) * xs);
        float *yt = y + (size_t)t0 * ys;
        switch (nt) {
        case 1: x8p_pass_g(type, G, 1, packed, gb, k / 32, x, yt, ys); break;
        case 2: x8p_pass_g(type, G, 2, packed, gb, k / 32, x, yt, ys); break;
        case 3: x8p_pass_g(type, G, 3, packed, gb, k / 32, x, yt, ys); break;
        default: x8p_pass_g(type, G, 4, packed, gb, k / 32, x, yt, ys); break;
        }
    }
}

/* n8 groups of gb bytes, one after another (VNNI: two at a time where the format allows), each
 * asking for the next (the last for the call next). */
AVX2 static KERNEL_INLINE void x8p_groups(uint32_t type, const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs,
                                          int64_t n_tok, float *y, size_t ys, const x8_next *next) {
    const size_t gb = x8p_group_bytes(type, k);
#if X86_VNNI
    const int step = type == QUANT_Q8_0 || type == QUANT_MXFP4 ? 1 : 2;
#else
    const int step = 1;
#endif
    for (int64_t g = 0; g < n8; g += step) {
        const int64_t n = n8 - g < step ? n8 - g : step;
        x8_ahead ahead = { { NULL, NULL }, { 0, 0 }, 0 };
        if (g + n < n8)
            x8_ahead_range(&ahead, 0, (const char *)packed + (size_t)(g + n) * gb, (size_t)(n8 - g - n < step ? n8 - g - n : step) * gb);
        else
            ahead = x8_first(next);
        if (n == 2)
            x8p_gemm_32(type, 2, (const char *)packed + (size_t)g * gb, gb, k, xq, xs, n_tok, y + 8 * g, ys, ahead);
        else
            x8p_gemm_32(type, 1, (const char *)packed + (size_t)g * gb, gb, k, xq, xs, n_tok, y + 8 * g, ys, ahead);
    }
}

AVX2 static void x8p_gemm_q4_0(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8p_groups(QUANT_Q4_0, packed, k, n8, xq, xs, n_tok, y, ys, next);
}
AVX2 static void x8p_gemm_q4_1(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8p_groups(QUANT_Q4_1, packed, k, n8, xq, xs, n_tok, y, ys, next);
}
AVX2 static void x8p_gemm_q5_0(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8p_groups(QUANT_Q5_0, packed, k, n8, xq, xs, n_tok, y, ys, next);
}
AVX2 static void x8p_gemm_q5_1(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8p_groups(QUANT_Q5_1, packed, k, n8, xq, xs, n_tok, y, ys, next);
}
AVX2 static void x8p_gemm_q8_0(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8p_groups(QUANT_Q8_0, packed, k, n8, xq, xs, n_tok, y, ys, next);
}
AVX2 static void x8p_gemm_mxfp4(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8p_groups(QUANT_MXFP4, packed, k, n8, xq, xs, n_tok, y, ys, next);
}

/* How far ahead the K-quants' eight-row kernels ask for the weights, into the second-level cache,
 * each line in turn as the codes before it are used (the VNNI kernels and AVX2's Q4_K). With four
 * sequences decoding the 1.5B Qwen on the two-core Zen 4 this took the VNNI path from 84-88
 * tokens/s (first-level prefetches, the same distance) to 98-104; 2 KB ahead into the second level
 * fell to 73, 8 KB was no better than 4. */
#define X8K_AHEAD 4096

/* The kept Q4_K layouts' header (the same in both): row r's 12 scale bytes transposed, so that
 * eight rows unpack at once (scales[w][k * 8 + r] = byte 4w + k), its d and dmin. */
static void x8k_header_q4_K(const block_q4_K *w, int r, uint8_t scales[3][32], uint16_t d[8], uint16_t dmin[8]) {
    for (int i = 0; i < 12; i++)
        scales[i / 4][(i % 4) * 8 + r] = w->scales[i];
    d[r] = w->d;
    dmin[r] = w->dmin;
}

/* A Q4_K or Q5_K block of a row: the two share d, dmin and the scales' packing; Q5_K adds the
 * fifth bits (qh, NULL for Q4_K). */
typedef struct k45_block {
    block_q4_K head; /* d, dmin, scales and the low four bits */
    const uint8_t *qh;
} k45_block;

static k45_block k45_at(bool five, const void *rows, size_t row_bytes, int r, int64_t b) {
    k45_block out = { .qh = NULL };
    if (five) {
        const block_q5_K *w = (const block_q5_K *)((const char *)rows + (size_t)r * row_bytes) + b;
        out.head.d = w->d;
        out.head.dmin = w->dmin;
        memcpy(out.head.scales, w->scales, sizeof w->scales);
        memcpy(out.head.qs, w->qs, sizeof w->qs);
        out.qh = w->qh;
    } else {
        out.head = *((const block_q4_K *)((const char *)rows + (size_t)r * row_bytes) + b);
    }
    return out;
}

/* The eight rows' 6-bit scales and minimums from that header, every row at once: u = scales of
 * sub-blocks 0-3, 4-7, minimums 0-3, 4-7, each byte [s % 4 * 8 + row] (sub-block s < 4: the low
 * six bits of bytes s and s + 4; s >= 4: byte s + 4's nibbles below the top two bits of bytes
 * s - 4 and s). */
AVX2 static inline void x8k_scale_bytes_q4_K(const uint8_t scales[3][32], __m256i u[4]) {
    const __m256i m6 = _mm256_set1_epi8(0x3f), m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
    const __m256i a = _mm256_loadu_si256((const __m256i *)scales[0]);
    const __m256i bb = _mm256_loadu_si256((const __m256i *)scales[1]);
    const __m256i c = _mm256_loadu_si256((const __m256i *)scales[2]);
    u[0] = _mm256_and_si256(a, m6);
    u[1] = _mm256_or_si256(_mm256_and_si256(c, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(a, 6), m2), 4));
    u[2] = _mm256_and_si256(bb, m6);
    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bb, 6), m2), 4));
}

/* The kept Q4_K and Q5_K layouts of both paths: eight rows' blocks as one, exactly their bytes,
 * so the backend keeps them in place of the file's pages. A pair j of sub-blocks is 32 bytes of
 * each row (low nibbles: sub-block 2j, high: 2j + 1), cut into eight groups g of four bytes; a code
 * vector of X8K_VEC bytes holds X8K_VEC / 32 groups of all eight rows, a row's groups side by side
 * (VNNI: lane 2r + e is row r's group 2p + e of vector p; AVX2: lane r is row r's group g). Q5_K's
 * fifth bits follow as one mask of X8K_VEC bits per code vector and nibble, bit n for byte n of
 * the vector, which the kernels apply with a masked byte add (VNNI) or spread to bytes (AVX2). */
#if X86_VNNI
#define X8K_VEC 64
typedef uint64_t x8k_mask;
#else
#define X8K_VEC 32
typedef uint32_t x8k_mask;
#endif
#define X8K_VECS (256 / X8K_VEC) /* code vectors per pair of sub-blocks */

typedef struct x8k_q4_K {
    uint8_t codes[4][X8K_VECS][X8K_VEC]; /* [pair j][vector][x8k_code_at]: row r's bytes qs[32j + 4g .. + 3]
                                          * (VNNI: the nibbles of 8 of them paired by sub-block, x8k_repack_k45) */
    uint8_t scales[3][32];               /* [word w][k * 8 + row]: row r's byte scales[4w + k] */
    uint16_t d[8], dmin[8];              /* [row] half-float scales */
} x8k_q4_K;

typedef struct x8k_q5_K {
    x8k_q4_K low;
    x8k_mask qh[4][X8K_VECS][2]; /* [pair j][vector][low nibbles, high nibbles] */
} x8k_q5_K;

static_assert(sizeof(x8k_q4_K) == 8 * sizeof(block_q4_K) && sizeof(x8k_q5_K) == 8 * sizeof(block_q5_K),
              "the kept K-quant layouts are exactly the rows' bytes");

/* Where row r's group g goes among a pair's 256 code bytes. */
static int x8k_code_at(int r, int g) {
    enum { G = X8K_VEC / 32 };
    return g / G * X8K_VEC + 4 * G * r + 4 * (g % G);
}

static size_t x8k_bytes_q4_K(int64_t k) {
    return (size_t)(k / QK_K) * sizeof(x8k_q4_K);
}
static size_t x8k_bytes_q5_K(int64_t k) {
    return (size_t)(k / QK_K) * sizeof(x8k_q5_K);
}

static void x8k_repack_k45(bool five, const void *rows, size_t row_bytes, int64_t k, void *packed) {
    const size_t pb = five ? sizeof(x8k_q5_K) : sizeof(x8k_q4_K);
    for (int64_t b = 0; b < k / QK_K; b++) {
        x8k_q4_K *p = (x8k_q4_K *)((char *)packed + (size_t)b * pb);
        x8k_mask qh[4][X8K_VECS][2] = { { { 0 } } };
        for (int r = 0; r < 8; r++) {
            const k45_block w = k45_at(five, rows, row_bytes, r, b);
            for (int j = 0; j < 4; j++)
                for (int g = 0; g < 8; g++) {
                    const int at = x8k_code_at(r, g);
                    uint8_t *dst = &p->codes[j][at / X8K_VEC][at % X8K_VEC];
#if X86_VNNI
                    /* lane e of vector q takes sub-block 2j + e only: byte i is values 32e + 8q + i
                     * (low nibble) and 32e + 8q + 4 + i (high) of the pair's 64, which the file
                     * keeps in the nibble e of its bytes 8q + i and 8q + 4 + i */
                    const int q = g / 2, e = g % 2;
                    const uint32_t lo4 = load_u32(w.head.qs + 32 * j + 8 * q) >> 4 * e & 0x0f0f0f0fu;
                    const uint32_t hi4 = load_u32(w.head.qs + 32 * j + 8 * q + 4) >> 4 * e & 0x0f0f0f0fu;
                    const uint32_t both = lo4 | hi4 << 4;
                    memcpy(dst, &both, 4);
                    for (int i = 0; five && i < 4; i++)
                        for (int h = 0; h < 2; h++) /* value 64j + 32e + m: bit 2j + e of qh[m] */
                            qh[j][at / X8K_VEC][h] |= (x8k_mask)(w.qh[8 * q + 4 * h + i] >> (2 * j + e) & 1) << (at % X8K_VEC + i);
#else
                    memcpy(dst, w.head.qs + 32 * j + 4 * g, 4);
                    for (int i = 0; five && i < 4; i++) /* value 64j + m (low nibble), 64j + 32 + m (high) */
                        for (int h = 0; h < 2; h++)
                            qh[j][at / X8K_VEC][h] |= (x8k_mask)(w.qh[4 * g + i] >> (2 * j + h) & 1) << (at % X8K_VEC + i);
#endif
                }
            x8k_header_q4_K(&w.head, r, p->scales, p->d, p->dmin);
        }
        if (five)
            memcpy(((x8k_q5_K *)p)->qh, qh, sizeof qh);
    }
}

static void x8k_repack_q4_K(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8k_repack_k45(false, rows, row_bytes, k, packed);
}
static void x8k_repack_q5_K(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8k_repack_k45(true, rows, row_bytes, k, packed);
}

/* Tokens per pass of the VNNI K-quant kernels: six, whose sums (three registers each for Q4_K and
 * Q5_K, four for Q6_K) still fit the 32 registers beside the block's scales, so the codes'
 * unpacking and the scales are shared by more (one thread, 64 tokens by 64 rows of 1536: Q4_K
 * 129-131 G multiply-adds/s against 124-128 with four, Q6_K 106-107 against 96-97); AVX2's take
 * four. */
#if X86_VNNI
#define X8K_TOKENS 6
#else
#define X8K_TOKENS 4
#endif

#if X86_VNNI
/* ---- Q4_K, Q5_K and Q6_K kept by eight rows, VNNI: 512-bit lanes ----
 * The layout above with 64-byte code vectors (the AVX2 path's bytes in another order): sixteen
 * 32-bit lanes, lane 2r + e holding four bytes of row r for group 2p + e of four values. A
 * lane pair's activations are one 64-bit word, so one broadcast and one 512-bit vpdpbusd take eight
 * codes of all eight rows: half the instructions of the 256-bit layout per code, which is what
 * several tokens at once are bound by (Zen 4 runs a 512-bit vpdpbusd as two 256-bit halves: the
 * products cost the same, the instructions around them half).
 * The scaling is what bounds them next, so it is done in integers where it can be: for Q6_K each
 * lane's sum is made to fit 16 bits, two vectors of them (a sub-block's two groups) pack to one,
 * and one vpmaddwd applies the weights' integer scales and adds a row's two lanes (Q4_K and Q5_K
 * did the same with two sub-blocks until their lanes took one sub-block each: x8k_pass_k45); one
 * float step per sub-block and token remains. The packing leaves lane 4c + 2e + i for
 * row 2c + i and the pair's member e (x8k_lane), the order the epilogue keeps until the rows'
 * two lanes are added at the store. Against one float step per lane pair and group before, this
 * took Q4_K from 129-132 to 141-143 G multiply-adds/s a thread and Q6_K from 74-76 to 104-107 (one
 * thread, 64 tokens by 64 rows of 1536), and brought both closer to the exact product (the
 * integer part is exact). The results differ from the AVX2 path's in float order only (within
 * the tolerance of the eight-row kernels; tested). A token's result is the same whatever the
 * number of tokens in the call.
 * On Zen 5 (full-width 512-bit units) what bounds one group's pass is the activations' broadcasts,
 * one per vpdpbusd: a loop of only those reached 225 G multiply-adds/s a thread, against 500 when
 * each broadcast serves two vpdpbusd. So a pass takes two groups (sixteen rows) where it can, one
 * broadcast for both, with four tokens (their sums fill the registers as six tokens of one group
 * do); and it runs over a slice of X8K_SLICE blocks at a time, whose scales are unpacked once for
 * all its passes (a chain of cross-lane shuffles, a fifth of the time when done per pass). One
 * thread, 64 tokens by 64 rows of 1536: Q4_K 196 -> 330-340 G multiply-adds/s, Q6_K 142 -> 220-230
 * (of a 529 G peak); Qwen2.5 1.5B's pp512 262 -> 275-297 tokens/s (noisy), its logits bit for bit
 * the same: every group's steps are the same as alone. */

/* The eight bytes at a as every lane pair's activations. */
AVX2 static inline __m512i act_pair(const int8_t *a) {
    int64_t a8;
    memcpy(&a8, a, sizeof a8);
    return _mm512_set1_epi64(a8);
}

/* The epilogue's lane of row r and member e of a pair. */
static int x8k_lane(int r, int e) {
    return 4 * (r / 2) + 2 * e + r % 2;
}

/* Eight rows' fp16 values (d, dmin) in the epilogue's lanes. */
AVX2 static inline __m512 x8k_row_lanes(const uint16_t h[8]) {
    const __m512i row = _mm512_setr_epi32(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7);
    return _mm512_permutexvar_ps(row, _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h))));
}

/* y[r] for r < 8 from the epilogue's lanes: row 2c + i is lanes 4c + i and 4c + 2 + i. */
AVX2 static inline void x8k_store_rows(float *y, __m512 acc) {
    const __m512 sum = _mm512_add_ps(acc, _mm512_shuffle_ps(acc, acc, 0x4e));
    const __m512i rows = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 1, 4, 5, 8, 9, 12, 13);
    _mm256_storeu_ps(y, _mm512_castps512_ps256(_mm512_permutexvar_ps(rows, sum)));
}

/* Eight rows' fp16 values in the Q4_K/Q5_K epilogue's lanes (2r + s, sub-block 2j + s): each twice. */
AVX2 static inline __m512 x8k_row_lanes_k45(const uint16_t h[8]) {
    const __m512i row = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_ps(row, _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h))));
}

/* y[r] for r < 8 from those lanes: row r is lanes 2r and 2r + 1. */
AVX2 static inline void x8k_store_rows_k45(float *y, __m512 acc) {
    const __m512 sum = _mm512_add_ps(acc, _mm512_permute_ps(acc, 0xb1));
    const __m512i rows = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    _mm256_storeu_ps(y, _mm512_castps512_ps256(_mm512_permutexvar_ps(rows, sum)));
}

/* Two floats at p (a sub-block pair's ds or ms) in every lane pair: one 64-bit broadcast, which
 * the load unit does alone (a 128-bit one takes a shuffle too). */
AVX2 static inline __m512 act_scales2(const float *p) {
    double two;
    memcpy(&two, p, sizeof two);
    return _mm512_castpd_ps(_mm512_set1_pd(two));
}

/* The 128-bit half h of u in both halves. */
AVX2 static inline __m256i half_twice(__m256i u, int h) {
    return h ? _mm256_permute4x64_epi64(u, 0xee) : _mm256_permute4x64_epi64(u, 0x44);
}

/* Blocks per slice of the VNNI K-quant kernels: every pass of tokens over G groups runs over one
 * slice (at most 2 * 8 * 1.6 KB of weights, which stay in the first-level cache) before the next,
 * and a slice's scales are unpacked once for all of them (x8k_prep). */
#define X8K_SLICE 12

/* A block's scales of one group as the passes use them: the weights' integer scales per sub-block
 * (pair) as vpmaddwd's pairs, the minimums' float coefficients, d. Unpacking them is a chain of
 * cross-lane shuffles; done per pass of four tokens it cost a fifth of the Q4_K kernel's time. */
typedef struct x8k_prep {
    int16_t sc[8][32]; /* Q4_K/Q5_K: [pair j < 4] as 16 int32; Q6_K: [sub-block j], vpmaddwd's pairs */
    float coef[4][16]; /* Q4_K/Q5_K: the minimums' terms per unit of the activations' ms (pair j) */
    float d[16];
} x8k_prep;

/* A pass's sums (G groups by NT tokens): carried on from acc_io, or from zero at the first block. */
AVX2 static KERNEL_INLINE void x8k_sums_in(int G, int NT, int64_t b0, float (*acc_io)[16], __m512 acc[2][X8K_TOKENS]) {
    UNROLL(2)
    for (int g = 0; g < G; g++)
        UNROLL(6)
        for (int t = 0; t < NT; t++)
            acc[g][t] = b0 ? _mm512_loadu_ps(acc_io[g * X8K_TOKENS + t]) : _mm512_setzero_ps();
}

AVX2 static KERNEL_INLINE void x8k_sums_out(int G, int NT, __m512 acc[2][X8K_TOKENS], float (*acc_io)[16]) {
    UNROLL(2)
    for (int g = 0; g < G; g++)
        UNROLL(6)
        for (int t = 0; t < NT; t++)
            _mm512_storeu_ps(acc_io[g * X8K_TOKENS + t], acc[g][t]);
}

/* A Q4_K or Q5_K block's prep, in the epilogue's lanes (2r + s): the weights' 6-bit scales of pair j
 * as 32-bit integers, the minimums' coefficients -dmin * min, d. */
AVX2 static KERNEL_INLINE void x8k_prep_k45(const x8k_q4_K *pb, x8k_prep *out) {
    /* a pair's 16 unpacked bytes (the rows of sub-block 2j, then of 2j + 1) in row order */
    const __m128i order = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    __m256i u[4];
    x8k_scale_bytes_q4_K(pb->scales, u);
    const __m512 neg_dmin = _mm512_sub_ps(_mm512_setzero_ps(), x8k_row_lanes_k45(pb->dmin));
    _mm512_storeu_ps(out->d, x8k_row_lanes_k45(pb->d));
    for (int j = 0; j < 4; j++) {
        const __m128i sc = j % 2 ? _mm256_extracti128_si256(u[j / 2], 1) : _mm256_castsi256_si128(u[j / 2]);
        const __m128i mn = j % 2 ? _mm256_extracti128_si256(u[2 + j / 2], 1) : _mm256_castsi256_si128(u[2 + j / 2]);
        _mm512_storeu_si512(out->sc[j], _mm512_cvtepu8_epi32(_mm_shuffle_epi8(sc, order)));
        _mm512_storeu_ps(out->coef[j], _mm512_mul_ps(neg_dmin, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(mn, order)))));
    }
}

/* One pass of NT tokens over blocks [b0, b1) of G (1 or 2) groups of Q4_K, or of Q5_K (five: the
 * fifth bits added to the codes), gb bytes apart, their prep at prep[g * X8K_SLICE + b - b0] (or,
 * NULL, made block by block): the sums acc[g * X8K_TOKENS + t] carried on (from zero at b0 = 0).
 * Inlined with constant G, NT and format; a group's steps are the same whatever G, NT and slice,
 * so its rows get the same bits.
 * Lane 2r + s of a code vector holds only sub-block 2j + s of row r (both nibbles: the repack
 * pairs them so), and its activations come from qx, where 8 bytes hold four values of each
 * sub-block of the pair: so the low and the high nibbles' sums add into one lane per row and
 * sub-block, which one vpmulld takes times the weights' 6-bit scale, exactly (|sum| <= 32 * 31 *
 * 127 * 63 < 2^24: its float is exact too); the activations' two scales follow in one float step
 * (ds[2j], ds[2j + 1]: a 64-bit broadcast), the rows' d and the minimums once per block. Against
 * the two half-sub-block lanes packed to 16 bits and multiplied by one vpmaddwd, which needed a
 * 128-bit broadcast (a shuffle) of the activations' scales and Q5_K's sums started from an offset:
 * one thread, 64 rows by 64 tokens, Q4_K 334-336 -> 340-345 G multiply-adds/s, Q5_K 270-276 ->
 * 283-292 (Zen 5). */
AVX2 static KERNEL_INLINE void x8k_pass_k45(bool five, int G, int NT, const void *p, size_t gb, int64_t b0, int64_t b1,
                                            const x8k_prep *prep, bool fetch, x8_ahead *ahead, const act_q8_256 *const x[X8K_TOKENS],
                                            float (*acc_io)[16]) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
    const size_t block_bytes = five ? sizeof(x8k_q5_K) : sizeof(x8k_q4_K);
    __m512 acc[2][X8K_TOKENS];
    x8k_sums_in(G, NT, b0, acc_io, acc);
    for (int64_t b = b0; b < b1; b++) {
        if (ahead)
            x8_ahead_go(ahead);
        const x8k_q4_K *pb[2];
        const x8k_mask(*qh[2])[X8K_VECS][2];
        const x8k_prep *pp[2];
        x8k_prep own[2];
        UNROLL(2)
        for (int g = 0; g < G; g++) {
            pb[g] = (const x8k_q4_K *)((const char *)p + (size_t)g * gb + (size_t)b * block_bytes);
            qh[g] = five ? ((const x8k_q5_K *)pb[g])->qh : NULL;
            /* the block's scales ahead now, its codes as they are used */
            for (size_t off = sizeof pb[g]->codes; fetch && off < block_bytes; off += 64)
                _mm_prefetch((const char *)pb[g] + X8K_AHEAD + off, _MM_HINT_T1);
            if (prep) {
                pp[g] = prep + g * X8K_SLICE + (b - b0);
            } else {
                x8k_prep_k45(pb[g], &own[g]);
                pp[g] = &own[g];
            }
        }
        __m512 blk[2][X8K_TOKENS];
        UNROLL(2)
        for (int g = 0; g < G; g++)
            UNROLL(6)
            for (int t = 0; t < NT; t++)
                blk[g][t] = _mm512_setzero_ps();
        UNROLL(4)
        for (int j = 0; j < 4; j++) {
            __m512i slo[2][X8K_TOKENS], shi[2][X8K_TOKENS];
            UNROLL(2)
            for (int g = 0; g < G; g++)
                UNROLL(6)
                for (int t = 0; t < NT; t++)
                    slo[g][t] = shi[g][t] = _mm512_setzero_si512();
            UNROLL(4)
            for (int q = 0; q < 4; q++) {
                __m512i lo[2], hi[2];
                UNROLL(2)
                for (int g = 0; g < G; g++) {
                    if (fetch)
                        _mm_prefetch((const char *)pb[g]->codes[j][q] + X8K_AHEAD, _MM_HINT_T1);
                    const __m512i raw = _mm512_loadu_si512(pb[g]->codes[j][q]);
                    lo[g] = _mm512_and_si512(raw, m4);
                    hi[g] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
                    if (five) {
                        lo[g] = _mm512_mask_add_epi8(lo[g], (__mmask64)qh[g][j][q][0], lo[g], sixteen);
                        hi[g] = _mm512_mask_add_epi8(hi[g], (__mmask64)qh[g][j][q][1], hi[g], sixteen);
                    }
                }
                /* one broadcast of a token's activations serves every group: broadcasts, not the
                 * products, bound one group's pass */
                UNROLL(6)
                for (int t = 0; t < NT; t++) {
                    const __m512i alo = act_pair(x[t][b].qx + 64 * j + 16 * q), ahi = act_pair(x[t][b].qx + 64 * j + 16 * q + 8);
                    UNROLL(2)
                    for (int g = 0; g < G; g++) {
                        slo[g][t] = _mm512_dpbusd_epi32(slo[g][t], lo[g], alo);
                        shi[g][t] = _mm512_dpbusd_epi32(shi[g][t], hi[g], ahi);
                    }
                }
            }
            UNROLL(2)
            for (int g = 0; g < G; g++)
                UNROLL(6)
                for (int t = 0; t < NT; t++) {
                    const __m512i sum = _mm512_add_epi32(slo[g][t], shi[g][t]);
                    const __m512i prod = _mm512_mullo_epi32(sum, _mm512_loadu_si512(pp[g]->sc[j]));
                    blk[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(prod), act_scales2(x[t][b].ds + 2 * j), blk[g][t]);
                }
        }
        UNROLL(2)
        for (int g = 0; g < G; g++)
            UNROLL(6)
            for (int t = 0; t < NT; t++) {
                __m512 m = _mm512_setzero_ps();
                UNROLL(4)
                for (int j = 0; j < 4; j++)
                    m = _mm512_fmadd_ps(_mm512_loadu_ps(pp[g]->coef[j]), act_scales2(x[t][b].ms + 2 * j), m);
                acc[g][t] = _mm512_fmadd_ps(_mm512_loadu_ps(pp[g]->d), blk[g][t], acc[g][t]);
                acc[g][t] = _mm512_fmadd_ps(_mm512_set1_ps(x[t][b].d), m, acc[g][t]);
            }
    }
    x8k_sums_out(G, NT, acc, acc_io);
}

typedef struct x8k_q6_K {
    int8_t scales[8][16];    /* [sub-block][x8k_lane(row, group)]: the weights' 16-value scales */
    uint16_t d[8];           /* [row] */
    uint8_t q[2][4][3][64];  /* [h][p][ql 0, ql 1, qh][row * 8 + e * 4 + i] */
} x8k_q6_K;

static size_t x8k_bytes_q6_K(int64_t k) {
    return (size_t)(k / QK_K) * sizeof(x8k_q6_K);
}

static void x8k_repack_q6_K(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8k_q6_K *p = packed;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int r = 0; r < 8; r++) {
            const block_q6_K *w = (const block_q6_K *)((const char *)rows + (size_t)r * row_bytes) + b;
            UNROLL(2)
            for (int h = 0; h < 2; h++)
                for (int g = 0; g < 8; g++) {
                    uint8_t(*dst)[64] = p[b].q[h][g / 2];
                    const int lane = 8 * r + 4 * (g % 2);
                    memcpy(&dst[0][lane], w->ql + 64 * h + 4 * g, 4);
                    memcpy(&dst[1][lane], w->ql + 64 * h + 32 + 4 * g, 4);
                    memcpy(&dst[2][lane], w->qh + 32 * h + 4 * g, 4);
                }
            for (int i = 0; i < 16; i++)
                p[b].scales[i / 2][x8k_lane(r, i % 2)] = w->scales[i];
            p[b].d[r] = w->d;
        }
}

/* Code vector k (values 32k + a lane's four, 0..63) of a pair's ql 0, ql 1 and qh vectors: a
 * nibble of ql (k % 2 picks the vector, k / 2 the nibble) and bits 2k..2k+1 of qh, shifted to
 * bits 4-5 and merged in one step. */
AVX2 static inline __m512i q6_codes16(const uint8_t (*q)[64], int k) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    const __m512i l = _mm512_loadu_si512(q[k % 2]), qh = _mm512_loadu_si512(q[2]);
    const __m512i lo = _mm512_and_si512(k / 2 ? _mm512_srli_epi16(l, 4) : l, m4);
    const __m512i hs = k == 0 ? _mm512_slli_epi16(qh, 4) : k == 1 ? _mm512_slli_epi16(qh, 2) : k == 2 ? qh : _mm512_srli_epi16(qh, 2);
    return _mm512_ternarylogic_epi32(lo, hs, m30, 0xf8); /* lo | (hs & 0x30) */
}

/* A Q6_K block's prep: each sub-block's 16-value scales (two per lane pair, x8k_lane's order) as
 * vpmaddwd's pairs, d. */
AVX2 static KERNEL_INLINE void x8k_prep_q6_K(const x8k_q6_K *pb, x8k_prep *out) {
    /* each 32-bit lane's low word into its high word too */
    const __m512i pairs = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13));
    for (int j = 0; j < 8; j++)
        _mm512_storeu_si512(out->sc[j], _mm512_shuffle_epi8(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)pb->scales[j])), pairs));
    _mm512_storeu_ps(out->d, x8k_row_lanes(pb->d));
}

/* A Q6_K block's code vectors as bytes (0..63), [h][k][q] as q6_codes16 makes them: unpacked once
 * per slice for all of its passes over tokens. Made per pass of four tokens, the unpacking (three
 * vector operations a code vector, on the vector units the products' other steps use) was a
 * quarter of the kernel's: one thread, 64 rows of 1536 by 64 tokens, 230 -> 305 G multiply-adds/s
 * (Zen 5). Unpacking Q4_K's nibbles the same way lost more to the loads it doubles (335 -> 325):
 * they are one operation a vector. */
typedef struct x8k_codes_q6_K {
    uint8_t v[2][4][4][64];
} x8k_codes_q6_K;

AVX2 static KERNEL_INLINE void x8k_unpack_q6_K(const x8k_q6_K *pb, x8k_codes_q6_K *out) {
    UNROLL(2)
    for (int h = 0; h < 2; h++)
        UNROLL(4)
        for (int q = 0; q < 4; q++) {
            for (int v = 0; v < 3; v++)
                _mm_prefetch((const char *)pb->q[h][q][v] + X8K_AHEAD, _MM_HINT_T1);
            UNROLL(4)
            for (int k = 0; k < 4; k++)
                _mm512_storeu_si512(out->v[h][k][q], q6_codes16(pb->q[h][q], k));
        }
}

/* One pass of NT tokens over blocks [b0, b1) of G (1 or 2) groups gb bytes apart, as
 * x8k_pass_k45, their codes unpacked at codes[g * X8K_SLICE + b - b0] (or, NULL, as they are
 * used). A sub-block's four code vectors go to two sums per token, one per 16-value group;
 * lane 2r + e of a sum is eight of row r's values, whose +32 comes out exactly (x->neg_off8), which
 * leaves it within 16 bits (8 * 32 * 127). Packed to 16 bits, the two groups' sums then meet their
 * weights' scales in one vpmaddwd, which adds a row's two lanes too: one float step per sub-block
 * and token instead of one per group, exact until the conversion (|sum| <= 2 * 32512 * 128 <
 * 2^24). The rows' d is applied once per block. As for Q4_K, a token's broadcast activations
 * serve every group. */
AVX2 static KERNEL_INLINE void x8k_pass_q6_K(int G, int NT, const void *p, size_t gb, int64_t b0, int64_t b1, const x8k_prep *prep,
                                             const x8k_codes_q6_K *codes, bool fetch, x8_ahead *ahead,
                                             const act_q8_256 *const x[X8K_TOKENS], float (*acc_io)[16]) {
    __m512 acc[2][X8K_TOKENS];
    x8k_sums_in(G, NT, b0, acc_io, acc);
    for (int64_t b = b0; b < b1; b++) {
        if (ahead)
            x8_ahead_go(ahead);
        const x8k_q6_K *pb[2];
        const x8k_prep *pp[2];
        x8k_prep own[2];
        UNROLL(2)
        for (int g = 0; g < G; g++) {
            pb[g] = (const x8k_q6_K *)((const char *)p + (size_t)g * gb) + b;
            if (prep) {
                pp[g] = prep + g * X8K_SLICE + (b - b0);
            } else {
                x8k_prep_q6_K(pb[g], &own[g]);
                pp[g] = &own[g];
            }
        }
        __m512 blk[2][X8K_TOKENS];
        UNROLL(2)
        for (int g = 0; g < G; g++)
            UNROLL(6)
            for (int t = 0; t < NT; t++)
                blk[g][t] = _mm512_setzero_ps();
        UNROLL(2)
        for (int h = 0; h < 2; h++)
            UNROLL(4)
            for (int k = 0; k < 4; k++) {
                const int j = 4 * h + k;
                __m512i s[2][2][X8K_TOKENS];
                /* the sums start from what the codes' +32 will add, negated (x->neg_off8) */
                UNROLL(6)
                for (int t = 0; t < NT; t++) {
                    const __m512i o0 = act_pair((const int8_t *)&x[t][b].neg_off8[4 * j]);
                    const __m512i o1 = act_pair((const int8_t *)&x[t][b].neg_off8[4 * j + 2]);
                    UNROLL(2)
                    for (int g = 0; g < G; g++) {
                        s[g][0][t] = o0;
                        s[g][1][t] = o1;
                    }
                }
                UNROLL(4)
                for (int q = 0; q < 4; q++) {
                    __m512i w[2];
                    UNROLL(2)
                    for (int g = 0; g < G; g++) {
                        /* the same bytes X8K_AHEAD on, asked for as they are used (a block's
                         * 27 lines asked for at once stall the loads behind them) */
                        if (k == 0 && fetch) {
                            for (int v = 0; v < 3 && !codes; v++)
                                _mm_prefetch((const char *)pb[g]->q[h][q][v] + X8K_AHEAD, _MM_HINT_T1);
                            if (h == 1 && q < 3)
                                _mm_prefetch((const char *)pb[g] + 64 * q + X8K_AHEAD, _MM_HINT_T1);
                        }
                        w[g] = codes ? _mm512_loadu_si512(codes[g * X8K_SLICE + (b - b0)].v[h][k][q]) : q6_codes16(pb[g]->q[h][q], k);
                    }
                    UNROLL(6)
                    for (int t = 0; t < NT; t++) {
                        const __m512i a = act_pair(x[t][b].q + 32 * j + 8 * q);
                        UNROLL(2)
                        for (int g = 0; g < G; g++)
                            s[g][q / 2][t] = _mm512_dpbusd_epi32(s[g][q / 2][t], w[g], a);
                    }
                }
                UNROLL(2)
                for (int g = 0; g < G; g++)
                    UNROLL(6)
                    for (int t = 0; t < NT; t++) {
                        const __m512i prod = _mm512_madd_epi16(_mm512_packs_epi32(s[g][0][t], s[g][1][t]), _mm512_loadu_si512(pp[g]->sc[j]));
                        blk[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(prod), _mm512_set1_ps(x[t][b].ds[j]), blk[g][t]);
                    }
            }
        UNROLL(2)
        for (int g = 0; g < G; g++)
            UNROLL(6)
            for (int t = 0; t < NT; t++)
                acc[g][t] = _mm512_fmadd_ps(_mm512_loadu_ps(pp[g]->d), blk[g][t], acc[g][t]);
    }
    x8k_sums_out(G, NT, acc, acc_io);
}

#else
/* ---- Q4_K kept by eight rows, AVX2 ----
 * The layout above with 32-byte code vectors; it serves every product: one token, sequences
 * decoding together, a prompt. Each 32-bit lane of a code vector holds four bytes of one row's
 * packed nibbles: the low nibbles are
 * four codes of sub-block 2j, the high ones the same four of sub-block 2j + 1, so one maddubs
 * takes four codes of all eight rows. Each sub-block's integer sums are scaled
 * in float with the eight rows' scales as one vector, instead of a shuffle and a madd per row and
 * token; the rows' 6-bit scales stay packed, transposed so that eight rows unpack at once. A
 * token's result is the same whatever the number of tokens in the call. */

/* A block's eight rows' scales times d (dsc) and minimums (mn), per sub-block. */
AVX2 static inline void x8k_scales_q4_K(const x8k_q4_K *pb, float dsc[8][8], float mn[8][8]) {
    __m256i v[4];
    x8k_scale_bytes_q4_K(pb->scales, v);
    uint8_t u[4][32];
    for (int i = 0; i < 4; i++)
        _mm256_storeu_si256((__m256i *)u[i], v[i]);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pb->d));
    for (int s = 0; s < 8; s++) {
        const uint8_t *sc = u[s / 4] + 8 * (s % 4), *m = u[2 + s / 4] + 8 * (s % 4);
        _mm256_storeu_ps(dsc[s], _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)sc)))));
        _mm256_storeu_ps(mn[s], _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)m))));
    }
}

/* One pass of NT (1..4) tokens over every block of Q4_K, or of Q5_K (five): y[t * ys + r].
 * Inlined with constant NT and format. */
AVX2 static KERNEL_INLINE void x8k_pass_k45(bool five, int NT, const void *p, int64_t nb, const act_q8_256 *const x[4], float *y,
                                            size_t ys) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const size_t block_bytes = five ? sizeof(x8k_q5_K) : sizeof(x8k_q4_K);
    __m256 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const x8k_q4_K *pb = (const x8k_q4_K *)((const char *)p + (size_t)b * block_bytes);
        const x8k_mask(*qh)[X8K_VECS][2] = five ? ((const x8k_q5_K *)pb)->qh : NULL;
        /* as the VNNI kernel: 4 KB ahead into the second-level cache, the scales now and the
         * codes as they are used (four sequences on Qwen2.5 1.5B, alternated: 54-67 tokens/s
         * against 54-58 with the whole block asked for 2 KB ahead into the first level; Q6_K's
         * kernel below lost a fifth the same way and keeps its first-level prefetches) */
        for (size_t off = sizeof pb->codes; off < block_bytes; off += 64)
            _mm_prefetch((const char *)pb + X8K_AHEAD + off, _MM_HINT_T1);
        float dsc[8][8], mn[8][8];
        x8k_scales_q4_K(pb, dsc, mn);
        for (int j = 0; j < 4; j++) {
            __m256i slo[4], shi[4], ilo[4], ihi[4];
            for (int t = 0; t < NT; t++)
                slo[t] = shi[t] = ilo[t] = ihi[t] = _mm256_setzero_si256();
            for (int g = 0; g < 8; g++) {
                if (g % 2 == 0)
                    _mm_prefetch((const char *)pb->codes[j][g] + X8K_AHEAD, _MM_HINT_T1);
                const __m256i raw = _mm256_loadu_si256((const __m256i *)pb->codes[j][g]);
                __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
                if (five) {
                    lo = _mm256_or_si256(lo, fifth_bits(qh[j][g][0]));
                    hi = _mm256_or_si256(hi, fifth_bits(qh[j][g][1]));
                }
                for (int t = 0; t < NT; t++) {
                    int32_t a, c;
                    memcpy(&a, x[t][b].q + 64 * j + 4 * g, 4);
                    memcpy(&c, x[t][b].q + 64 * j + 32 + 4 * g, 4);
                    /* 16 products of 15 * 127 per 16-bit lane at most, or 8 of 31 * 127 between
                     * Q5_K's flushes every fourth group: no saturation */
                    slo[t] = _mm256_add_epi16(slo[t], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(a)));
                    shi[t] = _mm256_add_epi16(shi[t], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(c)));
                }
                if (g == 7 || (five && g == 3))
                    for (int t = 0; t < NT; t++) {
                        ilo[t] = _mm256_add_epi32(ilo[t], _mm256_madd_epi16(slo[t], _mm256_set1_epi16(1)));
                        ihi[t] = _mm256_add_epi32(ihi[t], _mm256_madd_epi16(shi[t], _mm256_set1_epi16(1)));
                        slo[t] = shi[t] = _mm256_setzero_si256();
                    }
            }
            for (int t = 0; t < NT; t++) {
                slo[t] = ilo[t];
                shi[t] = ihi[t];
                acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(dsc[2 * j]), _mm256_set1_ps(x[t][b].ds[2 * j])),
                                         i32_ps(slo[t]), acc[t]);
                acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(dsc[2 * j + 1]), _mm256_set1_ps(x[t][b].ds[2 * j + 1])),
                                         i32_ps(shi[t]), acc[t]);
            }
        }
        float dmin[8];
        _mm256_storeu_ps(dmin, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pb->dmin)));
        for (int t = 0; t < NT; t++)
            acc[t] = q4_K_rows_minimums(mn, dmin, &x[t][b], acc[t]);
    }
    for (int t = 0; t < NT; t++)
        _mm256_storeu_ps(y + (size_t)t * ys, acc[t]);
}


/* ---- Q6_K kept by eight rows, AVX2 ----
 * The same idea for Q6_K, again exactly the rows' bytes, in the order the kernel reads them (one
 * stream: with the low and high bits in separate regions it streamed at a third of the speed):
 * the rows' 16 scales transposed (one vector of eight rows each) and d, then per half block h and
 * group g of four values the two vectors of low-nibble bytes and the vector of high-bit bytes that
 * q6_unpack turns into four code vectors (values 128h + 32k + 4g .. + 3 of every row, k = 0..3).
 * The codes are stored plus 32: the offset comes out of each group's integer sum through the
 * activations' 16-value code sums. */
typedef struct x8k_q6_K {
    int8_t scales[16][8];    /* [16-value group][row] */
    uint16_t d[8];           /* [row] */
    uint8_t q[2][8][3][32];  /* [h][g][ql 0, ql 1, qh][row * 4 + i] */
} x8k_q6_K;

/* The AVX2 kept Q6_K layout's header: row r's 16 scales transposed (one vector of eight rows each), d. */
static void x8k_header_q6_K(const block_q6_K *w, int r, int8_t scales[16][8], uint16_t d[8]) {
    for (int i = 0; i < 16; i++)
        scales[i][r] = w->scales[i];
    d[r] = w->d;
}

static size_t x8k_bytes_q6_K(int64_t k) {
    return (size_t)(k / QK_K) * sizeof(x8k_q6_K);
}

static void x8k_repack_q6_K(const void *rows, size_t row_bytes, int64_t k, void *packed) {
    x8k_q6_K *p = packed;
    for (int64_t b = 0; b < k / QK_K; b++)
        for (int r = 0; r < 8; r++) {
            const block_q6_K *w = (const block_q6_K *)((const char *)rows + (size_t)r * row_bytes) + b;
            for (int h = 0; h < 2; h++)
                for (int g = 0; g < 8; g++) {
                    memcpy(&p[b].q[h][g][0][4 * r], w->ql + 64 * h + 4 * g, 4);
                    memcpy(&p[b].q[h][g][1][4 * r], w->ql + 64 * h + 32 + 4 * g, 4);
                    memcpy(&p[b].q[h][g][2][4 * r], w->qh + 32 * h + 4 * g, 4);
                }
            x8k_header_q6_K(w, r, p[b].scales, p[b].d);
        }
}

/* One pass of NT (1..4) tokens over every block: y[t * ys + r]. Inlined with constant NT. */
AVX2 static KERNEL_INLINE void x8k_pass_q6_K(int NT, const x8k_q6_K *p, int64_t nb, const act_q8_256 *const x[4], float *y,
                                             size_t ys) {
    __m256 acc[4];
    for (int t = 0; t < NT; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const x8k_q6_K *pb = p + b;
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pb->d));
        for (int h = 0; h < 2; h++)
            for (int gg = 0; gg < 2; gg++) { /* the groups of 16 values: g = 4gg .. 4gg + 3 */
                __m256i s[4][4];
                for (int k = 0; k < 4; k++)
                    for (int t = 0; t < NT; t++)
                        s[k][t] = _mm256_setzero_si256();
                for (int g = 4 * gg; g < 4 * gg + 4; g++) {
                    __m256i q[4];
                    /* the same bytes PREFETCH_AHEAD on, asked for as they are used (a block's
                     * 27 lines asked for at once stall the loads behind them) */
                    _mm_prefetch((const char *)pb->q[h][g][0] + PREFETCH_AHEAD, _MM_HINT_T0);
                    if (g % 2 == 0)
                        _mm_prefetch((const char *)pb->q[h][g][2] + PREFETCH_AHEAD, _MM_HINT_T0);
                    if (h == 1 && g < 3)
                        _mm_prefetch((const char *)pb + 64 * g + PREFETCH_AHEAD, _MM_HINT_T0);
                    q6_unpack(pb->q[h][g][0], pb->q[h][g][2], q);
                    for (int t = 0; t < NT; t++)
                        for (int k = 0; k < 4; k++) {
                            int32_t a;
                            memcpy(&a, x[t][b].q + 128 * h + 32 * k + 4 * g, 4);
                            s[k][t] = _mm256_add_epi32(s[k][t], dot_u8s8(q[k], _mm256_set1_epi32(a)));
                        }
                }
                for (int k = 0; k < 4; k++) {
                    const int i = 8 * h + 2 * k + gg;
                    const __m256 wsc = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)pb->scales[i]))));
                    for (int t = 0; t < NT; t++) {
                        /* the +32 of the codes out of the group's exact integer sum: 32 times the
                         * activations' code sum over the same 16 values */
                        const __m256i exact = _mm256_sub_epi32(s[k][t], _mm256_set1_epi32(32 * x[t][b].bsums[i]));
                        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(wsc, _mm256_set1_ps(x[t][b].ds[4 * h + k])), i32_ps(exact), acc[t]);
                    }
                }
            }
    }
    for (int t = 0; t < NT; t++)
        _mm256_storeu_ps(y + (size_t)t * ys, acc[t]);
}
#endif

/* Bytes of a K-quant's eight-row block, and of a group's row of them. */
static size_t x8k_block_bytes(uint32_t type) {
    return type == QUANT_Q6_K ? sizeof(x8k_q6_K) : type == QUANT_Q5_K ? sizeof(x8k_q5_K) : sizeof(x8k_q4_K);
}
static size_t x8k_group_bytes(uint32_t type, int64_t k) {
    return (size_t)(k / QK_K) * x8k_block_bytes(type);
}

/* Groups [2u, 2u + 2) (those below n8) of blocks [b0, b0 + slice) (those below nb) of a K-quant
 * product's groups, gb bytes apart: the unit of a VNNI call's passes. */
static x8_ahead x8k_unit_ahead(uint32_t type, const char *packed, size_t gb, int64_t nb, int64_t n8, int64_t u, int64_t b0,
                               int64_t slice) {
    x8_ahead a = { { NULL, NULL }, { 0, 0 }, 0 };
    const int64_t b1 = nb - b0 < slice ? nb : b0 + slice;
    for (int r = 0; r < 2 && 2 * u + r < n8 && b0 < b1; r++)
        x8_ahead_range(&a, r, packed + (size_t)(2 * u + r) * gb + (size_t)b0 * x8k_block_bytes(type),
                       (size_t)(b1 - b0) * x8k_block_bytes(type));
    return a;
}

static x8_ahead x8_first(const x8_next *next) {
    x8_ahead a = { { NULL, NULL }, { 0, 0 }, 0 };
    if (!next || next->n8 <= 0 || next->k <= 0)
        return a;
    const uint32_t t = next->type;
    if ((t == QUANT_Q4_K || t == QUANT_Q5_K || t == QUANT_Q6_K) && next->k % QK_K == 0) {
#if X86_VNNI
        const int64_t slice = X8K_SLICE;
#else
        const int64_t slice = next->k / QK_K; /* group by group, whole rows */
#endif
        a = x8k_unit_ahead(t, next->packed, x8k_group_bytes(t, next->k), next->k / QK_K, X86_VNNI ? next->n8 : 1, 0, 0, slice);
    } else if ((t == QUANT_Q4_0 || t == QUANT_Q4_1 || t == QUANT_Q5_0 || t == QUANT_Q5_1 || t == QUANT_Q8_0 || t == QUANT_MXFP4) &&
               next->k % 32 == 0) {
        x8_ahead_range(&a, 0, next->packed, x8p_group_bytes(t, next->k));
    }
    return a;
}

/* Groups of eight rows per pass: the VNNI path takes two (sixteen rows) with four tokens
 * (X8K_SLICE_TOKENS), whose sums fill the registers as six tokens of one group do, and the group
 * left over the same way, X8K_CALL_GROUPS groups a call; the AVX2 path one group by X8K_TOKENS. */
#if X86_VNNI
#define X8K_SLICE_TOKENS 4
#define X8K_CALL_GROUPS 8
#else
#define X8K_CALL_GROUPS 1
#endif

#if X86_VNNI
/* The pass of one K-quant format, constant after inlining. */
AVX2 static KERNEL_INLINE void x8k_pass(uint32_t type, int G, int NT, const void *packed, size_t gb, int64_t b0, int64_t b1,
                                        const x8k_prep *prep, const x8k_codes_q6_K *codes, bool fetch, x8_ahead *ahead,
                                        const act_q8_256 *const x[X8K_TOKENS], float (*acc)[16]) {
    if (type == QUANT_Q6_K)
        x8k_pass_q6_K(G, NT, packed, gb, b0, b1, prep, codes, fetch, ahead, x, acc);
    else
        x8k_pass_k45(type == QUANT_Q5_K, G, NT, packed, gb, b0, b1, prep, fetch, ahead, x, acc);
}

/* Blocks [b0, b1) of G (1 or 2) groups by tn tokens (at most X8K_CALL_TOKENS, at xq): the groups'
 * scales unpacked once (and Q6_K's codes), then every pass of X8K_SLICE_TOKENS tokens over them,
 * the sums of pass i carried in acc[i] (from zero at b0 = 0). Inlined with constant G. */
AVX2 static KERNEL_INLINE void x8k_slice(uint32_t type, int G, const char *pu, size_t gb, int64_t b0, int64_t b1, const char *xq,
                                         size_t xs, int64_t tn, x8_ahead ahead, float (*acc)[2 * X8K_TOKENS][16]) {
    const int most = X8K_SLICE_TOKENS;
    const bool six = type == QUANT_Q6_K;
    const size_t block_bytes = x8k_block_bytes(type);
    x8k_prep prep[2 * X8K_SLICE];
    x8k_codes_q6_K codes[2 * X8K_SLICE]; /* Q6_K's, unpacked: 48 KB for the second-level cache */
    for (int g = 0; g < G; g++)
        for (int64_t b = b0; b < b1; b++) {
            const char *pb = pu + (size_t)g * gb + (size_t)b * block_bytes;
            if (six) {
                x8k_prep_q6_K((const x8k_q6_K *)pb, &prep[g * X8K_SLICE + (b - b0)]);
                x8k_unpack_q6_K((const x8k_q6_K *)pb, &codes[g * X8K_SLICE + (b - b0)]);
            } else {
                x8k_prep_k45((const x8k_q4_K *)pb, &prep[g * X8K_SLICE + (b - b0)]);
            }
        }
    /* the slice after this one asked for over the passes after the first, which asks for its own
     * weights as it goes (both in the first where it is the only one) */
    const int passes = (int)((tn + most - 1) / most);
    x8_ahead_spread(&ahead, (size_t)(passes > 1 ? passes - 1 : 1) * (size_t)(b1 - b0));
    for (int i = 0; i * most < tn; i++) {
        const int nt = tn - (int64_t)i * most < most ? (int)(tn - (int64_t)i * most) : most;
        x8_ahead *ah = i > 0 || passes == 1 ? &ahead : NULL;
        const act_q8_256 *x[X8K_TOKENS];
        for (int t = 0; t < X8K_TOKENS; t++)
            x[t] = (const act_q8_256 *)(xq + (size_t)(i * most + (t < nt ? t : 0)) * xs);
        switch (nt) {
        case 1: x8k_pass(type, G, 1, pu, gb, b0, b1, prep, six ? codes : NULL, i == 0, ah, x, acc[i]); break;
        case 2: x8k_pass(type, G, 2, pu, gb, b0, b1, prep, six ? codes : NULL, i == 0, ah, x, acc[i]); break;
        case 3: x8k_pass(type, G, 3, pu, gb, b0, b1, prep, six ? codes : NULL, i == 0, ah, x, acc[i]); break;
        default: x8k_pass(type, G, 4, pu, gb, b0, b1, prep, six ? codes : NULL, i == 0, ah, x, acc[i]); break;
        }
    }
}

/* A group's rows from its pass's sums: Q6_K's lanes, or Q4_K's and Q5_K's. */
AVX2 static inline void x8k_store(uint32_t type, float *y, __m512 acc) {
    if (type == QUANT_Q6_K)
        x8k_store_rows(y, acc);
    else
        x8k_store_rows_k45(y, acc);
}

/* Tokens per call of x8k_tokens: its sums wait in memory between slices (32 KB). */
#define X8K_CALL_TOKENS 64

/* n8 groups (at most X8K_CALL_GROUPS) by n_tok tokens: X8K_CALL_TOKENS at a time, slice by slice,
 * and within a slice two groups at a time (the last one alone): their scales unpacked once, then
 * every pass of X8K_SLICE_TOKENS tokens over them, each pass's sums carried in memory to the next
 * slice (the same steps as in registers: the same bits). Every group passes over a slice's
 * activations before the next slice's are read, so those of the call's tokens stay in the
 * second-level cache for all of its rows however wide the rows are (each slice's 12 blocks: 8.7 KB
 * a token), and a wide product takes as many tokens a call as a narrow one. */
AVX2 static KERNEL_INLINE void x8k_tokens(uint32_t type, int n8, const void *packed, size_t gb, int64_t k, const void *xq, size_t xs,
                                          int64_t n_tok, float *y, size_t ys, const x8_next *next) {
    enum { PASSES = X8K_CALL_TOKENS / 4 };
    const int64_t nb = k / QK_K;
    const int most = X8K_SLICE_TOKENS;
    if (n_tok <= X8K_TOKENS) {
        /* one pass (a token decoding, a few sequences together): nothing to share the scales or a
         * slice with, and the weights come from memory, group by group as laid out, their scales
         * made as they come (slices and two groups at once took Qwen2.5 1.5B's decode from 44 to
         * 32 tokens/s) */
        const act_q8_256 *x[X8K_TOKENS];
        for (int t = 0; t < X8K_TOKENS; t++)
            x[t] = (const act_q8_256 *)((const char *)xq + (size_t)(t < n_tok ? t : 0) * xs);
        for (int g = 0; g < n8; g++) {
            const char *pg = (const char *)packed + (size_t)g * gb;
            float acc[X8K_TOKENS][16];
            switch (n_tok) {
            case 1: x8k_pass(type, 1, 1, pg, gb, 0, nb, NULL, NULL, true, NULL, x, acc); break;
            case 2: x8k_pass(type, 1, 2, pg, gb, 0, nb, NULL, NULL, true, NULL, x, acc); break;
            case 3: x8k_pass(type, 1, 3, pg, gb, 0, nb, NULL, NULL, true, NULL, x, acc); break;
            case 4: x8k_pass(type, 1, 4, pg, gb, 0, nb, NULL, NULL, true, NULL, x, acc); break;
            case 5: x8k_pass(type, 1, 5, pg, gb, 0, nb, NULL, NULL, true, NULL, x, acc); break;
            default: x8k_pass(type, 1, 6, pg, gb, 0, nb, NULL, NULL, true, NULL, x, acc); break;
            }
            for (int t = 0; t < n_tok; t++)
                x8k_store(type, y + (size_t)t * ys + 8 * g, _mm512_loadu_ps(acc[t]));
        }
        return;
    }
    for (int64_t t0 = 0; t0 < n_tok; t0 += X8K_CALL_TOKENS) {
        const int64_t tn = n_tok - t0 < X8K_CALL_TOKENS ? n_tok - t0 : X8K_CALL_TOKENS;
        const int passes = (int)((tn + most - 1) / most);
        float acc[X8K_CALL_GROUPS / 2][PASSES][2 * X8K_TOKENS][16];
        for (int64_t b0 = 0; b0 < nb; b0 += X8K_SLICE) {
            const int64_t b1 = nb - b0 < X8K_SLICE ? nb : b0 + X8K_SLICE;
            for (int u = 0; 2 * u < n8; u++) {
                const char *pu = (const char *)packed + (size_t)(2 * u) * gb;
                const char *xt = (const char *)xq + (size_t)t0 * xs;
                /* what comes after: the next two groups, the next slice, the next tokens, the next call */
                x8_ahead after = { { NULL, NULL }, { 0, 0 }, 0 };
                if (2 * u + 2 < n8)
                    after = x8k_unit_ahead(type, packed, gb, nb, n8, u + 1, b0, X8K_SLICE);
                else if (b1 < nb)
                    after = x8k_unit_ahead(type, packed, gb, nb, n8, 0, b1, X8K_SLICE);
                else if (t0 + tn < n_tok)
                    after = x8k_unit_ahead(type, packed, gb, nb, n8, 0, 0, X8K_SLICE);
                else
                    after = x8_first(next);
                if (n8 - 2 * u >= 2)
                    x8k_slice(type, 2, pu, gb, b0, b1, xt, xs, tn, after, acc[u]);
                else
                    x8k_slice(type, 1, pu, gb, b0, b1, xt, xs, tn, after, acc[u]);
            }
        }
        for (int g = 0; g < n8; g++)
            for (int i = 0; i < passes; i++)
                for (int t = 0; t < most && (int64_t)i * most + t < tn; t++)
                    x8k_store(type, y + (size_t)(t0 + (int64_t)i * most + t) * ys + 8 * g, _mm512_loadu_ps(acc[g / 2][i][g % 2 * X8K_TOKENS + t]));
    }
}
#else
/* The pass of one K-quant format, constant after inlining. */
AVX2 static KERNEL_INLINE void x8k_pass(uint32_t type, int NT, const void *packed, int64_t nb, const act_q8_256 *const x[X8K_TOKENS],
                                        float *y, size_t ys) {
    if (type == QUANT_Q6_K)
        x8k_pass_q6_K(NT, packed, nb, x, y, ys);
    else
        x8k_pass_k45(type == QUANT_Q5_K, NT, packed, nb, x, y, ys);
}

/* One group by every token, X8K_TOKENS at a time, the last pass with those left (as
 * x8p_gemm_32). */
AVX2 static KERNEL_INLINE void x8k_tokens(uint32_t type, int n8, const void *packed, size_t gb, int64_t k, const void *xq, size_t xs,
                                          int64_t n_tok, float *y, size_t ys, const x8_next *next) {
    (void)n8; /* one (X8K_CALL_GROUPS) */
    (void)gb;
    (void)next; /* one group by four tokens: its weights come in as used, 4 KB ahead */
    for (int64_t t0 = 0; t0 < n_tok; t0 += X8K_TOKENS) {
        const int nt = n_tok - t0 < X8K_TOKENS ? (int)(n_tok - t0) : X8K_TOKENS;
        const act_q8_256 *x[X8K_TOKENS];
        for (int t = 0; t < X8K_TOKENS; t++)
            x[t] = (const act_q8_256 *)((const char *)xq + (size_t)(t0 + (t < nt ? t : 0)) * xs);
        float *yt = y + (size_t)t0 * ys;
        switch (nt) {
        case 1: x8k_pass(type, 1, packed, k / QK_K, x, yt, ys); break;
        case 2: x8k_pass(type, 2, packed, k / QK_K, x, yt, ys); break;
        case 3: x8k_pass(type, 3, packed, k / QK_K, x, yt, ys); break;
        default: x8k_pass(type, 4, packed, k / QK_K, x, yt, ys); break;
        }
    }
}
#endif

/* n8 groups, X8K_CALL_GROUPS at a time. */
AVX2 static KERNEL_INLINE void x8k_gemm_256(uint32_t type, const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs,
                                            int64_t n_tok, float *y, size_t ys, const x8_next *next) {
    const size_t gb = x8k_group_bytes(type, k);
    for (int64_t g = 0; g < n8; g += X8K_CALL_GROUPS) {
        const int n = n8 - g < X8K_CALL_GROUPS ? (int)(n8 - g) : X8K_CALL_GROUPS;
        /* the call's next groups, or the caller's next call */
        const x8_next more = { type, (const char *)packed + (size_t)(g + n) * gb, k, n8 - g - n };
        x8k_tokens(type, n, (const char *)packed + (size_t)g * gb, gb, k, xq, xs, n_tok, y + 8 * g, ys, g + n < n8 ? &more : next);
    }
}

AVX2 static void x8k_gemm_q4_K(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8k_gemm_256(QUANT_Q4_K, packed, k, n8, xq, xs, n_tok, y, ys, next);
}
AVX2 static void x8k_gemm_q5_K(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8k_gemm_256(QUANT_Q5_K, packed, k, n8, xq, xs, n_tok, y, ys, next);
}
AVX2 static void x8k_gemm_q6_K(const void *packed, int64_t k, int64_t n8, const void *xq, size_t xs, int64_t n_tok, float *y, size_t ys,
                              const x8_next *next) {
    x8k_gemm_256(QUANT_Q6_K, packed, k, n8, xq, xs, n_tok, y, ys, next);
}


static const cpu_kernels avx2 = {
    .name = X86_PATH_NAME,
    .dot_f32 = dot_f32,
    .axpy_f32 = axpy_f32,
    .dot_rows_f32 = dot_rows_f32,
    .axpy_rows_f32 = axpy_rows_f32,
    .f16_from_f32 = half_from_f32,
    .f16_to_f32 = half_to_f32,
    .dot_rows_f16 = dot_rows_f16,
    .axpy_rows_f16 = axpy_rows_f16,
    .dot_rows_f16_heads = dot_rows_f16_heads,
    .axpy_rows_f16_heads = axpy_rows_f16_heads,
    .f16_heads_max = F16_HEADS_MAX,
#if X86_VNNI
    .attn_tile = attn_tile,
    .attn_width = 16,
#endif
    .glu = glu,
    .exp_sum = exp_sum,
    .quantize_q8_32 = quantize_q8_32,
    .quantize_q8_256 = quantize_q8_256,
    .gemm_f32 = gemm_f32,
    .dot_row = {
        [QUANT_F32] = dot_f32_row, [QUANT_F16] = dot_f16, [QUANT_Q4_0] = dot_q4_0, [QUANT_Q4_1] = dot_q4_1,
        [QUANT_Q5_0] = dot_q5_0, [QUANT_Q5_1] = dot_q5_1, [QUANT_Q8_0] = dot_q8_0, [QUANT_Q4_K] = dot_q4_K,
        [QUANT_Q5_K] = dot_q5_K, [QUANT_Q6_K] = dot_q6_K, [QUANT_MXFP4] = dot_mxfp4,
    },
    .dot_q8 = {
        [QUANT_Q4_0] = q8_q4_0, [QUANT_Q4_1] = q8_q4_1, [QUANT_Q5_0] = q8_q5_0, [QUANT_Q5_1] = q8_q5_1, [QUANT_Q8_0] = q8_q8_0,
        [QUANT_Q4_K] = q8_q4_K, [QUANT_Q5_K] = q8_q5_K, [QUANT_Q6_K] = q8_q6_K, [QUANT_MXFP4] = q8_mxfp4,
    },
    .x8_bytes = {
        [QUANT_Q4_0] = x8p_bytes_q4_0, [QUANT_Q4_1] = x8p_bytes_q4_1, [QUANT_Q5_0] = x8p_bytes_q5_0, [QUANT_Q5_1] = x8p_bytes_q5_1,
        [QUANT_Q8_0] = x8p_bytes_q8_0,
        [QUANT_Q4_K] = x8k_bytes_q4_K, [QUANT_Q5_K] = x8k_bytes_q5_K, [QUANT_Q6_K] = x8k_bytes_q6_K,
        [QUANT_MXFP4] = x8p_bytes_mxfp4,
    },
    .x8_repack = {
        [QUANT_Q4_0] = x8p_repack_q4_0, [QUANT_Q4_1] = x8p_repack_q4_1, [QUANT_Q5_0] = x8p_repack_q5_0, [QUANT_Q5_1] = x8p_repack_q5_1,
        [QUANT_Q8_0] = x8p_repack_q8_0,
        [QUANT_Q4_K] = x8k_repack_q4_K, [QUANT_Q5_K] = x8k_repack_q5_K, [QUANT_Q6_K] = x8k_repack_q6_K,
        [QUANT_MXFP4] = x8p_repack_mxfp4,
    },
    .x8_gemm = {
        [QUANT_Q4_0] = x8p_gemm_q4_0, [QUANT_Q4_1] = x8p_gemm_q4_1, [QUANT_Q5_0] = x8p_gemm_q5_0, [QUANT_Q5_1] = x8p_gemm_q5_1,
        [QUANT_Q8_0] = x8p_gemm_q8_0,
        [QUANT_Q4_K] = x8k_gemm_q4_K, [QUANT_Q5_K] = x8k_gemm_q5_K, [QUANT_Q6_K] = x8k_gemm_q6_K,
        [QUANT_MXFP4] = x8p_gemm_mxfp4,
    },
#if X86_VNNI
    .x8_slice = { [QUANT_Q4_K] = X8K_SLICE * QK_K, [QUANT_Q5_K] = X8K_SLICE * QK_K, [QUANT_Q6_K] = X8K_SLICE * QK_K },
#endif
    .x8_keep = { [QUANT_Q4_0] = true, [QUANT_Q4_1] = true, [QUANT_Q5_0] = true, [QUANT_Q5_1] = true, [QUANT_Q8_0] = true,
                 [QUANT_Q4_K] = true, [QUANT_Q5_K] = true, [QUANT_Q6_K] = true, [QUANT_MXFP4] = true },
    .dot_q8_x4 = {
        [QUANT_Q4_0] = q8_q4_0_x4, [QUANT_Q4_1] = q8_q4_1_x4, [QUANT_Q5_0] = q8_q5_0_x4, [QUANT_Q8_0] = q8x4_q8_0,
        [QUANT_Q5_1] = q8_q5_1_x4, [QUANT_Q4_K] = q8x4_q4_K, [QUANT_Q5_K] = q8x4_q5_K, [QUANT_Q6_K] = q8x4_q6_K,
        [QUANT_MXFP4] = q8_mxfp4_x4,
    },
};

const cpu_kernels *X86_PATH_TABLE(void) {
    return &avx2;
}

#else
const cpu_kernels *X86_PATH_TABLE(void) {
    return NULL;
}
#endif
