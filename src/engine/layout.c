/* layout.c: a context's memory plan: defaults, limits and buffer sizes (see layout.h). */
#include "engine/layout.h"

#include <string.h>

#include "backend/backend.h"
#include "core/error.h"
#include "models/decoder.h"
#include "platform/platform.h"
#include "quant/quant.h"

uint64_t layout_bytes(int64_t n, int64_t rows, uint32_t elem_bytes) {
    return ((uint64_t)n * (uint64_t)rows * elem_bytes + 63) & ~(uint64_t)63;
}

uint64_t layout_f32_bytes(int64_t n, int64_t rows) {
    return layout_bytes(n, rows, sizeof(float));
}

uint64_t layout_act_bytes(const arch_hparams *hp, int64_t n_batch) {
    uint64_t sum = 0;
    for (int i = 0; i < fwd_act_count; i++)
        sum += layout_bytes(arch_dim_size(hp, fwd_act_defs[i].width), fwd_act_rows(hp, i, n_batch),
                            (uint32_t)quant_get(fwd_act_defs[i].type)->type_size);
    return sum;
}

uint32_t layout_kv_quant(const brasa_context_params *p) {
    return p->kv_type == BRASA_KV_F32 ? QUANT_F32 : QUANT_F16;
}

uint64_t layout_layer_kv_bytes(const arch_hparams *hp, int il, const brasa_context_params *p) {
    const int64_t KV = (int64_t)hp->n_head_kv * hp->head_dim;
    const uint32_t kv_elem = (uint32_t)quant_get(layout_kv_quant(p))->type_size;
    return 2 * (uint64_t)p->n_seq * layout_bytes(KV, arch_kv_rows(hp, il, p->n_ctx, p->n_batch), kv_elem);
}

brasa_status layout_plan_context(const arch_hparams *hp, const brasa_context_params *params, layout_plan *out,
                                 brasa_error *err) {
    const int32_t n_ctx_train = hp->n_ctx_train;
    memset(out, 0, sizeof *out);
    brasa_context_params p = params ? *params : brasa_context_default_params();
    if (p.n_ctx < 0 || p.n_batch < 0 || p.n_threads < 0 || p.n_seq < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "context size, batch, threads and sequences must not be negative");
    if (p.n_seq == 0)
        p.n_seq = 1;
    if (p.kv_type == BRASA_KV_DEFAULT)
        p.kv_type = BRASA_KV_F16;
    if (p.kv_type != BRASA_KV_F16 && p.kv_type != BRASA_KV_F32)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "KV cache type %d is not one of f16, f32", p.kv_type);
    if (p.n_seq > LAYOUT_MAX_SEQ)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%d sequences is beyond the limit of %d", p.n_seq, LAYOUT_MAX_SEQ);
    if (p.n_ctx == 0)
        p.n_ctx = n_ctx_train > 0 && n_ctx_train < LAYOUT_DEFAULT_MAX_CTX ? n_ctx_train : LAYOUT_DEFAULT_MAX_CTX;
    if (p.n_ctx > (1 << 22))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "context of %d tokens is beyond brasa's limit of %d", p.n_ctx, 1 << 22);
    if (hp->encoder && p.n_ctx > n_ctx_train)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "context of %d tokens is beyond the model's %d learned positions",
                       p.n_ctx, n_ctx_train);
    /* without causal attention every token needs the whole input: one batch holds the context */
    if (hp->bidirectional && p.n_ctx > LAYOUT_MAX_BATCH)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "context of %d tokens: a model whose tokens see the whole input "
                       "evaluates it at once, at most %d tokens", p.n_ctx, LAYOUT_MAX_BATCH);
    if (hp->bidirectional)
        p.n_batch = p.n_ctx;
    if (p.n_batch == 0)
        p.n_batch = LAYOUT_DEFAULT_BATCH;
    if (p.n_batch > p.n_ctx)
        p.n_batch = p.n_ctx;
    if (p.n_batch < p.n_seq && p.n_batch < BK_BATCH_EXACT_MAX)
        p.n_batch = p.n_seq < BK_BATCH_EXACT_MAX ? p.n_seq : BK_BATCH_EXACT_MAX; /* room for a step of every sequence */
    if (p.n_batch > LAYOUT_MAX_BATCH)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "batch of %d tokens is beyond the limit of %d", p.n_batch,
                       LAYOUT_MAX_BATCH);
    if (p.n_threads == 0)
        p.n_threads = plat_physical_cores(); /* hyper-threads share the vector units: no gain */
    if (p.n_threads > 1024)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%d threads is beyond the limit of 1024", p.n_threads);
    out->params = p;

    const int64_t KV = (int64_t)hp->n_head_kv * hp->head_dim;
    const uint32_t kv_elem = (uint32_t)quant_get(layout_kv_quant(&p))->type_size;
    for (int il = 0; il < hp->n_layer; il++) {
        out->kv_bytes += layout_layer_kv_bytes(hp, il, &p);
        out->kv_bytes_full += 2 * (uint64_t)p.n_seq * layout_bytes(KV, p.n_ctx, kv_elem);
    }
    out->act_bytes = layout_act_bytes(hp, p.n_batch);
    out->logit_bytes = (uint64_t)p.n_seq * (uint64_t)arch_dim_size(hp, ARCH_DIM_OUTPUT) * sizeof(float);
    /* a model that makes embeddings: one batch's hidden states on the host, for pooling */
    if (hp->encoder || hp->pooling != BRASA_POOLING_NONE)
        out->embd_bytes = (uint64_t)p.n_batch * (uint64_t)hp->n_embd * sizeof(float);
    return BRASA_OK;
}
