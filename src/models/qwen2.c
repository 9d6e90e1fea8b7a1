/* qwen2.c: the Qwen2 / Qwen2.5 architecture: the Llama decoder with biases on the Q, K and V
 * projections and rope over the two halves of each head (NEOX mode). */
#include "models/decoder.h"

const arch_def arch_qwen2 = { "qwen2", ARCH_T_ATTN | ARCH_T_QKV_BIAS | ARCH_T_FFN, 0, BK_ROPE_NEOX, BK_ACT_SILU, NULL,
                              fwd_standard_decoder, false };
