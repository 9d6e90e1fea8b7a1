/* layout.h: how much memory a context takes, decided before anything is allocated. The context
 * allocates exactly what this plans, and `brasa fit` predicts with the same plan, so the two can
 * never disagree about what a context of n tokens costs. */
#ifndef BRASA_ENGINE_LAYOUT_H
#define BRASA_ENGINE_LAYOUT_H

#include <stdint.h>

#include "brasa.h"
#include "models/arch.h"

#define LAYOUT_DEFAULT_MAX_CTX 4096
#define LAYOUT_DEFAULT_BATCH 64
#define LAYOUT_MAX_SEQ 256
#define LAYOUT_MAX_BATCH 4096

/* A context's sizes: keys and values are stored as f16 (or f32 when asked), one row of n_head_kv * head_dim per
 * position, per layer and sequence (sliding-window layers keep a ring, see arch_kv_rows). */
typedef struct layout_plan {
    brasa_context_params params; /* with every default resolved */
    uint64_t kv_bytes;           /* the KV caches of all sequences */
    uint64_t kv_bytes_full;      /* what they would take if every layer kept the whole context */
    uint64_t act_bytes;          /* the activation buffers of one batch */
    uint64_t logit_bytes;        /* each sequence's last logits (none for an encoder) */
    uint64_t embd_bytes;         /* a batch's final hidden states on the host, when the model makes embeddings */
} layout_plan;

/* Resolves the defaults of params (n_ctx from hp's trained context, batch, threads, sequences),
 * checks the limits, and sizes the buffers. A model without causal attention takes its whole
 * context as one batch (its tokens all see each other), and an encoder's context is at most its
 * learned positions. */
brasa_status layout_plan_context(const arch_hparams *hp, const brasa_context_params *params, layout_plan *out,
                                 brasa_error *err);

/* Bytes of one tensor of `rows` rows of n values of elem_bytes each, as the context carves it
 * (64-byte aligned); layout_f32_bytes for f32 activations. */
uint64_t layout_bytes(int64_t n, int64_t rows, uint32_t elem_bytes);
uint64_t layout_f32_bytes(int64_t n, int64_t rows);

/* A batch of n_batch tokens' activations (decoder.h's table), as the context carves them. */
uint64_t layout_act_bytes(const arch_hparams *hp, int64_t n_batch);

/* The keys and values of layer il for every sequence of resolved params (the layer's share of kv_bytes). */
uint64_t layout_layer_kv_bytes(const arch_hparams *hp, int il, const brasa_context_params *p);

/* The quant type (QUANT_F16 or QUANT_F32) of the cache of resolved params. */
uint32_t layout_kv_quant(const brasa_context_params *p);

#endif
