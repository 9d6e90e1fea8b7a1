/* qwen3.c: the Qwen3 architectures. Dense qwen3 is the Qwen2 decoder without the QKV biases and
 * with a per-head RMSNorm of Q and K before rope (NEOX), the head size from attention.key_length
 * (128 where n_embd / n_head would say otherwise). qwen3moe (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B,
 * Qwen3-235B-A22B) replaces every FFN with routed experts: a router's softmax over the experts,
 * the top expert_used_count of them with their weights renormalized to sum to one (the released
 * models' norm_topk_prob), each a SwiGLU FFN of expert_feed_forward_length, no shared expert. */
#include "models/decoder.h"

static brasa_status qwen3_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    (void)f;
    (void)err;
    hp->rope_mode = BK_ROPE_NEOX;
    hp->ffn_act = BK_ACT_SILU;
    return BRASA_OK;
}

static brasa_status qwen3moe_hparams(const gguf_file *f, arch_hparams *hp, brasa_error *err) {
    const gguf_kv *norm = gguf_find(f, "qwen3moe.expert_weights_norm");
    hp->expert_weights_norm = norm && norm->type == GGUF_TYPE_BOOL ? gguf_kv_int_at(norm, 0) != 0 : true;
    return qwen3_hparams(f, hp, err);
}

const arch_def arch_qwen3 = { "qwen3", ARCH_T_ATTN | ARCH_T_QK_NORM | ARCH_T_FFN, ARCH_T_QKV_BIAS, qwen3_hparams,
                              fwd_standard_decoder };
const arch_def arch_qwen3moe = { "qwen3moe", ARCH_T_ATTN | ARCH_T_QK_NORM | ARCH_T_MOE, ARCH_T_QKV_BIAS, qwen3moe_hparams,
                                 fwd_standard_decoder };
