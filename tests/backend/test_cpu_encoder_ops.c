/* test_cpu_encoder_ops: the CPU device's operations for encoders (BERT) against their formulas
 * computed here in double: LayerNorm with weight and bias (rows whose mean is far from zero, BERT's
 * epsilon of 1e-12 and a larger one, in place), the exact GELU as an ungated activation (and every
 * activation alone equal to the gated one with an up of ones), and bidirectional attention (every
 * query over every key, grouped KV heads, f32 and f16 caches, more keys than a tile, a single
 * query whose keys are split between the threads), the same bits on one thread and on two (but
 * for that split), on every instruction-set path. */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/f16.h"
#include "engine_check.h"
#include "test_data.h"
#include "../test_env.h"

static bk_tensor f32_tensor(int64_t ne0, int64_t ne1, float *data) {
    return bk_view(NULL, QUANT_F32, ne0, ne1, data);
}

static void layer_norm_checks(bk_device *dev) {
    enum { N = 384, ROWS = 5 };
    brasa_error err;
    static float x[ROWS * N], y[ROWS * N], w[N], b[N];
    for (int i = 0; i < N; i++) {
        w[i] = 1.0f + 0.5f * rnd_unit();
        b[i] = 0.1f * rnd_unit();
    }
    for (int r = 0; r < ROWS; r++)
        for (int i = 0; i < N; i++) /* row r has mean about 10 r: the mean must come out exactly */
            x[r * N + i] = 10.0f * (float)r + (r == 4 ? 1e-3f : 1.0f) * rnd_unit();
    const float eps[2] = { 1e-12f, 1e-5f };
    for (int e = 0; e < 2; e++) {
        bk_tensor xt = f32_tensor(N, ROWS, x), yt = f32_tensor(N, ROWS, y), wt = f32_tensor(N, 1, w), bt = f32_tensor(N, 1, b);
        CHECK(dev->ops->layer_norm(dev, &xt, &wt, &bt, eps[e], &yt, &err) == BRASA_OK, "%s", err.message);
        double worst = 0;
        for (int r = 0; r < ROWS; r++) {
            double mean = 0, var = 0;
            for (int i = 0; i < N; i++)
                mean += x[r * N + i];
            mean /= N;
            for (int i = 0; i < N; i++)
                var += (x[r * N + i] - mean) * (x[r * N + i] - mean);
            var /= N;
            for (int i = 0; i < N; i++) {
                const double want = (x[r * N + i] - mean) / sqrt(var + eps[e]) * w[i] + b[i];
                const double d = fabs(y[r * N + i] - want) / (fabs(want) + 1.0);
                worst = d > worst ? d : worst;
            }
        }
        CHECK(worst < 1e-6, "layer_norm (eps %g): relative error %g", (double)eps[e], worst);
    }
    /* in place gives the same as out of place */
    static float z[ROWS * N];
    memcpy(z, x, sizeof z);
    bk_tensor xt = f32_tensor(N, ROWS, x), yt = f32_tensor(N, ROWS, y), zt = f32_tensor(N, ROWS, z);
    bk_tensor wt = f32_tensor(N, 1, w), bt = f32_tensor(N, 1, b);
    CHECK(dev->ops->layer_norm(dev, &xt, &wt, &bt, 1e-12f, &yt, &err) == BRASA_OK, "%s", err.message);
    CHECK(dev->ops->layer_norm(dev, &zt, &wt, &bt, 1e-12f, &zt, &err) == BRASA_OK, "%s", err.message);
    CHECK(memcmp(y, z, sizeof z) == 0, "layer_norm in place differs");
    /* mismatched weights are refused, not read past */
    bk_tensor short_w = f32_tensor(N - 1, 1, w);
    CHECK(dev->ops->layer_norm(dev, &xt, &short_w, &bt, 1e-12f, &yt, &err) != BRASA_OK, "short weights accepted");
}

static void activation_checks(bk_device *dev) {
    enum { N = 3000 }; /* above the size the CPU splits between threads */
    brasa_error err;
    static float x[N], y[N], g[N], ones[N];
    for (int i = 0; i < N; i++) {
        x[i] = 10.0f * rnd_unit();
        ones[i] = 1.0f;
    }
    x[0] = 0.0f;
    x[1] = -0.0f;
    x[2] = 30.0f;
    x[3] = -30.0f;
    bk_tensor xt = f32_tensor(N, 1, x), yt = f32_tensor(N, 1, y), gt = f32_tensor(N, 1, g), ot = f32_tensor(N, 1, ones);
    CHECK(dev->ops->act(dev, &xt, BK_ACT_GELU_ERF, &yt, &err) == BRASA_OK, "%s", err.message);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        /* relative to the value or 1, whichever is larger: far below zero 1 + erf(x) cancels in
         * float, as in the reference implementations (PyTorch computes it the same way) */
        const double want = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
        const double d = fabs(y[i] - want) / (fabs(want) + 1.0);
        worst = d > worst ? d : worst;
    }
    CHECK(worst < 1e-6, "GELU (erf): error %g", worst);
    CHECK(y[2] == 30.0f && y[3] == 0.0f, "GELU at +-30: %g %g", (double)y[2], (double)y[3]);
    const bk_act acts[3] = { BK_ACT_SILU, BK_ACT_GELU_TANH, BK_ACT_GELU_ERF };
    for (int a = 0; a < 3; a++) {
        CHECK(dev->ops->act(dev, &xt, acts[a], &yt, &err) == BRASA_OK, "%s", err.message);
        CHECK(dev->ops->glu(dev, &xt, &ot, acts[a], &gt, &err) == BRASA_OK, "%s", err.message);
        CHECK(memcmp(y, g, sizeof y) == 0, "activation %d alone differs from its gated form with an up of ones", a);
    }
}

/* out[t] of bidirectional attention, in double: every query over all n_kv keys. */
static void attention_reference(const float *q, const float *k, const float *v, int n_q, int n_kv, int n_head, int n_head_kv,
                                int hd, float scale, double *out) {
    const int group = n_head / n_head_kv;
    double *s = malloc(sizeof(double) * (size_t)n_kv);
    for (int t = 0; t < n_q; t++)
        for (int h = 0; h < n_head; h++) {
            const float *qh = q + ((size_t)t * n_head + h) * hd;
            double m = -INFINITY, sum = 0;
            for (int j = 0; j < n_kv; j++) {
                const float *kh = k + ((size_t)j * n_head_kv + h / group) * hd;
                double d = 0;
                for (int i = 0; i < hd; i++)
                    d += (double)qh[i] * kh[i];
                s[j] = d * scale;
                m = s[j] > m ? s[j] : m;
            }
            for (int j = 0; j < n_kv; j++)
                sum += s[j] = exp(s[j] - m);
            for (int i = 0; i < hd; i++) {
                double acc = 0;
                for (int j = 0; j < n_kv; j++)
                    acc += s[j] * v[((size_t)j * n_head_kv + h / group) * hd + i];
                out[((size_t)t * n_head + h) * hd + i] = acc / sum;
            }
        }
    free(s);
}

/* n_q queries over n_kv keys, with a cache of type (f32 or f16); returns the worst error against
 * the reference and leaves brasa's output in out. */
static double attention_case(bk_device *dev, int n_q, int n_kv, uint32_t type, float *out) {
    enum { H = 4, HKV = 2, HD = 32 };
    brasa_error err;
    float *q = malloc(sizeof(float) * (size_t)n_q * H * HD), *k = malloc(sizeof(float) * (size_t)n_kv * HKV * HD);
    float *v = malloc(sizeof(float) * (size_t)n_kv * HKV * HD);
    uint16_t *kh = malloc(sizeof(uint16_t) * (size_t)n_kv * HKV * HD), *vh = malloc(sizeof(uint16_t) * (size_t)n_kv * HKV * HD);
    double *want = malloc(sizeof(double) * (size_t)n_q * H * HD);
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)n_q);
    for (int i = 0; i < n_q * H * HD; i++)
        q[i] = 2.0f * rnd_unit();
    for (int i = 0; i < n_kv * HKV * HD; i++) {
        k[i] = 2.0f * rnd_unit();
        v[i] = rnd_unit();
        if (type == QUANT_F16) { /* the reference sees the halves the cache holds */
            kh[i] = f32_to_f16(k[i]);
            vh[i] = f32_to_f16(v[i]);
            k[i] = f16_to_f32(kh[i]);
            v[i] = f16_to_f32(vh[i]);
        }
    }
    for (int t = 0; t < n_q; t++)
        pos[t] = t; /* not read: a bidirectional query sees every key */
    const float scale = 1.0f / sqrtf((float)HD);
    bk_tensor qt = f32_tensor(H * HD, n_q, q), ot = f32_tensor(H * HD, n_q, out);
    bk_tensor kt = type == QUANT_F16 ? bk_view(NULL, QUANT_F16, HKV * HD, n_kv, kh) : f32_tensor(HKV * HD, n_kv, k);
    bk_tensor vt = type == QUANT_F16 ? bk_view(NULL, QUANT_F16, HKV * HD, n_kv, vh) : f32_tensor(HKV * HD, n_kv, v);
    const bk_attention_params p = { H, HKV, HD, scale, 0.0f, 0, true, NULL };
    CHECK(dev->ops->attention(dev, &qt, &kt, &vt, pos, &p, &ot, &err) == BRASA_OK, "%s", err.message);
    attention_reference(q, k, v, n_q, n_kv, H, HKV, HD, scale, want);
    double worst = 0;
    for (int i = 0; i < n_q * H * HD; i++) {
        const double d = fabs(out[i] - want[i]);
        worst = d > worst ? d : worst;
    }
    const bk_attention_params windowed = { H, HKV, HD, scale, 0.0f, 8, true, NULL };
    CHECK(dev->ops->attention(dev, &qt, &kt, &vt, pos, &windowed, &ot, &err) != BRASA_OK, "a windowed bidirectional "
          "attention was accepted");
    free(q), free(k), free(v), free(kh), free(vh), free(want), free(pos);
    return worst;
}

static void attention_checks(bk_device *one, bk_device *two) {
    static const struct {
        int n_q, n_kv;
    } cases[] = { { 1, 1 }, { 7, 7 }, { 70, 70 }, { 3, 130 }, { 1, 600 } };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int f16 = 0; f16 < 2; f16++) {
            const size_t n = (size_t)cases[c].n_q * 4 * 32;
            float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
            const uint64_t seed = rng_state;
            const double e1 = attention_case(one, cases[c].n_q, cases[c].n_kv, f16 ? QUANT_F16 : QUANT_F32, a);
            rng_state = seed; /* the same inputs on two threads */
            const double e2 = attention_case(two, cases[c].n_q, cases[c].n_kv, f16 ? QUANT_F16 : QUANT_F32, b);
            CHECK(e1 < 1e-5 && e2 < 1e-5, "attention %d queries x %d keys (%s): error %g, %g", cases[c].n_q, cases[c].n_kv,
                  f16 ? "f16" : "f32", e1, e2);
            /* (a single query over many keys splits them between two threads and merges the parts,
             * which rounds differently from one thread's single pass) */
            CHECK(cases[c].n_q == 1 && cases[c].n_kv > 256 ? true : memcmp(a, b, sizeof(float) * n) == 0,
                  "attention %d x %d (%s): one thread and two differ", cases[c].n_q, cases[c].n_kv, f16 ? "f16" : "f32");
            free(a);
            free(b);
        }
}

int main(void) {
    static const char *paths[] = { "scalar", "avx2", "avx512vnni", "neon", "neon-dotprod" };
    int ran = 0;
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        set_env("BRASA_CPU_KERNELS", paths[p]);
        brasa_error err;
        bk_device *one = NULL, *two = NULL;
        if (bk_cpu_create(1, &one, &err) != BRASA_OK || bk_cpu_create(2, &two, &err) != BRASA_OK) {
            bk_cpu_free(one);
            continue; /* a path this CPU does not have */
        }
        ran++;
        printf("-- %s\n", bk_cpu_kernels_name(one));
        layer_norm_checks(two);
        activation_checks(two);
        attention_checks(one, two);
        bk_cpu_free(one);
        bk_cpu_free(two);
    }
    CHECK(ran > 0, "no CPU path could be created");
    if (failures) {
        printf("cpu_encoder_ops: %d checks failed\n", failures);
        return 1;
    }
    printf("cpu_encoder_ops: all checks passed (%d paths)\n", ran);
    return 0;
}
