/* qwen2.c: the Qwen2 / Qwen2.5 architecture: the Llama decoder with biases on the Q, K and V
 * projections and rope over the two halves of each head (NEOX mode). */
#include "core/error.h"
#include "models/decoder.h"

static brasa_status qwen2_load(const gguf_file *f, arch_hparams *hp, arch_weights *w, brasa_error *err) {
    brasa_status st = arch_read_common(f, "qwen2", hp, err);
    if (st != BRASA_OK)
        return st;
    hp->rope_mode = BK_ROPE_NEOX;
    hp->ffn_act = BK_ACT_SILU;
    return arch_bind_standard(f, hp, (arch_tensor_set){ .qkv_bias = true }, w, err);
}

static brasa_status qwen2_forward(fwd *f) {
    return fwd_standard_decoder(f);
}

const arch_def arch_qwen2 = { "qwen2", qwen2_load, qwen2_forward };
