/* test_cpu_kept_weights: the CPU device's kept eight-row layouts (kept.h), through the device's
 * own products: weights marked constant give each token, in a call of any size, exactly the bits it
 * gets in a call of its own (rows past the last group of eight included), agree with a double
 * precision product of the dequantized rows, and agree with the same rows left unmarked. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/f16.h"
#include "quant/quant.h"

#include "test_data.h"

/* Debian 12's aarch64 gcc 12 stops with an internal error vectorizing the reference's reductions */
#if defined(__GNUC__) && !defined(__clang__) && defined(__aarch64__)
#pragma GCC optimize("no-tree-vectorize")
#endif

static int64_t matmul(bk_device *dev, const bk_tensor *w, const float *x, int64_t n_tok, float *y) {
    brasa_error err = { 0 };
    bk_tensor xt = bk_view(NULL, QUANT_F32, w->ne0, n_tok, (void *)x), yt = bk_view(NULL, QUANT_F32, w->ne1, n_tok, y);
    if (dev->ops->matmul(dev, w, &xt, NULL, &yt, &err) != BRASA_OK) {
        printf("FAIL matmul: %s\n", err.message);
        return 1;
    }
    return 0;
}

int main(void) {
    rng_state = 0x9e3779b97f4a7c15ull; /* other data than the kernel test's */
    bk_device *dev = NULL;
    brasa_error err = { 0 };
    if (bk_cpu_create(2, &dev, &err) != BRASA_OK) {
        printf("FAIL cpu device: %s\n", err.message);
        return 1;
    }
    printf("path %s\n", bk_cpu_kernels_name(dev));
    const bool q8 = strstr(bk_cpu_kernels_name(dev), "+q8") != NULL;
    const uint32_t types[] = { QUANT_Q4_0, QUANT_Q4_1, QUANT_Q5_0, QUANT_Q5_1, QUANT_Q8_0, QUANT_Q4_K, QUANT_Q5_K, QUANT_Q6_K, QUANT_MXFP4 };
    const int64_t counts[] = { 1, 3, 4, 9, 16, 70 }, n_in = 512, n_out = 8 * 5 + 3, max_tok = 70;
    int passed = 0, failed = 0;
    uint8_t *all_rows[sizeof types / sizeof types[0]] = { 0 };
    float *x = malloc((size_t)(max_tok * n_in) * sizeof *x), *w = malloc((size_t)n_in * sizeof *w);
    float *alone = malloc((size_t)(max_tok * n_out) * sizeof *alone), *y = malloc((size_t)(max_tok * n_out) * sizeof *y);
    for (int64_t i = 0; i < max_tok * n_in; i++)
        x[i] = rnd_unit() * (i % 97 == 0 ? 30.0f : 1.0f);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t type = types[ti];
        uint64_t rb = 0;
        quant_row_bytes(type, n_in, &rb);
        /* every type's rows stay allocated to the end: the device finds kept layouts by address,
         * and a freed buffer's address handed out again would name the last type's layout */
        uint8_t *rows = all_rows[ti] = malloc((size_t)rb * (size_t)n_out);
        for (int64_t o = 0; o < n_out; o++)
            fill_row(type, rows + (size_t)o * rb, n_in);
        bk_tensor kept = bk_view(NULL, type, n_in, n_out, rows), plain = kept;
        kept.constant = true;
        int64_t bad = 0;
        for (int64_t t = 0; t < max_tok; t++) /* every token alone */
            bad += matmul(dev, &kept, x + t * n_in, 1, alone + t * n_out);
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            if (!q8 && counts[ci] > BK_BATCH_EXACT_MAX)
                continue; /* float activations keep nothing: exact up to the seam's bound only */
            bad += matmul(dev, &kept, x, counts[ci], y);
            for (int64_t t = 0; t < counts[ci]; t++)
                if (memcmp(y + t * n_out, alone + t * n_out, (size_t)n_out * sizeof *y) != 0) {
                    int64_t o = 0;
                    while (y[t * n_out + o] == alone[t * n_out + o])
                        o++;
                    printf("FAIL %s: token %lld of %lld differs from the token alone (first at row %lld: %.9g, alone %.9g)\n",
                           quant_name(type), (long long)t, (long long)counts[ci], (long long)o, y[t * n_out + o],
                           alone[t * n_out + o]);
                    bad++;
                }
        }
        bad += matmul(dev, &plain, x, max_tok, y);
        for (int64_t o = 0; o < n_out; o++) {
            quant_dequantize(type, rows + (size_t)o * rb, w, n_in);
            for (int64_t t = 0; t < max_tok; t++) {
                /* 8-bit activations round each x to half a step of its block's largest / 127 */
                double ref = 0, mag = 0, step = 0;
                for (int64_t i = 0; i < n_in; i++) {
                    double amax = 0;
                    for (int64_t j = i / 32 * 32; j < i / 32 * 32 + 32; j++)
                        amax = fmax(amax, fabs(x[t * n_in + j]));
                    ref += (double)w[i] * x[t * n_in + i];
                    mag += fabs((double)w[i] * x[t * n_in + i]);
                    step += fabs((double)w[i]) * amax / 254.0;
                }
                const double got = alone[t * n_out + o], unmarked = y[t * n_out + o];
                if (fabs(got - ref) > 1.01 * step + 1e-5 * mag + 1e-6 || fabs(got - unmarked) > 1e-5 * mag + 1e-6) {
                    printf("FAIL %s row %lld token %lld: %.9g, reference %.9g, unmarked %.9g\n", quant_name(type),
                           (long long)o, (long long)t, got, ref, unmarked);
                    bad++;
                }
            }
        }
        if (bad)
            failed++;
        else
            passed++;
    }
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        free(all_rows[ti]);
    free(x);
    free(w);
    free(alone);
    free(y);
    bk_cpu_free(dev);
    printf("kept weights: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
