/* qwen2.c: the Qwen2 / Qwen2.5 architecture: the Llama decoder with biases on the Q, K and V
 * projections and rope over the two halves of each head (NEOX mode). */
#include "models/decoder.h"

static brasa_status qwen2_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    (void)f;
    (void)err;
    hp->rope_mode = BK_ROPE_NEOX;
    hp->ffn_act = BK_ACT_SILU;
    return BRASA_OK;
}

const arch_def arch_qwen2 = { "qwen2", ARCH_T_ATTN | ARCH_T_QKV_BIAS | ARCH_T_FFN, 0, qwen2_hparams, fwd_standard_decoder };
