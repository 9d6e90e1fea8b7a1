/* test_cpu_moe: the CPU device's routed-expert operations. The router's choice (ties to the lower
 * index, decreasing order, softmax weights with and without renormalization); products by expert id
 * bit for bit equal to each slot's product with its expert alone, with some experts chosen by no
 * token and with every token choosing the same experts, for inputs shared by a token's slots and
 * one per slot, on every instruction-set path and weight type; a slot's result the same alone and
 * in a batch of BK_BATCH_EXACT_MAX tokens; the weighted sum. */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "engine_check.h"
#include "test_data.h"
#include "../test_env.h"

enum { N_EXPERT = 8, K = 3, N_IN = 512, N_OUT = 40, MAX_TOK = 17 };

static bk_device *dev;

static bk_tensor f32_tensor(int64_t ne0, int64_t ne1, float *data) {
    return bk_view(NULL, QUANT_F32, ne0, ne1, data);
}

static void route_checks(void) {
    brasa_error err;
    /* token 0: ties among experts 2, 5 and 6 at the top; token 1: distinct; token 2: all equal */
    float logits[3][N_EXPERT] = { { 0.1f, 0.2f, 3.0f, -1.0f, 0.0f, 3.0f, 3.0f, 2.0f },
                                  { 0.5f, -2.0f, 1.5f, 4.0f, 0.0f, 2.5f, -1.0f, 1.0f },
                                  { 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f } };
    int32_t ids[3][K];
    float w[3][K];
    bk_tensor lt = f32_tensor(N_EXPERT, 3, &logits[0][0]), wt = f32_tensor(K, 3, &w[0][0]);
    bk_tensor it = bk_view(NULL, QUANT_I32, K, 3, &ids[0][0]);
    for (int renorm = 0; renorm < 2; renorm++) {
        CHECK(dev->ops->moe_route(dev, &lt, K, renorm, &it, &wt, &err) == BRASA_OK, "%s", err.message);
        const int32_t want[3][K] = { { 2, 5, 6 }, { 3, 5, 2 }, { 0, 1, 2 } };
        for (int t = 0; t < 3; t++) {
            double all = 0, chosen = 0;
            for (int e = 0; e < N_EXPERT; e++)
                all += exp((double)logits[t][e]);
            for (int j = 0; j < K; j++) {
                CHECK(ids[t][j] == want[t][j], "token %d slot %d: expert %d, want %d (ties go to the lower index)", t, j,
                      ids[t][j], want[t][j]);
                chosen += exp((double)logits[t][want[t][j]]);
            }
            for (int j = 0; j < K; j++) {
                const double p = exp((double)logits[t][want[t][j]]) / (renorm ? chosen : all);
                CHECK(fabs(w[t][j] - p) < 1e-6, "token %d slot %d: weight %g, want %g (renorm %d)", t, j, w[t][j], p, renorm);
            }
        }
    }
}

/* A product of n_tok tokens through matmul_id against each slot alone through matmul. */
static void product_checks(uint32_t type, int n_tok, const char *pattern, bool per_slot) {
    brasa_error err;
    const quant_traits *q = quant_get(type);
    const size_t row_bytes = (size_t)(N_IN / q->block_size) * q->type_size;
    uint8_t *w = malloc(row_bytes * N_OUT * N_EXPERT);
    for (int r = 0; r < N_OUT * N_EXPERT; r++)
        fill_row(type, w + (size_t)r * row_bytes, N_IN);
    const int n_x = per_slot ? n_tok * K : n_tok;
    float *x = malloc(sizeof(float) * N_IN * (size_t)n_x), *y = malloc(sizeof(float) * N_OUT * MAX_TOK * K),
          *y2 = malloc(sizeof(float) * N_OUT * MAX_TOK * K), one[N_OUT];
    for (int i = 0; i < N_IN * n_x; i++)
        x[i] = rnd_unit();
    int32_t ids[MAX_TOK][K];
    for (int t = 0; t < n_tok; t++)
        for (int j = 0; j < K; j++) {
            if (strcmp(pattern, "same") == 0) /* every token picks experts 4, 1, 7 */
                ids[t][j] = (int32_t[]){ 4, 1, 7 }[j];
            else /* random, never experts 0 and 3 */
                do
                    ids[t][j] = (int32_t)(rnd() % N_EXPERT);
                while (ids[t][j] == 0 || ids[t][j] == 3 || (j > 0 && ids[t][j] == ids[t][0]) ||
                       (j > 1 && ids[t][j] == ids[t][1]));
        }
    bk_tensor wt = bk_view3(NULL, type, N_IN, N_OUT, N_EXPERT, w);
    wt.constant = true;
    bk_tensor xt = f32_tensor(N_IN, n_x, x), yt = f32_tensor(N_OUT, (int64_t)n_tok * K, y);
    bk_tensor it = bk_view(NULL, QUANT_I32, K, n_tok, &ids[0][0]);
    bk_matmul_out out = { &wt, NULL, &yt };
    CHECK(dev->ops->matmul_id(dev, &xt, &it, &out, 1, &err) == BRASA_OK, "%s", err.message);
    int bad = 0;
    for (int t = 0; t < n_tok; t++)
        for (int j = 0; j < K; j++) {
            const int s = t * K + j;
            bk_tensor we = bk_expert(&wt, ids[t][j]);
            bk_tensor xs = bk_rows(&xt, per_slot ? s : t, 1), ys = f32_tensor(N_OUT, 1, one);
            CHECK(dev->ops->matmul(dev, &we, &xs, NULL, &ys, &err) == BRASA_OK, "%s", err.message);
            if (n_tok <= BK_BATCH_EXACT_MAX) { /* bit for bit: the server's promise */
                bad += memcmp(one, y + (size_t)s * N_OUT, sizeof one) != 0;
                continue;
            }
            for (int o = 0; o < N_OUT; o++) /* a larger batch may round differently */
                bad += fabsf(one[o] - y[(size_t)s * N_OUT + (size_t)o]) > 1e-3f * (1.0f + fabsf(one[o]));
        }
    CHECK(bad == 0, "%s, %d tokens, %s experts, x %s: %d slots differ from the expert's product alone", q->name, n_tok,
          pattern, per_slot ? "per slot" : "per token", bad);
    /* the same batch twice as two outputs of one call: both equal the single ones */
    bk_tensor yt2 = f32_tensor(N_OUT, (int64_t)n_tok * K, y2);
    bk_matmul_out two[2] = { { &wt, NULL, &yt2 }, { &wt, NULL, &yt } };
    CHECK(dev->ops->matmul_id(dev, &xt, &it, two, 2, &err) == BRASA_OK, "%s", err.message);
    CHECK(memcmp(y, y2, sizeof(float) * N_OUT * (size_t)n_tok * K) == 0, "%s: a group's products differ", q->name);
    free(w);
    free(x);
    free(y);
    free(y2);
}

static void sum_checks(void) {
    brasa_error err;
    enum { T = 3, W = 5 };
    float y[T * K][W], wts[T][K], out[T][W];
    for (int i = 0; i < T * K; i++)
        for (int c = 0; c < W; c++)
            y[i][c] = rnd_unit();
    for (int t = 0; t < T; t++)
        for (int j = 0; j < K; j++)
            wts[t][j] = rnd_unit();
    bk_tensor yt = f32_tensor(W, T * K, &y[0][0]), wt = f32_tensor(K, T, &wts[0][0]), ot = f32_tensor(W, T, &out[0][0]);
    CHECK(dev->ops->moe_sum(dev, &yt, &wt, &ot, &err) == BRASA_OK, "%s", err.message);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < W; c++) {
            float want = wts[t][0] * y[t * K][c];
            for (int j = 1; j < K; j++)
                want += wts[t][j] * y[t * K + j][c];
            CHECK(out[t][c] == want, "moe_sum token %d column %d: %g, want %g", t, c, out[t][c], want);
        }
}

int main(void) {
    static const char *paths[] = { "scalar", "avx2", "avx512vnni", "neon", "neon-dotprod" };
    const uint32_t types[] = { QUANT_Q8_0, QUANT_Q4_0, QUANT_Q4_1, QUANT_Q4_K, QUANT_Q6_K, QUANT_MXFP4, QUANT_F16, QUANT_F32 };
    int ran = 0;
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        for (int act = 0; act < 2; act++) {
            set_env("BRASA_CPU_KERNELS", paths[p]);
            set_env("BRASA_CPU_ACTIVATIONS", act ? "q8" : "f32");
            brasa_error err;
            if (bk_cpu_create(2, &dev, &err) != BRASA_OK)
                continue; /* a path this CPU does not have */
            ran++;
            printf("-- %s\n", bk_cpu_kernels_name(dev));
            route_checks();
            sum_checks();
            for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
                for (int per_slot = 0; per_slot < 2; per_slot++) {
                    product_checks(types[i], 1, "random", per_slot);
                    product_checks(types[i], 3, "random", per_slot);
                    product_checks(types[i], BK_BATCH_EXACT_MAX, "random", per_slot);
                    product_checks(types[i], BK_BATCH_EXACT_MAX, "same", per_slot);
                    product_checks(types[i], MAX_TOK, "same", per_slot);
                }
            bk_cpu_free(dev);
        }
    }
    CHECK(ran > 0, "no CPU path could be created");
    if (failures) {
        printf("cpu_moe: %d checks failed\n", failures);
        return 1;
    }
    printf("cpu_moe: all checks passed (%d paths)\n", ran);
    return 0;
}
