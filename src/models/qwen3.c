/* qwen3.c: the Qwen3 architectures. Dense qwen3 is the Qwen2 decoder without the QKV biases and
 * with a per-head RMSNorm of Q and K before rope (NEOX), the head size from attention.key_length
 * (128 where n_embd / n_head would say otherwise). qwen3moe (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B,
 * Qwen3-235B-A22B) replaces every FFN with routed experts: a router's softmax over the experts,
 * the top expert_used_count of them with their weights renormalized to sum to one (the released
 * models' norm_topk_prob), each a SwiGLU FFN of expert_feed_forward_length, no shared expert. */
#include "models/decoder.h"

/* The router's weights are renormalized unless the file says otherwise (llama.cpp's converter
 * writes no key for it; the released models' norm_topk_prob is true). */
static brasa_status qwen3moe_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    (void)err;
    if (!gguf_find(f, "qwen3moe.expert_weights_norm"))
        hp->expert_weights_norm = true;
    return BRASA_OK;
}

const arch_def arch_qwen3 = { "qwen3", ARCH_T_ATTN | ARCH_T_QK_NORM | ARCH_T_FFN, ARCH_T_QKV_BIAS, BK_ROPE_NEOX, BK_ACT_SILU,
                              NULL, fwd_standard_decoder, false };
const arch_def arch_qwen3moe = { "qwen3moe", ARCH_T_ATTN | ARCH_T_QK_NORM | ARCH_T_MOE, ARCH_T_QKV_BIAS, BK_ROPE_NEOX,
                                 BK_ACT_SILU, qwen3moe_hparams, fwd_standard_decoder, false };
