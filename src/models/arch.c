/* arch.c: the registry of architectures and the loading helpers they share: common
 * hyper-parameters with checks, and binding tensors by name with shape and type checks. */
#include "models/arch.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "quant/quant.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef enum { ARCH_REQUIRED, ARCH_OPTIONAL, ARCH_SKIP } arch_need;

static const arch_def *const registry[] = { &arch_llama, &arch_qwen2, &arch_qwen3, &arch_qwen3moe, &arch_gemma3,
                                             &arch_gpt_oss, &arch_bert };

const arch_def *arch_find(const char *name) {
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

const char *arch_names(void) {
    return "llama, qwen2, qwen3, qwen3moe, gemma3, gpt-oss, bert";
}

#define LAYER_TENSOR(field, gguf, group, ne0, ne1, ne2) { gguf, offsetof(arch_layer, field), group, { ne0, ne1, ne2 } }
const arch_tensor_def arch_layer_tensors[] = {
    LAYER_TENSOR(attn_norm, "attn_norm.weight", ARCH_T_ATTN, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(wq, "attn_q.weight", ARCH_T_ATTN | ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_Q, ARCH_DIM_ONE),
    LAYER_TENSOR(wk, "attn_k.weight", ARCH_T_ATTN | ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_KV, ARCH_DIM_ONE),
    LAYER_TENSOR(wv, "attn_v.weight", ARCH_T_ATTN | ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_KV, ARCH_DIM_ONE),
    LAYER_TENSOR(wo, "attn_output.weight", ARCH_T_ATTN | ARCH_T_BERT, ARCH_DIM_Q, ARCH_DIM_EMBD, ARCH_DIM_ONE),
    LAYER_TENSOR(bq, "attn_q.bias", ARCH_T_QKV_BIAS | ARCH_T_BERT, ARCH_DIM_Q, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(bk, "attn_k.bias", ARCH_T_QKV_BIAS | ARCH_T_BERT, ARCH_DIM_KV, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(bv, "attn_v.bias", ARCH_T_QKV_BIAS | ARCH_T_BERT, ARCH_DIM_KV, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(q_norm, "attn_q_norm.weight", ARCH_T_QK_NORM, ARCH_DIM_HEAD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(k_norm, "attn_k_norm.weight", ARCH_T_QK_NORM, ARCH_DIM_HEAD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(attn_post_norm, "post_attention_norm.weight", ARCH_T_POST_NORMS | ARCH_T_ATTN_POST_NORM, ARCH_DIM_EMBD,
                 ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_norm, "ffn_norm.weight", ARCH_T_FFN | ARCH_T_MOE, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_gate, "ffn_gate.weight", ARCH_T_FFN, ARCH_DIM_EMBD, ARCH_DIM_FF, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_up, "ffn_up.weight", ARCH_T_FFN | ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_FF, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_down, "ffn_down.weight", ARCH_T_FFN | ARCH_T_BERT, ARCH_DIM_FF, ARCH_DIM_EMBD, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_post_norm, "post_ffw_norm.weight", ARCH_T_POST_NORMS, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_gate_inp, "ffn_gate_inp.weight", ARCH_T_MOE | ARCH_T_EXPERTS, ARCH_DIM_EMBD, ARCH_DIM_EXPERTS, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_gate_exps, "ffn_gate_exps.weight", ARCH_T_MOE | ARCH_T_EXPERTS, ARCH_DIM_EMBD, ARCH_DIM_FF_EXP,
                 ARCH_DIM_EXPERTS),
    LAYER_TENSOR(ffn_up_exps, "ffn_up_exps.weight", ARCH_T_MOE | ARCH_T_EXPERTS, ARCH_DIM_EMBD, ARCH_DIM_FF_EXP,
                 ARCH_DIM_EXPERTS),
    LAYER_TENSOR(ffn_down_exps, "ffn_down_exps.weight", ARCH_T_MOE | ARCH_T_EXPERTS, ARCH_DIM_FF_EXP, ARCH_DIM_EMBD,
                 ARCH_DIM_EXPERTS),
    LAYER_TENSOR(bo, "attn_output.bias", ARCH_T_BERT | ARCH_T_OUT_BIAS, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(attn_out_norm, "attn_output_norm.weight", ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(attn_out_norm_b, "attn_output_norm.bias", ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_up_b, "ffn_up.bias", ARCH_T_BERT, ARCH_DIM_FF, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_down_b, "ffn_down.bias", ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(layer_out_norm, "layer_output_norm.weight", ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(layer_out_norm_b, "layer_output_norm.bias", ARCH_T_BERT, ARCH_DIM_EMBD, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(attn_sinks, "attn_sinks.weight", ARCH_T_SINKS, ARCH_DIM_HEADS, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_gate_inp_b, "ffn_gate_inp.bias", ARCH_T_MOE_BIAS, ARCH_DIM_EXPERTS, ARCH_DIM_ONE, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_gate_exps_b, "ffn_gate_exps.bias", ARCH_T_MOE_BIAS, ARCH_DIM_FF_EXP, ARCH_DIM_EXPERTS, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_up_exps_b, "ffn_up_exps.bias", ARCH_T_MOE_BIAS, ARCH_DIM_FF_EXP, ARCH_DIM_EXPERTS, ARCH_DIM_ONE),
    LAYER_TENSOR(ffn_down_exps_b, "ffn_down_exps.bias", ARCH_T_MOE_BIAS, ARCH_DIM_EMBD, ARCH_DIM_EXPERTS, ARCH_DIM_ONE),
};
const int arch_layer_tensor_count = (int)(sizeof arch_layer_tensors / sizeof arch_layer_tensors[0]);
static_assert(sizeof(arch_layer) == sizeof arch_layer_tensors / sizeof arch_layer_tensors[0] * sizeof(bk_tensor),
              "every arch_layer tensor is in arch_layer_tensors");

const bk_tensor *arch_layer_tensor(const arch_layer *l, int i) {
    return (const bk_tensor *)((const char *)l + arch_layer_tensors[i].offset);
}

int64_t arch_dim_size(const arch_hparams *hp, arch_dim d) {
    switch (d) {
    case ARCH_DIM_ONE: return 1;
    case ARCH_DIM_EMBD: return hp->n_embd;
    case ARCH_DIM_Q: return (int64_t)hp->n_head * hp->head_dim;
    case ARCH_DIM_KV: return (int64_t)hp->n_head_kv * hp->head_dim;
    case ARCH_DIM_HEAD: return hp->head_dim;
    case ARCH_DIM_FF: return hp->n_ff;
    case ARCH_DIM_VOCAB: return hp->n_vocab;
    case ARCH_DIM_EXPERTS: return hp->n_expert;
    case ARCH_DIM_EXPERTS_USED: return hp->n_expert_used;
    case ARCH_DIM_FF_EXP: return hp->n_ff_exp;
    case ARCH_DIM_ROPE_PAIRS: return hp->rope_dim / 2;
    case ARCH_DIM_OUTPUT: return hp->encoder ? 0 : hp->n_vocab;
    case ARCH_DIM_HEADS: return hp->n_head;
    }
    return 0;
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

static bool get_bool(const gguf_file *f, const char *arch, const char *suffix, bool *out) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type != GGUF_TYPE_BOOL)
        return false;
    *out = gguf_kv_int_at(kv, 0) != 0;
    return true;
}

/* YaRN's correction dimension: the pair index whose wavelength turns n_rot times over the trained
 * context (the YaRN paper, section 3.2; Hugging Face's find_correction_dim). */
static double yarn_corr_dim(const arch_hparams *hp, double n_rot) {
    return hp->rope_dim * log(hp->rope_ctx_orig / (n_rot * 2.0 * M_PI)) / (2.0 * log(hp->rope_base));
}

/* {arch}.rope.scaling.*: linear divides every frequency by the factor; llama3 (Llama 3.1-3.3) takes
 * per-pair divisors from the rope_freqs.weight tensor, which a file may also carry with no type;
 * YaRN (Qwen, gpt-oss) interpolates the low frequencies and keeps the high ones, with a ramp of
 * pair indices between them from beta_fast (32) and beta_slow (1) rotations over the original
 * context, and scales the rotation by the attention factor, 0.1 ln(factor) + 1 unless the file
 * gives it (as Hugging Face's _compute_yarn_parameters). Any other type is refused by name. */
static brasa_status read_rope_scaling(const gguf_file *f, const char *arch, arch_hparams *hp, brasa_error *err) {
    char key[256];
    gguf_str type = { "", 0 };
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    gguf_get_str(f, key, &type);
    char name[33];
    snprintf(name, sizeof name, "%.*s", (int)(type.len > 32 ? 32 : type.len), type.data);
    for (char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
            *c = '?';
    float factor = 0.0f;
    const bool has_factor = get_f32(f, arch, "rope.scaling.factor", &factor);
    hp->rope_scaling_factor = has_factor ? factor : 0.0f;
    hp->rope_freq_scale = 1.0f;
    hp->yarn_mscale = 1.0f;
    if (strcmp(name, "llama3") == 0) {
        hp->rope_scaling = ARCH_ROPE_SCALING_LLAMA3; /* the binding requires its tensor */
        return BRASA_OK;
    }
    if (strcmp(name, "") == 0 || strcmp(name, "none") == 0) {
        if (has_factor && factor != 1.0f && factor != 0.0f)
            return err_set(err, BRASA_ERR_FORMAT, "rope scaling factor %g is given without a scaling type", (double)factor);
        hp->rope_scaling = ARCH_ROPE_SCALING_NONE;
        return BRASA_OK;
    }
    const bool linear = strcmp(name, "linear") == 0, yarn = strcmp(name, "yarn") == 0;
    if (!linear && !yarn)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "rope scaling '%s' is not supported (brasa knows linear, llama3 and yarn)",
                       name);
    if (!has_factor || !(factor >= 1.0f && factor <= 1024.0f))
        return err_set(err, BRASA_ERR_FORMAT, "rope scaling '%s' needs %s.rope.scaling.factor between 1 and 1024%s", name,
                       arch, has_factor ? "" : " (it is missing)");
    hp->rope_freq_scale = 1.0f / factor;
    hp->rope_scaling = linear ? ARCH_ROPE_SCALING_LINEAR : ARCH_ROPE_SCALING_YARN;
    if (linear)
        return BRASA_OK;
    if (!get_i32(f, arch, "rope.scaling.original_context_length", &hp->rope_ctx_orig) || hp->rope_ctx_orig < 1)
        return err_set(err, BRASA_ERR_FORMAT, "rope scaling 'yarn' needs %s.rope.scaling.original_context_length", arch);
    float attn_factor = 0.0f, beta_fast = 32.0f, beta_slow = 1.0f;
    get_f32(f, arch, "rope.scaling.yarn_beta_fast", &beta_fast);
    get_f32(f, arch, "rope.scaling.yarn_beta_slow", &beta_slow);
    if (!(beta_fast > 0.0f && beta_slow > 0.0f && beta_fast < 1e6f && beta_slow < 1e6f))
        return err_set(err, BRASA_ERR_FORMAT, "YaRN beta_fast %g and beta_slow %g must be positive", (double)beta_fast,
                       (double)beta_slow);
    hp->yarn_mscale = (float)(0.1 * log((double)factor) + 1.0);
    if (get_f32(f, arch, "rope.scaling.attn_factor", &attn_factor)) {
        if (!(attn_factor > 0.0f && attn_factor < 100.0f))
            return err_set(err, BRASA_ERR_FORMAT, "YaRN attention factor %g is not a positive number", (double)attn_factor);
        hp->yarn_mscale = attn_factor;
    }
    const double low = floor(yarn_corr_dim(hp, beta_fast)), high = ceil(yarn_corr_dim(hp, beta_slow));
    hp->yarn_corr_low = (float)(low > 0 ? low : 0);
    hp->yarn_corr_high = (float)(high < hp->rope_dim - 1 ? high : hp->rope_dim - 1);
    return BRASA_OK;
}

/* {arch}.expert_*: a mixture-of-experts layer routes each token to expert_used_count of
 * expert_count experts of expert_feed_forward_length rows. */
static brasa_status read_experts(const gguf_file *f, const char *arch, arch_hparams *hp, bool required, brasa_error *err) {
    get_i32(f, arch, "expert_count", &hp->n_expert);
    get_i32(f, arch, "expert_used_count", &hp->n_expert_used);
    get_i32(f, arch, "expert_feed_forward_length", &hp->n_ff_exp);
    if (!required && hp->n_expert == 0)
        return BRASA_OK;
    if (hp->n_expert < 1 || hp->n_expert > ARCH_MAX_EXPERTS)
        return err_set(err, BRASA_ERR_FORMAT, "%s.expert_count is %d; a mixture of experts has 1 to %d", arch, hp->n_expert,
                       ARCH_MAX_EXPERTS);
    if (hp->n_expert_used < 1 || hp->n_expert_used > hp->n_expert || hp->n_expert_used > ARCH_MAX_EXPERTS_USED)
        return err_set(err, BRASA_ERR_FORMAT, "%s.expert_used_count is %d; it must be 1 to %d experts", arch,
                       hp->n_expert_used, hp->n_expert < ARCH_MAX_EXPERTS_USED ? hp->n_expert : ARCH_MAX_EXPERTS_USED);
    if (required && (hp->n_ff_exp < 1 || hp->n_ff_exp > (1 << 24)))
        return err_set(err, BRASA_ERR_FORMAT, "%s.expert_feed_forward_length is %d", arch, hp->n_ff_exp);
    get_bool(f, arch, "expert_weights_norm", &hp->expert_weights_norm);
    return BRASA_OK;
}

brasa_status arch_read_hparams(const gguf_file *f, const arch_def *def, arch_hparams *hp, brasa_error *err) {
    memset(hp, 0, sizeof *hp);
    gguf_str name = { "", 0 };
    char arch[64];
    if (!gguf_get_str(f, "general.architecture", &name) || name.len == 0 || name.len >= sizeof arch)
        return err_set(err, BRASA_ERR_FORMAT, "general.architecture is missing");
    memcpy(arch, name.data, name.len);
    arch[name.len] = '\0';
    const bool moe = def && (def->required & (ARCH_T_MOE | ARCH_T_EXPERTS));
    /* what the model is for, read first so that even a file brasa cannot run is described */
    hp->encoder = def && def->encoder;
    bool causal = !hp->encoder;
    get_bool(f, arch, "attention.causal", &causal);
    hp->bidirectional = !causal;
    get_i32(f, arch, "pooling_type", &hp->pooling);
    get_i32(f, arch, "block_count", &hp->n_layer);
    get_i32(f, arch, "embedding_length", &hp->n_embd);
    get_i32(f, arch, "attention.head_count", &hp->n_head);
    get_i32(f, arch, "context_length", &hp->n_ctx_train);
    const bool has_ff = get_i32(f, arch, "feed_forward_length", &hp->n_ff);
    if (!get_i32(f, arch, "attention.head_count_kv", &hp->n_head_kv))
        hp->n_head_kv = hp->n_head;
    if (hp->n_layer == 0 || hp->n_embd == 0 || hp->n_head == 0 || (!has_ff && !moe))
        return err_set(err, BRASA_ERR_FORMAT, "%s.block_count, embedding_length, %sattention.head_count are required integers",
                       arch, moe ? "" : "feed_forward_length and ");
    if (hp->n_layer < 1 || hp->n_layer > ARCH_MAX_LAYERS || hp->n_embd < 1 || hp->n_embd > (1 << 20) || hp->n_ff < 0 ||
        hp->n_ff > (1 << 24) || (!moe && hp->n_ff < 1) || hp->n_head < 1 || hp->n_head > 4096 || hp->n_head_kv < 1 ||
        hp->n_head % hp->n_head_kv != 0)
        return err_set(err, BRASA_ERR_FORMAT, "implausible shape: %d layers, embedding %d, feed-forward %d, %d heads, %d KV heads",
                       hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv);
    if (hp->n_ctx_train < 0)
        hp->n_ctx_train = 0;
    hp->head_dim = hp->n_embd / hp->n_head;
    int32_t key_length = 0, value_length = 0;
    if (get_i32(f, arch, "attention.key_length", &key_length))
        hp->head_dim = key_length;
    if (get_i32(f, arch, "attention.value_length", &value_length) && value_length != hp->head_dim)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "key length %d differs from value length %d", hp->head_dim, value_length);
    if (hp->head_dim < 2 || hp->head_dim > 1024 || hp->head_dim % 2 != 0)
        return err_set(err, BRASA_ERR_FORMAT, "head dimension %d is not an even number up to 1024", hp->head_dim);
    /* RMS norms (decoders) or LayerNorms (BERT): the file names the epsilon of the kind it has */
    if (!get_f32(f, arch, "attention.layer_norm_rms_epsilon", &hp->norm_eps) &&
        !get_f32(f, arch, "attention.layer_norm_epsilon", &hp->norm_eps))
        return err_set(err, BRASA_ERR_FORMAT, "%s.attention.layer_norm_rms_epsilon (or layer_norm_epsilon) is missing", arch);
    if (!(hp->norm_eps > 0.0f && hp->norm_eps < 1.0f))
        return err_set(err, BRASA_ERR_FORMAT, "norm epsilon %g is outside (0, 1)", (double)hp->norm_eps);
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
    brasa_status st = read_rope_scaling(f, arch, hp, err);
    if (st != BRASA_OK)
        return st;
    get_i32(f, arch, "attention.sliding_window", &hp->sliding_window);
    if (hp->sliding_window < 0)
        return err_set(err, BRASA_ERR_FORMAT, "sliding window %d is negative", hp->sliding_window);
    get_i32(f, arch, "attention.sliding_window_pattern", &hp->swa_pattern);
    if (hp->swa_pattern < 0)
        return err_set(err, BRASA_ERR_FORMAT, "sliding-window pattern %d is negative", hp->swa_pattern);
    hp->embd_scale = 1.0f;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    get_f32(f, arch, "attention.scale", &hp->attn_scale);
    get_f32(f, arch, "attn_logit_softcapping", &hp->attn_softcap);
    get_f32(f, arch, "final_logit_softcapping", &hp->final_softcap);
    if (hp->attn_softcap < 0 || hp->final_softcap < 0)
        return err_set(err, BRASA_ERR_FORMAT, "softcapping values must not be negative");
    hp->ffn_act = def ? def->ffn_act : BK_ACT_SILU;
    hp->rope_mode = def ? def->rope_mode : BK_ROPE_NORMAL;
    if ((st = read_experts(f, arch, hp, moe, err)) != BRASA_OK)
        return st;
    /* the vocabulary's size is the embedding table's rows (the head's, which the binding checks) */
    const gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight");
    if (embd && embd->ne[1] >= 1 && embd->ne[1] <= INT32_MAX)
        hp->n_vocab = (int32_t)embd->ne[1];
    if (hp->pooling < BRASA_POOLING_NONE || hp->pooling > BRASA_POOLING_RANK)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s.pooling_type %d is not one brasa knows (0 none, 1 mean, 2 cls, 3 last, 4 rank)",
                       arch, hp->pooling);
    return def && def->hparams ? def->hparams(f, hp, err) : BRASA_OK;
}

bool arch_layer_is_local(const arch_hparams *hp, int il) {
    if (hp->sliding_window <= 0)
        return false;
    if (hp->swa_pattern <= 0)
        return true;
    return (il + 1) % hp->swa_pattern != 0;
}

int32_t arch_kv_rows(const arch_hparams *hp, int il, int32_t n_ctx, int32_t n_batch) {
    if (hp->bidirectional)
        return 0;
    if (!arch_layer_is_local(hp, il))
        return n_ctx;
    const int64_t ring = (int64_t)hp->sliding_window + (n_batch > 0 ? n_batch : 1) - 1;
    return ring < n_ctx ? (int32_t)ring : n_ctx;
}

/* Binds one tensor by name: its shape must be ne (elements per row, rows, experts). */
static brasa_status bind(const gguf_file *f, bk_tensor *t, arch_need need, const int64_t ne[3], brasa_error *err,
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
    if (g->n_dims > 3 || g->ne[0] != ne[0] || g->ne[1] != ne[1] || g->ne[2] != ne[2])
        return err_set(err, BRASA_ERR_FORMAT, "tensor '%s' has shape [%lld, %lld, %lld%s], expected [%lld, %lld, %lld]", name,
                       (long long)g->ne[0], (long long)g->ne[1], (long long)g->ne[2], g->n_dims > 3 ? ", ..." : "",
                       (long long)ne[0], (long long)ne[1], (long long)ne[2]);
    const quant_traits *q = quant_get(g->type);
    if (!q->dequantize)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "tensor '%s' has type %s, which brasa cannot compute with yet",
                       name, q->name);
    /* vectors (norms, biases, sinks) and the experts' rows of biases are read directly as floats */
    const size_t len = strlen(name);
    if (((ne[1] == 1 && ne[2] == 1) || (len > 5 && strcmp(name + len - 5, ".bias") == 0)) && g->type != QUANT_F32)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "tensor '%s' is %s; brasa needs f32 for norms and biases", name, q->name);
    *t = bk_view3(NULL, g->type, ne[0], ne[1], ne[2], (void *)g->data);
    t->constant = true; /* the mapped file is read-only */
    return BRASA_OK;
}

brasa_status arch_bind_weights(const gguf_file *f, const arch_def *def, const arch_hparams *hp, arch_weights *w,
                               brasa_error *err) {
    memset(w, 0, sizeof *w);
    if (hp->n_vocab < 1)
        return err_set(err, BRASA_ERR_FORMAT, "tensor 'token_embd.weight' is missing or has no rows");
    const int64_t E = hp->n_embd, V = hp->n_vocab;
    brasa_status st;
    if (def->encoder) { /* learned positions and segments, normalized; no head */
        const arch_need need_types = hp->n_token_types > 0 ? ARCH_REQUIRED : ARCH_OPTIONAL;
        if ((st = bind(f, &w->tok_embd, ARCH_REQUIRED, (int64_t[3]){ E, V, 1 }, err, "token_embd.weight")) ||
            (st = bind(f, &w->pos_embd, ARCH_REQUIRED, (int64_t[3]){ E, hp->n_ctx_train, 1 }, err, "position_embd.weight")) ||
            (st = bind(f, &w->type_embd, need_types, (int64_t[3]){ E, hp->n_token_types, 1 }, err, "token_types.weight")) ||
            (st = bind(f, &w->tok_norm, ARCH_REQUIRED, (int64_t[3]){ E, 1, 1 }, err, "token_embd_norm.weight")) ||
            (st = bind(f, &w->tok_norm_b, ARCH_REQUIRED, (int64_t[3]){ E, 1, 1 }, err, "token_embd_norm.bias")))
            return st;
    } else if ((st = bind(f, &w->tok_embd, ARCH_REQUIRED, (int64_t[3]){ E, V, 1 }, err, "token_embd.weight")) ||
        (st = bind(f, &w->output_norm, ARCH_REQUIRED, (int64_t[3]){ E, 1, 1 }, err, "output_norm.weight")) ||
        (st = bind(f, &w->output, ARCH_OPTIONAL, (int64_t[3]){ E, V, 1 }, err, "output.weight")) ||
        (st = bind(f, &w->rope_freqs, ARCH_OPTIONAL, (int64_t[3]){ hp->rope_dim / 2, 1, 1 }, err, "rope_freqs.weight")))
        return st;
    if (!w->output.data && !def->encoder)
        w->output = w->tok_embd; /* tied embeddings */
    if (w->rope_freqs.data) {
        const float *factors = w->rope_freqs.data;
        for (int64_t i = 0; i < w->rope_freqs.ne0; i++)
            if (!(factors[i] > 0.0f && isfinite(factors[i])))
                return err_set(err, BRASA_ERR_FORMAT, "rope_freqs.weight[%lld] is %g; frequency divisors must be positive",
                               (long long)i, (double)factors[i]);
    }
    if (hp->rope_scaling == ARCH_ROPE_SCALING_LLAMA3 && !w->rope_freqs.data)
        return err_set(err, BRASA_ERR_FORMAT, "rope scaling 'llama3' needs the rope_freqs.weight tensor, which is missing");
    w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
    if (!w->layers)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    for (int il = 0; il < hp->n_layer; il++) {
        for (int i = 0; i < arch_layer_tensor_count; i++) {
            const arch_tensor_def *d = &arch_layer_tensors[i];
            const arch_need need = (d->group & def->required) ? ARCH_REQUIRED
                                   : (d->group & def->optional) ? ARCH_OPTIONAL : ARCH_SKIP;
            if (need == ARCH_SKIP)
                continue;
            const int64_t ne[3] = { arch_dim_size(hp, d->ne[0]), arch_dim_size(hp, d->ne[1]), arch_dim_size(hp, d->ne[2]) };
            bk_tensor *t = (bk_tensor *)((char *)&w->layers[il] + d->offset);
            if ((st = bind(f, t, need, ne, err, "blk.%d.%s", il, d->name)) != BRASA_OK)
                return st;
        }
    }
    return BRASA_OK;
}

uint64_t arch_layer_bytes(const arch_layer *l) {
    uint64_t sum = 0;
    for (int i = 0; i < arch_layer_tensor_count; i++)
        sum += bk_bytes(arch_layer_tensor(l, i));
    return sum;
}

uint64_t arch_active_bytes(const arch_hparams *hp, const arch_weights *w) {
    uint64_t sum = bk_bytes(&w->output_norm) + bk_bytes(&w->output) + bk_bytes(&w->rope_freqs) + w->tok_embd.row_bytes +
                   w->pos_embd.row_bytes + w->type_embd.row_bytes + bk_bytes(&w->tok_norm) + bk_bytes(&w->tok_norm_b);
    for (int il = 0; il < hp->n_layer; il++)
        for (int i = 0; i < arch_layer_tensor_count; i++) {
            const bk_tensor *t = arch_layer_tensor(&w->layers[il], i);
            sum += t->ne2 > 1 ? bk_bytes(t) / (uint64_t)t->ne2 * (uint64_t)hp->n_expert_used : bk_bytes(t);
        }
    return sum;
}

void arch_weights_free(arch_weights *w) {
    if (w) {
        free(w->layers);
        w->layers = NULL;
    }
}
