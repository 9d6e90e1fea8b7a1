/* decoder.c: the transformer building blocks, each a few backend operations. */
#include "models/decoder.h"

#include "core/error.h"

#include <math.h>
#include <stddef.h>

#define OPS(f) ((f)->dev->ops)

#define FWD_ACT_DEF(name, width, per_slot, type) { #name, offsetof(fwd_acts, name), width, per_slot, type },
const fwd_act_def fwd_act_defs[] = { FWD_ACTS(FWD_ACT_DEF) };
#undef FWD_ACT_DEF
const int fwd_act_count = (int)(sizeof fwd_act_defs / sizeof fwd_act_defs[0]);
static_assert(sizeof(fwd_acts) == sizeof fwd_act_defs / sizeof fwd_act_defs[0] * sizeof(bk_tensor), "one tensor per activation");

bk_tensor *fwd_act_at(fwd_acts *a, int i) {
    return (bk_tensor *)((char *)a + fwd_act_defs[i].offset);
}

int64_t fwd_act_rows(const arch_hparams *hp, int i, int64_t n) {
    if (arch_dim_size(hp, fwd_act_defs[i].width) <= 0)
        return 0;
    return fwd_act_defs[i].per_slot ? n * hp->n_expert_used : n;
}

fwd_acts fwd_acts_rows(const fwd_acts *a, const arch_hparams *hp, int64_t n) {
    fwd_acts r = *a;
    for (int i = 0; i < fwd_act_count; i++) {
        bk_tensor *t = fwd_act_at(&r, i);
        *t = bk_rows(t, 0, fwd_act_rows(hp, i, n));
    }
    return r;
}

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
    f->place = i;
    f->dev = f->places[i].dev;
    f->a = f->places[i].a;
}

brasa_status fwd_layer_start(fwd *f, int il) {
    if (f->place + 1 >= f->n_places || il < f->places[f->place + 1].first_layer)
        return BRASA_OK;
    const bk_tensor from = f->a.x;
    use_place(f, f->place + 1);
    return bk_copy(&from, &f->a.x, f->err);
}

brasa_status fwd_begin(fwd *f) {
    use_place(f, 0);
    return BRASA_OK;
}

brasa_status fwd_embed(fwd *f) {
    use_place(f, 0);
    if (f->stage.in)
        return f->stage.in(f, f->stage.user);
    FWD_TRY(OPS(f)->get_rows(f->dev, &f->w->tok_embd, f->tokens, f->n, &f->a.x, f->err));
    if (f->hp->embd_scale != 1.0f)
        FWD_TRY(OPS(f)->scale(f->dev, &f->a.x, f->hp->embd_scale, f->err));
    return BRASA_OK;
}

brasa_status fwd_norm(fwd *f, const bk_tensor *in, const bk_tensor *weight, bk_tensor *out) {
    return OPS(f)->rms_norm(f->dev, in, weight, in->ne0, f->hp->norm_eps, out, f->err);
}

/* The rope of layer il: sliding-window layers (gemma3) turn at their own base, unscaled. */
static bk_rope_params layer_rope(const fwd *f, int il, int32_t n_head) {
    const arch_hparams *hp = f->hp;
    const bool local = arch_layer_is_local(hp, il);
    bk_rope_params p = { .n_head = n_head, .head_dim = hp->head_dim, .rope_dim = hp->rope_dim, .mode = hp->rope_mode,
                         .base = local ? hp->rope_base_local : hp->rope_base, .freq_scale = 1.0f, .mscale = 1.0f };
    if (local && !hp->rope_scale_local)
        return p;
    p.freq_scale = hp->rope_freq_scale;
    p.freq_factors = f->w->rope_freqs.data ? &f->w->rope_freqs : NULL;
    if (hp->rope_scaling == ARCH_ROPE_SCALING_YARN) {
        p.ext_factor = 1.0f;
        p.corr_low = hp->yarn_corr_low;
        p.corr_high = hp->yarn_corr_high;
        p.mscale = hp->yarn_mscale;
    }
    return p;
}

brasa_status fwd_self_attention(fwd *f, int il, const bk_tensor *in, bk_tensor *out) {
    const arch_hparams *hp = f->hp;
    const arch_layer *l = &f->w->layers[il];
    const bk_device_ops *ops = OPS(f);
    fwd_acts *a = &f->a;
    /* projections */
    const bk_matmul_out qkv[3] = { { &l->wq, present(&l->bq) ? &l->bq : NULL, &a->q },
                                   { &l->wk, present(&l->bk) ? &l->bk : NULL, &a->k },
                                   { &l->wv, present(&l->bv) ? &l->bv : NULL, &a->v } };
    FWD_TRY(ops->matmul_group(f->dev, in, qkv, 3, f->err));
    /* per-head RMSNorm of queries and keys (gemma3, qwen3) */
    if (present(&l->q_norm))
        FWD_TRY(ops->rms_norm(f->dev, &a->q, &l->q_norm, hp->head_dim, hp->norm_eps, &a->q, f->err));
    if (present(&l->k_norm))
        FWD_TRY(ops->rms_norm(f->dev, &a->k, &l->k_norm, hp->head_dim, hp->norm_eps, &a->k, f->err));
    /* rotary position embedding */
    if (hp->rope_dim > 0) {
        const bk_rope_params rq = layer_rope(f, il, hp->n_head), rk = layer_rope(f, il, hp->n_head_kv);
        FWD_TRY(ops->rope(f->dev, &a->q, f->pos, &rq, f->err));
        FWD_TRY(ops->rope(f->dev, &a->k, f->pos, &rk, f->err));
    }
    /* an encoder: each sequence's queries see all of its keys, which the batch holds */
    if (hp->bidirectional) {
        const bk_attention_params ap = { hp->n_head, hp->n_head_kv, hp->head_dim, hp->attn_scale, hp->attn_softcap, 0, true, NULL };
        for (int s = 0; s < f->n_seqs; s++) {
            const fwd_seq *sq = &f->seqs[s];
            const bk_tensor k = bk_rows(&a->k, sq->row0, sq->n), v = bk_rows(&a->v, sq->row0, sq->n);
            const bk_tensor q = bk_rows(&a->q, sq->row0, sq->n);
            bk_tensor att = bk_rows(&a->att, sq->row0, sq->n);
            FWD_TRY(ops->attention(f->dev, &q, &k, &v, f->pos + sq->row0, &ap, &att, f->err));
        }
        return ops->matmul(f->dev, &l->wo, &a->att, present(&l->bo) ? &l->bo : NULL, out, f->err);
    }
    /* each sequence appends to its own cache and attends over it */
    const bool local = arch_layer_is_local(hp, il);
    bk_attention_params ap = { hp->n_head, hp->n_head_kv, hp->head_dim, hp->attn_scale, hp->attn_softcap,
                               local ? hp->sliding_window : 0, false, present(&l->attn_sinks) ? &l->attn_sinks : NULL };
    for (int s = 0; s < f->n_seqs; s++) {
        const fwd_seq *sq = &f->seqs[s];
        const bk_tensor k = bk_rows(&a->k, sq->row0, sq->n), v = bk_rows(&a->v, sq->row0, sq->n);
        const bk_tensor q = bk_rows(&a->q, sq->row0, sq->n);
        bk_tensor att = bk_rows(&a->att, sq->row0, sq->n);
        const int32_t *pos = f->pos + sq->row0;
        FWD_TRY(cache_write(f, &k, &sq->k_cache[il], pos[0]));
        FWD_TRY(cache_write(f, &v, &sq->v_cache[il], pos[0]));
        FWD_TRY(ops->attention(f->dev, &q, &sq->k_cache[il], &sq->v_cache[il], pos, &ap, &att, f->err));
    }
    return ops->matmul(f->dev, &l->wo, &a->att, present(&l->bo) ? &l->bo : NULL, out, f->err);
}

brasa_status fwd_ffn(fwd *f, int il, const bk_tensor *in, bk_tensor *out) {
    const arch_layer *l = &f->w->layers[il];
    const bk_device_ops *ops = OPS(f);
    fwd_acts *a = &f->a;
    const bk_matmul_out gate_up[2] = { { &l->ffn_gate, NULL, &a->gate }, { &l->ffn_up, NULL, &a->up } };
    FWD_TRY(ops->matmul_group(f->dev, in, gate_up, 2, f->err));
    FWD_TRY(ops->glu(f->dev, &a->gate, &a->up, f->hp->ffn_act, &a->gate, f->err));
    return ops->matmul(f->dev, &l->ffn_down, &a->gate, NULL, out, f->err);
}

brasa_status fwd_moe(fwd *f, int il, const bk_tensor *in, bk_tensor *out) {
    const arch_hparams *hp = f->hp;
    const arch_layer *l = &f->w->layers[il];
    const bk_device_ops *ops = OPS(f);
    fwd_acts *a = &f->a;
    if (!ops->moe_route || !ops->matmul_id || !ops->moe_sum)
        return err_set(f->err, BRASA_ERR_UNSUPPORTED, "the %s device has no kernels for routed experts", ops->name);
    /* the router picks each token's experts and their weights, on the device */
    FWD_TRY(ops->matmul(f->dev, &l->ffn_gate_inp, in, present(&l->ffn_gate_inp_b) ? &l->ffn_gate_inp_b : NULL, &a->router,
                        f->err));
    FWD_TRY(ops->moe_route(f->dev, &a->router, hp->n_expert_used, hp->expert_weights_norm, &a->expert_ids, &a->expert_w,
                           f->err));
    /* each chosen expert's gated FFN, one slot per token and expert */
    const bk_matmul_out gate_up[2] = { { &l->ffn_gate_exps, present(&l->ffn_gate_exps_b) ? &l->ffn_gate_exps_b : NULL, &a->gate_exp },
                                       { &l->ffn_up_exps, present(&l->ffn_up_exps_b) ? &l->ffn_up_exps_b : NULL, &a->up_exp } };
    FWD_TRY(ops->matmul_id(f->dev, in, &a->expert_ids, gate_up, 2, f->err));
    FWD_TRY(ops->glu(f->dev, &a->gate_exp, &a->up_exp, hp->ffn_act, &a->gate_exp, f->err));
    const bk_matmul_out down = { &l->ffn_down_exps, present(&l->ffn_down_exps_b) ? &l->ffn_down_exps_b : NULL, &a->down_exp };
    FWD_TRY(ops->matmul_id(f->dev, &a->gate_exp, &a->expert_ids, &down, 1, f->err));
    /* weighted by the router */
    return ops->moe_sum(f->dev, &a->down_exp, &a->expert_w, out, f->err);
}

brasa_status fwd_residual(fwd *f, const bk_tensor *o) {
    return OPS(f)->add(f->dev, &f->a.x, o, &f->a.x, f->err);
}

brasa_status fwd_hidden(fwd *f, const bk_tensor *h) {
    if (!f->embeddings)
        return err_set(f->err, BRASA_ERR_UNSUPPORTED, "an embedding model has no output head for next-token logits");
    f->hidden = bk_rows(h, 0, f->n);
    return BRASA_OK;
}

brasa_status fwd_output(fwd *f) {
    if (f->stage.out) {
        bool head_here = false;
        FWD_TRY(f->stage.out(f, f->stage.user, &head_here));
        if (!head_here)
            return BRASA_OK;
    }
    if (f->embeddings) {
        FWD_TRY(fwd_norm(f, &f->a.x, &f->w->output_norm, &f->a.h));
        return fwd_hidden(f, &f->a.h);
    }
    bk_tensor x = bk_rows(&f->a.x, f->logits_first, f->n - f->logits_first);
    bk_tensor h = bk_rows(&f->a.h, 0, x.ne1);
    FWD_TRY(fwd_norm(f, &x, &f->w->output_norm, &h));
    FWD_TRY(OPS(f)->matmul(f->dev, &f->w->output, &h, NULL, &f->logits, f->err));
    if (f->hp->final_softcap > 0)
        FWD_TRY(OPS(f)->softcap(f->dev, &f->logits, f->hp->final_softcap, f->err));
    return BRASA_OK;
}

brasa_status fwd_standard_decoder(fwd *f) {
    FWD_TRY(fwd_embed(f));
    for (int il = f->stage.layer_first; il < f->stage.layer_end; il++) {
        const arch_layer *l = &f->w->layers[il];
        fwd_acts *a = &f->a;
        FWD_TRY(fwd_layer_start(f, il));
        FWD_TRY(fwd_norm(f, &a->x, &l->attn_norm, &a->h));
        FWD_TRY(fwd_self_attention(f, il, &a->h, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
        FWD_TRY(fwd_norm(f, &a->x, &l->ffn_norm, &a->h));
        if (present(&l->ffn_gate_inp))
            FWD_TRY(fwd_moe(f, il, &a->h, &a->o));
        else
            FWD_TRY(fwd_ffn(f, il, &a->h, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
    }
    return fwd_output(f);
}
