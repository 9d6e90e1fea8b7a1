/* test_cpu_kernels: every SIMD path's kernels agree with the scalar reference, for every block
 * format, on rows of many lengths (one block up to many, ragged float lengths), with random codes
 * and scales. Tolerance: |simd - scalar| <= 1e-5 * sum |w_i x_i| + 1e-6 (only the order of
 * additions differs). Paths this CPU cannot run are reported as skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "core/f16.h"
#include "quant/quant.h"

#include "test_data.h"

/* One path's eight-row kernel on rows8 (eight rows of k values, rb bytes apart) and ntok tokens'
 * activations (xs bytes apart): every output within 1e-5 of the sum of |w x| (+ slack) of the
 * scalar one-row product. w: k floats of scratch. Prints what differs; returns whether all agree. */
static bool x8_matches_scalar(const cpu_kernels *k, const cpu_kernels *scalar, uint32_t type, const uint8_t *rows8,
                              size_t rb, int64_t k8, const char *a8, size_t xs, int64_t ntok, double slack, float *w,
                              const char *what) {
    const bool kq = quant_get(type)->block_size == QK_K;
    uint8_t *packed = malloc(k->x8_bytes[type](k8));
    float *y8 = malloc((size_t)ntok * 8 * sizeof *y8);
    k->x8_repack[type](rows8, rb, k8, packed);
    k->x8_gemm[type](packed, k8, 1, a8, xs, ntok, y8, 8, NULL);
    bool ok = true;
    for (int64_t tok = 0; tok < ntok; tok++)
        for (int r = 0; r < 8; r++) {
            const float one = scalar->dot_q8[type](rows8 + r * rb, a8 + tok * xs, k8);
            quant_dequantize(type, rows8 + r * rb, w, k8);
            double mag = 0;
            const act_q8_256 *a = (const act_q8_256 *)(a8 + tok * xs);
            const act_q8_32 *a32 = (const act_q8_32 *)(a8 + tok * xs);
            for (int64_t i = 0; i < k8; i++)
                mag += fabs((double)w[i] * (kq ? a[i / 256].d * a[i / 256].s[(i % 256) / 32] * a[i / 256].q[i % 256]
                                               : a32[i / 32].d * a32[i / 32].q[i % 32]));
            if (fabs((double)y8[tok * 8 + r] - one) > 1e-5 * mag + slack) {
                ok = false;
                printf("FAIL %s x8 %s %s k=%lld token %lld row %d: %.9g, scalar %.9g\n", k->name, quant_get(type)->name,
                       what, (long long)k8, (long long)tok, r, y8[tok * 8 + r], one);
            }
        }
    free(packed);
    free(y8);
    return ok;
}

int main(void) {
    const cpu_kernels *scalar = cpu_kernels_scalar();
    const cpu_kernels *paths[] = { cpu_kernels_avx2(), cpu_kernels_avx512_vnni(), cpu_kernels_neon(), cpu_kernels_neon_dotprod() };
    cpu_features f;
    cpu_detect_features(&f);
    const bool avx2_ok = f.avx2 && f.fma && f.f16c, vnni_ok = avx2_ok && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
    const bool runnable[] = { avx2_ok, vnni_ok, f.neon, f.neon && f.dotprod };
    const uint32_t types[] = { QUANT_F32, QUANT_F16, QUANT_BF16, QUANT_Q4_0, QUANT_Q4_1, QUANT_Q5_0,
                               QUANT_Q5_1, QUANT_Q8_0, QUANT_Q4_K, QUANT_Q5_K, QUANT_Q6_K, QUANT_MXFP4 };
    int passed = 0, failed = 0, skipped = 0;
    uint8_t *row = malloc(64 * 256 * 8);
    float *x = malloc(64 * 256 * sizeof *x), *w = malloc(64 * 256 * sizeof *w);
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        if (!paths[p])
            continue; /* built for another architecture */
        if (!runnable[p]) {
            printf("skip %s: not supported by this CPU\n", paths[p]->name);
            skipped++;
            continue;
        }
        /* the plain float dot product on ragged lengths */
        for (int64_t n = 1; n <= 300; n += (n < 40 ? 1 : 37)) {
            for (int64_t i = 0; i < n; i++) {
                w[i] = rnd_unit();
                x[i] = rnd_unit();
            }
            double mag = 0;
            for (int64_t i = 0; i < n; i++)
                mag += fabs((double)w[i] * x[i]);
            float a = scalar->dot_f32(w, x, n), b = paths[p]->dot_f32(w, x, n);
            if (fabs((double)a - b) <= 1e-5 * mag + 1e-6) {
                passed++;
            } else {
                failed++;
                printf("FAIL %s dot_f32 n=%lld: scalar %.9g, %s %.9g\n", paths[p]->name, (long long)n, a, paths[p]->name, b);
            }
        }
        printf("path %s\n", paths[p]->name);
        /* the prefill product: against scalar, and tiled outputs equal to one-at-a-time outputs
         * bit for bit (so splitting rows between threads cannot change results) */
        for (int64_t k = 5; k <= 300; k += 59) {
            const int64_t R = 5, T = 7;
            float *wm = malloc((size_t)(R * k) * sizeof *wm), *xm = malloc((size_t)(T * k) * sizeof *xm);
            float ys[5 * 7], yp[5 * 7], y1[5 * 7];
            for (int64_t i = 0; i < R * k; i++)
                wm[i] = rnd_unit();
            for (int64_t i = 0; i < T * k; i++)
                xm[i] = rnd_unit();
            scalar->gemm_f32(wm, (size_t)k, R, xm, (size_t)k, T, k, ys, (size_t)R);
            paths[p]->gemm_f32(wm, (size_t)k, R, xm, (size_t)k, T, k, yp, (size_t)R);
            for (int64_t r = 0; r < R; r++)
                for (int64_t t = 0; t < T; t++)
                    paths[p]->gemm_f32(wm + r * k, (size_t)k, 1, xm + t * k, (size_t)k, 1, k, &y1[t * R + r], 1);
            bool ok = true;
            for (int i = 0; i < R * T; i++)
                ok = ok && fabsf(ys[i] - yp[i]) <= 1e-5f * (float)k && f32_bits(yp[i]) == f32_bits(y1[i]);
            if (ok) {
                passed++;
            } else {
                failed++;
                printf("FAIL %s gemm_f32 k=%lld: differs from scalar or from its own untiled outputs\n", paths[p]->name,
                       (long long)k);
            }
            free(wm);
            free(xm);
        }
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const uint32_t type = types[ti];
            const quant_traits *t = quant_get(type);
            if (!paths[p]->dot_row[type])
                continue; /* falls back to dequantize + dot_f32, covered above */
            const int64_t bs = t->block_size == 1 ? 1 : t->block_size;
            const int64_t lengths[] = { bs, 2 * bs, 3 * bs, 7 * bs, 16 * bs, bs == 1 ? 13 : 24 * bs, bs == 1 ? 1000 : 40 * bs };
            for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
                const int64_t n = lengths[li];
                if (n > 64 * 256)
                    continue;
                fill_row(type, row, n);
                for (int64_t i = 0; i < n; i++)
                    x[i] = rnd_unit();
                quant_dequantize(type, row, w, n);
                double mag = 0;
                for (int64_t i = 0; i < n; i++)
                    mag += fabs((double)w[i] * x[i]);
                float a = scalar->dot_row[type](row, x, n), b = paths[p]->dot_row[type](row, x, n);
                if (fabs((double)a - b) <= 1e-5 * mag + 1e-6) {
                    passed++;
                } else {
                    failed++;
                    printf("FAIL %s %s n=%lld: scalar %.9g, %s %.9g (sum |w x| %.3g)\n", paths[p]->name, t->name,
                           (long long)n, a, paths[p]->name, b, mag);
                }
            }
        }
    }
    /* Every path's activation quantizers give the scalar bytes exactly: random values, outliers,
     * exact ties (a block whose largest value is 127 has step 1, so 2.5 is a tie), zeros, NaN and
     * infinities. */
    {
        const cpu_kernels *qp[] = { cpu_kernels_avx2(), cpu_kernels_avx512_vnni(), cpu_kernels_neon(), cpu_kernels_neon_dotprod() };
        const int64_t nq = 256 * 8;
        act_q8_32 *a32 = malloc((size_t)(nq / 32) * sizeof *a32), *b32 = malloc((size_t)(nq / 32) * sizeof *b32);
        act_q8_256 *a256 = malloc((size_t)(nq / 256) * sizeof *a256), *b256 = malloc((size_t)(nq / 256) * sizeof *b256);
        for (int round = 0; round < 6; round++) {
            for (int64_t i = 0; i < nq; i++) {
                float v = rnd_unit() * (i % 13 == 0 ? 50.0f : 1.0f);
                if (round == 1)
                    v = i % 32 == 0 ? 127.0f : (float)((int)(rnd() % 200) - 100) + 0.5f; /* ties */
                if (round == 2)
                    v = 0.0f;
                if (round == 3 && i % 97 == 5)
                    v = NAN;
                if (round == 4 && i == 700)
                    v = INFINITY;
                if (round == 5)
                    v = i % 64 == 3 ? 1e30f : v * 1e-30f;
                x[i] = v;
            }
            cpu_quantize_q8_32(x, a32, nq);
            cpu_quantize_q8_256(x, a256, nq);
            for (size_t p = 0; p < sizeof qp / sizeof qp[0]; p++) {
                if (!qp[p] || !runnable[p])
                    continue;
                memset(b32, 0x55, (size_t)(nq / 32) * sizeof *b32);
                memset(b256, 0x55, (size_t)(nq / 256) * sizeof *b256);
                qp[p]->quantize_q8_32(x, b32, nq);
                qp[p]->quantize_q8_256(x, b256, nq);
                const bool same = memcmp(a32, b32, (size_t)(nq / 32) * sizeof *a32) == 0 &&
                                  memcmp(a256, b256, (size_t)(nq / 256) * sizeof *a256) == 0;
                if (same)
                    passed++;
                else {
                    failed++;
                    printf("FAIL %s quantizers differ from scalar (round %d)\n", qp[p]->name, round);
                }
            }
        }
        free(a32);
        free(b32);
        free(a256);
        free(b256);
    }
    /* The word-wise K-quant scale unpacker equals the byte-wise one on random and extreme bytes. */
    {
        int bad = 0;
        for (int iter = 0; iter < 20000; iter++) {
            uint8_t packed[12], sc[8], mn[8];
            for (int i = 0; i < 12; i++)
                packed[i] = iter < 2 ? (uint8_t)(iter ? 0xff : 0) : (uint8_t)rnd();
            quant_k_scales_unpack(packed, sc, mn);
            for (int j = 0; j < 8; j++) {
                uint8_t s1, m1;
                quant_k_scale_min(j, packed, &s1, &m1);
                bad += s1 != sc[j] || m1 != mn[j];
            }
        }
        if (bad) {
            failed++;
            printf("FAIL quant_k_scales_unpack: %d values differ from quant_k_scale_min\n", bad);
        } else
            passed++;
    }
    /* 8-bit activations: every path's integer products equal the scalar ones (up to float order),
     * and stay within the quantization bound of the exact product: each activation moves by at
     * most half its block's step d, so |error| <= sum over blocks of d/2 * sum |w_i| (+ rounding). */
    void *act = malloc(64 * 256 * 2);
    const cpu_kernels *all[] = { scalar, cpu_kernels_avx2(), cpu_kernels_avx512_vnni(), cpu_kernels_neon(), cpu_kernels_neon_dotprod() };
    const bool all_ok[] = { true, runnable[0], runnable[1], runnable[2], runnable[3] };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t type = types[ti];
        if (!scalar->dot_q8[type])
            continue;
        const quant_traits *t = quant_get(type);
        const bool k_quant = t->block_size == QK_K;
        for (int64_t nb = 1; nb <= 24; nb += 5) {
            const int64_t n = nb * t->block_size;
            fill_row(type, row, n);
            for (int64_t i = 0; i < n; i++) /* some outliers; in every other row one a thousand times the rest */
                x[i] = rnd_unit() * (i % 7 == 0 ? 8.0f : 1.0f) * (nb % 2 && i == n / 3 ? 1000.0f : 1.0f);
            quant_dequantize(type, row, w, n);
            double exact = 0, bound = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                exact += (double)w[i] * x[i];
                mag += fabs((double)w[i] * x[i]);
            }
            if (k_quant) {
                cpu_quantize_q8_256(x, act, n);
                const act_q8_256 *a = act;
                for (int64_t i = 0; i < n; i++)
                    bound += fabs((double)w[i]) * a[i / 256].d * a[i / 256].s[(i % 256) / 32] * 0.5;
            } else {
                cpu_quantize_q8_32(x, act, n);
                const act_q8_32 *a = act;
                for (int64_t i = 0; i < n; i++)
                    bound += fabs((double)w[i]) * a[i / 32].d * 0.5;
            }
            const float ref = scalar->dot_q8[type](row, act, n);
            bool ok = fabs(ref - exact) <= bound * 1.001 + 1e-5 * mag + 1e-6;
            for (size_t p = 1; ok && p < sizeof all / sizeof all[0]; p++) {
                if (!all[p] || !all_ok[p] || !all[p]->dot_q8[type])
                    continue;
                const float got = all[p]->dot_q8[type](row, act, n);
                ok = fabs((double)got - ref) <= 1e-5 * mag + 1e-6;
                if (!ok)
                    printf("FAIL %s q8 %s n=%lld: %.9g, scalar %.9g\n", all[p]->name, t->name, (long long)n, got, ref);
            }
            if (ok)
                passed++;
            else {
                failed++;
                printf("FAIL q8 %s n=%lld: scalar %.9g, exact %.9g, bound %.3g\n", t->name, (long long)n, ref, exact, bound);
            }
        }
    }
    /* four tokens at once: bit for bit the one-token products, on every path that has them */
    const int64_t n4 = 6 * 256;
    void *act4 = malloc(4 * (size_t)(n4 / 256) * sizeof(act_q8_256)); /* the larger of the two layouts */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t type = types[ti];
        const quant_traits *t = quant_get(type);
        if (!scalar->dot_q8[type])
            continue;
        fill_row(type, row, n4);
        const bool k_quant = t->block_size == QK_K;
        const size_t xs = (size_t)(n4 / t->block_size) * (k_quant ? sizeof(act_q8_256) : sizeof(act_q8_32));
        for (int tok = 0; tok < 4; tok++) {
            for (int64_t i = 0; i < n4; i++)
                x[i] = rnd_unit() * (i == 100 * tok + 7 ? 300.0f : 1.0f);
            if (k_quant)
                cpu_quantize_q8_256(x, (void *)((char *)act4 + tok * xs), n4);
            else
                cpu_quantize_q8_32(x, (void *)((char *)act4 + tok * xs), n4);
        }
        for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
            if (!all[p] || !all_ok[p] || !all[p]->dot_q8_x4[type])
                continue;
            float y4[4 * 3];
            all[p]->dot_q8_x4[type](row, act4, xs, n4, y4, 3);
            bool same = true;
            for (int tok = 0; tok < 4; tok++) {
                const float one = all[p]->dot_q8[type](row, (char *)act4 + tok * xs, n4);
                if (memcmp(&one, &y4[3 * tok], sizeof one) != 0) {
                    same = false;
                    printf("FAIL %s q8 x4 %s token %d: %.9g, one token %.9g\n", all[p]->name, t->name, tok, y4[3 * tok], one);
                }
            }
            if (same)
                passed++;
            else
                failed++;
        }
    }
    /* eight rows at once, through the path's own layout: within the float-order tolerance of the
     * one-row products, for several widths and token counts */
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
        if (!all[p] || !all_ok[p])
            continue;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const uint32_t type = types[ti];
            if (!all[p]->x8_gemm[type])
                continue;
            const quant_traits *t = quant_get(type);
            for (int64_t nb = 1; nb <= 11; nb += 5) { /* 11: the VNNI K-quant kernels' slices of 8 blocks, one partial */
                const int64_t k8 = nb * 256, ntok = nb == 1 ? 5 : 9;
                const bool kq = t->block_size == QK_K;
                const size_t rb = (size_t)(k8 / t->block_size) * (size_t)t->type_size,
                             xs = kq ? (size_t)(k8 / 256) * sizeof(act_q8_256) : (size_t)(k8 / 32) * sizeof(act_q8_32);
                uint8_t *rows8 = malloc(8 * rb);
                char *a8 = malloc((size_t)ntok * xs);
                for (int r = 0; r < 8; r++)
                    fill_row(type, rows8 + r * rb, k8);
                for (int64_t tok = 0; tok < ntok; tok++) {
                    for (int64_t i = 0; i < k8; i++)
                        x[i] = rnd_unit() * (i == 37 * tok ? 200.0f : 1.0f);
                    if (kq)
                        cpu_quantize_q8_256(x, (act_q8_256 *)(a8 + tok * xs), k8);
                    else
                        cpu_quantize_q8_32(x, (act_q8_32 *)(a8 + tok * xs), k8);
                }
                if (x8_matches_scalar(all[p], scalar, type, rows8, rb, k8, a8, xs, ntok, 1e-6, w, "random"))
                    passed++;
                else
                    failed++;
                free(rows8);
                free(a8);
            }
        }
    }
    /* eight-row Q6_K at the integer sums' worst case: every code 63 or 0 (+31 and -32 once the 32 is
     * off: the VNNI kernel packs sums of eight to 16 bits), scales of -128 and 127, every activation
     * at +-127 */
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
        if (!all[p] || !all_ok[p] || !all[p]->x8_gemm[QUANT_Q6_K])
            continue;
        const int64_t k8 = 4 * 256;
        const size_t rb = (size_t)(k8 / 256) * sizeof(block_q6_K), xs = (size_t)(k8 / 256) * sizeof(act_q8_256);
        block_q6_K *rows8 = malloc(8 * rb);
        char *a8 = malloc(3 * xs);
        for (int64_t b = 0; b < 8 * k8 / 256; b++) {
            const int fill = b / (k8 / 256) % 4 < 2 ? 0xff : 0x00; /* by row */
            memset(rows8[b].ql, fill, sizeof rows8[b].ql);
            memset(rows8[b].qh, fill, sizeof rows8[b].qh);
            for (int g = 0; g < 16; g++)
                rows8[b].scales[g] = (int8_t)(b / (k8 / 256) % 2 ? -128 : 127); /* by row: no cancelling */
            rows8[b].d = f32_to_f16(0.01f);
        }
        for (int tok = 0; tok < 3; tok++) {
            for (int64_t i = 0; i < k8; i++)
                x[i] = tok == 1 ? -1.0f : 1.0f;
            cpu_quantize_q8_256(x, (act_q8_256 *)(a8 + tok * xs), k8);
        }
        /* an overflow of the 32-bit sums would be far outside the tolerance */
        if (x8_matches_scalar(all[p], scalar, QUANT_Q6_K, (const uint8_t *)rows8, rb, k8, a8, xs, 3, 0.0, w, "worst case"))
            passed++;
        else
            failed++;
        free(rows8);
        free(a8);
    }
    /* eight-row MXFP4 over the exponents' classes, one a row: the subnormal scales of e = 0 and 1
     * (the vectors build them apart), the smallest normal ones and ordinary ones; activations near
     * 1e30 keep every product normal, so the tolerance holds without slack */
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
        if (!all[p] || !all_ok[p] || !all[p]->x8_gemm[QUANT_MXFP4])
            continue;
        static const uint8_t exps[8] = { 0, 1, 2, 3, 60, 100, 127, 128 };
        const int64_t k8 = 256;
        const size_t rb = (size_t)(k8 / 32) * sizeof(block_mxfp4), xs = (size_t)(k8 / 32) * sizeof(act_q8_32);
        uint8_t *rows8 = malloc(8 * rb);
        char *a8 = malloc(2 * xs);
        for (int r = 0; r < 8; r++) {
            fill_row(QUANT_MXFP4, rows8 + r * rb, k8);
            for (int64_t b = 0; b < k8 / 32; b++)
                ((block_mxfp4 *)(rows8 + r * rb))[b].e = exps[r];
        }
        for (int tok = 0; tok < 2; tok++) {
            for (int64_t i = 0; i < k8; i++)
                x[i] = rnd_unit() * 1e30f;
            cpu_quantize_q8_32(x, (act_q8_32 *)(a8 + tok * xs), k8);
        }
        if (x8_matches_scalar(all[p], scalar, QUANT_MXFP4, rows8, rb, k8, a8, xs, 2, 0.0, w, "every exponent class"))
            passed++;
        else
            failed++;
        free(rows8);
        free(a8);
    }
    /* attention's run kernels: bit for bit the one-row kernels in a loop, for head sizes that fit
     * the registers and ones that do not */
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
        if (!all[p] || !all_ok[p] || !all[p]->dot_rows_f32 || !all[p]->axpy_rows_f32)
            continue;
        const int64_t sizes[] = { 64, 80, 128, 136, 7, 256 };
        int differ = 0;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const int64_t hd = sizes[si];
            const size_t xs = (size_t)hd * 3 + 5;
            float *rows = malloc(37 * xs * sizeof *rows), q[256], a[37], d1[37], d2[37], y1[256], y2[256];
            for (size_t i = 0; i < 37 * xs; i++)
                rows[i] = rnd_unit();
            for (int64_t i = 0; i < hd; i++)
                q[i] = y1[i] = y2[i] = rnd_unit();
            for (int r = 0; r < 37; r++)
                a[r] = rnd_unit();
            all[p]->dot_rows_f32(q, rows, xs, 37, hd, d1);
            all[p]->axpy_rows_f32(y1, a, rows, xs, 37, hd);
            for (int r = 0; r < 37; r++) {
                d2[r] = all[p]->dot_f32(q, rows + (size_t)r * xs, hd);
                all[p]->axpy_f32(y2, a[r], rows + (size_t)r * xs, hd);
            }
            differ += memcmp(d1, d2, sizeof d1) != 0 || memcmp(y1, y2, (size_t)hd * sizeof *y1) != 0;
            free(rows);
        }
        if (differ) {
            failed++;
            printf("FAIL %s attention runs: %d sizes differ from the one-row kernels\n", all[p]->name, differ);
        } else {
            passed++;
        }
    }
    /* an f16 KV cache: every path stores and reads the scalar conversions' bits, for every half
     * (but signalling NaNs) and for floats around every rounding boundary (ties, subnormals,
     * overflow, NaN) */
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
        if (!all[p] || !all_ok[p])
            continue;
        int differ = 0;
        enum { NH = 65536 };
        uint16_t *h = malloc(NH * sizeof *h), *h2 = malloc(NH * sizeof *h2);
        float *fv = malloc(NH * sizeof *fv);
        for (int i = 0; i < NH; i++)
            h[i] = (uint16_t)i;
        all[p]->f16_to_f32(h, fv, NH - 3); /* an odd length: the vector loop and its tail */
        all[p]->f16_to_f32(h + NH - 3, fv + NH - 3, 3);
        for (int i = 0; i < NH; i++) /* except signalling NaNs, which f16_from_f32 never writes: F16C quiets them */
            differ += !((h[i] & 0x7e00u) == 0x7c00u && (h[i] & 0x1ffu)) && f32_bits(fv[i]) != f32_bits(f16_to_f32(h[i]));
        for (int i = 0; i < NH; i++) { /* each half's value, the midpoints to its neighbours and a little either side */
            const uint32_t b = f32_bits(f16_to_f32((uint16_t)(i / 4 * 2)));
            const uint32_t tweak[4] = { 0, 0x1000, 0x0fff, 0x1001 };
            fv[i] = f32_from_bits((b & 0x7f800000u) == 0x7f800000u ? b : b + tweak[i % 4]);
        }
        fv[1] = 65520.0f; fv[2] = 65519.0f; fv[3] = 1e-8f; fv[5] = -3e-8f; fv[6] = 1e30f; fv[7] = f32_from_bits(0x7fc12345u);
        fv[9] = f32_from_bits(0xff812345u); fv[10] = 2.98023224e-08f; fv[11] = 5.96046448e-08f * 1.5f;
        all[p]->f16_from_f32(fv, h, NH - 5);
        all[p]->f16_from_f32(fv + NH - 5, h + NH - 5, 5);
        cpu_f16_from_f32(fv, h2, NH);
        for (int i = 0; i < NH; i++)
            differ += h[i] != h2[i];
        if (differ) {
            failed++;
            printf("FAIL %s f16 conversions: %d values differ from the scalar ones\n", all[p]->name, differ);
        } else {
            passed++;
        }
        free(h);
        free(h2);
        free(fv);
    }
    /* the gated activations: every path gives the scalar twin's bits (ragged lengths, with and
     * without the up projection, special values), and the twin is the functions themselves: within
     * 4e-7 relative (+1e-37) of the same formula through the C library's expf, and of the double
     * precision SiLU and tanh-form GELU within 1e-5 for |v| < 4 */
    {
        enum { NG = 4099 };
        float *g = malloc(NG * sizeof *g), *u = malloc(NG * sizeof *u), *y0 = malloc(NG * sizeof *y0),
              *y1 = malloc(NG * sizeof *y1);
        for (int i = 0; i < NG; i++) {
            g[i] = (float)(i % 3 == 0 ? 40.0 * rnd_unit() : i % 3 == 1 ? 6.0 * rnd_unit() : 120.0 * rnd_unit());
            u[i] = 12.0f * rnd_unit(); /* past the clamped SwiGLU's limit of 7 now and then */
        }
        const float special[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 87.5f, -87.5f, 88.5f, -88.5f, 1e-40f, -1e-40f, 1e30f, -1e30f };
        memcpy(g, special, sizeof special);
        for (int kind = CPU_GLU_SILU; kind <= CPU_GLU_SWIGLU_OAI; kind++) {
            int bad_twin = 0, bad_ref = 0;
            for (int i = 0; i < NG; i++) {
                float one;
                const bool oai = kind == CPU_GLU_SWIGLU_OAI;
                cpu_glu_scalar((cpu_glu_kind)kind, g + i, oai ? u + i : NULL, &one, 1);
                /* the clamped SwiGLU's gate clamped at 7 (a NaN too), its up to [-7, 7], times (u' + 1) */
                const float v = oai ? (g[i] < 7.0f ? g[i] : 7.0f) : g[i];
                const float up = oai ? fmaxf(fminf(u[i], 7.0f), -7.0f) + 1.0f : 1.0f;
                const float arg = kind == CPU_GLU_SILU ? -v
                                  : oai               ? -1.702f * v
                                                      : -v * (0.0713548162726008f * (v * v) + 1.5957691216057308f);
                const float libm = v / (1.0f + expf(arg)) * up;
                if ((isnan(v) && !oai) ? !isnan(one) : (isinf(v) || fabsf(arg) > 87.0f) ? false : fabsf(one - libm) > 4e-7f * fabsf(libm) + 1e-37f)
                    bad_twin++;
                if (fabs((double)v) < 4.0) { /* beyond, the float argument's own rounding (|arg| ulps) shows */
                    const double dv = v, exact = kind == CPU_GLU_SILU ? dv / (1.0 + exp(-dv))
                                                 : oai ? dv / (1.0 + exp(-1.702 * dv)) * ((double)up)
                                                       : 0.5 * dv * (1.0 + tanh(0.7978845608028654 * (dv + 0.044715 * dv * dv * dv)));
                    bad_ref += fabs((double)one - exact) > 1e-5 * fabs(exact) + 1e-30;
                }
            }
            if (bad_twin || bad_ref) {
                failed++;
                printf("FAIL glu kind %d: %d values off the C library's exp, %d off the exact function\n", kind, bad_twin, bad_ref);
            } else {
                passed++;
            }
            for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
                if (!all[p] || !all_ok[p])
                    continue;
                int differ = 0;
                for (int with_up = 0; with_up < 2; with_up++)
                    for (int n = 1; n <= 40; n += 3) { /* ragged: the vectors and their tails */
                        for (int i0 = 0; i0 + n <= NG; i0 += n + 97) {
                            cpu_glu_scalar((cpu_glu_kind)kind, g + i0, with_up ? u + i0 : NULL, y0 + i0, n);
                            all[p]->glu((cpu_glu_kind)kind, g + i0, with_up ? u + i0 : NULL, y1 + i0, n);
                            for (int i = i0; i < i0 + n; i++)
                                differ += !(isnan(y0[i]) && isnan(y1[i])) && f32_bits(y0[i]) != f32_bits(y1[i]);
                        }
                    }
                if (differ) {
                    failed++;
                    printf("FAIL %s glu kind %d: %d values differ from the scalar twin\n", all[p]->name, kind, differ);
                } else {
                    passed++;
                }
            }
        }
        free(g);
        free(u);
        free(y0);
        free(y1);
    }
    /* attention's softmax step: every path gives the scalar twin's values and sum bit for bit
     * (ragged lengths, scores far below the maximum, a NaN), and the twin is exp: each value
     * within 4e-7 relative of libm's expf (+1e-37 for the clamped tail), the sum within 1e-6 of the
     * double-precision sum of the same values */
    {
        enum { NS = 67 };
        int bad_ref = 0, differ[8] = { 0 };
        for (int n = 0; n <= NS; n++) {
            float src[NS], s0[NS], s1[NS];
            for (int i = 0; i < n; i++)
                src[i] = (float)(i % 5 == 0 ? 30.0 * rnd_unit() : i % 7 == 0 ? -100.0 - 10.0 * rnd_unit() : 8.0 * rnd_unit());
            if (n == NS)
                src[n / 2] = NAN;
            const float m = 12.5f;
            memcpy(s0, src, (size_t)n * sizeof *s0);
            const float sum0 = cpu_exp_sum_scalar(s0, n, m);
            double exact = 0.0;
            for (int i = 0; i < n; i++) {
                const float libm = expf(src[i] - m);
                if (isnan(src[i]) ? !isnan(s0[i]) : fabsf(s0[i] - libm) > 4e-7f * libm + 1e-37f)
                    bad_ref++;
                exact += s0[i];
            }
            if (n == NS ? !isnan(sum0) : fabs((double)sum0 - exact) > 1e-6 * exact)
                bad_ref++;
            for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
                if (!all[p] || !all_ok[p])
                    continue;
                memcpy(s1, src, (size_t)n * sizeof *s1);
                const float sum1 = all[p]->exp_sum(s1, n, m);
                differ[p] += memcmp(s0, s1, (size_t)n * sizeof *s0) != 0 || f32_bits(sum0) != f32_bits(sum1);
            }
        }
        if (bad_ref) {
            failed++;
            printf("FAIL exp_sum: %d values or sums off the C library's exp\n", bad_ref);
        } else {
            passed++;
        }
        for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
            if (!all[p] || !all_ok[p])
                continue;
            if (differ[p]) {
                failed++;
                printf("FAIL %s exp_sum: %d lengths differ from the scalar twin\n", all[p]->name, differ[p]);
            } else {
                passed++;
            }
        }
    }
    /* attention's run kernels over an f16 cache: the f32 ones' bits on the converted rows */
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
        if (!all[p] || !all_ok[p] || !all[p]->dot_rows_f16 || !all[p]->axpy_rows_f16)
            continue;
        const int64_t sizes[] = { 64, 80, 128, 136, 8, 256 };
        int differ = 0;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const int64_t hd = sizes[si];
            const size_t xs = (size_t)hd * 3 + 8;
            uint16_t *rows = malloc(37 * xs * sizeof *rows);
            float *conv = malloc(37 * xs * sizeof *conv), q[256], a[37], d1[37], d2[37], y1[256], y2[256];
            for (size_t i = 0; i < 37 * xs; i++)
                rows[i] = f32_to_f16(rnd_unit());
            scalar->f16_to_f32(rows, conv, (int64_t)(37 * xs));
            for (int64_t i = 0; i < hd; i++)
                q[i] = y1[i] = y2[i] = rnd_unit();
            for (int r = 0; r < 37; r++)
                a[r] = rnd_unit();
            all[p]->dot_rows_f16(q, rows, xs, 37, hd, d1);
            all[p]->axpy_rows_f16(y1, a, rows, xs, 37, hd);
            if (all[p]->dot_rows_f32) {
                all[p]->dot_rows_f32(q, conv, xs, 37, hd, d2);
                all[p]->axpy_rows_f32(y2, a, conv, xs, 37, hd);
            } else {
                for (int r = 0; r < 37; r++) {
                    d2[r] = all[p]->dot_f32(q, conv + (size_t)r * xs, hd);
                    all[p]->axpy_f32(y2, a[r], conv + (size_t)r * xs, hd);
                }
            }
            differ += memcmp(d1, d2, sizeof d1) != 0 || memcmp(y1, y2, (size_t)hd * sizeof *y1) != 0;
            /* the several-head kernels: each head's bits are the one-head kernels', for 1 to as
             * many heads as the path takes, over runs of rows of every length to 37 (the eight-row
             * reductions and tails) */
            for (int nq = 1; all[p]->dot_rows_f16_heads && nq <= all[p]->f16_heads_max; nq++)
                for (int n = 1; n <= 37; n += 3) {
                    float qh[8][256], ah[8][37], oh[8][37], yh[8][256], one[37], yone[256];
                    const float *qp[8], *ap[8];
                    float *op[8], *yp[8];
                    for (int h = 0; h < nq; h++) {
                        for (int64_t i = 0; i < hd; i++)
                            qh[h][i] = yh[h][i] = rnd_unit();
                        for (int r = 0; r < n; r++)
                            ah[h][r] = rnd_unit();
                        qp[h] = qh[h];
                        ap[h] = ah[h];
                        op[h] = oh[h];
                        yp[h] = yh[h];
                    }
                    float y0[8][256];
                    memcpy(y0, yh, sizeof y0);
                    all[p]->dot_rows_f16_heads(qp, nq, rows, xs, n, hd, op);
                    all[p]->axpy_rows_f16_heads(yp, ap, nq, rows, xs, n, hd);
                    for (int h = 0; h < nq; h++) {
                        memcpy(yone, y0[h], sizeof yone);
                        all[p]->dot_rows_f16(qh[h], rows, xs, n, hd, one);
                        all[p]->axpy_rows_f16(yone, ah[h], rows, xs, n, hd);
                        differ += memcmp(one, oh[h], (size_t)n * sizeof *one) != 0 || memcmp(yone, yh[h], (size_t)hd * sizeof *yone) != 0;
                    }
                }
            free(rows);
            free(conv);
        }
        if (differ) {
            failed++;
            printf("FAIL %s f16 attention runs: %d cases differ from the f32 kernels on converted rows or the one-head kernels\n", all[p]->name, differ);
        } else {
            passed++;
        }
    }
    /* a kept layout serves every product, one token or many: each token's result must not depend
     * on how many tokens share the call (sequences decoded together get what each gets alone), nor
     * on how many groups of eight rows do (a chunk's groups go together, several at once where a
     * path takes them so, and a chunk may hold any number of them) */
    for (size_t p = 0; p < sizeof all / sizeof all[0]; p++) {
        if (!all[p] || !all_ok[p])
            continue;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const uint32_t type = types[ti];
            if (!all[p]->x8_keep[type])
                continue;
            const quant_traits *t = quant_get(type);
            const int64_t k8 = 11 * 256; /* more than one slice of the VNNI K-quant kernels */
            const bool kq = t->block_size == QK_K; /* K-quants take activations in blocks of 256 */
            const size_t rb = (size_t)(k8 / t->block_size) * (size_t)t->type_size;
            const size_t xs = kq ? (size_t)(k8 / QK_K) * sizeof(act_q8_256) : (size_t)(k8 / 32) * sizeof(act_q8_32);
            enum { GROUPS = 3 };
            const size_t gb = all[p]->x8_bytes[type](k8);
            uint8_t *rows8 = malloc(8 * GROUPS * rb), *packed = malloc(GROUPS * gb);
            char *a8 = malloc(9 * xs);
            for (int r = 0; r < 8 * GROUPS; r++)
                fill_row(type, rows8 + r * rb, k8);
            for (int tok = 0; tok < 9; tok++) {
                for (int64_t i = 0; i < k8; i++)
                    x[i] = rnd_unit() * (i == 29 * tok ? 100.0f : 1.0f);
                if (kq)
                    cpu_quantize_q8_256(x, (act_q8_256 *)(a8 + tok * xs), k8);
                else
                    cpu_quantize_q8_32(x, (act_q8_32 *)(a8 + tok * xs), k8);
            }
            for (int g = 0; g < GROUPS; g++)
                all[p]->x8_repack[type](rows8 + (size_t)g * 8 * rb, rb, k8, packed + (size_t)g * gb);
            float all9[9 * 8 * GROUPS], part[9 * 8 * GROUPS];
            all[p]->x8_gemm[type](packed, k8, GROUPS, a8, xs, 9, all9, 8 * GROUPS, NULL); /* y[t][24] */
            int differ = 0;
            for (int n_tok = 1; n_tok <= 9; n_tok++)
                for (int first = 0; first + n_tok <= 9; first += n_tok)
                    for (int g0 = 0; g0 < GROUPS; g0++)
                        for (int n8 = 1; g0 + n8 <= GROUPS; n8++) {
                            /* a next call to fetch ahead for changes nothing either */
                            const x8_next next = { type, packed, k8, GROUPS };
                            all[p]->x8_gemm[type](packed + (size_t)g0 * gb, k8, n8, a8 + first * xs, xs, n_tok, part, 8 * (size_t)n8,
                                                  n8 % 2 ? &next : NULL);
                            for (int tok = 0; tok < n_tok; tok++)
                                differ += memcmp(part + tok * 8 * n8, all9 + (first + tok) * 8 * GROUPS + 8 * g0,
                                                 (size_t)n8 * 8 * sizeof(float)) != 0;
                        }
            if (differ) {
                failed++;
                printf("FAIL %s kept %s: %d calls differ from one call of nine tokens and three groups\n", all[p]->name, t->name, differ);
            } else {
                passed++;
            }
            free(rows8);
            free(packed);
            free(a8);
        }
    }
    /* the VNNI path is the AVX2 kernels with fused byte products: bit for bit the same results, for
     * one token, four, and eight rows at a time, on the largest codes too; except the K-quants'
     * eight-row kernels, which VNNI runs on 512-bit lanes of its own layout (their float steps
     * differ in order): those within the eight-row tolerance of the scalar products, on the same
     * inputs */
    if (cpu_kernels_avx512_vnni() && vnni_ok) {
        const cpu_kernels *a2 = cpu_kernels_avx2(), *v = cpu_kernels_avx512_vnni();
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const uint32_t type = types[ti];
            if (!a2->dot_q8[type])
                continue;
            const quant_traits *t = quant_get(type);
            const bool kq = t->block_size == QK_K;
            const int64_t k8 = 6 * 256;
            const size_t rb = (size_t)(k8 / t->block_size) * (size_t)t->type_size,
                         xs = kq ? (size_t)(k8 / 256) * sizeof(act_q8_256) : (size_t)(k8 / 32) * sizeof(act_q8_32);
            uint8_t *rows8 = malloc(8 * rb);
            char *a8 = malloc(9 * xs);
            int differ = 0;
            static const char *const round_name[] = { "random", "largest codes", "largest codes", "smallest codes" };
            for (int round = 0; round < 4; round++) {
                if (round == 3 && type != QUANT_Q5_K)
                    continue;
                for (int r = 0; r < 8; r++) {
                    fill_row(type, rows8 + r * rb, k8);
                    if (round == 1 || round == 2) /* every code at its largest: the sums' worst case */
                        for (size_t b = 0; b < rb; b++)
                            if ((b % (size_t)t->type_size) >= (size_t)t->type_size / 3)
                                rows8[r * rb + b] = 0xff;
                    if (round == 3) /* every Q5_K code 0: -16 once VNNI centers them, their worst case */
                        for (size_t b = 0; b < rb; b++)
                            if ((b % (size_t)t->type_size) >= 16)
                                rows8[r * rb + b] = 0;
                }
                for (int tok = 0; tok < 9; tok++) {
                    for (int64_t i = 0; i < k8; i++)
                        /* round 2: every activation at its largest too, of one sign (16-bit partial sums) */
                        x[i] = round >= 2 ? 1.0f : round ? (i % 2 ? 1.0f : -1.0f) : rnd_unit() * (i == 41 * tok ? 300.0f : 1.0f);
                    if (kq)
                        cpu_quantize_q8_256(x, (act_q8_256 *)(a8 + tok * xs), k8);
                    else
                        cpu_quantize_q8_32(x, (act_q8_32 *)(a8 + tok * xs), k8);
                }
                for (int r = 0; r < 8; r++)
                    for (int tok = 0; tok < 9; tok++) {
                        const float ya = a2->dot_q8[type](rows8 + r * rb, a8 + tok * xs, k8);
                        const float yv = v->dot_q8[type](rows8 + r * rb, a8 + tok * xs, k8);
                        differ += memcmp(&ya, &yv, sizeof ya) != 0;
                    }
                if (a2->dot_q8_x4[type]) {
                    float ya[4], yv[4];
                    a2->dot_q8_x4[type](rows8, a8, xs, k8, ya, 1);
                    v->dot_q8_x4[type](rows8, a8, xs, k8, yv, 1);
                    differ += memcmp(ya, yv, sizeof ya) != 0;
                }
                if (kq && v->x8_gemm[type]) {
                    differ += !x8_matches_scalar(v, scalar, type, rows8, rb, k8, a8, xs, 9, 1e-6, w, round_name[round]);
                    if (a2->x8_gemm[type])
                        differ += !x8_matches_scalar(a2, scalar, type, rows8, rb, k8, a8, xs, 9, 1e-6, w, round_name[round]);
                } else if (a2->x8_gemm[type]) {
                    uint8_t *pa = malloc(a2->x8_bytes[type](k8)), *pv = malloc(v->x8_bytes[type](k8));
                    float ya[9 * 8], yv[9 * 8];
                    a2->x8_repack[type](rows8, rb, k8, pa);
                    v->x8_repack[type](rows8, rb, k8, pv);
                    a2->x8_gemm[type](pa, k8, 1, a8, xs, 9, ya, 8, NULL);
                    v->x8_gemm[type](pv, k8, 1, a8, xs, 9, yv, 8, NULL);
                    differ += memcmp(ya, yv, sizeof ya) != 0;
                    free(pa);
                    free(pv);
                }
            }
            if (differ) {
                failed++;
                printf("FAIL avx512vnni %s: %d results differ from avx2's\n", t->name, differ);
            } else {
                passed++;
            }
            free(rows8);
            free(a8);
        }
    } else {
        printf("skip avx512vnni against avx2: not supported by this CPU\n");
        skipped++;
    }
    free(act4);
    free(act);
    free(row);
    free(x);
    free(w);
    printf("cpu kernels: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
