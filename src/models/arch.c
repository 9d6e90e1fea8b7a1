/* arch.c: the registry of architectures and the loading helpers they share: common
 * hyper-parameters with checks, and binding tensors by name with shape and type checks. */
#include "models/arch.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "quant/quant.h"

static const arch_def *const registry[] = { &arch_llama, &arch_qwen2, &arch_gemma3 };

const arch_def *arch_find(const char *name) {
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

const char *arch_names(void) {
    return "llama, qwen2, gemma3";
}

static bool get_i32(const gguf_file *f, const char *arch, const char *suffix, int32_t *out) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_get_i32(f, key, out);
}

static bool get_f32(const gguf_file *f, const char *arch, const char *suffix, float *out) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_get_f32(f, key, out);
}

bool arch_layer_is_local(const arch_hparams *hp, int il) {
    if (hp->sliding_window <= 0)
        return false;
    if (hp->swa_pattern <= 0)
        return true;
    return (il + 1) % hp->swa_pattern != 0;
}

int32_t arch_kv_rows(const arch_hparams *hp, int il, int32_t n_ctx, int32_t n_batch) {
    if (!arch_layer_is_local(hp, il))
        return n_ctx;
    const int64_t ring = (int64_t)hp->sliding_window + (n_batch > 0 ? n_batch : 1) - 1;
    return ring < n_ctx ? (int32_t)ring : n_ctx;
}

brasa_status arch_read_common(const gguf_file *f, const char *arch, arch_hparams *hp, brasa_error *err) {
    memset(hp, 0, sizeof *hp);
    if (!get_i32(f, arch, "block_count", &hp->n_layer) || !get_i32(f, arch, "embedding_length", &hp->n_embd) ||
        !get_i32(f, arch, "feed_forward_length", &hp->n_ff) || !get_i32(f, arch, "attention.head_count", &hp->n_head))
        return err_set(err, BRASA_ERR_FORMAT, "%s.block_count, embedding_length, feed_forward_length and "
                       "attention.head_count are required integers", arch);
    if (!get_i32(f, arch, "attention.head_count_kv", &hp->n_head_kv))
        hp->n_head_kv = hp->n_head;
    if (hp->n_layer < 1 || hp->n_layer > ARCH_MAX_LAYERS || hp->n_embd < 1 || hp->n_embd > (1 << 20) ||
        hp->n_ff < 1 || hp->n_ff > (1 << 24) || hp->n_head < 1 || hp->n_head > 4096 || hp->n_head_kv < 1 ||
        hp->n_head % hp->n_head_kv != 0)
        return err_set(err, BRASA_ERR_FORMAT, "implausible shape: %d layers, embedding %d, feed-forward %d, %d heads, %d KV heads",
                       hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv);
    hp->head_dim = hp->n_embd / hp->n_head;
    int32_t key_length = 0, value_length = 0;
    if (get_i32(f, arch, "attention.key_length", &key_length))
        hp->head_dim = key_length;
    if (get_i32(f, arch, "attention.value_length", &value_length) && value_length != hp->head_dim)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "key length %d differs from value length %d", hp->head_dim, value_length);
    if (hp->head_dim < 2 || hp->head_dim > 1024 || hp->head_dim % 2 != 0)
        return err_set(err, BRASA_ERR_FORMAT, "head dimension %d is not an even number up to 1024", hp->head_dim);
    if (!get_f32(f, arch, "attention.layer_norm_rms_epsilon", &hp->norm_eps))
        return err_set(err, BRASA_ERR_FORMAT, "%s.attention.layer_norm_rms_epsilon is missing", arch);
    if (!(hp->norm_eps > 0.0f && hp->norm_eps < 1.0f))
        return err_set(err, BRASA_ERR_FORMAT, "RMS norm epsilon %g is outside (0, 1)", (double)hp->norm_eps);
    hp->rope_dim = hp->head_dim;
    get_i32(f, arch, "rope.dimension_count", &hp->rope_dim);
    if (hp->rope_dim < 2 || hp->rope_dim > hp->head_dim || hp->rope_dim % 2 != 0)
        return err_set(err, BRASA_ERR_FORMAT, "rope dimension %d must be even and at most the head dimension %d",
                       hp->rope_dim, hp->head_dim);
    hp->rope_base = 10000.0f;
    get_f32(f, arch, "rope.freq_base", &hp->rope_base);
    if (!(hp->rope_base > 1.0f && isfinite(hp->rope_base)))
        return err_set(err, BRASA_ERR_FORMAT, "rope base %g must be a finite number above 1", (double)hp->rope_base);
    hp->rope_base_local = hp->rope_base;
    hp->rope_freq_scale = 1.0f;
    float factor = 0.0f;
    char key[256];
    gguf_str scaling = { "", 0 };
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    gguf_get_str(f, key, &scaling);
    if (get_f32(f, arch, "rope.scaling.factor", &factor) && factor > 0.0f && factor != 1.0f) {
        if (scaling.len != 6 || memcmp(scaling.data, "linear", 6) != 0)
            return err_set(err, BRASA_ERR_UNSUPPORTED, "rope scaling '%.*s' is not supported yet (linear is)",
                           (int)(scaling.len > 32 ? 32 : scaling.len), scaling.data);
        hp->rope_freq_scale = 1.0f / factor;
    }
    get_i32(f, arch, "attention.sliding_window", &hp->sliding_window);
    if (hp->sliding_window < 0)
        return err_set(err, BRASA_ERR_FORMAT, "sliding window %d is negative", hp->sliding_window);
    hp->embd_scale = 1.0f;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    get_f32(f, arch, "attention.scale", &hp->attn_scale);
    get_f32(f, arch, "attn_logit_softcapping", &hp->attn_softcap);
    get_f32(f, arch, "final_logit_softcapping", &hp->final_softcap);
    if (hp->attn_softcap < 0 || hp->final_softcap < 0)
        return err_set(err, BRASA_ERR_FORMAT, "softcapping values must not be negative");
    hp->ffn_act = BK_ACT_SILU;
    return BRASA_OK;
}

brasa_status arch_bind(const gguf_file *f, bk_tensor *t, arch_need need, int64_t ne0, int64_t ne1, brasa_error *err,
                       const char *fmt, ...) {
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    memset(t, 0, sizeof *t);
    const gguf_tensor *g = gguf_find_tensor(f, name);
    if (!g)
        return need == ARCH_REQUIRED ? err_set(err, BRASA_ERR_FORMAT, "tensor '%s' is missing", name) : BRASA_OK;
    if (g->n_dims > 2 || g->ne[0] != ne0 || g->ne[1] != ne1)
        return err_set(err, BRASA_ERR_FORMAT, "tensor '%s' has shape [%lld, %lld%s], expected [%lld, %lld]", name,
                       (long long)g->ne[0], (long long)g->ne[1], g->n_dims > 2 ? ", ..." : "", (long long)ne0,
                       (long long)ne1);
    const quant_traits *q = quant_get(g->type);
    if (!q->dequantize)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "tensor '%s' has type %s, which brasa cannot compute with yet",
                       name, q->name);
    /* vectors (norms, biases) are read directly as floats by the kernels */
    if (ne1 == 1 && g->type != QUANT_F32)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "tensor '%s' is %s; brasa needs f32 for norms and biases", name, q->name);
    *t = bk_view(NULL, g->type, ne0, ne1, (void *)g->data);
    t->constant = true; /* the mapped file is read-only */
    return BRASA_OK;
}

brasa_status arch_bind_standard(const gguf_file *f, const arch_hparams *hp, arch_tensor_set set, arch_weights *w,
                                brasa_error *err) {
    memset(w, 0, sizeof *w);
    const gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight");
    if (!embd)
        return err_set(err, BRASA_ERR_FORMAT, "tensor 'token_embd.weight' is missing");
    if (embd->ne[1] < 1 || embd->ne[1] > INT32_MAX)
        return err_set(err, BRASA_ERR_FORMAT, "token_embd.weight has %lld rows", (long long)embd->ne[1]);
    const int64_t n_vocab = embd->ne[1], E = hp->n_embd, D = hp->head_dim;
    const int64_t q_dim = (int64_t)hp->n_head * D, kv_dim = (int64_t)hp->n_head_kv * D;
    brasa_status st;
    if ((st = arch_bind(f, &w->tok_embd, ARCH_REQUIRED, E, n_vocab, err, "token_embd.weight")) ||
        (st = arch_bind(f, &w->output_norm, ARCH_REQUIRED, E, 1, err, "output_norm.weight")) ||
        (st = arch_bind(f, &w->output, ARCH_OPTIONAL, E, n_vocab, err, "output.weight")))
        return st;
    if (!w->output.data)
        w->output = w->tok_embd; /* tied embeddings */
    w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
    if (!w->layers)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    const arch_need bias = set.qkv_bias ? ARCH_REQUIRED : ARCH_OPTIONAL;
    for (int i = 0; i < hp->n_layer; i++) {
        arch_layer *l = &w->layers[i];
        if ((st = arch_bind(f, &l->attn_norm, ARCH_REQUIRED, E, 1, err, "blk.%d.attn_norm.weight", i)) ||
            (st = arch_bind(f, &l->wq, ARCH_REQUIRED, E, q_dim, err, "blk.%d.attn_q.weight", i)) ||
            (st = arch_bind(f, &l->wk, ARCH_REQUIRED, E, kv_dim, err, "blk.%d.attn_k.weight", i)) ||
            (st = arch_bind(f, &l->wv, ARCH_REQUIRED, E, kv_dim, err, "blk.%d.attn_v.weight", i)) ||
            (st = arch_bind(f, &l->wo, ARCH_REQUIRED, q_dim, E, err, "blk.%d.attn_output.weight", i)) ||
            (st = arch_bind(f, &l->bq, bias, q_dim, 1, err, "blk.%d.attn_q.bias", i)) ||
            (st = arch_bind(f, &l->bk, bias, kv_dim, 1, err, "blk.%d.attn_k.bias", i)) ||
            (st = arch_bind(f, &l->bv, bias, kv_dim, 1, err, "blk.%d.attn_v.bias", i)) ||
            (st = arch_bind(f, &l->ffn_norm, ARCH_REQUIRED, E, 1, err, "blk.%d.ffn_norm.weight", i)) ||
            (st = arch_bind(f, &l->ffn_gate, ARCH_REQUIRED, E, hp->n_ff, err, "blk.%d.ffn_gate.weight", i)) ||
            (st = arch_bind(f, &l->ffn_up, ARCH_REQUIRED, E, hp->n_ff, err, "blk.%d.ffn_up.weight", i)) ||
            (st = arch_bind(f, &l->ffn_down, ARCH_REQUIRED, hp->n_ff, E, err, "blk.%d.ffn_down.weight", i)))
            return st;
        if (set.qk_norm &&
            ((st = arch_bind(f, &l->q_norm, ARCH_REQUIRED, D, 1, err, "blk.%d.attn_q_norm.weight", i)) ||
             (st = arch_bind(f, &l->k_norm, ARCH_REQUIRED, D, 1, err, "blk.%d.attn_k_norm.weight", i))))
            return st;
        if (set.post_norms &&
            ((st = arch_bind(f, &l->attn_post_norm, ARCH_REQUIRED, E, 1, err, "blk.%d.post_attention_norm.weight", i)) ||
             (st = arch_bind(f, &l->ffn_post_norm, ARCH_REQUIRED, E, 1, err, "blk.%d.post_ffw_norm.weight", i))))
            return st;
    }
    return BRASA_OK;
}

void arch_weights_free(arch_weights *w) {
    if (w) {
        free(w->layers);
        w->layers = NULL;
    }
}
