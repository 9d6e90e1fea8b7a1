#!/usr/bin/env python3
"""A GGUF file with a published model's shape and no weights, for speed figures where the real
file is out of reach (no mixture-of-experts weights are reachable here). The file holds the
metadata and tensor table of the shape (fewer layers on request, so it fits the machine), with
the tokenizer of a model you have, and its tensor data left as a hole; `gguf_synth cut` and
`gguf_synth fill` then give it random weights of the same types. Never a source of correctness.

Usage: shape_model.py SHAPE --tokenizer-from MODEL.gguf --layers N --out OUT.gguf [--synth GGUF_SYNTH]
       SHAPE: qwen3-30b-a3b (Qwen3-30B-A3B / Qwen3-Coder-30B-A3B: 128 experts, 8 used, 48 layers)
              gpt-oss-20b (32 experts, 4 used, 24 layers; sliding and full layers, sinks, biases)
              gpt-oss-120b (128 experts, 4 used, 36 layers)
       --synth: fill it at once (gguf_synth cut, then fill; the holes' file is replaced)
Types: qwen3moe as a Q4_K_M file (Q4_K, with Q6_K for attn_v, ffn_down_exps and the output head);
gpt-oss as OpenAI's release converted (MXFP4 experts; Q8_0 for the other matrices, an assumption:
the published GGUFs vary there); F32 norms, router, biases and sinks.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

# From the models' published config.json (hidden_size, num_attention_heads, num_key_value_heads,
# head_dim, moe_intermediate_size, num_experts, num_experts_per_tok, rms_norm_eps, rope_theta,
# max_position_embeddings, num_hidden_layers).
SHAPES = {
    "qwen3-30b-a3b": dict(arch="qwen3moe", n_embd=2048, n_head=32, n_head_kv=4, head_dim=128, n_ff=6144,
                          n_ff_exp=768, n_expert=128, n_expert_used=8, eps=1e-6, rope_base=1e6,
                          n_ctx=40960, n_layer=48),
    # OpenAI's config.json (also sliding_window 128, rope_scaling yarn factor 32 over 4096)
    "gpt-oss-20b": dict(arch="gpt-oss", n_embd=2880, n_head=64, n_head_kv=8, head_dim=64, n_ff=2880,
                        n_ff_exp=2880, n_expert=32, n_expert_used=4, eps=1e-5, rope_base=150000.0,
                        n_ctx=131072, n_layer=24),
    "gpt-oss-120b": dict(arch="gpt-oss", n_embd=2880, n_head=64, n_head_kv=8, head_dim=64, n_ff=2880,
                         n_ff_exp=2880, n_expert=128, n_expert_used=4, eps=1e-5, rope_base=150000.0,
                         n_ctx=131072, n_layer=36),
}


def copy_tokenizer(src_path, w):
    r = gguf.GGUFReader(src_path)
    for f in r.fields.values():
        if not f.name.startswith("tokenizer."):
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            if f.types[1] == gguf.GGUFValueType.STRING:
                w.add_array(f.name, [bytes(f.parts[i]).decode("utf-8", "replace") for i in f.data])
            else:
                w.add_array(f.name, [f.parts[i][0].item() for i in f.data])
        elif t == gguf.GGUFValueType.STRING:
            w.add_string(f.name, bytes(f.parts[f.data[0]]).decode("utf-8", "replace"))
        else:
            w.add_key_value(f.name, f.parts[f.data[0]][0].item(), t)
    return len(r.fields["tokenizer.ggml.tokens"].data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("--tokenizer-from", required=True)
    ap.add_argument("--layers", type=int, default=0, help="layers (default: the model's)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--synth", help="the gguf_synth program: fill the file with random weights")
    a = ap.parse_args()
    s = SHAPES[a.shape]
    L = a.layers or s["n_layer"]
    if not 1 <= L <= s["n_layer"]:
        sys.exit(f"--layers must be 1 to {s['n_layer']}")
    arch = s["arch"]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    w = gguf.GGUFWriter(a.out, arch)
    w.add_name(f"{a.shape} shape, {L} layers, random weights")
    n_vocab = copy_tokenizer(a.tokenizer_from, w)
    E, H, KV, D = s["n_embd"], s["n_head"], s["n_head_kv"], s["head_dim"]
    w.add_block_count(L)
    w.add_context_length(s["n_ctx"])
    w.add_embedding_length(E)
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_rope_freq_base(s["rope_base"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_expert_count(s["n_expert"])
    w.add_expert_used_count(s["n_expert_used"])
    w.add_expert_feed_forward_length(s["n_ff_exp"])
    oss = arch == "gpt-oss"
    if oss:
        w.add_sliding_window(128)
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(32.0)
        w.add_rope_scaling_orig_ctx_len(4096)

    def tensor(name, shape, qtype):
        """shape in NumPy order (outermost first), as GGUFWriter takes it."""
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        n = int(np.prod(shape))
        if qtype == T.F32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), n * 4, raw_dtype=qtype)
        else:  # quantized: GGUFWriter takes the shape in bytes per row
            w.add_tensor_info(name, shape[:-1] + (shape[-1] // block * size,), np.dtype(np.uint8), n // block * size,
                              raw_dtype=qtype)

    NE, FE = s["n_expert"], s["n_ff_exp"]
    if oss:
        tensor("token_embd.weight", (n_vocab, E), T.Q8_0)
        tensor("output_norm.weight", (E,), T.F32)
        tensor("output.weight", (n_vocab, E), T.Q8_0)
        for il in range(L):
            p = f"blk.{il}."
            tensor(p + "attn_norm.weight", (E,), T.F32)
            for name, rows in (("attn_q", H * D), ("attn_k", KV * D), ("attn_v", KV * D)):
                tensor(p + name + ".weight", (rows, E), T.Q8_0)
                tensor(p + name + ".bias", (rows,), T.F32)
            tensor(p + "attn_output.weight", (E, H * D), T.Q8_0)
            tensor(p + "attn_output.bias", (E,), T.F32)
            tensor(p + "attn_sinks.weight", (H,), T.F32)
            tensor(p + "post_attention_norm.weight", (E,), T.F32)
            tensor(p + "ffn_gate_inp.weight", (NE, E), T.F32)
            tensor(p + "ffn_gate_inp.bias", (NE,), T.F32)
            for name, rows, cols in (("gate", FE, E), ("up", FE, E), ("down", E, FE)):
                tensor(p + f"ffn_{name}_exps.weight", (NE, rows, cols), T.MXFP4)
                tensor(p + f"ffn_{name}_exps.bias", (NE, rows), T.F32)
    else:
        tensor("token_embd.weight", (n_vocab, E), T.Q4_K)
        tensor("output_norm.weight", (E,), T.F32)
        tensor("output.weight", (n_vocab, E), T.Q6_K)
    for il in range(0 if oss else L):
        p = f"blk.{il}."
        tensor(p + "attn_norm.weight", (E,), T.F32)
        tensor(p + "attn_q.weight", (H * D, E), T.Q4_K)
        tensor(p + "attn_k.weight", (KV * D, E), T.Q4_K)
        tensor(p + "attn_v.weight", (KV * D, E), T.Q6_K)
        tensor(p + "attn_output.weight", (E, H * D), T.Q4_K)
        tensor(p + "attn_q_norm.weight", (D,), T.F32)
        tensor(p + "attn_k_norm.weight", (D,), T.F32)
        tensor(p + "ffn_norm.weight", (E,), T.F32)
        tensor(p + "ffn_gate_inp.weight", (NE, E), T.F32)
        tensor(p + "ffn_gate_exps.weight", (NE, FE, E), T.Q4_K)
        tensor(p + "ffn_up_exps.weight", (NE, FE, E), T.Q4_K)
        tensor(p + "ffn_down_exps.weight", (NE, E, FE), T.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    path = a.out
    tensors = list(w.tensors[0].values())
    align = w.data_alignment
    w.close()
    # the data: a hole as long as the tensors, each padded to the alignment, from the first
    # aligned offset after the table
    start = (os.path.getsize(path) + align - 1) // align * align
    size = start + sum((t.nbytes + align - 1) // align * align for t in tensors)
    with open(path, "r+b") as f:
        f.truncate(size)
    print(f"{path}: {L} layers of {a.shape}, {size / 1e9:.2f} GB of tensor holes")
    if a.synth:
        recipe, filled = path + ".recipe", path + ".filling"
        subprocess.run([a.synth, "cut", path, recipe], check=True)
        subprocess.run([a.synth, "fill", recipe, filled], check=True)
        os.replace(filled, path)
        os.remove(recipe)


if __name__ == "__main__":
    main()
