/* peak.c: a microbenchmark of each kernel path's 8-bit product instruction, the arithmetic ceiling of
 * prefill. Each loop repeats the instruction sequence that path's integer kernels spend on a block's
 * products, on operands held in registers (no memory traffic), with enough independent accumulators
 * to keep every multiply port busy whatever the instruction's latency. Like the kernels, each SIMD
 * loop carries its path's target attribute, so the default build still runs on any CPU of its
 * architecture and a loop only runs after cpu_kernels_select has seen the features.
 *
 * The operands never change, so a compiler would move the products out of the loop, or compute
 * equal ones once: an empty asm statement at the top of each iteration tells it the operands may
 * have changed, which costs no instruction. Compilers without GNU asm get no loops (an error, which
 * bench reports as an unknown peak) rather than a figure that may count hoisted work. */
#include "backend/cpu/peak.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "platform/platform.h"

typedef uint64_t (*peak_loop)(int64_t iterations); /* returns a fold of its sums, kept by the caller */

#if defined(__GNUC__) || defined(__clang__)
#define PEAK_ASM 1

/* Scalar: one multiply and add of two 8-bit values in general registers, as the reference kernels
 * do per code; four steps per iteration keep the multiplier busy (the sums' chains are one add). */
#define SCALAR_STEPS 4
static uint64_t peak_scalar(int64_t iterations) {
    int8_t a0 = 3, a1 = -5, a2 = 7, a3 = -11;
    int32_t b = 13;
    __asm__ volatile("" : "+r"(b)); /* a multiply, not shifts and adds by a known constant */
    uint32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0; /* unsigned: the sums wrap, defined */
    for (int64_t i = 0; i < iterations; i++) {
        __asm__ volatile("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3));
        s0 += (uint32_t)(a0 * b);
        s1 += (uint32_t)(a1 * b);
        s2 += (uint32_t)(a2 * b);
        s3 += (uint32_t)(a3 * b);
    }
    return (uint64_t)s0 + s1 + s2 + s3;
}
#define PEAK_SCALAR peak_scalar
#endif

#if (defined(__x86_64__) || defined(_M_X64)) && defined(PEAK_ASM)
#include <immintrin.h>

/* A vector's 32-bit sums added as unsigned words: they wrap by design, and a vector reduce written
 * in C (the compiler's _mm512_reduce_add_epi32) adds them as signed integers, undefined behaviour
 * when they overflow, which UBSan reports. */
static uint64_t fold_words(const uint32_t *w, int n) {
    uint64_t fold = 0;
    for (int k = 0; k < n; k++)
        fold += w[k];
    return fold;
}

/* AVX2: vpmaddubsw (32 byte products, summed in pairs to 16 bits), vpmaddwd by ones (pairs to 32
 * bits) and vpaddd, the AVX2 kernels' block product. Eight steps, written out (GCC keeps arrays of
 * registers in memory), each a different pair of four opaque operands and two others, into two
 * sums (their chains are one add each): eleven of sixteen registers, the rest temporaries. */
#define AVX2_STEPS 8
#define AVX2_STEP(s, a, b) s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones))
__attribute__((target("avx2,fma,f16c"))) static uint64_t peak_avx2(int64_t iterations) {
    __m256i a0 = _mm256_set1_epi8(17), a1 = _mm256_set1_epi8(19), a2 = _mm256_set1_epi8(23), a3 = _mm256_set1_epi8(29);
    const __m256i b0 = _mm256_set1_epi8(-7), b1 = _mm256_set1_epi8(5), ones = _mm256_set1_epi16(1);
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    for (int64_t i = 0; i < iterations; i++) {
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3));
        AVX2_STEP(s0, a0, b0);
        AVX2_STEP(s1, a1, b0);
        AVX2_STEP(s0, a2, b0);
        AVX2_STEP(s1, a3, b0);
        AVX2_STEP(s0, a0, b1);
        AVX2_STEP(s1, a1, b1);
        AVX2_STEP(s0, a2, b1);
        AVX2_STEP(s1, a3, b1);
    }
    uint32_t out[8];
    _mm256_storeu_si256((__m256i *)out, _mm256_add_epi32(s0, s1));
    return fold_words(out, 8);
}

/* AVX-512 VNNI: vpdpbusd on 512-bit registers, 64 byte products summed into 32 bits in one
 * instruction. Its sum is also its input, so each step has its own: twelve chains cover a latency
 * of five cycles at two a cycle. Each step multiplies a different pair of four opaque operands and
 * three others: 19 of the 32 registers. */
#define VNNI_STEPS 12
#define VNNI_STEP(s, a, b) s = _mm512_dpbusd_epi32(s, a, b)
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) static uint64_t
peak_avx512vnni(int64_t iterations) {
    __m512i a0 = _mm512_set1_epi8(17), a1 = _mm512_set1_epi8(19), a2 = _mm512_set1_epi8(23), a3 = _mm512_set1_epi8(29);
    const __m512i b0 = _mm512_set1_epi8(-7), b1 = _mm512_set1_epi8(5), b2 = _mm512_set1_epi8(-3);
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0, s8 = s0,
            s9 = s0, s10 = s0, s11 = s0;
    for (int64_t i = 0; i < iterations; i++) {
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3));
        VNNI_STEP(s0, a0, b0);
        VNNI_STEP(s1, a1, b0);
        VNNI_STEP(s2, a2, b0);
        VNNI_STEP(s3, a3, b0);
        VNNI_STEP(s4, a0, b1);
        VNNI_STEP(s5, a1, b1);
        VNNI_STEP(s6, a2, b1);
        VNNI_STEP(s7, a3, b1);
        VNNI_STEP(s8, a0, b2);
        VNNI_STEP(s9, a1, b2);
        VNNI_STEP(s10, a2, b2);
        VNNI_STEP(s11, a3, b2);
    }
    const __m512i sum = _mm512_add_epi32(
        _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3)),
                         _mm512_add_epi32(_mm512_add_epi32(s4, s5), _mm512_add_epi32(s6, s7))),
        _mm512_add_epi32(_mm512_add_epi32(s8, s9), _mm512_add_epi32(s10, s11)));
    uint32_t out[16];
    _mm512_storeu_si512(out, sum);
    return fold_words(out, 16);
}
#define PEAK_AVX2 peak_avx2
#define PEAK_AVX512VNNI peak_avx512vnni
#endif

#if (defined(__aarch64__) || defined(_M_ARM64)) && defined(PEAK_ASM)
#include <arm_neon.h>

/* NEON: smull and smull2 (16 byte products to 16 bits), addp and sadalp (pairs into 32 bits), the
 * neon kernels' four-lane dot product without sdot; eight steps, each its own sum and a different
 * pair of four opaque operands and two others. */
#define NEON_STEPS 8
#define NEON_STEP(s, a, b) s = vpadalq_s16(s, vpaddq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)), vmull_high_s8(a, b)))
static uint64_t peak_neon(int64_t iterations) {
    int8x16_t a0 = vdupq_n_s8(17), a1 = vdupq_n_s8(19), a2 = vdupq_n_s8(23), a3 = vdupq_n_s8(29);
    const int8x16_t b0 = vdupq_n_s8(-7), b1 = vdupq_n_s8(5);
    int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (int64_t i = 0; i < iterations; i++) {
        __asm__ volatile("" : "+w"(a0), "+w"(a1), "+w"(a2), "+w"(a3));
        NEON_STEP(s0, a0, b0);
        NEON_STEP(s1, a1, b0);
        NEON_STEP(s2, a2, b0);
        NEON_STEP(s3, a3, b0);
        NEON_STEP(s4, a0, b1);
        NEON_STEP(s5, a1, b1);
        NEON_STEP(s6, a2, b1);
        NEON_STEP(s7, a3, b1);
    }
    const int32x4_t sum = vaddq_s32(vaddq_s32(vaddq_s32(s0, s1), vaddq_s32(s2, s3)), vaddq_s32(vaddq_s32(s4, s5), vaddq_s32(s6, s7)));
    return (uint32_t)vaddvq_s32(sum);
}

/* NEON with the dot-product extension: sdot, 16 byte products into four 32-bit sums, as the
 * neon-dotprod kernels; twelve steps, each its own sum (the chain) and a different pair of four
 * opaque operands and three others. */
#define DOTPROD_STEPS 12
#define DOTPROD_STEP(s, a, b) s = vdotq_s32(s, a, b)
#if defined(__clang__)
#define DOTPROD_TARGET __attribute__((target("dotprod")))
#else
#define DOTPROD_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
DOTPROD_TARGET static uint64_t peak_neon_dotprod(int64_t iterations) {
    int8x16_t a0 = vdupq_n_s8(17), a1 = vdupq_n_s8(19), a2 = vdupq_n_s8(23), a3 = vdupq_n_s8(29);
    const int8x16_t b0 = vdupq_n_s8(-7), b1 = vdupq_n_s8(5), b2 = vdupq_n_s8(-3);
    int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0, s8 = s0, s9 = s0,
              s10 = s0, s11 = s0;
    for (int64_t i = 0; i < iterations; i++) {
        __asm__ volatile("" : "+w"(a0), "+w"(a1), "+w"(a2), "+w"(a3));
        DOTPROD_STEP(s0, a0, b0);
        DOTPROD_STEP(s1, a1, b0);
        DOTPROD_STEP(s2, a2, b0);
        DOTPROD_STEP(s3, a3, b0);
        DOTPROD_STEP(s4, a0, b1);
        DOTPROD_STEP(s5, a1, b1);
        DOTPROD_STEP(s6, a2, b1);
        DOTPROD_STEP(s7, a3, b1);
        DOTPROD_STEP(s8, a0, b2);
        DOTPROD_STEP(s9, a1, b2);
        DOTPROD_STEP(s10, a2, b2);
        DOTPROD_STEP(s11, a3, b2);
    }
    const int32x4_t sum = vaddq_s32(vaddq_s32(vaddq_s32(vaddq_s32(s0, s1), vaddq_s32(s2, s3)),
                                              vaddq_s32(vaddq_s32(s4, s5), vaddq_s32(s6, s7))),
                                    vaddq_s32(vaddq_s32(s8, s9), vaddq_s32(s10, s11)));
    return (uint32_t)vaddvq_s32(sum);
}
#define PEAK_NEON peak_neon
#define PEAK_NEON_DOTPROD peak_neon_dotprod
#endif

/* Paths without a loop in this build (another architecture, or no GNU asm). */
#ifndef PEAK_SCALAR
#define PEAK_SCALAR NULL
#define SCALAR_STEPS 0
#endif
#ifndef PEAK_AVX2
#define PEAK_AVX2 NULL
#define PEAK_AVX512VNNI NULL
#define AVX2_STEPS 0
#define VNNI_STEPS 0
#endif
#ifndef PEAK_NEON
#define PEAK_NEON NULL
#define PEAK_NEON_DOTPROD NULL
#define NEON_STEPS 0
#define DOTPROD_STEPS 0
#endif

/* Every path's loop and the multiply-adds of one of its steps (the instruction, or the short
 * sequence, that the comment above its loop names): the one place these counts are written. */
typedef struct peak_path {
    const cpu_kernels *(*table)(void); /* the kernel table it belongs to (NULL: not in this build) */
    peak_loop loop;
    int steps;         /* steps per iteration of the loop */
    int macs_per_step; /* 8-bit multiply-adds of one step */
} peak_path;

static const peak_path peak_paths[] = {
    { cpu_kernels_scalar, PEAK_SCALAR, SCALAR_STEPS, 1 },                  /* an integer multiply */
    { cpu_kernels_avx2, PEAK_AVX2, AVX2_STEPS, 32 },                       /* vpmaddubsw ymm (+ vpmaddwd, vpaddd) */
    { cpu_kernels_avx512_vnni, PEAK_AVX512VNNI, VNNI_STEPS, 64 },          /* vpdpbusd zmm */
    { cpu_kernels_neon, PEAK_NEON, NEON_STEPS, 16 },                       /* smull + smull2 (+ addp, sadalp) */
    { cpu_kernels_neon_dotprod, PEAK_NEON_DOTPROD, DOTPROD_STEPS, 16 },    /* sdot */
};

#define PEAK_CALIBRATE_SECONDS 0.01 /* the first passes double their length up to this (and warm up) */
#define PEAK_PASS_SECONDS 0.05
#define PEAK_PASSES 4

typedef struct peak_job {
    peak_loop loop;
    int64_t iterations; /* per thread */
    uint64_t *sink;     /* one fold per thread, so no loop is dead code */
} peak_job;

static void peak_part(void *ctx, int ith, int nth) {
    (void)nth;
    peak_job *j = ctx;
    j->sink[ith] = j->loop(j->iterations);
}

static double timed_pass(pool *p, peak_job *j) {
    const double t0 = plat_time_seconds();
    pool_run(p, peak_part, j);
    return plat_time_seconds() - t0;
}

brasa_status cpu_int8_peak(const cpu_kernels *k, pool *p, double *macs_per_second, brasa_error *err) {
    const peak_path *pp = NULL;
    for (size_t i = 0; i < sizeof peak_paths / sizeof peak_paths[0]; i++)
        if (peak_paths[i].table() == k)
            pp = &peak_paths[i];
    if (!pp || !pp->loop)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "this build has no int8 peak loop for kernel path '%s'", k->name);
    const int nth = pool_threads(p);
    peak_job job = { pp->loop, 1024, calloc((size_t)nth, sizeof(uint64_t)) };
    if (!job.sink)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    double dt = timed_pass(p, &job);
    while (dt < PEAK_CALIBRATE_SECONDS && job.iterations < ((int64_t)1 << 40)) {
        job.iterations *= 2;
        dt = timed_pass(p, &job);
    }
    if (dt > 0)
        job.iterations = (int64_t)((double)job.iterations * (PEAK_PASS_SECONDS / dt)) + 1;
    const double macs_per_pass = (double)nth * (double)job.iterations * pp->steps * pp->macs_per_step;
    double best = 0.0;
    for (int pass = 0; pass < PEAK_PASSES; pass++) {
        dt = timed_pass(p, &job);
        if (dt > 0 && macs_per_pass / dt > best)
            best = macs_per_pass / dt;
    }
    free(job.sink);
    *macs_per_second = best;
    return BRASA_OK;
}
