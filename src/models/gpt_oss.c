/* gpt_oss.c: OpenAI's gpt-oss (gpt-oss-20b, gpt-oss-120b), GGUF architecture "gpt-oss". A pre-norm
 * decoder of routed experts with, against qwen3moe: biases on the q, k, v and output projections,
 * on the router and on every expert's gate, up and down; attention sinks (a learned logit per head
 * in each softmax's denominator); sliding-window layers (the even ones) alternating with full ones,
 * all with the same rope and its YaRN scaling; the experts' weights a softmax over the chosen top-k
 * router logits; the clamped SwiGLU of OpenAI's reference implementation (BK_ACT_SWIGLU_OAI); no
 * QK norm; and the norm before the experts stored as post_attention_norm. Facts from llama.cpp's
 * loader and graph (src/models/openai-moe.cpp) and OpenAI's gpt_oss/torch/model.py. */
#include "core/error.h"
#include "models/decoder.h"

/* Every second layer is global: llama.cpp's default for files without the pattern key. */
#define GPT_OSS_SWA_PATTERN 2

static brasa_status gpt_oss_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    if (hp->sliding_window < 1)
        return err_set(err, BRASA_ERR_FORMAT, "gpt-oss.attention.sliding_window is %d; gpt-oss's sliding layers need a window",
                       hp->sliding_window);
    if (!gguf_find(f, "gpt-oss.attention.sliding_window_pattern"))
        hp->swa_pattern = GPT_OSS_SWA_PATTERN;
    gguf_get_f32(f, "gpt-oss.rope.freq_base_swa", &hp->rope_base_local);
    if (!(hp->rope_base_local > 1.0f))
        return err_set(err, BRASA_ERR_FORMAT, "gpt-oss sliding-window rope base %g is invalid", (double)hp->rope_base_local);
    hp->rope_scale_local = true;
    /* the chosen experts' softmax over their own logits is the full softmax renormalized */
    hp->expert_weights_norm = true;
    return BRASA_OK;
}

static brasa_status gpt_oss_forward(fwd *f) {
    FWD_TRY(fwd_embed(f));
    for (int il = f->stage.layer_first; il < f->stage.layer_end; il++) {
        const arch_layer *l = &f->w->layers[il];
        fwd_acts *a = &f->a;
        FWD_TRY(fwd_layer_start(f, il));
        FWD_TRY(fwd_norm(f, &a->x, &l->attn_norm, &a->h));
        FWD_TRY(fwd_self_attention(f, il, &a->h, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
        FWD_TRY(fwd_norm(f, &a->x, &l->attn_post_norm, &a->h));
        FWD_TRY(fwd_moe(f, il, &a->h, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
    }
    return fwd_output(f);
}

const arch_def arch_gpt_oss = { "gpt-oss",
                                ARCH_T_ATTN | ARCH_T_QKV_BIAS | ARCH_T_OUT_BIAS | ARCH_T_SINKS | ARCH_T_ATTN_POST_NORM |
                                    ARCH_T_EXPERTS | ARCH_T_MOE_BIAS,
                                0, BK_ROPE_NEOX, BK_ACT_SWIGLU_OAI, gpt_oss_hparams, gpt_oss_forward, false };
