/* arch.h: what a model architecture provides: its hyper-parameters (read from the file), its
 * weights (bound to the file's tensors and checked), and its forward pass, written with the
 * building blocks of decoder.h. One source file per architecture (llama.c, qwen2.c, gemma3.c);
 * adding one means adding a file and a line to the registry in arch.c. */
#ifndef BRASA_MODELS_ARCH_H
#define BRASA_MODELS_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "brasa.h"
#include "gguf/gguf.h"

#define ARCH_MAX_LAYERS 1024

typedef struct arch_hparams {
    int32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
    float norm_eps;
    int32_t rope_dim;
    float rope_base, rope_freq_scale;
    bk_rope_mode rope_mode;
    float rope_base_local;     /* rope base of sliding-window layers (gemma3), else rope_base */
    int32_t sliding_window;    /* 0: none */
    int32_t swa_pattern;       /* every swa_pattern-th layer is global; 0: all layers alike */
    float embd_scale;          /* token embeddings are multiplied by this (1 for most) */
    float attn_scale;          /* q.k scale, 1/sqrt(head_dim) unless the file says otherwise */
    float attn_softcap, final_softcap; /* 0: none */
    bk_act ffn_act;
} arch_hparams;

/* One transformer block's weights; a tensor with data == NULL is absent. Shapes as (rows, row length):
 * wq (n_head*head_dim, n_embd), wk/wv (n_head_kv*head_dim, n_embd), wo (n_embd, n_head*head_dim),
 * ffn_gate/ffn_up (n_ff, n_embd), ffn_down (n_embd, n_ff); norms (n_embd) or (head_dim); biases (rows). */
typedef struct arch_layer {
    bk_tensor attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, attn_post_norm;
    bk_tensor ffn_norm, ffn_gate, ffn_up, ffn_down, ffn_post_norm;
} arch_layer;

typedef struct arch_weights {
    bk_tensor tok_embd;     /* (n_vocab, n_embd) */
    bk_tensor output_norm;  /* (n_embd) */
    bk_tensor output;       /* (n_vocab, n_embd): tok_embd itself when the file ties them */
    arch_layer *layers;     /* (n_layer) */
} arch_weights;

struct fwd;

typedef struct arch_def {
    const char *name; /* general.architecture */
    /* Reads hyper-parameters and binds every tensor, checking names, shapes and types. */
    brasa_status (*load)(const gguf_file *f, arch_hparams *hp, arch_weights *w, brasa_error *err);
    brasa_status (*forward)(struct fwd *f);
} arch_def;

/* The architecture named in a file, or NULL. */
const arch_def *arch_find(const char *name);
/* The names of all supported architectures, comma-separated, for messages. */
const char *arch_names(void);

/* ---- the KV cache's shape ---- */

/* Whether layer il attends over a sliding window (all but every swa_pattern-th layer when the
 * model has a window). */
bool arch_layer_is_local(const arch_hparams *hp, int il);
/* Rows of keys (and as many of values) layer il keeps per sequence for a context of n_ctx tokens
 * decoded in batches of at most n_batch: n_ctx, or for a sliding-window layer a ring of
 * window + n_batch - 1 rows when that is smaller, enough for the first query of a batch to still
 * see its whole window after the batch's keys are written. */
int32_t arch_kv_rows(const arch_hparams *hp, int il, int32_t n_ctx, int32_t n_batch);

extern const arch_def arch_llama, arch_qwen2, arch_gemma3;

/* ---- shared loading helpers ---- */

/* Reads the hyper-parameters every decoder has ({arch}.block_count, ...), with defaults and checks. */
brasa_status arch_read_common(const gguf_file *f, const char *arch, arch_hparams *hp, brasa_error *err);

typedef enum { ARCH_REQUIRED, ARCH_OPTIONAL } arch_need;
/* Binds tensor `name` (printf-style with the layer index) of shape (ne1 rows, ne0) or a vector
 * (ne1 = 1). Optional tensors that are absent leave t->data NULL. */
brasa_status arch_bind(const gguf_file *f, bk_tensor *t, arch_need need, int64_t ne0, int64_t ne1, brasa_error *err,
                       const char *fmt, ...);
/* Binds the standard tensors: embeddings, output (or tied), and per layer the attention and FFN
 * projections and pre-norms; biases, QK-norms and post-norms when asked. */
typedef struct arch_tensor_set {
    bool qkv_bias, qk_norm, post_norms;
} arch_tensor_set;
brasa_status arch_bind_standard(const gguf_file *f, const arch_hparams *hp, arch_tensor_set set, arch_weights *w,
                                brasa_error *err);
void arch_weights_free(arch_weights *w);

#endif
