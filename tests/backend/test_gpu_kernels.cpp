/* test_gpu_kernels: every GPU kernel against the CPU reference on the same inputs. Built twice: on
 * the tests' fiber executor (no GPU; once with 32-lane and once with 64-lane warps, so a kernel
 * that silently assumes one width fails here), and with each real GPU module's kernels, where it
 * runs on device 0 or is skipped (exit 77) without one (kernel_env.h). One table, one entry per
 * operation and case; the error is the normalized mean squared error against the reference (the
 * CPU device, or for products the scalar double-precision dot of quant.h, and for products by
 * expert the CPU device with float activations). Speed is not measured. */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

extern "C" {
#include "backend/backend.h"
#include "test_data.h"
}
#include "backend/gpu/gpu_kernels.h"
#include "kernel_env.h"

namespace {

/* Buffers the kernels reach: the environment's memory (managed memory on a GPU). */
template <typename T> struct ke_allocator {
    using value_type = T;
    ke_allocator() = default;
    template <typename U> ke_allocator(const ke_allocator<U> &) {}
    T *allocate(size_t n) {
        void *p = ke_alloc(n * sizeof(T));
        if (!p) {
            std::printf("FAIL out of memory for a test buffer\n");
            std::exit(1);
        }
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t) { ke_free(p); }
};
template <typename T, typename U> bool operator==(const ke_allocator<T> &, const ke_allocator<U> &) { return true; }
template <typename T, typename U> bool operator!=(const ke_allocator<T> &, const ke_allocator<U> &) { return false; }
template <typename T> using dvec = std::vector<T, ke_allocator<T>>;

bk_device *cpu = nullptr;

void set_env(const char *name, const char *value) {
#ifdef _WIN32
    _putenv_s(name, value);
#else
    setenv(name, value, 1);
#endif
}
gk_exec ex = { nullptr, 32 };

/* A launch that returned 0 and whose kernels then finished without an error. */
bool ran(int rc) {
    return rc == 0 && ke_sync() == 0;
}

double nmse(const float *got, const float *want, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!std::isfinite(got[i]))
            return INFINITY;
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    return den > 0 ? num / den : num;
}

dvec<float> random_floats(size_t n, float scale = 1.0f) {
    dvec<float> v(n);
    for (auto &x : v)
        x = rnd_unit() * scale;
    return v;
}

void check_cpu(brasa_status st, const brasa_error &err) {
    if (st != BRASA_OK) {
        std::printf("FAIL cpu reference: %s\n", err.message);
        std::exit(1);
    }
}

/* x as the int8 tiles see it: each token's 32-value blocks rounded to 8 bits with the scale
 * amax / 127 (the same float operations as the kernel), back as floats */
dvec<float> as_q8(const dvec<float> &x, int64_t stride, int64_t n_in, int64_t n_tok) {
    dvec<float> out = x;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t b = 0; b < n_in; b += 32) {
            float *v = out.data() + t * stride + b, amax = 0.0f;
            for (int i = 0; i < 32; i++)
                amax = std::fabs(v[i]) > amax ? std::fabs(v[i]) : amax;
            const float d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
            for (int i = 0; i < 32; i++)
                v[i] = d * (float)(int8_t)std::rint(v[i] * inv);
        }
    return out;
}

/* y = w x for n_tok tokens, against quant_dot per output (variant: of the kind n_tok makes; q8_x:
 * the reference takes x rounded as the int8 tiles round it) */
double matmul_case(uint32_t type, int64_t n_out, int64_t n_in, int64_t n_tok, bool with_bias, int variant = GK_VARIANT_DEFAULT,
                   bool q8_x = false) {
    uint64_t rb = 0;
    quant_row_bytes(type, n_in, &rb);
    dvec<uint8_t> w((size_t)rb * (size_t)n_out);
    for (int64_t o = 0; o < n_out; o++)
        fill_row(type, w.data() + (size_t)o * rb, n_in);
    const int64_t xs = n_in + 3, ys = n_out + 5; /* strides wider than rows */
    dvec<float> x = random_floats((size_t)(xs * n_tok)), bias = random_floats((size_t)n_out);
    dvec<float> y((size_t)(ys * n_tok), NAN);
    std::vector<float> got, want;
    const dvec<float> x_ref = q8_x ? as_q8(x, xs, n_in, n_tok) : x;
    if (!ran(gk_matmul(&ex, variant, type, w.data(), rb, n_out, n_in, x.data(), xs, n_tok, with_bias ? bias.data() : nullptr, y.data(),
                       ys)))
        return INFINITY;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t o = 0; o < n_out; o++) {
            double d = 0.0;
            quant_dot(type, w.data() + (size_t)o * rb, x_ref.data() + t * xs, n_in, &d);
            want.push_back((float)(d + (with_bias ? bias[o] : 0.0f)));
            got.push_back(y[t * ys + o]);
        }
    return nmse(got.data(), want.data(), got.size());
}

/* Decode products give each token of a batch (up to GK_DECODE_TOKENS_MAX) the bits it gets alone:
 * 0 when they do, else the number of outputs that differ. */
double decode_exact_case(uint32_t type, int64_t n_out, int64_t n_in, int variant) {
    uint64_t rb = 0;
    quant_row_bytes(type, n_in, &rb);
    dvec<uint8_t> w((size_t)rb * (size_t)n_out);
    for (int64_t o = 0; o < n_out; o++)
        fill_row(type, w.data() + (size_t)o * rb, n_in);
    const int64_t n_tok = GK_DECODE_TOKENS_MAX;
    dvec<float> x = random_floats((size_t)(n_in * n_tok)), batch((size_t)(n_out * n_tok)), alone((size_t)n_out);
    if (!ran(gk_matmul(&ex, variant, type, w.data(), rb, n_out, n_in, x.data(), n_in, n_tok, nullptr, batch.data(), n_out)))
        return INFINITY;
    double differ = 0;
    for (int64_t t = 0; t < n_tok; t++) {
        if (!ran(gk_matmul(&ex, variant, type, w.data(), rb, n_out, n_in, x.data() + t * n_in, n_in, 1, nullptr, alone.data(), n_out)))
            return INFINITY;
        for (int64_t o = 0; o < n_out; o++)
            differ += std::memcmp(&alone[(size_t)o], &batch[(size_t)(t * n_out + o)], sizeof(float)) != 0;
    }
    return differ;
}

double get_rows_case(uint32_t type, int64_t ne0) {
    const int64_t n_rows = 9;
    uint64_t rb = 0;
    quant_row_bytes(type, ne0, &rb);
    dvec<uint8_t> table((size_t)rb * n_rows);
    for (int64_t r = 0; r < n_rows; r++)
        fill_row(type, table.data() + (size_t)r * rb, ne0);
    const dvec<int32_t> ids = { 5, 0, 8, 5 };
    dvec<float> y(ids.size() * (size_t)ne0), want(y.size());
    if (!ran(gk_get_rows(&ex, type, table.data(), rb, ne0, ids.data(), (int64_t)ids.size(), y.data(), ne0)))
        return INFINITY;
    for (size_t i = 0; i < ids.size(); i++)
        quant_dequantize(type, table.data() + (size_t)ids[i] * rb, want.data() + i * (size_t)ne0, ne0);
    return nmse(y.data(), want.data(), y.size());
}

bk_tensor host(int64_t ne0, int64_t ne1, float *data) { return bk_view(nullptr, QUANT_F32, ne0, ne1, data); }

double rms_norm_case(int64_t ne0, int64_t group, bool weighted) {
    const int64_t rows = 5;
    dvec<float> x = random_floats((size_t)(rows * ne0), 3.0f), w = random_floats((size_t)group), y(x.size()), want(x.size());
    brasa_error err = {};
    bk_tensor xt = host(ne0, rows, x.data()), wt = host(group, 1, w.data()), rt = host(ne0, rows, want.data());
    check_cpu(cpu->ops->rms_norm(cpu, &xt, weighted ? &wt : nullptr, group, 1e-6f, &rt, &err), err);
    if (!ran(gk_rms_norm(&ex, x.data(), ne0, rows, ne0, weighted ? w.data() : nullptr, group, 1e-6f, y.data(), ne0)))
        return INFINITY;
    return nmse(y.data(), want.data(), y.size());
}

/* add, scale, softcap and the gated activations, against the CPU device */
double elementwise_case(const std::string &op) {
    const int64_t rows = 3, ne0 = 333;
    const float wide = op == "swiglu_oai" ? 5.0f : 1.0f; /* past its clamps at +-7 */
    dvec<float> a = random_floats((size_t)(rows * ne0), 6.0f * wide), b = random_floats(a.size(), 2.0f * wide), want = a, got = a;
    brasa_error err = {};
    bk_tensor at = host(ne0, rows, a.data()), bt = host(ne0, rows, b.data()), wt = host(ne0, rows, want.data());
    int rc;
    if (op == "add") {
        check_cpu(cpu->ops->add(cpu, &at, &bt, &wt, &err), err);
        rc = gk_add(&ex, a.data(), ne0, b.data(), ne0, got.data(), ne0, rows, ne0);
    } else if (op == "scale") {
        check_cpu(cpu->ops->scale(cpu, &wt, 0.37f, &err), err);
        rc = gk_scale(&ex, got.data(), ne0, rows, ne0, 0.37f);
    } else if (op == "softcap") {
        check_cpu(cpu->ops->softcap(cpu, &wt, 2.5f, &err), err);
        rc = gk_softcap(&ex, got.data(), ne0, rows, ne0, 2.5f);
    } else {
        const bk_act act = op == "silu" ? BK_ACT_SILU : op == "gelu" ? BK_ACT_GELU_TANH : BK_ACT_SWIGLU_OAI;
        check_cpu(cpu->ops->glu(cpu, &at, &bt, act, &wt, &err), err);
        rc = gk_glu(&ex, a.data(), ne0, b.data(), ne0, got.data(), ne0, rows, ne0, act == BK_ACT_SILU ? 0 : act == BK_ACT_GELU_TANH ? 1 : 2);
    }
    return !ran(rc) ? INFINITY : nmse(got.data(), want.data(), got.size());
}

/* rope's scalings: none but linear, per-pair divisors (Llama 3's rope_freqs), YaRN, or both */
enum rope_scaling { ROPE_LINEAR, ROPE_FACTORS, ROPE_YARN, ROPE_FACTORS_YARN };

double rope_case(int n_head, int head_dim, int rope_dim, bool neox, int32_t pos0, rope_scaling scaling = ROPE_LINEAR) {
    const int64_t n_tok = 4, ne0 = (int64_t)n_head * head_dim;
    dvec<float> x = random_floats((size_t)(n_tok * ne0)), want = x, factors((size_t)(rope_dim / 2));
    for (auto &f : factors)
        f = 4.5f + 3.5f * rnd_unit(); /* 1 to 8, as Llama 3's */
    dvec<int32_t> pos = { pos0, pos0 + 1, pos0 + 7, 0 };
    brasa_error err = {};
    bk_tensor wt = host(ne0, n_tok, want.data()), ft = host(rope_dim / 2, 1, factors.data());
    const bool with_factors = scaling == ROPE_FACTORS || scaling == ROPE_FACTORS_YARN;
    const bool yarn = scaling == ROPE_YARN || scaling == ROPE_FACTORS_YARN;
    bk_rope_params rp = {};
    rp.n_head = n_head;
    rp.head_dim = head_dim;
    rp.rope_dim = rope_dim;
    rp.mode = neox ? BK_ROPE_NEOX : BK_ROPE_NORMAL;
    rp.base = 10000.0f;
    rp.freq_scale = yarn ? 0.25f : 0.5f;
    rp.freq_factors = with_factors ? &ft : nullptr;
    rp.ext_factor = yarn ? 1.0f : 0.0f;
    rp.corr_low = yarn ? 3.0f : 0.0f;
    rp.corr_high = yarn ? 20.0f : 0.0f;
    rp.mscale = yarn ? 1.14f : 1.0f;
    check_cpu(cpu->ops->rope(cpu, &wt, pos.data(), &rp, &err), err);
    const gk_rope_params gp = { n_head, head_dim, rope_dim, neox, rp.base, rp.freq_scale, with_factors ? factors.data() : nullptr,
                                rp.ext_factor, rp.corr_low, rp.corr_high, rp.mscale };
    if (!ran(gk_rope(&ex, x.data(), ne0, n_tok, pos.data(), &gp)))
        return INFINITY;
    return nmse(x.data(), want.data(), x.size());
}

/* the KV append's rounding: the count of halves that differ from the CPU's (must be none) */
double f16_rows_case() {
    const int64_t rows = 4, ne0 = 200;
    dvec<float> src = random_floats((size_t)(rows * ne0), 70000.0f); /* past the f16 range too */
    src[3] = 0.0f;
    src[4] = -0.0f;
    src[5] = 5.96e-8f; /* subnormal */
    dvec<uint16_t> got((size_t)(rows * ne0)), want(got.size());
    brasa_error err = {};
    bk_tensor st = host(ne0, rows, src.data()), dt = bk_view(nullptr, QUANT_F16, ne0, rows, want.data());
    check_cpu(cpu->ops->copy_rows(cpu, &st, &dt, 0, &err), err);
    if (!ran(gk_f32_to_f16_rows(&ex, src.data(), ne0, got.data(), ne0, rows, ne0)))
        return INFINITY;
    double differ = 0;
    for (size_t i = 0; i < got.size(); i++)
        differ += got[i] != want[i];
    return differ;
}

struct attn_setup {
    int n_head, n_head_kv, head_dim;
    int64_t cache_rows;
    dvec<int32_t> pos;
    int window;
    float softcap;
    bool f16;
    bool sinks; /* a learned logit per head in each softmax's denominator (gpt-oss) */
};

double attention_case(const attn_setup &a) {
    const int64_t n_tok = (int64_t)a.pos.size(), q_ne0 = (int64_t)a.n_head * a.head_dim, kv_ne0 = (int64_t)a.n_head_kv * a.head_dim;
    dvec<float> q = random_floats((size_t)(n_tok * q_ne0), 2.0f), k = random_floats((size_t)(a.cache_rows * kv_ne0), 2.0f);
    dvec<float> v = random_floats(k.size()), got(q.size(), NAN), want(q.size());
    dvec<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); i++) {
        k16[i] = f32_to_f16(k[i]);
        v16[i] = f32_to_f16(v[i]);
    }
    const uint32_t kv_type = a.f16 ? QUANT_F16 : QUANT_F32;
    void *kd = a.f16 ? (void *)k16.data() : (void *)k.data(), *vd = a.f16 ? (void *)v16.data() : (void *)v.data();
    const float scale = 1.0f / std::sqrt((float)a.head_dim);
    dvec<float> sinks = random_floats((size_t)a.n_head, 3.0f); /* about the scores' size: they matter */
    bk_tensor st = host(a.n_head, 1, sinks.data());
    bk_attention_params p = { a.n_head, a.n_head_kv, a.head_dim, scale, a.softcap, a.window, false, a.sinks ? &st : nullptr };
    brasa_error err = {};
    bk_tensor qt = host(q_ne0, n_tok, q.data()), ot = host(q_ne0, n_tok, want.data());
    bk_tensor kt = bk_view(nullptr, kv_type, kv_ne0, a.cache_rows, kd), vt = bk_view(nullptr, kv_type, kv_ne0, a.cache_rows, vd);
    check_cpu(cpu->ops->attention(cpu, &qt, &kt, &vt, a.pos.data(), &p, &ot, &err), err);
    if (!ran(gk_attention(&ex, q.data(), q_ne0, kd, vd, a.f16, kv_ne0, a.cache_rows, a.pos.data(), n_tok, a.n_head, a.n_head_kv,
                          a.head_dim, scale, a.softcap, a.window, a.sinks ? sinks.data() : nullptr, got.data(), q_ne0)))
        return INFINITY;
    return nmse(got.data(), want.data(), got.size());
}

/* ---- routed experts, against the CPU device ---- */

/* moe_route: the weights' error, or 1 + the number of chosen experts that differ from the CPU's
 * (any is a failure). ties: logits of a few values only, so that many are exactly equal. */
double moe_route_case(int64_t n_tok, int n_expert, int k, bool renorm, bool ties) {
    dvec<float> logits((size_t)(n_tok * n_expert));
    for (auto &l : logits)
        l = ties ? (float)(rnd() % 4) * 0.5f : rnd_unit() * 4.0f;
    dvec<int32_t> ids((size_t)(n_tok * k), -1), want_ids(ids.size());
    dvec<float> w((size_t)(n_tok * k), NAN), want_w(w.size());
    brasa_error err = {};
    bk_tensor lt = host(n_expert, n_tok, logits.data()), wt = host(k, n_tok, want_w.data());
    bk_tensor it = bk_view(nullptr, QUANT_I32, k, n_tok, want_ids.data());
    check_cpu(cpu->ops->moe_route(cpu, &lt, k, renorm, &it, &wt, &err), err);
    if (!ran(gk_moe_route(&ex, logits.data(), n_expert, n_tok, n_expert, k, renorm, ids.data(), k, w.data(), k)))
        return INFINITY;
    double differ = 0;
    for (size_t i = 0; i < ids.size(); i++)
        differ += ids[i] != want_ids[i];
    return differ > 0 ? 1.0 + differ : nmse(w.data(), want_w.data(), w.size());
}

/* Each token's k distinct experts: "random" of all, "same" (every token the same ones, in the same
 * order), or "unchosen" (random, but never experts 1 and 4 mod 5). */
dvec<int32_t> expert_ids(int64_t n_tok, int k, int n_expert, const std::string &pattern) {
    dvec<int32_t> ids((size_t)(n_tok * k));
    for (int64_t t = 0; t < n_tok; t++)
        for (int j = 0; j < k; j++) {
            int32_t e;
            bool fresh;
            do {
                e = pattern == "same" ? (int32_t)((7 * j + 3) % n_expert) : (int32_t)(rnd() % (uint32_t)n_expert);
                fresh = !(pattern == "unchosen" && (e % 5 == 1 || e % 5 == 4));
                for (int i = 0; i < j; i++)
                    fresh = fresh && ids[(size_t)(t * k + i)] != e;
            } while (!fresh);
            ids[(size_t)(t * k + j)] = e;
        }
    return ids;
}

/* The experts' weights: n_expert experts of (n_out, n_in), one after the other. */
dvec<uint8_t> expert_weights(uint32_t type, int n_expert, int64_t n_out, int64_t n_in, uint64_t *row_bytes) {
    quant_row_bytes(type, n_in, row_bytes);
    dvec<uint8_t> w((size_t)*row_bytes * (size_t)(n_out * n_expert));
    for (int64_t r = 0; r < n_out * n_expert; r++)
        fill_row(type, w.data() + (size_t)r * *row_bytes, n_in);
    return w;
}

bk_device *cpu_f32 = nullptr; /* the CPU device with float activations: its products round only in float */

/* matmul_id of two products sharing x (rows 37 and 20) against the CPU device's (float
 * activations); per_slot: x has a row per slot, else one per token. */
double matmul_id_case(uint32_t type, int64_t n_tok, bool per_slot, const std::string &pattern, int variant = GK_VARIANT_DEFAULT,
                      bool biased = false) {
    const int n_expert = 8, k = 3;
    const int64_t n_in = 256, n_out[2] = { 37, 20 }, n_slots = n_tok * k, n_x = per_slot ? n_slots : n_tok;
    uint64_t rb = 0;
    const dvec<uint8_t> w0 = expert_weights(type, n_expert, n_out[0], n_in, &rb), w1 = expert_weights(type, n_expert, n_out[1], n_in, &rb);
    const dvec<uint8_t> *ws[2] = { &w0, &w1 };
    const int64_t xs = n_in + 3; /* strides wider than rows */
    dvec<float> x = random_floats((size_t)(xs * n_x));
    dvec<int32_t> ids = expert_ids(n_tok, k, n_expert, pattern);
    dvec<int32_t> groups(gk_moe_groups_bytes(n_expert, n_slots) / sizeof(int32_t));
    dvec<float> y[2], want[2], bias[2];
    bk_tensor wt[2], yt[2], bt[2];
    bk_matmul_out outs[2];
    for (int i = 0; i < 2; i++) {
        y[i].assign((size_t)(n_slots * n_out[i]), NAN);
        want[i].assign(y[i].size(), NAN);
        bias[i] = random_floats((size_t)(n_expert * n_out[i])); /* each expert's row of biases (gpt-oss) */
        wt[i] = bk_view3(nullptr, type, n_in, n_out[i], n_expert, (void *)ws[i]->data());
        yt[i] = host(n_out[i], n_slots, want[i].data());
        bt[i] = host(n_out[i], n_expert, bias[i].data());
        outs[i] = { &wt[i], biased ? &bt[i] : nullptr, &yt[i] };
    }
    brasa_error err = {};
    bk_tensor xt = host(n_in, n_x, x.data()), it = bk_view(nullptr, QUANT_I32, k, n_tok, ids.data());
    xt.row_bytes = (size_t)xs * sizeof(float);
    check_cpu(cpu_f32->ops->matmul_id(cpu_f32, &xt, &it, outs, 2, &err), err);
    if (!ran(gk_moe_group(&ex, ids.data(), k, n_tok, k, n_expert, groups.data())))
        return INFINITY;
    for (int i = 0; i < 2; i++)
        if (!ran(gk_matmul_id(&ex, variant, type, ws[i]->data(), rb, (size_t)rb * (size_t)n_out[i], n_out[i], n_in, x.data(), xs,
                              per_slot, groups.data(), n_expert, n_tok, k, y[i].data(), n_out[i])) ||
            (biased && !ran(gk_moe_bias(&ex, y[i].data(), n_out[i], ids.data(), k, n_tok, k, bias[i].data(), n_out[i], n_out[i]))))
            return INFINITY;
    std::vector<float> got, ref;
    for (int i = 0; i < 2; i++) {
        got.insert(got.end(), y[i].begin(), y[i].end());
        ref.insert(ref.end(), want[i].begin(), want[i].end());
    }
    return nmse(got.data(), ref.data(), got.size());
}

/* Each slot of a BK_BATCH_EXACT_MAX-token batch gets the bits it gets alone, which are those of
 * gk_matmul of its expert and input (the same decode variant): 0 when they are, else the number
 * of outputs that differ. */
double matmul_id_exact_case(uint32_t type, bool per_slot) {
    const int n_expert = 8, k = 3;
    const int64_t n_tok = BK_BATCH_EXACT_MAX, n_in = 512, n_out = 37, n_slots = n_tok * k, n_x = per_slot ? n_slots : n_tok;
    uint64_t rb = 0;
    const dvec<uint8_t> w = expert_weights(type, n_expert, n_out, n_in, &rb);
    dvec<float> x = random_floats((size_t)(n_in * n_x)), batch((size_t)(n_slots * n_out)), alone((size_t)(k * n_out));
    dvec<float> dense((size_t)n_out);
    dvec<int32_t> ids = expert_ids(n_tok, k, n_expert, "random");
    dvec<int32_t> groups(gk_moe_groups_bytes(n_expert, n_slots) / sizeof(int32_t));
    if (!ran(gk_moe_group(&ex, ids.data(), k, n_tok, k, n_expert, groups.data())) ||
        !ran(gk_matmul_id(&ex, GK_VARIANT_DEFAULT, type, w.data(), rb, (size_t)rb * n_out, n_out, n_in, x.data(), n_in, per_slot,
                          groups.data(), n_expert, n_tok, k, batch.data(), n_out)))
        return INFINITY;
    double differ = 0;
    for (int64_t t = 0; t < n_tok; t++) {
        const float *xt = x.data() + (per_slot ? t * k : t) * n_in;
        if (!ran(gk_moe_group(&ex, ids.data() + t * k, k, 1, k, n_expert, groups.data())) ||
            !ran(gk_matmul_id(&ex, GK_VARIANT_DEFAULT, type, w.data(), rb, (size_t)rb * n_out, n_out, n_in, xt, n_in, per_slot,
                              groups.data(), n_expert, 1, k, alone.data(), n_out)))
            return INFINITY;
        for (int64_t i = 0; i < k * n_out; i++)
            differ += std::memcmp(&alone[(size_t)i], &batch[(size_t)(t * k * n_out + i)], sizeof(float)) != 0;
        for (int j = 0; j < k; j++) {
            const uint8_t *expert = w.data() + (size_t)ids[(size_t)(t * k + j)] * rb * n_out;
            if (!ran(gk_matmul(&ex, GK_VARIANT_DEFAULT, type, expert, rb, n_out, n_in, xt + (per_slot ? j * n_in : 0), n_in, 1, nullptr,
                               dense.data(), n_out)))
                return INFINITY;
            differ += std::memcmp(dense.data(), &alone[(size_t)(j * n_out)], (size_t)n_out * sizeof(float)) != 0;
        }
    }
    return differ;
}

double moe_sum_case(int64_t n_tok, int k, int64_t ne0) {
    dvec<float> y = random_floats((size_t)(n_tok * k * ne0), 3.0f), w = random_floats((size_t)(n_tok * k));
    dvec<float> got((size_t)(n_tok * ne0), NAN), want(got.size(), NAN);
    brasa_error err = {};
    bk_tensor yt = host(ne0, n_tok * k, y.data()), wt = host(k, n_tok, w.data()), ot = host(ne0, n_tok, want.data());
    check_cpu(cpu->ops->moe_sum(cpu, &yt, &wt, &ot, &err), err);
    if (!ran(gk_moe_sum(&ex, y.data(), ne0, w.data(), k, n_tok, k, ne0, got.data(), ne0)))
        return INFINITY;
    return nmse(got.data(), want.data(), got.size());
}

struct check {
    std::string name;
    std::function<double()> run;
    double limit;
};

/* A prefill variant in float arithmetic: the ones that take float weights (the int8 tiles need codes). */
bool float_variant(int v) { return gk_variant_supports(GK_PREFILL, v, QUANT_F32) != 0; }

std::vector<check> all_checks() {
    std::vector<check> c;
    const uint32_t types[] = { QUANT_F32, QUANT_F16, QUANT_BF16, QUANT_Q4_0, QUANT_Q4_1, QUANT_Q5_0,
                               QUANT_Q5_1, QUANT_Q8_0, QUANT_Q4_K, QUANT_Q5_K, QUANT_Q6_K, QUANT_MXFP4 };
    for (uint32_t t : types) {
        const std::string n = quant_name(t);
        for (int64_t n_tok : { 1, 3, 8, 9, 70 })
            c.push_back({ "matmul " + n + " 37x512 tokens " + std::to_string(n_tok),
                          [=] { return matmul_case(t, 37, 512, n_tok, n_tok % 2 == 1); }, 1e-10 });
        c.push_back({ "get_rows " + n, [=] { return get_rows_case(t, 512); }, 1e-12 });
    }
    /* float rows of any length: pieces that run past the row's end */
    for (int64_t n_tok : { 2, 65 })
        c.push_back({ "matmul f32 70x100 tokens " + std::to_string(n_tok), [=] { return matmul_case(QUANT_F32, 70, 100, n_tok, true); },
                      1e-10 });
    c.push_back({ "get_rows f16 ragged", [] { return get_rows_case(QUANT_F16, 37); }, 1e-12 });
    /* every variant of both kinds (tuning picks among them), on rows a block does not divide */
    for (uint32_t t : { QUANT_Q4_K, QUANT_Q8_0, QUANT_F16 }) {
        const std::string n = quant_name(t);
        for (int v = 0; v < gk_variants(GK_DECODE); v++) {
            const std::string vn = std::string(" (") + gk_variant_name(GK_DECODE, v) + ")";
            for (int64_t n_tok : { 1, 12 })
                c.push_back({ "matmul " + n + " 37x256 tokens " + std::to_string(n_tok) + vn,
                              [=] { return matmul_case(t, 37, 256, n_tok, true, v); }, 1e-10 });
            c.push_back({ "decode batch of 15 exact " + n + vn, [=] { return decode_exact_case(t, 37, 512, v); }, 0.0 });
        }
        for (int v = 0; v < gk_variants(GK_PREFILL); v++)
            if (gk_variant_supports(GK_PREFILL, v, t) && float_variant(v))
                c.push_back({ "matmul " + n + " 37x256 tokens 70 (" + gk_variant_name(GK_PREFILL, v) + ")",
                              [=] { return matmul_case(t, 37, 256, 70, true, v); }, 1e-10 });
    }
    /* the int8 tiles: every quantized format, against the double products of the weights with the
     * activations rounded to 8 bits as the kernel rounds them (so only float rounding differs) */
    for (uint32_t t : types) {
        for (int v = 0; v < gk_variants(GK_PREFILL); v++) {
            if (float_variant(v))
                continue;
            const std::string name = std::string("matmul ") + quant_name(t) + " 37x512 tokens 70 (" + gk_variant_name(GK_PREFILL, v) + ")";
            if (gk_variant_supports(GK_PREFILL, v, t))
                c.push_back({ name, [=] { return matmul_case(t, 37, 512, 70, true, v, true); }, 1e-10 });
            else /* float weights have no codes: refused before anything runs */
                c.push_back({ name + " refused", [=] { return matmul_case(t, 37, 512, 70, true, v) == INFINITY ? 0.0 : 1.0; }, 0.0 });
        }
    }
    c.push_back({ "rms_norm rows", [] { return rms_norm_case(576, 576, true); }, 1e-10 });
    c.push_back({ "rms_norm heads", [] { return rms_norm_case(512, 64, true); }, 1e-10 });
    c.push_back({ "rms_norm unweighted", [] { return rms_norm_case(100, 100, false); }, 1e-10 });
    for (const char *op : { "add", "scale", "softcap", "silu", "gelu", "swiglu_oai" })
        c.push_back({ op, [=] { return elementwise_case(op); }, 1e-11 });
    c.push_back({ "rope normal", [] { return rope_case(3, 64, 64, false, 11); }, 1e-10 });
    c.push_back({ "rope neox partial", [] { return rope_case(2, 128, 96, true, 30000); }, 1e-10 });
    c.push_back({ "rope freq factors", [] { return rope_case(3, 64, 64, false, 5000, ROPE_FACTORS); }, 1e-10 });
    c.push_back({ "rope neox yarn", [] { return rope_case(2, 128, 128, true, 20000, ROPE_YARN); }, 1e-10 });
    c.push_back({ "rope yarn freq factors partial", [] { return rope_case(2, 64, 48, false, 123, ROPE_FACTORS_YARN); }, 1e-10 });
    /* routed experts */
    c.push_back({ "moe_route 8 experts top 3 ties", [] { return moe_route_case(5, 8, 3, true, true); }, 1e-10 });
    c.push_back({ "moe_route 60 experts top 4", [] { return moe_route_case(4, 60, 4, false, false); }, 1e-10 });
    c.push_back({ "moe_route 128 experts top 8", [] { return moe_route_case(3, 128, 8, true, false); }, 1e-10 });
    c.push_back({ "moe_route 1024 experts top 64 ties", [] { return moe_route_case(2, 1024, 64, false, true); }, 1e-10 });
    c.push_back({ "moe_route all equal", [] { return moe_route_case(2, 16, 16, true, true); }, 1e-10 });
    for (uint32_t t : { QUANT_Q8_0, QUANT_Q4_0, QUANT_Q4_K, QUANT_F16, QUANT_F32, QUANT_Q6_K, QUANT_MXFP4 }) {
        const std::string n = quant_name(t);
        for (int64_t n_tok : { 1, 3, 17 })
            for (bool per_slot : { false, true })
                for (const char *pattern : { "random", "same", "unchosen" })
                    c.push_back({ "matmul_id " + n + " tokens " + std::to_string(n_tok) + (per_slot ? " x per slot " : " x per token ") +
                                      pattern,
                                  [=] { return matmul_id_case(t, n_tok, per_slot, pattern); }, 1e-10 });
    }
    /* more slots than the grouping block has threads: its passes over the slots take several chunks */
    for (const char *pattern : { "random", "same" })
        c.push_back({ std::string("matmul_id q4_0 tokens 100 x per token ") + pattern,
                      [=] { return matmul_id_case(QUANT_Q4_0, 100, false, pattern); }, 1e-10 });
    for (int v = 0; v < gk_variants(GK_DECODE); v++)
        c.push_back({ std::string("matmul_id q4_K tokens 3 (") + gk_variant_name(GK_DECODE, v) + ")",
                      [=] { return matmul_id_case(QUANT_Q4_K, 3, false, "random", v); }, 1e-10 });
    for (uint32_t t : { QUANT_Q8_0, QUANT_Q4_K, QUANT_F16 })
        for (bool per_slot : { false, true })
            c.push_back({ std::string("matmul_id batch of 15 exact ") + quant_name(t) + (per_slot ? " x per slot" : " x per token"),
                          [=] { return matmul_id_exact_case(t, per_slot); }, 0.0 });
    for (uint32_t t : { QUANT_MXFP4, QUANT_Q8_0 })
        for (int64_t n_tok : { 1, 17 })
            c.push_back({ std::string("matmul_id ") + quant_name(t) + " with the experts' biases, tokens " + std::to_string(n_tok),
                          [=] { return matmul_id_case(t, n_tok, false, "random", GK_VARIANT_DEFAULT, true); }, 1e-10 });
    c.push_back({ "moe_sum", [] { return moe_sum_case(3, 4, 100); }, 1e-12 });
    c.push_back({ "moe_sum one slot", [] { return moe_sum_case(2, 1, 37); }, 1e-12 });
    c.push_back({ "copy_rows f32 to f16 (halves that differ)", [] { return f16_rows_case(); }, 0.0 });
    const dvec<int32_t> prefill = { 0, 1, 2, 3, 4, 5, 6 }, decode = { 40 }, batch = { 3, 70, 71 };
    for (bool f16 : { false, true }) {
        const std::string kv = f16 ? " f16" : " f32";
        c.push_back({ "attention prefill" + kv, [=] { return attention_case({ 4, 2, 64, 80, prefill, 0, 0.0f, f16, false }); }, 1e-10 });
        c.push_back({ "attention decode gqa" + kv, [=] { return attention_case({ 8, 2, 128, 80, decode, 0, 0.0f, f16, false }); }, 1e-10 });
        c.push_back({ "attention head 80" + kv, [=] { return attention_case({ 2, 1, 80, 100, batch, 0, 0.0f, f16, false }); }, 1e-10 });
        c.push_back({ "attention head 256 softcap" + kv, [=] { return attention_case({ 2, 2, 256, 100, batch, 0, 30.0f, f16, false }); },
                      1e-10 });
        c.push_back({ "attention window ring" + kv, [=] { return attention_case({ 4, 4, 64, 16, batch, 16, 0.0f, f16, false }); }, 1e-10 });
        c.push_back({ "attention sinks prefill" + kv, [=] { return attention_case({ 4, 2, 64, 80, prefill, 0, 0.0f, f16, true }); },
                      1e-10 });
        c.push_back({ "attention sinks window ring" + kv,
                      [=] { return attention_case({ 8, 2, 64, 16, batch, 16, 0.0f, f16, true }); }, 1e-10 });
        /* one token over a long cache: the CPU splits its keys between threads and merges */
        c.push_back({ "attention sinks decode long" + kv,
                      [=] { return attention_case({ 8, 2, 64, 1200, dvec<int32_t>{ 1100 }, 0, 0.0f, f16, true }); }, 1e-10 });
    }
    return c;
}

} // namespace

int main() {
    brasa_error err = {};
    if (bk_cpu_create(1, &cpu, &err) != BRASA_OK) {
        std::printf("FAIL cpu device: %s\n", err.message);
        return 1;
    }
    set_env("BRASA_CPU_ACTIVATIONS", "f32"); /* read when a CPU device is made */
    const brasa_status f32_st = bk_cpu_create(1, &cpu_f32, &err);
    set_env("BRASA_CPU_ACTIVATIONS", "");
    if (f32_st != BRASA_OK) {
        std::printf("FAIL cpu device with float activations: %s\n", err.message);
        return 1;
    }
    char why[256];
    if (ke_open(why, sizeof why) != 0) {
        std::printf("skip: %s\n", why);
        bk_cpu_free(cpu);
        bk_cpu_free(cpu_f32);
        return 77;
    }
    std::printf("kernels on %s\n", ke_name());
    int widths[2] = { 32, 64 };
    const int n_widths = ke_warps(widths);
    ex.stream = ke_stream();
    int passed = 0, failed = 0;
    for (int wi = 0; wi < n_widths; wi++) {
        const int warp = widths[wi];
        ke_use_warp(warp);
        ex.warp = warp;
        rng_state = 0x1234567887654321ull; /* the same inputs for both widths */
        for (const check &c : all_checks()) {
            const double e = c.run();
            const bool ok = e <= c.limit;
            if (!ok || wi == 0)
                std::printf("%s warp %d %-44s %.3g (limit %.0e)\n", ok ? "ok  " : "FAIL", warp, c.name.c_str(), e, c.limit);
            ok ? passed++ : failed++;
        }
    }
    /* launchers refuse what they have no kernel for, before enqueueing anything */
    float y = 0.0f;
    const int def = GK_VARIANT_DEFAULT;
    const bool refused = gk_matmul(&ex, def, QUANT_Q2_K, &y, 84, 1, 256, &y, 256, 1, nullptr, &y, 1) == -1 &&
                         gk_matmul(&ex, def, QUANT_Q4_0, &y, 18, 1, 48, &y, 48, 1, nullptr, &y, 1) == -1 &&
                         gk_matmul(&ex, gk_variants(GK_DECODE), QUANT_Q4_0, &y, 18, 1, 32, &y, 32, 1, nullptr, &y, 1) == -1 &&
                         gk_attention(&ex, &y, 1, &y, &y, 0, 1, 1, nullptr, 1, 3, 2, 64, 1, 0, 0, nullptr, &y, 1) == -1 &&
                         gk_attention(&ex, &y, 1, &y, &y, 0, 1, 1, nullptr, 1, 1, 1, 512, 1, 0, 0, nullptr, &y, 1) == -1 && !gk_supports(QUANT_Q2_K);
    std::printf("%s refuses unsupported types and shapes\n", refused ? "ok  " : "FAIL");
    refused ? passed++ : failed++;
    bk_cpu_free(cpu);
    bk_cpu_free(cpu_f32);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
