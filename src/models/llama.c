/* llama.c: the Llama architecture (Llama 2/3, SmolLM, Mistral-style dense models).
 * Pre-norm decoder, RMSNorm, grouped-query attention, SwiGLU FFN. The GGUF converter permutes Q and
 * K so that rope rotates adjacent pairs ("normal" mode). */
#include "core/error.h"
#include "models/decoder.h"

static brasa_status llama_load(const gguf_file *f, arch_hparams *hp, arch_weights *w, brasa_error *err) {
    brasa_status st = arch_read_common(f, "llama", hp, err);
    if (st != BRASA_OK)
        return st;
    hp->rope_mode = BK_ROPE_NORMAL;
    hp->ffn_act = BK_ACT_SILU;
    return arch_bind_standard(f, hp, (arch_tensor_set){ .qkv_bias = false }, w, err);
}

static brasa_status llama_forward(fwd *f) {
    return fwd_standard_decoder(f);
}

const arch_def arch_llama = { "llama", llama_load, llama_forward };
