/* llama.c: the Llama architecture (Llama 2/3, SmolLM, Mistral-style dense models).
 * Pre-norm decoder, RMSNorm, grouped-query attention, SwiGLU FFN. The GGUF converter permutes Q and
 * K so that rope rotates adjacent pairs ("normal" mode). Llama 3.1-3.3 files carry per-pair rope
 * frequency divisors (rope_freqs.weight), which the attention block applies wherever present. */
#include "models/decoder.h"

const arch_def arch_llama = { "llama", ARCH_T_ATTN | ARCH_T_FFN, ARCH_T_QKV_BIAS, BK_ROPE_NORMAL, BK_ACT_SILU, NULL,
                              fwd_standard_decoder, false };
