/* arch.h: what a model architecture provides: its hyper-parameters (read from the file), its
 * weights (bound to the file's tensors and checked), and its forward pass, written with the
 * building blocks of decoder.h. One source file per architecture (llama.c, qwen2.c, qwen3.c,
 * gemma3.c, bert.c); adding one means adding a file and a line to the registry in arch.c. */
#ifndef BRASA_MODELS_ARCH_H
#define BRASA_MODELS_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "brasa.h"
#include "gguf/gguf.h"

#define ARCH_MAX_LAYERS 1024
/* Experts a mixture-of-experts layer may have, and route each token to. */
#define ARCH_MAX_EXPERTS 1024
#define ARCH_MAX_EXPERTS_USED 64

/* How positions beyond the trained context are stretched ({arch}.rope.scaling.type). */
typedef enum arch_rope_scaling {
    ARCH_ROPE_SCALING_NONE,
    ARCH_ROPE_SCALING_LINEAR, /* every frequency divided by the factor */
    ARCH_ROPE_SCALING_LLAMA3, /* per-pair divisors from rope_freqs.weight (which any type applies when present) */
    ARCH_ROPE_SCALING_YARN    /* low frequencies interpolated, high ones kept, a ramp between, and a magnitude factor */
} arch_rope_scaling;

/* A model's hyper-parameters, read once from the file (arch_read_hparams) and used by everything
 * that needs the model's shape: the loader, the forward pass, the context plan, offload, fit. */
typedef struct arch_hparams {
    int32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
    int32_t n_ctx_train;       /* 0 when the file does not say */
    float norm_eps;
    int32_t rope_dim;
    float rope_base, rope_freq_scale;
    bk_rope_mode rope_mode;
    arch_rope_scaling rope_scaling;
    float rope_scaling_factor; /* 0 when the file gives none */
    int32_t rope_ctx_orig;     /* YaRN: the trained context the factor stretches */
    float yarn_corr_low, yarn_corr_high, yarn_mscale; /* YaRN's ramp (pair indices) and magnitude */
    float rope_base_local;     /* rope base of sliding-window layers (gemma3), else rope_base */
    bool rope_scale_local;     /* sliding-window layers take the rope scaling too (gpt-oss); gemma3's
                                * turn unscaled */
    int32_t sliding_window;    /* 0: none */
    int32_t swa_pattern;       /* every swa_pattern-th layer is global; 0: all layers alike */
    float embd_scale;          /* token embeddings are multiplied by this (1 for most) */
    float attn_scale;          /* q.k scale, 1/sqrt(head_dim) unless the file says otherwise */
    float attn_softcap, final_softcap; /* 0: none */
    bk_act ffn_act;
    int32_t n_expert, n_expert_used; /* 0: a dense model */
    int32_t n_ff_exp;                /* rows of one expert's gate and up */
    bool expert_weights_norm;        /* the chosen experts' weights are renormalized to sum to 1 */
    bool bidirectional;        /* {arch}.attention.causal is false (an encoder's default): every token
                                * sees the whole input, which is then one batch; else (zero, the
                                * decoders' case) a token sees those before it */
    int32_t pooling;           /* {arch}.pooling_type, a brasa_pooling: how an embedding is made of
                                * the final hidden states (0: the file sets none) */
    bool encoder;              /* learned positions and no output head: embeddings only (arch_def) */
    int32_t n_token_types;     /* rows of token_types.weight (BERT's segment embeddings), 0 without */
} arch_hparams;

/* The sizes tensor and activation shapes are written in, resolved by arch_dim_size. */
typedef enum arch_dim {
    ARCH_DIM_ONE, ARCH_DIM_EMBD, ARCH_DIM_Q, ARCH_DIM_KV, ARCH_DIM_HEAD, ARCH_DIM_FF, ARCH_DIM_VOCAB,
    ARCH_DIM_EXPERTS, ARCH_DIM_EXPERTS_USED, ARCH_DIM_FF_EXP, ARCH_DIM_ROPE_PAIRS,
    ARCH_DIM_OUTPUT, /* the output head's rows: n_vocab, or 0 for an encoder, which has none */
    ARCH_DIM_HEADS   /* query heads: one value each (attention sinks) */
} arch_dim;
int64_t arch_dim_size(const arch_hparams *hp, arch_dim d);

/* One transformer block's weights; a tensor with data == NULL is absent. Shapes as (rows, row length):
 * wq (n_head*head_dim, n_embd), wk/wv (n_head_kv*head_dim, n_embd), wo (n_embd, n_head*head_dim),
 * ffn_gate/ffn_up (n_ff, n_embd), ffn_down (n_embd, n_ff); norms (n_embd) or (head_dim); biases (rows);
 * BERT's LayerNorms after attention and after the FFN, each a weight and a bias (n_embd);
 * mixture of experts: ffn_gate_inp (n_expert, n_embd) the router, and n_expert experts of
 * ffn_gate_exps/ffn_up_exps (n_ff_exp, n_embd) and ffn_down_exps (n_embd, n_ff_exp). */
typedef struct arch_layer {
    bk_tensor attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, attn_post_norm;
    bk_tensor ffn_norm, ffn_gate, ffn_up, ffn_down, ffn_post_norm;
    bk_tensor ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps;
    bk_tensor bo, attn_out_norm, attn_out_norm_b, ffn_up_b, ffn_down_b, layer_out_norm, layer_out_norm_b;
    bk_tensor attn_sinks, ffn_gate_inp_b, ffn_gate_exps_b, ffn_up_exps_b, ffn_down_exps_b;
} arch_layer;

/* Groups of a layer's tensors; an architecture names the groups it requires and those it takes
 * when present. */
enum {
    ARCH_T_ATTN = 1 << 0,       /* attn_norm, q, k, v, output */
    ARCH_T_QKV_BIAS = 1 << 1,   /* biases of q, k, v */
    ARCH_T_QK_NORM = 1 << 2,    /* per-head RMS norms of q and k */
    ARCH_T_POST_NORMS = 1 << 3, /* norms after attention and after the FFN */
    ARCH_T_FFN = 1 << 4,        /* ffn_norm, gate, up, down */
    ARCH_T_MOE = 1 << 5,        /* ffn_norm, the router and the experts */
    ARCH_T_BERT = 1 << 6,       /* BERT's post-norm layer: q, k, v, output and FFN up and down, each
                                 * with a bias, and a LayerNorm after attention and after the FFN */
    ARCH_T_EXPERTS = 1 << 7,    /* the router and the experts alone (the norm before them is the
                                 * architecture's: gpt-oss's post_attention_norm) */
    ARCH_T_ATTN_POST_NORM = 1 << 8, /* the norm after attention alone */
    ARCH_T_OUT_BIAS = 1 << 9,   /* the attention output's bias */
    ARCH_T_SINKS = 1 << 10,     /* attention sinks: a learned logit per head (attn_sinks) */
    ARCH_T_MOE_BIAS = 1 << 11   /* biases of the router and of every expert's gate, up and down */
};

/* A layer tensor: its GGUF name after "blk.N.", where it lives in arch_layer, its group and its
 * shape (ne0, ne1, ne2: elements per row, rows, experts). */
typedef struct arch_tensor_def {
    const char *name;
    size_t offset;
    unsigned group;
    arch_dim ne[3];
} arch_tensor_def;

/* Every tensor a layer can have, in one table: binding, offload, byte counts and listings walk it. */
extern const arch_tensor_def arch_layer_tensors[];
extern const int arch_layer_tensor_count;
/* Tensor i (of arch_layer_tensors) of layer l. */
const bk_tensor *arch_layer_tensor(const arch_layer *l, int i);

typedef struct arch_weights {
    bk_tensor tok_embd;     /* (n_vocab, n_embd) */
    bk_tensor pos_embd;     /* encoders: (n_ctx_train, n_embd) learned absolute positions */
    bk_tensor type_embd;    /* encoders: (n_token_types, n_embd) segment embeddings, or absent */
    bk_tensor tok_norm, tok_norm_b; /* encoders: the LayerNorm of the summed embeddings (n_embd) */
    bk_tensor output_norm;  /* (n_embd) */
    bk_tensor output;       /* (n_vocab, n_embd): tok_embd itself when the file ties them */
    bk_tensor rope_freqs;   /* (rope_dim / 2) per-pair frequency divisors (Llama 3.1+), or absent */
    arch_layer *layers;     /* (n_layer) */
} arch_weights;

struct fwd;

typedef struct arch_def {
    const char *name;   /* general.architecture */
    unsigned required;  /* the layer tensor groups every layer has */
    unsigned optional;  /* groups taken when the file has them */
    bk_rope_mode rope_mode;
    bk_act ffn_act;
    /* The architecture's own hyper-parameters and constants, after the common ones; may be NULL. */
    brasa_status (*hparams)(const gguf_file *f, arch_hparams *hp, brasa_error *err);
    brasa_status (*forward)(struct fwd *f);
    /* An encoder (BERT): learned position and token-type embeddings under a LayerNorm, attention
     * over the whole input (unless the file says causal), no output head: embeddings only. */
    bool encoder;
} arch_def;

/* The architecture named in a file, or NULL. */
const arch_def *arch_find(const char *name);
/* The names of all supported architectures, comma-separated, for messages. */
const char *arch_names(void);

/* Reads the hyper-parameters of the file's architecture (def, or NULL for one brasa does not
 * run: the keys every decoder has), with defaults and checks. Fields read before a failure stay
 * set, so a model brasa cannot run can still be described. */
brasa_status arch_read_hparams(const gguf_file *f, const arch_def *def, arch_hparams *hp, brasa_error *err);
/* Binds every tensor def needs, checking names, shapes and types (hp from arch_read_hparams). */
brasa_status arch_bind_weights(const gguf_file *f, const arch_def *def, const arch_hparams *hp, arch_weights *w,
                               brasa_error *err);
void arch_weights_free(arch_weights *w);

/* Weights one token reads: every tensor, but of a routed expert tensor only the n_expert_used of
 * n_expert experts a token is sent to (bytes or parameters). */
uint64_t arch_active_bytes(const arch_hparams *hp, const arch_weights *w);
uint64_t arch_layer_bytes(const arch_layer *l);

/* ---- the KV cache's shape ---- */

/* Whether layer il attends over a sliding window (all but every swa_pattern-th layer when the
 * model has a window). */
bool arch_layer_is_local(const arch_hparams *hp, int il);
/* Rows of keys (and as many of values) layer il keeps per sequence for a context of n_ctx tokens
 * decoded in batches of at most n_batch: n_ctx, or for a sliding-window layer a ring of
 * window + n_batch - 1 rows when that is smaller, enough for the first query of a batch to still
 * see its whole window after the batch's keys are written; 0 for a model without causal
 * attention, which sees its whole input in one batch and keeps nothing. */
int32_t arch_kv_rows(const arch_hparams *hp, int il, int32_t n_ctx, int32_t n_batch);

extern const arch_def arch_llama, arch_qwen2, arch_qwen3, arch_qwen3moe, arch_gemma3, arch_gpt_oss, arch_bert;

#endif
