/* decoder.h: the building blocks of a decoder-only transformer forward pass (embedding, norm,
 * self-attention with a KV cache, gated FFN, output head), over the backend seam. An architecture's
 * forward pass is a short sequence of these calls, reading like the model's equations. */
#ifndef BRASA_MODELS_DECODER_H
#define BRASA_MODELS_DECODER_H

#include "backend/backend.h"
#include "models/arch.h"

/* The rows of a batch that belong to one sequence, and that sequence's KV cache. A sequence's rows
 * are consecutive and at consecutive positions (pos[row0] on). */
typedef struct fwd_seq {
    int64_t row0, n;
    bk_tensor *k_cache, *v_cache; /* (n_layer) each (n_ctx, n_head_kv*head_dim) */
} fwd_seq;

/* A device and a batch's activations in its memory (views sized for the batch). A pass runs on one
 * place, or on two when a GPU holds only the last layers: place i runs layers first_layer .. up
 * to the next place's first; the embedding lookup runs on the first place, the output head on the
 * last, and the residual stream moves across once, where the layers change device. */
typedef struct fwd_place {
    bk_device *dev;
    int32_t first_layer;
    bk_tensor x, h, o, q, k, v, att, gate, up; /* as in fwd below */
} fwd_place;

#define FWD_PLACES_MAX 2

/* One evaluation of a batch of tokens from one or more sequences: the weights, the activations
 * of the place running the current layer, each sequence's KV cache (each layer's on its place's
 * device), and where the logits go. Filled by the engine, read by the forward pass. Every
 * operation but attention works row by row, so sequences share the weight reads and never see
 * each other. */
typedef struct fwd {
    const fwd_place *places; /* (n_places) in layer order */
    int n_places, place;     /* the current place, whose device and activations the fields below are */
    bk_device *dev;
    const arch_hparams *hp;
    const arch_weights *w;
    int64_t n;              /* tokens in the batch */
    const int32_t *tokens;  /* (n) */
    const int32_t *pos;     /* (n) each token's position in its sequence */
    bk_tensor x;            /* (n, n_embd) the residual stream */
    bk_tensor h;            /* (n, n_embd) normalized input of a sub-layer */
    bk_tensor o;            /* (n, n_embd) a sub-layer's output */
    bk_tensor q;            /* (n, n_head*head_dim) */
    bk_tensor k, v;         /* (n, n_head_kv*head_dim) */
    bk_tensor att;          /* (n, n_head*head_dim) attention output before wo */
    bk_tensor gate, up;     /* (n, n_ff) */
    const fwd_seq *seqs;    /* (n_seqs) covering rows 0..n-1 in order */
    int n_seqs;
    int64_t logits_first;   /* logits are wanted for tokens logits_first .. n-1 */
    bk_tensor logits;       /* (n - logits_first, n_vocab) */
    brasa_error *err;
} fwd;

#define FWD_TRY(expr)                                                                               \
    do {                                                                                            \
        brasa_status fwd_st_ = (expr);                                                              \
        if (fwd_st_ != BRASA_OK)                                                                    \
            return fwd_st_;                                                                         \
    } while (0)

/* x = tok_embd[tokens] * embd_scale, on the first place */
brasa_status fwd_embed(fwd *f);
/* Called before layer il: moves the pass (and the residual stream x) to the place that runs it. */
brasa_status fwd_layer_start(fwd *f, int il);
/* out = rmsnorm(in) * weight */
brasa_status fwd_norm(fwd *f, const bk_tensor *in, const bk_tensor *weight, bk_tensor *out);
/* out = wo · attention(rope(q), rope(k), v) of layer il over in (QKV bias and QK-norm when the layer
 * has them; the layer's rope base and window follow the sliding-window pattern) */
brasa_status fwd_self_attention(fwd *f, int il, const bk_tensor *in, bk_tensor *out);
/* out = down(act(gate · in) * (up · in)) */
brasa_status fwd_ffn(fwd *f, int il, const bk_tensor *in, bk_tensor *out);
/* x += o */
brasa_status fwd_residual(fwd *f, const bk_tensor *o);
/* logits = output · rmsnorm(x) for the wanted tokens, softcapped when the model says so */
brasa_status fwd_output(fwd *f);

/* The pre-norm decoder of the llama family: x += attn(norm(x)); x += ffn(norm(x)). */
brasa_status fwd_standard_decoder(fwd *f);

#endif
