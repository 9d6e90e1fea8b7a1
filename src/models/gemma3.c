/* gemma3.c: the Gemma 3 architecture (text). Differences from Llama: embeddings scaled by
 * sqrt(n_embd); RMSNorm also after attention and after the FFN (the "sandwich"); per-head RMSNorm
 * of Q and K; GeGLU (tanh GELU) FFN; NEOX rope; local sliding-window layers with their own rope base
 * interleaved with global layers. The converter stores norm weights as 1 + w, so they multiply
 * directly. */
#include <math.h>

#include "core/error.h"
#include "models/decoder.h"

/* Architecture constants for files that do not carry them (Gemma 3's published configuration). */
#define GEMMA3_SWA_PATTERN 6          /* five local layers, then one global */
#define GEMMA3_ROPE_BASE_LOCAL 10000.0f

static brasa_status gemma3_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    hp->embd_scale = sqrtf((float)hp->n_embd);
    if (!gguf_find(f, "gemma3.attention.sliding_window_pattern"))
        hp->swa_pattern = GEMMA3_SWA_PATTERN;
    hp->rope_base_local = GEMMA3_ROPE_BASE_LOCAL;
    gguf_get_f32(f, "gemma3.rope.local.freq_base", &hp->rope_base_local);
    if (!(hp->rope_base_local > 1.0f))
        return err_set(err, BRASA_ERR_FORMAT, "gemma3 local rope base %g is invalid", (double)hp->rope_base_local);
    return BRASA_OK;
}

static brasa_status gemma3_forward(fwd *f) {
    FWD_TRY(fwd_embed(f));
    for (int il = f->stage.layer_first; il < f->stage.layer_end; il++) {
        const arch_layer *l = &f->w->layers[il];
        fwd_acts *a = &f->a;
        FWD_TRY(fwd_layer_start(f, il));
        /* attention sub-layer, normalized before and after */
        FWD_TRY(fwd_norm(f, &a->x, &l->attn_norm, &a->h));
        FWD_TRY(fwd_self_attention(f, il, &a->h, &a->o));
        FWD_TRY(fwd_norm(f, &a->o, &l->attn_post_norm, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
        /* GeGLU feed-forward sub-layer, likewise */
        FWD_TRY(fwd_norm(f, &a->x, &l->ffn_norm, &a->h));
        FWD_TRY(fwd_ffn(f, il, &a->h, &a->o));
        FWD_TRY(fwd_norm(f, &a->o, &l->ffn_post_norm, &a->o));
        FWD_TRY(fwd_residual(f, &a->o));
    }
    return fwd_output(f);
}

const arch_def arch_gemma3 = { "gemma3", ARCH_T_ATTN | ARCH_T_QK_NORM | ARCH_T_POST_NORMS | ARCH_T_FFN, ARCH_T_QKV_BIAS,
                               BK_ROPE_NEOX, BK_ACT_GELU_TANH, gemma3_hparams, gemma3_forward, false };
