/* llama.c: the Llama architecture (Llama 2/3, SmolLM, Mistral-style dense models).
 * Pre-norm decoder, RMSNorm, grouped-query attention, SwiGLU FFN. The GGUF converter permutes Q and
 * K so that rope rotates adjacent pairs ("normal" mode). Llama 3.1-3.3 files carry per-pair rope
 * frequency divisors (rope_freqs.weight), which the attention block applies wherever present. */
#include "models/decoder.h"

static brasa_status llama_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    (void)f;
    (void)err;
    hp->rope_mode = BK_ROPE_NORMAL;
    hp->ffn_act = BK_ACT_SILU;
    return BRASA_OK;
}

const arch_def arch_llama = { "llama", ARCH_T_ATTN | ARCH_T_FFN, ARCH_T_QKV_BIAS, llama_hparams, fwd_standard_decoder };
