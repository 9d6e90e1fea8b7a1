#!/usr/bin/env python3
"""Small random-weight GGUF models of architectures and rope scalings that no reachable real file
has (qwen3, qwen3moe, gpt-oss, Llama 3 rope_freqs, linear and YaRN scaling), for
test_arch_reference.py.

Each model is written with the `gguf` package's GGUFWriter under the GGUF tensor names, shapes and
metadata keys that llama.cpp's convert_hf_to_gguf.py writes, with deterministic random weights
scaled so activations stay O(1) (matrices normal / sqrt(fan_in), norms near 1). The tokenizer is
SmolLM2's: every tokenizer.* key is copied from the SmolLM2 file, so the files are complete models
for brasa. make(spec) returns a model's metadata and tensors as plain dicts and write_gguf() writes
them, so a test can edit either first (tests/gguf/test_hostile_files.py does).

Usage: make_arch_models.py OUT_DIR [--tokenizer-model SMOLLM2.gguf] [--only NAME ...] [--force]
       make_arch_models.py --check [--tokenizer-model SMOLLM2.gguf]   self-checks of ref_forward.py
Files already in OUT_DIR are reused while the stamp file there matches this script's hash.
"""
import argparse
import hashlib
import importlib.metadata
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT, GGUFValueType as VT
from gguf.quants import quantize

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import ref_forward  # noqa: E402

N_VOCAB = 49152  # SmolLM2's vocabulary, whose tokenizer the models carry
STAMP = "make_arch_models.stamp"


@dataclass
class Spec:
    name: str
    arch: str                      # qwen3, qwen3moe, llama, gemma3, gpt-oss
    seed: int
    n_layer: int = 2
    n_embd: int = 64
    n_ff: int = 192
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 32             # {arch}.attention.key_length / value_length
    rope_base: float = 1e6
    context_length: int = 4096
    eps: float = 1e-6
    matrix_type: QT = QT.Q8_0      # attention and dense FFN matrices, output
    embd_type: QT = QT.Q8_0
    tied: bool = False             # no output.weight: the output reuses token_embd
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    expert_type: QT = QT.Q8_0
    router_type: QT = QT.F32
    expert_weights_norm: bool | None = None  # written only when set
    router_zero_rows: tuple = ()   # experts whose router row is 0: their logits tie exactly at 0
    rope_scaling: dict = field(default_factory=dict)  # rope.scaling.* keys (type, factor, ...)
    llama3_rope: tuple | None = None  # (factor, low_freq_factor, high_freq_factor, original ctx)
    sliding_window: int = 0        # gemma3 and gpt-oss only


# The models the test runs. head_dim 32 with n_embd 64 and 4 heads exercises key_length != n_embd /
# n_head; base 1e6 is Qwen3's, 500000 Llama 3's. The YaRN original contexts are small so that the
# prompt's positions run past them.
SPECS = [
    Spec("qwen3-dense", "qwen3", seed=101, n_layer=3),
    Spec("qwen3-tied-f16", "qwen3", seed=102, n_embd=128, n_ff=256, matrix_type=QT.F16, tied=True),
    Spec("qwen3moe-8x2", "qwen3moe", seed=103, n_expert=8, n_expert_used=2, n_ff_exp=64),
    # experts 1, 2 and 5 have zero router rows: whenever the top-2 boundary falls among them (the
    # other six logits straddle 0 often), the lower index must win
    Spec("qwen3moe-8x2-ties", "qwen3moe", seed=113, n_expert=8, n_expert_used=2, n_ff_exp=64,
         router_zero_rows=(1, 2, 5)),
    Spec("qwen3moe-16x4-q4_0", "qwen3moe", seed=104, n_embd=128, n_ff=384, n_expert=16,
         n_expert_used=4, n_ff_exp=64, expert_type=QT.Q4_0, router_type=QT.F16),
    Spec("llama3-rope-freqs", "llama", seed=105, rope_base=500000.0, context_length=131072,
         llama3_rope=(8.0, 1.0, 4.0, 8192)),
    # the same formula with a short original context, so most pairs are scaled or blended
    Spec("llama3-rope-freqs-short", "llama", seed=106, rope_base=500000.0, llama3_rope=(8.0, 1.0, 4.0, 32)),
    Spec("llama-linear4", "llama", seed=107, rope_base=10000.0, rope_scaling={"type": "linear", "factor": 4.0}),
    Spec("qwen3-linear4", "qwen3", seed=108, rope_base=10000.0, rope_scaling={"type": "linear", "factor": 4.0}),
    Spec("qwen3-yarn4", "qwen3", seed=109, rope_base=10000.0, context_length=256,
         rope_scaling={"type": "yarn", "factor": 4.0, "original_context_length": 64}),
    # attn_factor and non-default betas given; an original context that puts the ramp mid-head
    Spec("qwen3-yarn4-attn", "qwen3", seed=110, rope_base=10000.0, context_length=4096,
         rope_scaling={"type": "yarn", "factor": 4.0, "original_context_length": 1024,
                       "attn_factor": 0.8, "yarn_beta_fast": 24.0, "yarn_beta_slow": 2.0}),
    Spec("qwen3moe-8x2-yarn", "qwen3moe", seed=111, rope_base=1e6, context_length=256, n_expert=8,
         n_expert_used=2, n_ff_exp=64, rope_scaling={"type": "yarn", "factor": 4.0, "original_context_length": 64}),
    # Gemma 3 with linear scaling (as the 4B-27B models have): global layer 5 only
    Spec("gemma3-linear8", "gemma3", seed=112, n_layer=6, n_ff=128, rope_base=1e6, tied=True,
         sliding_window=16, rope_scaling={"type": "linear", "factor": 8.0}),
    # gpt-oss as the released files are (MXFP4 experts, Q8_0 elsewhere, base 150000, YaRN, eps
    # 1e-5, n_head * head_dim > n_embd), small: 4 layers so that each kind (sliding, full) comes
    # twice; a window of 5 over the test's 40-token prompt; YaRN's original context below it
    Spec("gpt-oss-8x2", "gpt-oss", seed=114, n_layer=4, n_ff=64, n_head=8, n_head_kv=2, head_dim=16,
         rope_base=150000.0, context_length=256, eps=1e-5, n_expert=8, n_expert_used=2, n_ff_exp=64,
         expert_type=QT.MXFP4, sliding_window=5,
         rope_scaling={"type": "yarn", "factor": 4.0, "original_context_length": 64}),
    # the same with other types (F16 attention, embeddings and output, Q8_0 experts, an F16 router),
    # wider, one KV head, 16 experts top-4 whose n_ff_exp is no power of two
    Spec("gpt-oss-16x4-f16", "gpt-oss", seed=115, n_layer=4, n_embd=128, n_ff=96, n_head=4, n_head_kv=1,
         head_dim=32, rope_base=150000.0, context_length=256, eps=1e-5, matrix_type=QT.F16,
         embd_type=QT.F16, n_expert=16, n_expert_used=4, n_ff_exp=96, expert_type=QT.Q8_0,
         router_type=QT.F16, sliding_window=8,
         rope_scaling={"type": "yarn", "factor": 8.0, "original_context_length": 32}),
]
SPEC_BY_NAME = {s.name: s for s in SPECS}

# gpt-oss's extra weights. Biases small but nonzero (the released model has them everywhere); the
# attention sinks, in the units of the scaled scores, large enough to take a visible share of a
# softmax over the sliding layers' few keys; the router's bias shifts its logits by ~0.5. Expert
# gate and up matrices are scaled up so that some pre-activations pass the clamp of 7 (checked:
# over test_arch_reference's prompt and 32 greedy tokens, 0.9% of the gate values pass 7 and 1.7%
# of the up values pass +-7 on gpt-oss-8x2, 1.1% and 2.1% on gpt-oss-16x4-f16; without the clamp
# the logits move by 0.26 and 0.16 of their range; make_arch_models.py --check counts them again);
# the down matrices are scaled down to keep the residual stream O(1) (rms ~1 after every layer).
GPT_OSS_BIAS_SCALE = 0.1
GPT_OSS_ROUTER_BIAS_SCALE = 0.5
GPT_OSS_SINK_RANGE = (0.0, 2.0)
GPT_OSS_GATE_UP_SCALE = 3.0
GPT_OSS_DOWN_SCALE = 0.2


# ----------------------------------------------------------------------------- tokenizer

_TOKENIZER_CACHE = {}


def tokenizer_kvs(path):
    """Every tokenizer.* key of the GGUF file at path, as (key, value, type, element type)."""
    path = str(path)
    if path not in _TOKENIZER_CACHE:
        r = gguf.GGUFReader(path)
        kvs = []
        for key, f in r.fields.items():
            if not key.startswith("tokenizer."):
                continue
            vtype = f.types[0]
            if vtype == VT.ARRAY:
                sub = f.types[-1]
                if sub == VT.STRING:
                    val = [bytes(f.parts[i]) for i in f.data]  # the bytes as stored
                else:
                    val = [x.item() for i in f.data for x in f.parts[i]]
                kvs.append((key, val, vtype, sub))
            elif vtype == VT.STRING:
                kvs.append((key, bytes(f.parts[f.data[0]]), vtype, None))
            else:
                kvs.append((key, f.parts[f.data[0]][0].item(), vtype, None))
        _TOKENIZER_CACHE[path] = kvs
    return _TOKENIZER_CACHE[path]


# ----------------------------------------------------------------------------- rope helpers

def llama3_rope_divisors(base, dim, factor, low_freq_factor, high_freq_factor, original_ctx):
    """rope_freqs.weight as llama.cpp's convert_hf_to_gguf.py (LlamaModel.generate_extra_tensors)
    writes it for rope_type "llama3": per pair, the number its frequency is divided by (1 for
    wavelengths below original_ctx / high_freq_factor, factor above original_ctx / low_freq_factor,
    1 / ((1 - smooth) / factor + smooth) between)."""
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    low_freq_wavelen = original_ctx / low_freq_factor
    high_freq_wavelen = original_ctx / high_freq_factor
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            out.append(1.0)
        elif wavelen > low_freq_wavelen:
            out.append(factor)
        else:
            smooth = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


# ----------------------------------------------------------------------------- the model

def make(spec):
    """(metadata, tensors) of a model: metadata {key: (value, GGUFValueType, element type)},
    tensors {name: (float32 array in NumPy shape, GGMLQuantizationType)}; both in file order."""
    rng = np.random.default_rng(spec.seed)
    a, E, F = spec.arch, spec.n_embd, spec.n_ff
    H, Hkv, D = spec.n_head, spec.n_head_kv, spec.head_dim
    meta = {}

    def kv(key, value, vtype, sub=None):
        meta[key.format(arch=a)] = (value, vtype, sub)

    kv("general.name", f"brasa test {spec.name}", VT.STRING)
    kv("{arch}.block_count", spec.n_layer, VT.UINT32)
    kv("{arch}.context_length", spec.context_length, VT.UINT32)
    kv("{arch}.embedding_length", E, VT.UINT32)
    kv("{arch}.feed_forward_length", F, VT.UINT32)
    kv("{arch}.attention.head_count", H, VT.UINT32)
    kv("{arch}.attention.head_count_kv", Hkv, VT.UINT32)
    kv("{arch}.attention.key_length", D, VT.UINT32)
    kv("{arch}.attention.value_length", D, VT.UINT32)
    kv("{arch}.attention.layer_norm_rms_epsilon", spec.eps, VT.FLOAT32)
    kv("{arch}.rope.freq_base", spec.rope_base, VT.FLOAT32)
    if a == "llama":  # LlamaModel writes rope.dimension_count (head_dim); Qwen3's converter does not
        kv("{arch}.rope.dimension_count", D, VT.UINT32)
        kv("{arch}.vocab_size", N_VOCAB, VT.UINT32)
    if a in ("gemma3", "gpt-oss"):
        kv("{arch}.attention.sliding_window", spec.sliding_window, VT.UINT32)
    if spec.n_expert:
        kv("{arch}.expert_count", spec.n_expert, VT.UINT32)
        kv("{arch}.expert_used_count", spec.n_expert_used, VT.UINT32)
        kv("{arch}.expert_feed_forward_length", spec.n_ff_exp, VT.UINT32)
        if spec.expert_weights_norm is not None:
            kv("{arch}.expert_weights_norm", spec.expert_weights_norm, VT.BOOL)
    for k, v in spec.rope_scaling.items():
        vt = VT.STRING if k == "type" else VT.UINT32 if k == "original_context_length" else VT.FLOAT32
        kv("{arch}.rope.scaling." + k, v, vt)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm_weight(n):  # near 1 (Gemma's GGUF norms include HF's +1, so the same holds there)
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    gpt_oss = a == "gpt-oss"
    t = {}
    embd_scale = 1.0 / math.sqrt(E) if a == "gemma3" else 1.0  # gemma multiplies by sqrt(n_embd)
    t["token_embd.weight"] = (normal(N_VOCAB, E, scale=embd_scale), spec.embd_type)
    if spec.llama3_rope:
        t["rope_freqs.weight"] = (llama3_rope_divisors(spec.rope_base, D, *spec.llama3_rope), QT.F32)
    for il in range(spec.n_layer):
        p = f"blk.{il}."
        t[p + "attn_norm.weight"] = (norm_weight(E), QT.F32)
        t[p + "attn_q.weight"] = (normal(H * D, E, scale=E ** -0.5), spec.matrix_type)
        t[p + "attn_k.weight"] = (normal(Hkv * D, E, scale=E ** -0.5), spec.matrix_type)
        t[p + "attn_v.weight"] = (normal(Hkv * D, E, scale=E ** -0.5), spec.matrix_type)
        if gpt_oss:
            for name, n in (("attn_q", H * D), ("attn_k", Hkv * D), ("attn_v", Hkv * D)):
                t[p + name + ".bias"] = (normal(n, scale=GPT_OSS_BIAS_SCALE), QT.F32)
        if a in ref_forward.QK_NORM_ARCHS:
            t[p + "attn_q_norm.weight"] = (norm_weight(D), QT.F32)
            t[p + "attn_k_norm.weight"] = (norm_weight(D), QT.F32)
        t[p + "attn_output.weight"] = (normal(E, H * D, scale=(H * D) ** -0.5), spec.matrix_type)
        if gpt_oss:
            t[p + "attn_output.bias"] = (normal(E, scale=GPT_OSS_BIAS_SCALE), QT.F32)
            t[p + "attn_sinks.weight"] = (rng.uniform(*GPT_OSS_SINK_RANGE, H).astype(np.float32), QT.F32)
        if a == "gemma3":
            t[p + "post_attention_norm.weight"] = (norm_weight(E), QT.F32)
        # gpt-oss's norm before the FFN is post_attention_norm; it has no ffn_norm
        t[p + ("post_attention_norm.weight" if gpt_oss else "ffn_norm.weight")] = (norm_weight(E), QT.F32)
        if spec.n_expert:
            X, Fx = spec.n_expert, spec.n_ff_exp
            # router: GGUF ne [n_embd, n_expert]; logits of spread ~2 so routing is decisive
            router = normal(X, E, scale=2 * E ** -0.5)
            router[list(spec.router_zero_rows)] = 0.0
            t[p + "ffn_gate_inp.weight"] = (router, spec.router_type)
            if gpt_oss:
                t[p + "ffn_gate_inp.bias"] = (normal(X, scale=GPT_OSS_ROUTER_BIAS_SCALE), QT.F32)
            # experts: GGUF ne [n_embd, n_ff_exp, n_expert] (gate, up), [n_ff_exp, n_embd, n_expert] (down)
            up_scale, down_scale = (GPT_OSS_GATE_UP_SCALE, GPT_OSS_DOWN_SCALE) if gpt_oss else (1.0, 1.0)
            t[p + "ffn_gate_exps.weight"] = (normal(X, Fx, E, scale=up_scale * E ** -0.5), spec.expert_type)
            t[p + "ffn_up_exps.weight"] = (normal(X, Fx, E, scale=up_scale * E ** -0.5), spec.expert_type)
            t[p + "ffn_down_exps.weight"] = (normal(X, E, Fx, scale=down_scale * Fx ** -0.5), spec.expert_type)
            if gpt_oss:  # GGUF ne [n_ff_exp, n_expert] (gate, up), [n_embd, n_expert] (down)
                t[p + "ffn_gate_exps.bias"] = (normal(X, Fx, scale=GPT_OSS_BIAS_SCALE), QT.F32)
                t[p + "ffn_up_exps.bias"] = (normal(X, Fx, scale=GPT_OSS_BIAS_SCALE), QT.F32)
                t[p + "ffn_down_exps.bias"] = (normal(X, E, scale=GPT_OSS_BIAS_SCALE), QT.F32)
        else:
            t[p + "ffn_gate.weight"] = (normal(F, E, scale=E ** -0.5), spec.matrix_type)
            t[p + "ffn_up.weight"] = (normal(F, E, scale=E ** -0.5), spec.matrix_type)
            t[p + "ffn_down.weight"] = (normal(E, F, scale=F ** -0.5), spec.matrix_type)
        if a == "gemma3":
            t[p + "post_ffw_norm.weight"] = (norm_weight(E), QT.F32)
    t["output_norm.weight"] = (norm_weight(E), QT.F32)
    if not spec.tied:
        t["output.weight"] = (normal(N_VOCAB, E, scale=2 * E ** -0.5), spec.matrix_type)
    return meta, t


def write_gguf(path, arch, meta, tensors, tokenizer_model):
    """Write a GGUF file: general.architecture, meta, the tokenizer keys of tokenizer_model (a GGUF
    path, or None for none), then the tensors, each converted to its type. Atomic (temp + rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    w = gguf.GGUFWriter(str(tmp), arch)
    for key, (value, vtype, sub) in meta.items():
        w.add_key_value(key, value, vtype, sub)
    if tokenizer_model is not None:
        for key, value, vtype, sub in tokenizer_kvs(tokenizer_model):
            w.add_key_value(key, value, vtype, sub)
    for name, (arr, qtype) in tensors.items():
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        if qtype == QT.F32:
            w.add_tensor(name, arr)
        elif qtype == QT.F16:
            w.add_tensor(name, arr.astype(np.float16))
        else:
            w.add_tensor(name, quantize(arr, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return path


def write_spec(spec, out_dir, tokenizer_model):
    meta, tensors = make(spec)
    return write_gguf(Path(out_dir) / f"{spec.name}.gguf", spec.arch, meta, tensors, tokenizer_model)


def source_hash():
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(importlib.metadata.version("gguf").encode())
    return h.hexdigest()[:16]


def ensure_models(out_dir, tokenizer_model, names=None, force=False):
    """Paths of the named models (default all) in out_dir, written unless already there from this
    very script (a stamp file holds its hash)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = out_dir / STAMP
    fresh = not force and stamp.exists() and stamp.read_text().strip() == source_hash()
    if not fresh:
        for old in out_dir.glob("*.gguf"):
            old.unlink()
        stamp.write_text(source_hash() + "\n")
    paths = []
    for spec in (SPECS if names is None else [SPEC_BY_NAME[n] for n in names]):
        path = out_dir / f"{spec.name}.gguf"
        if not path.exists():
            write_spec(spec, out_dir, tokenizer_model)
        paths.append(path)
    return paths


# ----------------------------------------------------------------------------- reference self-checks

def llama3_inv_freq_hf(base, dim, factor, low_freq_factor, high_freq_factor, original_ctx):
    """HF transformers' _compute_llama3_parameters, transcribed: the scaled inv_freq."""
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    low_freq_wavelen = original_ctx / low_freq_factor
    high_freq_wavelen = original_ctx / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(is_medium, smoothed, inv_freq_llama)


def ggml_yarn_angles(pos, base, dim, factor, original_ctx, beta_fast, beta_slow):
    """YaRN angles the way ggml's CPU rope computes them (rope_yarn, ggml_rope_yarn_corr_dims), a
    second transcription of the same method to cross-check HF's: theta_extrap = p * base^(-2i/d),
    theta_interp = theta_extrap / factor, mixed by 1 - clamp((i - low) / max(0.001, high - low))."""
    def corr_dim(n_rot):
        return dim * math.log(original_ctx / (n_rot * 2 * math.pi)) / (2 * math.log(base))
    low = max(0.0, math.floor(corr_dim(beta_fast)))
    high = min(dim - 1.0, math.ceil(corr_dim(beta_slow)))
    i = np.arange(dim // 2, dtype=np.float64)
    theta_extrap = pos[:, None] * base ** (-2.0 * i / dim)[None, :]
    theta_interp = theta_extrap / factor
    ramp_mix = 1.0 - np.minimum(1.0, np.maximum(0.0, (i - low) / max(0.001, high - low)))
    return theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix


def reference_self_checks(tokenizer_model, workdir, expect):
    """Checks that ref_forward's new paths reduce to known ones; expect(name, ok, detail)."""
    workdir = Path(workdir)
    ids = [int(i) for i in np.random.default_rng(7).integers(0, N_VOCAB, 24)]

    def logits(path, precision="f32", **patch):
        saved = {k: getattr(ref_forward, k) for k in patch}
        try:
            for k, v in patch.items():
                setattr(ref_forward, k, v)
            return ref_forward.RefModel(path, precision=precision).logits(ids).astype(np.float64)
        finally:
            for k, v in saved.items():
                setattr(ref_forward, k, v)

    def rel(a, b):
        return float(np.abs(a - b).max() / (b.max() - b.min()))

    base = replace(SPEC_BY_NAME["qwen3-dense"], n_layer=2, name="chk-qwen3")
    meta, tensors = make(base)
    q3 = write_gguf(workdir / "chk-qwen3.gguf", "qwen3", meta, tensors, tokenizer_model)
    ref_q3 = logits(q3)

    # 1. qwen3 without its q/k norms is qwen2 with zero biases
    m2 = {k.replace("qwen3.", "qwen2."): v for k, v in meta.items()}
    t2 = {}
    for name, (arr, qt) in tensors.items():
        if "attn_q_norm" in name or "attn_k_norm" in name:
            continue
        t2[name] = (arr, qt)
        if name.endswith(("attn_q.weight", "attn_k.weight", "attn_v.weight")):
            t2[name[:-len("weight")] + "bias"] = (np.zeros(arr.shape[0], np.float32), QT.F32)
    q2 = write_gguf(workdir / "chk-qwen2.gguf", "qwen2", m2, t2, tokenizer_model)
    d = rel(logits(q3, QK_NORM_ARCHS={"gemma3"}), logits(q2))
    expect("reference: qwen3 without q/k norms equals qwen2 with zero biases", d == 0.0, f"max|diff|/range {d:.2e}")
    d = rel(ref_q3, logits(q2))
    expect("reference: the q/k norms change qwen3's logits", d > 1e-3, f"max|diff|/range {d:.2e}")

    # 2. one expert, top-1, is the dense FFN; and so are 4 identical experts, top-2 (in float64
    # products, as float32 ones differ in rounding with the number of rows per product)
    ref_q3_64 = logits(q3, "f64")
    for n_exp, used in ((1, 1), (4, 2)):
        spec = replace(base, arch="qwen3moe", n_expert=n_exp, n_expert_used=used, n_ff_exp=base.n_ff)
        mm, tm = make(spec)
        for name in list(tensors):
            if name in tm:
                tm[name] = tensors[name]
        for il in range(base.n_layer):
            p = f"blk.{il}."
            for part in ("gate", "up", "down"):
                w, qt = tensors[p + f"ffn_{part}.weight"]
                tm[p + f"ffn_{part}_exps.weight"] = (np.repeat(w[None], n_exp, axis=0), qt)
        path = write_gguf(workdir / f"chk-moe{n_exp}.gguf", "qwen3moe", mm, tm, tokenizer_model)
        d = rel(logits(path), ref_q3) if n_exp == 1 else rel(logits(path, "f64"), ref_q3_64)
        ok = d == 0.0 if n_exp == 1 else d < 1e-12
        expect(f"reference: qwen3moe with {n_exp} identical expert(s), top-{used}, equals the dense FFN", ok,
               f"max|diff|/range {d:.2e}")

    # 3. the vectorized routing against a per-token loop over the definition (float64 products)
    model = ref_forward.RefModel(write_spec(replace(SPEC_BY_NAME["qwen3moe-8x2"], name="chk-moe8"), workdir,
                                            tokenizer_model), precision="f64")
    h = np.random.default_rng(3).standard_normal((16, model.n_embd))
    got = model.moe_ffn(h, "blk.0.")
    router = model.w("blk.0.ffn_gate_inp.weight").astype(np.float64)
    gate_e, up_e = model.w("blk.0.ffn_gate_exps.weight"), model.w("blk.0.ffn_up_exps.weight")
    down_e = model.w("blk.0.ffn_down_exps.weight")
    want = np.zeros_like(got)
    for t in range(h.shape[0]):
        x = h[t]
        lg = x @ router.T
        p = np.exp(lg - lg.max())
        p /= p.sum()
        top = sorted(range(model.n_expert), key=lambda e: (-p[e], e))[:model.n_expert_used]
        wsum = sum(p[e] for e in top)
        for e in top:
            g = gate_e[e].astype(np.float64) @ x
            u = up_e[e].astype(np.float64) @ x
            want[t] += p[e] / wsum * (down_e[e].astype(np.float64) @ (g / (1 + np.exp(-g)) * u))
    d = float(np.abs(got - want).max() / np.abs(want).max())
    expect("reference: routed experts equal a per-token loop over the definition", d < 1e-12, f"max rel {d:.2e}")

    # 4. scalings that are the identity
    for label, scaling in (("yarn factor 1", {"type": "yarn", "factor": 1.0, "original_context_length": 64}),
                           ("linear factor 1", {"type": "linear", "factor": 1.0})):
        mm, tm = make(replace(base, rope_scaling=scaling))
        path = write_gguf(workdir / "chk-scale1.gguf", "qwen3", mm, tm, tokenizer_model)
        d = rel(logits(path), ref_q3)
        expect(f"reference: {label} equals no scaling", d < 1e-12, f"max|diff|/range {d:.2e}")
    mm, tm = make(replace(base, rope_scaling={"type": "linear", "factor": 4.0}))
    d = rel(logits(write_gguf(workdir / "chk-lin4.gguf", "qwen3", mm, tm, tokenizer_model)), ref_q3)
    expect("reference: linear factor 4 changes the logits", d > 1e-3, f"max|diff|/range {d:.2e}")

    # 5. rope_freqs: the converter's divisors reproduce HF's Llama 3 frequencies; all-ones is identity
    for args in ((500000.0, 32, 8.0, 1.0, 4.0, 8192), (500000.0, 128, 8.0, 1.0, 4.0, 8192),
                 (500000.0, 32, 8.0, 1.0, 4.0, 32)):
        inv = ref_forward.rope_base_frequencies(args[0], args[1])
        d = float(np.max(np.abs(inv / llama3_rope_divisors(*args).astype(np.float64) - llama3_inv_freq_hf(*args))
                         / llama3_inv_freq_hf(*args)))
        expect(f"reference: Llama 3 divisors {args} reproduce HF's inv_freq", d < 1e-6, f"max rel {d:.2e}")
    lspec = replace(base, arch="llama", name="chk-llama", rope_base=500000.0)
    mm, tm = make(lspec)
    ref_llama = logits(write_gguf(workdir / "chk-llama.gguf", "llama", mm, tm, tokenizer_model))
    tm["rope_freqs.weight"] = (np.ones(lspec.head_dim // 2, np.float32), QT.F32)
    d = rel(logits(write_gguf(workdir / "chk-llama1.gguf", "llama", mm, tm, tokenizer_model)), ref_llama)
    expect("reference: rope_freqs of ones equals no rope_freqs", d == 0.0, f"max|diff|/range {d:.2e}")

    # 6. YaRN: HF's frequency mixing gives ggml's angles (two transcriptions of the paper's method)
    pos = np.arange(300, dtype=np.float64)
    for base_f, dim, factor, octx, bf, bs in ((10000.0, 32, 4.0, 64, 32.0, 1.0), (10000.0, 32, 4.0, 1024, 24.0, 2.0),
                                              (1e6, 128, 40.0, 4096, 32.0, 1.0)):
        inv, msc = ref_forward.yarn_frequencies(ref_forward.rope_base_frequencies(base_f, dim), base_f, dim,
                                                factor, octx, bf, bs, None)
        a = pos[:, None] * inv[None, :]
        b = ggml_yarn_angles(pos, base_f, dim, factor, octx, bf, bs)
        d = float(np.abs(a - b).max())
        expect(f"reference: YaRN base {base_f:g} dim {dim} factor {factor:g} orig {octx} equals ggml's angles",
               d < 1e-9 and abs(msc - (0.1 * math.log(factor) + 1)) < 1e-15, f"max |angle diff| {d:.2e}, mscale {msc}")

    # 7. gpt-oss: attention sinks, the sliding window, SOFTMAX_WEIGHT gating, the clamped SwiGLU
    gpt_oss_checks(tokenizer_model, workdir, expect, ids, logits, rel)


def gpt_oss_checks(tokenizer_model, workdir, expect, ids, logits, rel):
    spec = SPEC_BY_NAME["gpt-oss-8x2"]
    meta, tensors = make(spec)
    path = write_gguf(workdir / "chk-gpt-oss.gguf", "gpt-oss", meta, tensors, tokenizer_model)
    ref = logits(path)

    def mutated(mutate, precision="f32"):
        m = ref_forward.RefModel(path, precision=precision)
        mutate(m)
        return m.logits(ids).astype(np.float64)

    # a. softmax_with_sinks against a per-(head, query) loop over OpenAI's definition: the sink
    # appended to the allowed scores, a softmax, the sink's weight dropped. Some rows have a sink
    # far above or below every score.
    rng = np.random.default_rng(11)
    Hkv, g, n, T = 2, 3, 7, 9
    s = rng.standard_normal((Hkv, g, n, T)) * 3
    s[0, 0, 1] += 40.0
    sinks = rng.uniform(0, 2, (Hkv, g, 1, 1))
    sinks[1, 2] = 45.0
    sinks[0, 1] = -60.0
    diff = np.arange(n)[:, None] + (T - n) - np.arange(T)[None, :]
    allowed = (diff >= 0) & (diff < 5)
    got = ref_forward.softmax_with_sinks(np.where(allowed, s, -np.inf), sinks)
    want = np.zeros_like(got)
    for kv in range(Hkv):
        for gi in range(g):
            for i in range(n):
                js = [j for j in range(T) if allowed[i, j]]
                row = np.array([s[kv, gi, i, j] for j in js] + [sinks[kv, gi, 0, 0]])
                e = np.exp(row - row.max())
                want[kv, gi, i, js] = (e / e.sum())[:-1]
    d = float(np.abs(got - want).max())
    expect("reference: attention sinks equal a softmax over the scores and the sink, its weight dropped",
           d < 1e-14, f"max |diff| {d:.2e}")

    # b. sinks far below every score are no sinks; the spec's sinks matter
    t2 = dict(tensors)
    for il in range(spec.n_layer):
        t2[f"blk.{il}.attn_sinks.weight"] = (np.full(spec.n_head, -1e30, np.float32), QT.F32)
    no_sinks = mutated(lambda m: setattr(m, "attn_sinks", False))
    d = rel(logits(write_gguf(workdir / "chk-gpt-oss-nosink.gguf", "gpt-oss", meta, t2, tokenizer_model)), no_sinks)
    expect("reference: gpt-oss with sinks of -1e30 equals attention without sinks", d == 0.0,
           f"max|diff|/range {d:.2e}")
    d = rel(ref, no_sinks)
    expect("reference: gpt-oss's sinks change its logits", d > 1e-2, f"max|diff|/range {d:.2e}")

    # c. a sliding window longer than the sequence is full attention; the spec's window matters
    all_full = mutated(lambda m: setattr(m, "layer_local", [False] * m.n_layer))
    m2 = dict(meta)
    m2["gpt-oss.attention.sliding_window"] = (len(ids), VT.UINT32, None)
    d = rel(logits(write_gguf(workdir / "chk-gpt-oss-wide.gguf", "gpt-oss", m2, tensors, tokenizer_model)), all_full)
    expect(f"reference: gpt-oss with a sliding window of {len(ids)} (the sequence) equals full attention",
           d == 0.0, f"max|diff|/range {d:.2e}")
    d = rel(ref, all_full)
    expect(f"reference: gpt-oss's window of {spec.sliding_window} changes its logits", d > 1e-2,
           f"max|diff|/range {d:.2e}")

    # d. SOFTMAX_WEIGHT (a softmax over the top k logits) is the renormalized full softmax
    def renormalized(m):
        m.expert_gating, m.expert_weights_norm = "softmax", True
    d = rel(mutated(renormalized), ref)
    expect("reference: gpt-oss's softmax over the top-k router logits equals the renormalized full softmax",
           d < 1e-12, f"max|diff|/range {d:.2e}")

    # e. the routed experts against a per-token loop over the definition (float64 products):
    # router bias, top-k logits (ties to the lower index), softmax over them, expert biases, the
    # clamped SwiGLU written out again
    model = ref_forward.RefModel(path, precision="f64")
    h = np.random.default_rng(5).standard_normal((16, model.n_embd)) * 1.5
    got = model.moe_ffn(h, "blk.1.")
    w = {part: model.w(f"blk.1.{part}").astype(np.float64) for part in
         ("ffn_gate_inp.weight", "ffn_gate_inp.bias", "ffn_gate_exps.weight", "ffn_gate_exps.bias",
          "ffn_up_exps.weight", "ffn_up_exps.bias", "ffn_down_exps.weight", "ffn_down_exps.bias")}
    want = np.zeros_like(got)
    clamped = 0
    for t in range(h.shape[0]):
        x = h[t]
        lg = w["ffn_gate_inp.weight"] @ x + w["ffn_gate_inp.bias"]
        top = sorted(range(model.n_expert), key=lambda e: (-lg[e], e))[:model.n_expert_used]
        ew = np.exp(lg[top] - max(lg[top]))
        ew /= ew.sum()
        for we, e in zip(ew, top):
            gate = w["ffn_gate_exps.weight"][e] @ x + w["ffn_gate_exps.bias"][e]
            up = w["ffn_up_exps.weight"][e] @ x + w["ffn_up_exps.bias"][e]
            clamped += int(np.sum(gate > 7.0) + np.sum(np.abs(up) > 7.0))
            gate = np.array([min(v, 7.0) for v in gate])
            up = np.array([min(max(v, -7.0), 7.0) for v in up])
            act = gate / (1.0 + np.exp(-1.702 * gate)) * (up + 1.0)
            want[t] += we * (w["ffn_down_exps.weight"][e] @ act + w["ffn_down_exps.bias"][e])
    d = float(np.abs(got - want).max() / np.abs(want).max())
    expect("reference: gpt-oss's routed experts equal a per-token loop over the definition",
           d < 1e-12 and clamped > 0, f"max rel {d:.2e}; the clamp changed {clamped} values")

    # f. the clamp: in the spec's forward pass over the prompt some gate and up values pass 7,
    # and clamping them matters
    m = ref_forward.RefModel(path)
    m.logits(ids)
    no_clamp = mutated(lambda m: setattr(m, "glu_limit", None))
    d = rel(ref, no_clamp)
    expect("reference: gpt-oss's SwiGLU clamp is exercised and changes its logits",
           m.glu_clamped_gate > 0 and m.glu_clamped_up > 0 and d > 1e-2,
           f"clamped {m.glu_clamped_gate} gate and {m.glu_clamped_up} up values of {m.glu_values} each; "
           f"without the clamp max|diff|/range {d:.2e}")

    # g. the KV cache with sliding layers: cached greedy ids equal one causal pass's argmax
    m = ref_forward.RefModel(path)
    out = m.greedy(ids, 12)
    again = [int(i) for i in np.argmax(m.logits(ids + out)[len(ids) - 1:-1], axis=-1)]
    expect("reference: gpt-oss's cached greedy ids equal one causal pass over prompt + continuation",
           again == out, f"{sum(a == b for a, b in zip(again, out))}/{len(out)} equal")


# ----------------------------------------------------------------------------- script

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--tokenizer-model", default=str(ref_forward.resolve_model("smollm2")),
                    help="GGUF whose tokenizer.* keys the models copy (SmolLM2)")
    ap.add_argument("--only", action="append", choices=list(SPEC_BY_NAME))
    ap.add_argument("--force", action="store_true", help="rewrite even if the stamp matches")
    ap.add_argument("--check", action="store_true", help="run the reference self-checks")
    args = ap.parse_args(argv)
    if not os.path.exists(args.tokenizer_model):
        print(f"skipped: {args.tokenizer_model} missing (run scripts/fetch_models.py)")
        return 77
    if args.check:
        failed = []

        def expect(name, ok, detail=""):
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
            if not ok:
                failed.append(name)
        with tempfile.TemporaryDirectory(prefix="brasa_refchk_") as tmp:
            reference_self_checks(args.tokenizer_model, tmp, expect)
        return 1 if failed else 0
    if not args.out_dir:
        ap.error("OUT_DIR is required unless --check")
    for p in ensure_models(args.out_dir, args.tokenizer_model, args.only, args.force):
        print(f"{p} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
