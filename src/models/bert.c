/* bert.c: the BERT encoder (bert, as llama.cpp converts BertModel: all-MiniLM, bge, e5 and other
 * sentence-embedding models). Unlike the decoders: the input embedding is the sum of the token's,
 * its absolute position's and its segment's learned embeddings, under a LayerNorm; every token
 * attends to the whole input (no causal mask, no rope); each sub-layer is added to the residual
 * stream and the sum normalized by a LayerNorm with bias ("post-norm", Devlin et al. 2018, after
 * Vaswani et al. 2017); the FFN is up, GELU (the erf form), down, every product with a bias. There
 * is no output head: the final hidden states are what brasa_embed pools. */
#include "core/error.h"
#include "models/decoder.h"

/* Every BERT file is an encoder of learned positions: its context is the position table's rows;
 * its segments are the token-type table's rows. */
static brasa_status bert_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    if (hp->n_ctx_train < 1)
        return err_set(err, BRASA_ERR_FORMAT, "bert.context_length is required: it is the number of learned positions");
    hp->rope_dim = 0; /* positions are embeddings, not rotations */
    const gguf_tensor *types = gguf_find_tensor(f, "token_types.weight");
    if (types && (types->n_dims != 2 || types->ne[1] < 1 || types->ne[1] > 1024))
        return err_set(err, BRASA_ERR_FORMAT, "tensor 'token_types.weight' has %lld rows; BERT has 1 to 1024 segments",
                       (long long)types->ne[1]);
    hp->n_token_types = types ? (int32_t)types->ne[1] : 0;
    return BRASA_OK;
}

static brasa_status layer_norm(fwd *f, const bk_tensor *in, const bk_tensor *w, const bk_tensor *b, bk_tensor *out) {
    return f->dev->ops->layer_norm(f->dev, in, w, b, f->hp->norm_eps, out, f->err);
}

/* x = LayerNorm(tok_embd[token] + pos_embd[position] + type_embd[segment]) */
static brasa_status embed(fwd *f) {
    const arch_weights *w = f->w;
    const bk_device_ops *ops = f->dev->ops;
    fwd_acts *a = &f->a;
    FWD_TRY(ops->get_rows(f->dev, &w->tok_embd, f->tokens, f->n, &a->x, f->err));
    FWD_TRY(ops->get_rows(f->dev, &w->pos_embd, f->pos, f->n, &a->o, f->err));
    FWD_TRY(ops->add(f->dev, &a->x, &a->o, &a->x, f->err));
    if (w->type_embd.data) {
        FWD_TRY(ops->get_rows(f->dev, &w->type_embd, f->token_types, f->n, &a->o, f->err));
        FWD_TRY(ops->add(f->dev, &a->x, &a->o, &a->x, f->err));
    }
    return layer_norm(f, &a->x, &w->tok_norm, &w->tok_norm_b, &a->x);
}

/* out = down · GELU(up · in + b_up) + b_down */
static brasa_status ffn(fwd *f, const arch_layer *l, const bk_tensor *in, bk_tensor *out) {
    const bk_device_ops *ops = f->dev->ops;
    FWD_TRY(ops->matmul(f->dev, &l->ffn_up, in, &l->ffn_up_b, &f->a.up, f->err));
    FWD_TRY(ops->act(f->dev, &f->a.up, f->hp->ffn_act, &f->a.up, f->err));
    return ops->matmul(f->dev, &l->ffn_down, &f->a.up, &l->ffn_down_b, out, f->err);
}

static brasa_status bert_forward(fwd *f) {
    const bk_device_ops *ops = f->places[0].dev->ops;
    if (!ops->layer_norm || !ops->act)
        return err_set(f->err, BRASA_ERR_UNSUPPORTED, "the %s device has no LayerNorm or GELU kernels: bert runs on the CPU",
                       ops->name);
    FWD_TRY(fwd_begin(f));
    FWD_TRY(embed(f));
    for (int il = f->stage.layer_first; il < f->stage.layer_end; il++) {
        const arch_layer *l = &f->w->layers[il];
        fwd_acts *a = &f->a;
        FWD_TRY(fwd_layer_start(f, il));
        /* x = LayerNorm(x + attention(x)) */
        FWD_TRY(fwd_self_attention(f, il, &a->x, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
        FWD_TRY(layer_norm(f, &a->x, &l->attn_out_norm, &l->attn_out_norm_b, &a->x));
        /* x = LayerNorm(x + FFN(x)) */
        FWD_TRY(ffn(f, l, &a->x, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
        FWD_TRY(layer_norm(f, &a->x, &l->layer_out_norm, &l->layer_out_norm_b, &a->x));
    }
    return fwd_hidden(f, &f->a.x);
}

const arch_def arch_bert = { "bert", ARCH_T_BERT, 0, BK_ROPE_NORMAL, BK_ACT_GELU_ERF, bert_hparams, bert_forward, true };
