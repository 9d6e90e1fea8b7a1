/* decoder.h: the building blocks of a transformer forward pass (embedding, norm, self-attention
 * with a KV cache or, for encoders, over the whole input, gated FFN, output head or final hidden
 * states), over the backend seam. An architecture's forward pass is a short sequence of these
 * calls, reading like the model's equations. */
#ifndef BRASA_MODELS_DECODER_H
#define BRASA_MODELS_DECODER_H

#include "backend/backend.h"
#include "models/arch.h"
#include "quant/quant.h"

/* The rows of a batch that belong to one sequence, and that sequence's KV cache. A sequence's rows
 * are consecutive and at consecutive positions (pos[row0] on). */
typedef struct fwd_seq {
    int64_t row0, n;
    bk_tensor *k_cache, *v_cache; /* (n_layer) each (n_ctx, n_head_kv*head_dim) */
} fwd_seq;

/* A batch's activations, one table: each a tensor of (rows, width), width from the
 * hyper-parameters, rows the batch's tokens or, for the routed experts' products, its tokens
 * times the experts each uses (a slot per token and chosen expert). The context plans, carves
 * and views them from this list alone. X(name, width, per_slot, type) */
#define FWD_ACTS(X)                                                                               \
    X(x, ARCH_DIM_EMBD, false, QUANT_F32)           /* the residual stream */                     \
    X(h, ARCH_DIM_EMBD, false, QUANT_F32)           /* normalized input of a sub-layer */         \
    X(o, ARCH_DIM_EMBD, false, QUANT_F32)           /* a sub-layer's output */                    \
    X(q, ARCH_DIM_Q, false, QUANT_F32)                                                            \
    X(att, ARCH_DIM_Q, false, QUANT_F32)            /* attention output before wo */              \
    X(k, ARCH_DIM_KV, false, QUANT_F32)                                                           \
    X(v, ARCH_DIM_KV, false, QUANT_F32)                                                           \
    X(gate, ARCH_DIM_FF, false, QUANT_F32)          /* dense FFN */                               \
    X(up, ARCH_DIM_FF, false, QUANT_F32)                                                          \
    X(router, ARCH_DIM_EXPERTS, false, QUANT_F32)   /* the router's logits */                     \
    X(expert_ids, ARCH_DIM_EXPERTS_USED, false, QUANT_I32) /* each token's chosen experts */      \
    X(expert_w, ARCH_DIM_EXPERTS_USED, false, QUANT_F32)   /* and their weights */                \
    X(gate_exp, ARCH_DIM_FF_EXP, true, QUANT_F32)   /* per slot: an expert's gate, up, down */    \
    X(up_exp, ARCH_DIM_FF_EXP, true, QUANT_F32)                                                   \
    X(down_exp, ARCH_DIM_EMBD, true, QUANT_F32)                                                   \
    X(logits, ARCH_DIM_OUTPUT, false, QUANT_F32)

#define FWD_ACT_FIELD(name, width, per_slot, type) bk_tensor name;
typedef struct fwd_acts {
    FWD_ACTS(FWD_ACT_FIELD)
} fwd_acts;
#undef FWD_ACT_FIELD

typedef struct fwd_act_def {
    const char *name;
    size_t offset; /* of its tensor in fwd_acts */
    arch_dim width;
    bool per_slot; /* rows: tokens times n_expert_used */
    uint32_t type; /* quant_type: f32, or i32 for expert ids */
} fwd_act_def;
extern const fwd_act_def fwd_act_defs[];
extern const int fwd_act_count;
/* Activation i of a set. */
bk_tensor *fwd_act_at(fwd_acts *a, int i);
/* Rows activation i takes for a batch of n tokens (0 when the model does not use it: a width of 0). */
int64_t fwd_act_rows(const arch_hparams *hp, int i, int64_t n);
/* The same set restricted to a batch of n tokens. */
fwd_acts fwd_acts_rows(const fwd_acts *a, const arch_hparams *hp, int64_t n);

/* A device and a batch's activations in its memory (views sized for the batch). A pass runs on one
 * place, or on two when a GPU holds only the last layers: place i runs layers first_layer .. up
 * to the next place's first; the embedding lookup runs on the first place, the output head on the
 * last, and the residual stream moves across once, where the layers change device. */
typedef struct fwd_place {
    bk_device *dev;
    int32_t first_layer;
    fwd_acts a;
} fwd_place;

#define FWD_PLACES_MAX 2

/* This process's part of a pass split across processes (engine/pipeline.h): the layers it runs,
 * and in place of the embedding lookup and the output head, the hand-offs of the residual stream.
 * A pass in one process runs layers 0 .. n_layer - 1 with no hand-offs (in and out NULL). */
typedef struct fwd fwd;
typedef struct fwd_stage {
    int32_t layer_first, layer_end;
    /* fills x (n rows) with what the process before sent, instead of the embedding lookup */
    brasa_status (*in)(fwd *f, void *user);
    /* after the last layer: hands x on, and says whether the output head runs here (it then has
     * x's rows logits_first .. n - 1, sent back by the last process) */
    brasa_status (*out)(fwd *f, void *user, bool *head_here);
    void *user;
} fwd_stage;

/* One evaluation of a batch of tokens from one or more sequences: the weights, the activations
 * of the place running the current layer, each sequence's KV cache (each layer's on its place's
 * device), and where the logits go. Filled by the engine, read by the forward pass. Every
 * operation but attention works row by row, so sequences share the weight reads and never see
 * each other. */
struct fwd {
    fwd_stage stage;         /* the layers this process runs */
    const fwd_place *places; /* (n_places) in layer order */
    int n_places, place;     /* the current place, whose device and activations the fields below are */
    bk_device *dev;
    const arch_hparams *hp;
    const arch_weights *w;
    int64_t n;              /* tokens in the batch */
    const int32_t *tokens;  /* (n) */
    const int32_t *pos;     /* (n) each token's position in its sequence */
    const int32_t *token_types; /* (n) each token's segment (BERT's token type; 0: the first text) */
    fwd_acts a;             /* the current place's activations (fwd_acts), n rows each */
    const fwd_seq *seqs;    /* (n_seqs) covering rows 0..n-1 in order */
    int n_seqs;
    int64_t logits_first;   /* logits are wanted for tokens logits_first .. n-1 */
    bk_tensor logits;       /* (n - logits_first, n_vocab) on the last place */
    bool embeddings;        /* the pass ends with the final hidden states, not logits */
    bk_tensor hidden;       /* set by the pass when embeddings: (n, n_embd) on the last place */
    brasa_error *err;
};

#define FWD_TRY(expr)                                                                               \
    do {                                                                                            \
        brasa_status fwd_st_ = (expr);                                                              \
        if (fwd_st_ != BRASA_OK)                                                                    \
            return fwd_st_;                                                                         \
    } while (0)

/* Makes the first place current: the start of every pass (fwd_embed does it). */
brasa_status fwd_begin(fwd *f);
/* x = tok_embd[tokens] * embd_scale, on the first place */
brasa_status fwd_embed(fwd *f);
/* Called before layer il: moves the pass (and the residual stream x) to the place that runs it. */
brasa_status fwd_layer_start(fwd *f, int il);
/* out = rmsnorm(in) * weight */
brasa_status fwd_norm(fwd *f, const bk_tensor *in, const bk_tensor *weight, bk_tensor *out);
/* out = wo · attention(rope(q), rope(k), v) of layer il over in (QKV and output biases and QK-norm
 * when the layer has them; the layer's rope base and window follow the sliding-window pattern; no
 * rope for a model of learned positions, rope_dim 0). Causal models append each sequence's keys and
 * values to its cache and attend over it; the others (encoders) have each sequence's queries attend
 * over all of that sequence's keys in the batch, which holds its whole input, and cache nothing. */
brasa_status fwd_self_attention(fwd *f, int il, const bk_tensor *in, bk_tensor *out);
/* out = down(act(gate · in) * (up · in)) */
brasa_status fwd_ffn(fwd *f, int il, const bk_tensor *in, bk_tensor *out);
/* Routed experts: each token's n_expert_used experts of largest router logit, each a gated FFN
 * like fwd_ffn, their outputs summed with the router's (renormalized) softmax weights. */
brasa_status fwd_moe(fwd *f, int il, const bk_tensor *in, bk_tensor *out);
/* x += o */
brasa_status fwd_residual(fwd *f, const bk_tensor *o);
/* logits = output · rmsnorm(x) for the wanted tokens, softcapped when the model says so; for a pass
 * that makes embeddings, the hidden states rmsnorm(x) of every token instead (fwd_hidden) */
brasa_status fwd_output(fwd *f);
/* Ends a pass that makes embeddings with the final hidden states h (n rows): they become f->hidden.
 * A pass asked for logits fails here: the model has no output head. */
brasa_status fwd_hidden(fwd *f, const bk_tensor *h);

/* The pre-norm decoder of the llama family: x += attn(norm(x)); x += ffn(norm(x)), the FFN a
 * mixture of experts in a layer that has a router. */
brasa_status fwd_standard_decoder(fwd *f);

#endif
