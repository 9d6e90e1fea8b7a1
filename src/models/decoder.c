/* decoder.c: the transformer building blocks, each a few backend operations. */
#include "models/decoder.h"

#include <math.h>

#define OPS(f) ((f)->dev->ops)

static bool present(const bk_tensor *t) {
    return t->data != NULL;
}

/* Writes a sequence's new keys or values (rows of positions pos0 ...) into its cache: a ring for
 * sliding-window layers whose cache is shorter than the context, where position p lives at row
 * p mod rows, so the write may wrap. */
static brasa_status cache_write(fwd *f, const bk_tensor *src, bk_tensor *cache, int64_t pos0) {
    const int64_t rows = cache->ne1, at = pos0 % rows;
    const int64_t first = src->ne1 < rows - at ? src->ne1 : rows - at;
    const bk_tensor head = bk_rows(src, 0, first);
    FWD_TRY(OPS(f)->copy_rows(f->dev, &head, cache, at, f->err));
    if (first == src->ne1)
        return BRASA_OK;
    const bk_tensor tail = bk_rows(src, first, src->ne1 - first);
    return OPS(f)->copy_rows(f->dev, &tail, cache, 0, f->err);
}

/* Makes place i current: its device and activation views. */
static void use_place(fwd *f, int i) {
    const fwd_place *p = &f->places[i];
    f->place = i;
    f->dev = p->dev;
    f->x = p->x;
    f->h = p->h;
    f->o = p->o;
    f->q = p->q;
    f->k = p->k;
    f->v = p->v;
    f->att = p->att;
    f->gate = p->gate;
    f->up = p->up;
}

brasa_status fwd_layer_start(fwd *f, int il) {
    if (f->place + 1 >= f->n_places || il < f->places[f->place + 1].first_layer)
        return BRASA_OK;
    const bk_tensor from = f->x;
    use_place(f, f->place + 1);
    return bk_copy(&from, &f->x, f->err);
}

brasa_status fwd_embed(fwd *f) {
    use_place(f, 0);
    FWD_TRY(OPS(f)->get_rows(f->dev, &f->w->tok_embd, f->tokens, f->n, &f->x, f->err));
    if (f->hp->embd_scale != 1.0f)
        FWD_TRY(OPS(f)->scale(f->dev, &f->x, f->hp->embd_scale, f->err));
    return BRASA_OK;
}

brasa_status fwd_norm(fwd *f, const bk_tensor *in, const bk_tensor *weight, bk_tensor *out) {
    return OPS(f)->rms_norm(f->dev, in, weight, in->ne0, f->hp->norm_eps, out, f->err);
}

brasa_status fwd_self_attention(fwd *f, int il, const bk_tensor *in, bk_tensor *out) {
    const arch_hparams *hp = f->hp;
    const arch_layer *l = &f->w->layers[il];
    const bk_device_ops *ops = OPS(f);
    /* projections */
    const bk_matmul_out qkv[3] = { { &l->wq, present(&l->bq) ? &l->bq : NULL, &f->q },
                                   { &l->wk, present(&l->bk) ? &l->bk : NULL, &f->k },
                                   { &l->wv, present(&l->bv) ? &l->bv : NULL, &f->v } };
    FWD_TRY(ops->matmul_group(f->dev, in, qkv, 3, f->err));
    /* per-head RMSNorm of queries and keys (gemma3, qwen3) */
    if (present(&l->q_norm))
        FWD_TRY(ops->rms_norm(f->dev, &f->q, &l->q_norm, hp->head_dim, hp->norm_eps, &f->q, f->err));
    if (present(&l->k_norm))
        FWD_TRY(ops->rms_norm(f->dev, &f->k, &l->k_norm, hp->head_dim, hp->norm_eps, &f->k, f->err));
    /* rotary position embedding */
    const bool local = arch_layer_is_local(hp, il);
    const float base = local ? hp->rope_base_local : hp->rope_base;
    const float freq_scale = local ? 1.0f : hp->rope_freq_scale;
    FWD_TRY(ops->rope(f->dev, &f->q, hp->n_head, hp->head_dim, hp->rope_dim, f->pos, base, freq_scale, hp->rope_mode, f->err));
    FWD_TRY(ops->rope(f->dev, &f->k, hp->n_head_kv, hp->head_dim, hp->rope_dim, f->pos, base, freq_scale, hp->rope_mode, f->err));
    /* each sequence appends to its own cache and attends over it */
    bk_attention_params ap = { hp->n_head, hp->n_head_kv, hp->head_dim, hp->attn_scale, hp->attn_softcap,
                               local ? hp->sliding_window : 0 };
    for (int s = 0; s < f->n_seqs; s++) {
        const fwd_seq *sq = &f->seqs[s];
        const bk_tensor k = bk_rows(&f->k, sq->row0, sq->n), v = bk_rows(&f->v, sq->row0, sq->n);
        const bk_tensor q = bk_rows(&f->q, sq->row0, sq->n);
        bk_tensor att = bk_rows(&f->att, sq->row0, sq->n);
        const int32_t *pos = f->pos + sq->row0;
        FWD_TRY(cache_write(f, &k, &sq->k_cache[il], pos[0]));
        FWD_TRY(cache_write(f, &v, &sq->v_cache[il], pos[0]));
        FWD_TRY(ops->attention(f->dev, &q, &sq->k_cache[il], &sq->v_cache[il], pos, &ap, &att, f->err));
    }
    return ops->matmul(f->dev, &l->wo, &f->att, NULL, out, f->err);
}

brasa_status fwd_ffn(fwd *f, int il, const bk_tensor *in, bk_tensor *out) {
    const arch_layer *l = &f->w->layers[il];
    const bk_device_ops *ops = OPS(f);
    const bk_matmul_out gate_up[2] = { { &l->ffn_gate, NULL, &f->gate }, { &l->ffn_up, NULL, &f->up } };
    FWD_TRY(ops->matmul_group(f->dev, in, gate_up, 2, f->err));
    FWD_TRY(ops->glu(f->dev, &f->gate, &f->up, f->hp->ffn_act, &f->gate, f->err));
    return ops->matmul(f->dev, &l->ffn_down, &f->gate, NULL, out, f->err);
}

brasa_status fwd_residual(fwd *f, const bk_tensor *o) {
    return OPS(f)->add(f->dev, &f->x, o, &f->x, f->err);
}

brasa_status fwd_output(fwd *f) {
    bk_tensor x = bk_rows(&f->x, f->logits_first, f->n - f->logits_first);
    bk_tensor h = bk_rows(&f->h, 0, x.ne1);
    FWD_TRY(fwd_norm(f, &x, &f->w->output_norm, &h));
    FWD_TRY(OPS(f)->matmul(f->dev, &f->w->output, &h, NULL, &f->logits, f->err));
    if (f->hp->final_softcap > 0)
        FWD_TRY(OPS(f)->softcap(f->dev, &f->logits, f->hp->final_softcap, f->err));
    return BRASA_OK;
}

brasa_status fwd_standard_decoder(fwd *f) {
    FWD_TRY(fwd_embed(f));
    for (int il = 0; il < f->hp->n_layer; il++) {
        const arch_layer *l = &f->w->layers[il];
        FWD_TRY(fwd_layer_start(f, il));
        FWD_TRY(fwd_norm(f, &f->x, &l->attn_norm, &f->h));
        FWD_TRY(fwd_self_attention(f, il, &f->h, &f->o));
        FWD_TRY(fwd_residual(f, &f->o));
        FWD_TRY(fwd_norm(f, &f->x, &l->ffn_norm, &f->h));
        FWD_TRY(fwd_ffn(f, il, &f->h, &f->o));
        FWD_TRY(fwd_residual(f, &f->o));
    }
    return fwd_output(f);
}
