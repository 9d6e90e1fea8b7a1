/* test_cpu_prompt_attention: the CPU device's causal attention over a prompt's batch against its
 * formula computed here in double, for the shapes of the models brasa runs: grouped KV heads (six
 * and sixteen queries a KV head, one KV head for four), heads of 64 to 256, a sliding window over a
 * ring cache whose positions have wrapped, attention sinks, f16 and f32 caches, and batches
 * starting deep into the cache. A batch of more than BK_BATCH_EXACT_MAX tokens takes the path with
 * the queries in lanes where the kernels have it: each token must get the same bits whether its
 * batch is split in two or not, and on one thread or two, on every instruction-set path. */
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

typedef struct attn_case {
    const char *name;
    int n_head, n_head_kv, hd;
    int n_q, pos0;   /* queries at positions pos0 .. pos0 + n_q - 1 */
    int window;      /* 0: full causal */
    int rows;        /* cache rows: fewer than the positions make a ring */
    bool sinks, f16;
} attn_case;

static const attn_case cases[] = {
    { "qwen2-like, deep", 12, 2, 128, 40, 100, 0, 256, false, true },
    { "gemma3-like, window over a ring", 4, 1, 256, 33, 500, 64, 100, false, false },
    { "gemma3-like, window, f16", 4, 1, 256, 48, 20, 32, 128, false, true },
    { "one head a KV head, sinks", 3, 3, 64, 36, 0, 0, 64, true, true },
    { "sixteen a KV head, sinks", 32, 2, 64, 34, 7, 0, 64, true, false },
};

/* Position j's key (or value) of KV head h: the same numbers wherever a ring puts them. */
static float kv_value(uint64_t seed, int j, int h, int i) {
    uint64_t x = seed ^ ((uint64_t)j * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)h << 40) ^ ((uint64_t)i << 20);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return (float)((double)(x >> 11) / (double)(1ull << 53) - 0.5);
}

/* out for the queries [q0, q0 + n) of case c through the device, with its cache filled in. */
static brasa_status run_case(bk_device *dev, const attn_case *c, const float *q, int q0, int n, float *out, brasa_error *err) {
    const size_t row = (size_t)c->n_head_kv * (size_t)c->hd;
    float *k = calloc((size_t)c->rows * row, sizeof *k), *v = calloc((size_t)c->rows * row, sizeof *v);
    uint16_t *kh = calloc((size_t)c->rows * row, sizeof *kh), *vh = calloc((size_t)c->rows * row, sizeof *vh);
    int32_t *pos = malloc(sizeof *pos * (size_t)n);
    float sinks[64];
    for (int h = 0; h < c->n_head; h++)
        sinks[h] = 2.0f * kv_value(7, h, 0, 0);
    /* every position up to the batch's last written in order, as the model writes them */
    for (int j = 0; j < c->pos0 + c->n_q; j++)
        for (int h = 0; h < c->n_head_kv; h++)
            for (int i = 0; i < c->hd; i++) {
                const size_t at = (size_t)(j % c->rows) * row + (size_t)h * (size_t)c->hd + (size_t)i;
                k[at] = 2.0f * kv_value(1, j, h, i);
                v[at] = kv_value(2, j, h, i);
                kh[at] = f32_to_f16(k[at]);
                vh[at] = f32_to_f16(v[at]);
            }
    for (int t = 0; t < n; t++)
        pos[t] = c->pos0 + q0 + t;
    bk_tensor qt = bk_view(NULL, QUANT_F32, (int64_t)c->n_head * c->hd, n, (void *)(q + (size_t)q0 * c->n_head * c->hd));
    bk_tensor ot = bk_view(NULL, QUANT_F32, (int64_t)c->n_head * c->hd, n, out);
    bk_tensor kt = c->f16 ? bk_view(NULL, QUANT_F16, (int64_t)row, c->rows, kh) : bk_view(NULL, QUANT_F32, (int64_t)row, c->rows, k);
    bk_tensor vt = c->f16 ? bk_view(NULL, QUANT_F16, (int64_t)row, c->rows, vh) : bk_view(NULL, QUANT_F32, (int64_t)row, c->rows, v);
    bk_tensor st = bk_view(NULL, QUANT_F32, c->n_head, 1, sinks);
    const bk_attention_params p = { c->n_head, c->n_head_kv, c->hd, 1.0f / sqrtf((float)c->hd), 0.0f, c->window, false,
                                    c->sinks ? &st : NULL };
    const brasa_status s = dev->ops->attention(dev, &qt, &kt, &vt, pos, &p, &ot, err);
    free(k), free(v), free(kh), free(vh), free(pos);
    return s;
}

/* The worst difference of out from the formula in double (the keys and values as the cache holds
 * them). */
static double worst_error(const attn_case *c, const float *q, const float *out) {
    const int group = c->n_head / c->n_head_kv;
    double worst = 0, *s = malloc(sizeof *s * (size_t)(c->pos0 + c->n_q));
    for (int t = 0; t < c->n_q; t++) {
        const int p = c->pos0 + t, first = c->window > 0 && p - c->window + 1 > 0 ? p - c->window + 1 : 0;
        for (int h = 0; h < c->n_head; h++) {
            const float *qh = q + ((size_t)t * c->n_head + h) * c->hd;
            const int hk = h / group;
            double m = c->sinks ? 2.0 * kv_value(7, h, 0, 0) : -INFINITY, sum = 0;
            for (int j = first; j <= p; j++) {
                double d = 0;
                for (int i = 0; i < c->hd; i++) {
                    const float kf = 2.0f * kv_value(1, j, hk, i);
                    d += (double)qh[i] * (c->f16 ? f16_to_f32(f32_to_f16(kf)) : kf);
                }
                s[j] = d / sqrt((double)c->hd);
                m = s[j] > m ? s[j] : m;
            }
            for (int j = first; j <= p; j++)
                sum += s[j] = exp(s[j] - m);
            if (c->sinks)
                sum += exp(2.0 * kv_value(7, h, 0, 0) - m);
            for (int i = 0; i < c->hd; i++) {
                double acc = 0;
                for (int j = first; j <= p; j++) {
                    const float vf = kv_value(2, j, hk, i);
                    acc += s[j] * (c->f16 ? f16_to_f32(f32_to_f16(vf)) : vf);
                }
                const double d = fabs(out[((size_t)t * c->n_head + h) * c->hd + i] - acc / sum);
                worst = d > worst ? d : worst;
            }
        }
    }
    free(s);
    return worst;
}

static void case_checks(bk_device *one, bk_device *two, const attn_case *c) {
    brasa_error err;
    const size_t n = (size_t)c->n_q * c->n_head * c->hd;
    float *q = malloc(sizeof *q * n), *whole = malloc(sizeof *whole * n), *halves = malloc(sizeof *halves * n);
    float *single = malloc(sizeof *single * n);
    for (size_t i = 0; i < n; i++)
        q[i] = 2.0f * rnd_unit();
    CHECK(run_case(two, c, q, 0, c->n_q, whole, &err) == BRASA_OK, "%s: %s", c->name, err.message);
    const double e = worst_error(c, q, whole);
    CHECK(e < 2e-6, "%s: error %g against the formula", c->name, e);
    /* the batch in two, each half still a prompt's batch: the same bits */
    const int h1 = c->n_q / 2;
    CHECK(h1 > BK_BATCH_EXACT_MAX && c->n_q - h1 > BK_BATCH_EXACT_MAX, "%s: halves too small to test", c->name);
    CHECK(run_case(two, c, q, 0, h1, halves, &err) == BRASA_OK, "%s: %s", c->name, err.message);
    CHECK(run_case(two, c, q, h1, c->n_q - h1, halves + (size_t)h1 * c->n_head * c->hd, &err) == BRASA_OK, "%s: %s", c->name,
          err.message);
    CHECK(memcmp(whole, halves, sizeof *whole * n) == 0, "%s: the batch in two halves differs from it whole", c->name);
    CHECK(run_case(one, c, q, 0, c->n_q, single, &err) == BRASA_OK, "%s: %s", c->name, err.message);
    CHECK(memcmp(whole, single, sizeof *whole * n) == 0, "%s: one thread and two differ", c->name);
    free(q), free(whole), free(halves), free(single);
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
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            case_checks(one, two, &cases[c]);
        bk_cpu_free(one);
        bk_cpu_free(two);
    }
    CHECK(ran > 0, "no CPU path could be created");
    if (failures) {
        printf("cpu_prompt_attention: %d checks failed\n", failures);
        return 1;
    }
    printf("cpu_prompt_attention: all checks passed (%d paths)\n", ran);
    return 0;
}
