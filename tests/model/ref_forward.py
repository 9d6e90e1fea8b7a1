#!/usr/bin/env python3
"""Independent NumPy reference forward pass for brasa's model tests.

Written from the Hugging Face model definitions (LlamaForCausalLM, Qwen2ForCausalLM,
Gemma3ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, and the rope scaling of
transformers' modeling_rope_utils), OpenAI's gpt-oss reference (gpt_oss/torch/model.py) and the
conventions of llama.cpp's GGUF converter and graphs; it shares no code with brasa. Weights come
from the GGUF file and are dequantized with the `gguf` package's NumPy reference
(gguf.quants.dequantize); hyper-parameters come only from the file's metadata, except
for the architecture-level constants below that GGUF does not carry.

Supported architectures (general.architecture):
  llama   RMSNorm, RoPE on adjacent pairs (2i, 2i+1): llama.cpp's converter permutes the HF Q/K
          weights so that HF's rotate_half becomes ggml's "normal" rope; GQA; SwiGLU FFN.
  qwen2   as llama plus biases on Q, K, V; RoPE in NEOX mode (pairs (i, i + rope_dim/2)), the
          Q/K weights are not permuted.
  gemma3  embeddings scaled by sqrt(n_embd); RMSNorm whose GGUF weights are used directly as the
          multiplier (the converter stores HF's 1 + w; see NORM_WEIGHTS_INCLUDE_ONE); per-head
          RMSNorm of Q and K; NEOX RoPE with base 10000 on sliding-window ("local") layers and the
          file's freq_base on global ones; attention scale 1/sqrt(key_length); sliding window
          (position i sees j iff 0 <= i - j < sliding_window) on local layers; post-attention and
          post-FFN RMSNorms; GeGLU FFN with the tanh approximation of GELU; tied output.
  qwen3   the qwen2 decoder without QKV biases, plus a per-head RMSNorm of Q and K (attn_q_norm,
          attn_k_norm, weights used as stored) before RoPE; NEOX RoPE; head size from
          {arch}.attention.key_length; SwiGLU FFN; output tied or not.
  qwen3moe  attention as qwen3; every layer's FFN is a routed mixture of experts (HF
          Qwen3MoeSparseMoeBlock): softmax over all experts of the router logits, the top
          expert_used_count experts (ties to the lower index), their weights renormalized to sum
          to 1 (unless {arch}.expert_weights_norm is false), each a SwiGLU FFN; no shared expert.
  gpt-oss  (OpenAI gpt-oss-20b/120b; llama.cpp's llm_build_openai_moe_iswa) biases on Q, K, V and
          the attention output, no Q/K norms, NEOX RoPE with the file's scaling on every layer;
          attention scale 1/sqrt(key_length); even layers sliding-window (as gemma3's rule), odd
          ones full; a learned per-head attention sink, a logit that joins each softmax's
          denominator only; post_attention_norm is the RMSNorm before the FFN (no ffn_norm); the
          FFN is routed experts: the top expert_used_count router logits (router bias included),
          their weights the softmax over those k logits only (ggml's SOFTMAX_WEIGHT gating), each
          expert with biases and OpenAI's clamped SwiGLU (see swiglu_oai); untied output. YaRN is
          ggml's (below), whose ramp ends are rounded to whole pairs; OpenAI's reference leaves
          them unrounded, which llama.cpp does not follow either.

RoPE scaling (every architecture; on gemma3 the global layers only, as HF's Gemma 3 scales only
its global rotary embedding), from {arch}.rope.scaling.type / .factor / .original_context_length /
.attn_factor / .yarn_beta_fast / .yarn_beta_slow: "linear" divides every frequency by the factor;
"yarn" follows HF's _compute_yarn_parameters; a rope_freqs.weight tensor (Llama 3.1-3.3 files)
divides pair i's frequency by its i-th value whenever the file has it. See rope_frequencies().

Precision: weights are float32 (as dequantized); every matrix product against a weight is a
float32 BLAS sgemm (float32 inputs and accumulation, inputs rounded to float32 just before it).
Everything else is float64: the residual stream, RMSNorm, RoPE (angles too), Q/K/V after the
projection, attention scores, softmax and the weighted sum of V, the KV cache, the activation
functions. RefModel(path, precision="f64") does the weight products in float64 as well (weights
converted per call; slow, for measuring the float32 noise floor). act_quant="q8" simulates
llama.cpp-style int8 activations (Q8_0 blocks of 32 / Q8_K blocks of 256 for K-quant weights)
to estimate what such a design costs; it is off by default.

Usage as a script:
  ref_forward.py --self-test [MODEL ...]   greedy continuations as text (models: smollm2 gemma3
                                           qwen2 or paths; default all three from the cache)
  ref_forward.py --noise-floor [MODEL ...] float32 reference vs float64 (and q8 activations)
"""
import argparse
import math
import mmap
import os
import resource
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

HERE = Path(__file__).resolve().parent

# ----------------------------------------------------------------------------- architecture constants
# These are properties of the architecture that GGUF files do not store (llama.cpp hard-codes
# them too); everything else is read from the metadata.

# ggml rope mode per architecture: "normal" rotates adjacent pairs (2i, 2i+1), "neox" rotates
# (i, i + rope_dim/2). llama.cpp's convert_hf_to_gguf.py permutes llama's Q/K so "normal" applies.
ROPE_MODE = {"llama": "normal", "qwen2": "neox", "gemma3": "neox", "qwen3": "neox",
             "qwen3moe": "neox", "gpt-oss": "neox"}
# Architectures with a per-head RMSNorm of Q and K (HF Gemma3Attention, Qwen3Attention q_norm/k_norm).
QK_NORM_ARCHS = {"gemma3", "qwen3", "qwen3moe"}
# Architectures whose every FFN is a routed mixture of experts.
MOE_ARCHS = {"qwen3moe", "gpt-oss"}
# HF's YaRN defaults (_compute_yarn_parameters: beta_fast or 32, beta_slow or 1).
YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0
# Gemma 3: 5 sliding-window layers then 1 global layer, unless the file says otherwise
# ({arch}.attention.sliding_window_pattern); HF config sliding_window_pattern = 6.
GEMMA3_SWA_PATTERN = 6
# Gemma 3 local layers use HF's rope_local_base_freq = 10000; global ones the file's freq_base.
GEMMA3_ROPE_LOCAL_BASE = 10000.0
# Gemma 3 norm weights in GGUF already include HF's "+1" (Gemma3RMSNorm multiplies by 1 + w and
# llama.cpp's converter adds the 1 when it writes the file), so they are used as stored. The
# magnitudes alone do not settle it on gemma-3-270m (layer medians 0.3 to 337), the likelihood
# does: on a Wikipedia paragraph the mean NLL is 2.09 nats/token as stored, 18.0 with another +1
# (and 20.7 with -1 on all norms, 3.3 with +1 on the Q/K norms only).
NORM_WEIGHTS_INCLUDE_ONE = True
DEFAULT_ROPE_BASE = 10000.0
# gpt-oss: sliding-window and full-attention layers alternate, a sliding one first (HF config
# layer_types; llama.cpp set_swa_pattern(2): layer il slides iff il % 2 == 0).
GPT_OSS_SWA_PATTERN = 2
# gpt-oss's clamped SwiGLU (OpenAI's swiglu(x, alpha=1.702, limit=7.0); llama.cpp hard-codes both
# for ggml_swiglu_oai).
GPT_OSS_SWIGLU_ALPHA, GPT_OSS_SWIGLU_LIMIT = 1.702, 7.0

# ----------------------------------------------------------------------------- a minimal GGUF reader

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}
_NP_SCALAR = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1",
              10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY = 8, 9
_KEEP_STRING_ARRAYS = 64  # longer string arrays (the vocabulary) are skipped, kept as a length


class GGUF:
    """Metadata and tensor directory of a GGUF v2/v3 file; tensor bytes through a memory map.
    (gguf.GGUFReader builds Python objects for the whole vocabulary: ~20 s on Gemma's.)"""

    def __init__(self, path):
        self.path = Path(path)
        with open(self.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            self._mm, self._pos = mm, 0
            if mm[:4] != b"GGUF":
                raise ValueError(f"{path}: not a GGUF file")
            self._pos = 4
            version = self._scalar("<I")
            if version not in (2, 3):
                raise ValueError(f"{path}: GGUF version {version} not supported")
            n_tensors, n_kv = self._scalar("<Q"), self._scalar("<Q")
            self.meta = {}
            for _ in range(n_kv):
                key = self._string()
                self.meta[key] = self._value(self._scalar("<I"))
            self.tensors = {}  # name -> (ne tuple, GGMLQuantizationType, relative offset)
            for _ in range(n_tensors):
                name = self._string()
                n_dims = self._scalar("<I")
                ne = tuple(self._scalar("<Q") for _ in range(n_dims))
                ttype = GGMLQuantizationType(self._scalar("<I"))
                off = self._scalar("<Q")
                self.tensors[name] = (ne, ttype, off)
            align = int(self.meta.get("general.alignment", 32))
            self.data_start = (self._pos + align - 1) // align * align
            del self._mm
        self.data = np.memmap(self.path, dtype=np.uint8, mode="r")

    def _scalar(self, fmt):
        v = struct.unpack_from(fmt, self._mm, self._pos)[0]
        self._pos += struct.calcsize(fmt)
        return v

    def _string(self):
        n = self._scalar("<Q")
        s = bytes(self._mm[self._pos:self._pos + n]).decode("utf-8", errors="replace")
        self._pos += n
        return s

    def _value(self, vtype):
        if vtype == _STRING:
            return self._string()
        if vtype == _ARRAY:
            etype, count = self._scalar("<I"), self._scalar("<Q")
            if etype in _NP_SCALAR:
                dt = np.dtype(_NP_SCALAR[etype])
                arr = np.frombuffer(self._mm, dtype=dt, count=count, offset=self._pos).copy()
                self._pos += dt.itemsize * count
                return arr
            if etype == _STRING and count > _KEEP_STRING_ARRAYS:
                for _ in range(count):
                    n = self._scalar("<Q")
                    self._pos += n
                return ("<string array>", count)
            return [self._value(etype) for _ in range(count)]
        return self._scalar(_SCALAR[vtype])

    def has(self, name):
        return name in self.tensors

    def shape(self, name):
        """NumPy shape: GGUF's ne reversed (ne[0] is the fastest-varying dimension)."""
        return tuple(reversed(self.tensors[name][0]))

    def _raw_rows(self, name):
        ne, ttype, off = self.tensors[name]
        block, size = GGML_QUANT_SIZES[ttype]
        n_rows = int(np.prod(ne[1:], dtype=np.int64)) if len(ne) > 1 else 1
        row_bytes = ne[0] // block * size
        start = self.data_start + off
        return self.data[start:start + n_rows * row_bytes].reshape(n_rows, row_bytes), ttype

    def load(self, name):
        """The whole tensor as float32 in its NumPy shape."""
        raw, ttype = self._raw_rows(name)
        w = dequantize(raw, ttype)
        return np.ascontiguousarray(w, dtype=np.float32).reshape(self.shape(name))

    def load_rows(self, name, rows):
        """Rows of a 2-D tensor (e.g. embeddings of a few tokens) without dequantizing the rest."""
        raw, ttype = self._raw_rows(name)
        return np.ascontiguousarray(dequantize(np.ascontiguousarray(raw[np.asarray(rows)]), ttype),
                                    dtype=np.float32)

    def type_of(self, name):
        return self.tensors[name][1]


# ----------------------------------------------------------------------------- math helpers

def rmsnorm(x, w, eps):
    """float64 RMSNorm over the last axis, times w (used as stored)."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def swiglu_oai(gate, up, alpha, limit):
    """OpenAI's gpt-oss SwiGLU (gpt_oss/torch/model.py swiglu; ggml_swiglu_oai): the gate clamped
    from above at limit, the linear part to [-limit, limit], then gate * sigmoid(alpha * gate) *
    (up + 1). limit None: no clamp."""
    if limit is not None:
        gate = np.minimum(gate, limit)
        up = np.clip(up, -limit, limit)
    return gate / (1.0 + np.exp(-alpha * gate)) * (up + 1.0)


def softmax_with_sinks(s, sinks=None):
    """Softmax over the last axis of the attention scores s (heads..., n, T), masked entries -inf.
    sinks: one logit per head, shaped to broadcast against s[..., :1] (gpt-oss's attn_sinks): it
    joins each row's denominator only, as a key whose value is zero would (OpenAI's reference
    appends it to the scores and drops its weight after the softmax; ggml_soft_max_ext's sinks)."""
    m = s.max(axis=-1, keepdims=True)
    if sinks is not None:
        m = np.maximum(m, sinks)
    e = np.exp(s - m)
    den = e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        den = den + np.exp(sinks - m)
    return e / den


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def softcap(x, cap):
    return cap * np.tanh(x / cap) if cap else x


def rope_base_frequencies(base, rope_dim):
    """theta_i = base^(-2i/d), i < d/2 (RoFormer; HF _compute_default_rope_parameters)."""
    return base ** (-np.arange(rope_dim // 2, dtype=np.float64) * 2.0 / rope_dim)


def yarn_frequencies(inv_freq, base, rope_dim, factor, original_ctx, beta_fast, beta_slow,
                     attn_factor):
    """YaRN (Peng et al. 2023, arXiv:2309.00071), written from HF transformers'
    modeling_rope_utils._compute_yarn_parameters. Returns (inv_freq, attention_factor).
    The scaling factor is the file's rope.scaling.factor (HF would use max_position_embeddings /
    original_max_position_embeddings when the config has the latter; GGUF files carry the factor,
    and the test models make both agree)."""
    dim = rope_dim

    def find_correction_dim(num_rotations):
        # the pair dimension whose wavelength makes num_rotations turns over original_ctx positions
        return (dim * math.log(original_ctx / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    # find_correction_range with truncate=True (HF's default): floor / ceil, clamped to [0, dim-1]
    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:  # linear_ramp_factor: "Prevent singularity"
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrapolation_factor = 1.0 - ramp  # 1: keep the pair's frequency, 0: interpolate it
    inv_interpolation = inv_freq / factor
    inv = inv_interpolation * (1.0 - extrapolation_factor) + inv_freq * extrapolation_factor
    if attn_factor is None:
        # get_mscale(factor): 0.1 * ln(factor) + 1 for factor > 1, else 1
        attn_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    return inv, float(attn_factor)


def rope(x, pos, inv_freq, mode, mscale=1.0):
    """Rotate x (n, heads, head_dim) float64 at positions pos (n,) by the pair frequencies
    inv_freq (rope_dim/2,); the first rope_dim dims only. cos and sin are multiplied by mscale
    (YaRN's attention factor: HF multiplies its cos/sin cache by attention_scaling)."""
    half = len(inv_freq)
    rope_dim = 2 * half
    ang = pos.astype(np.float64)[:, None] * inv_freq[None, :]  # (n, half)
    cos, sin = np.cos(ang)[:, None, :] * mscale, np.sin(ang)[:, None, :] * mscale
    out = x.copy()
    if mode == "normal":
        a, b = x[..., 0:rope_dim:2], x[..., 1:rope_dim:2]
        out[..., 0:rope_dim:2] = a * cos - b * sin
        out[..., 1:rope_dim:2] = a * sin + b * cos
    elif mode == "neox":
        a, b = x[..., :half], x[..., half:rope_dim]
        out[..., :half] = a * cos - b * sin
        out[..., half:rope_dim] = a * sin + b * cos
    else:
        raise ValueError(mode)
    return out


def fake_quant_rows(x, block):
    """Round-trip x (n, k) float32 through symmetric int8 blocks of `block` (Q8_0 / Q8_K style)."""
    n, k = x.shape
    if k % block:
        return x
    xb = x.reshape(n, k // block, block).astype(np.float32)
    amax = np.abs(xb).max(axis=-1, keepdims=True)
    d = amax / 127.0
    if block == 32:  # Q8_0 stores the scale as f16
        d = d.astype(np.float16).astype(np.float32)
    inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1), 0).astype(np.float32)
    qv = np.clip(np.rint(xb * inv), -127, 127)
    return (qv * d).reshape(n, k).astype(np.float32)


_K_QUANTS = {GGMLQuantizationType.Q2_K, GGMLQuantizationType.Q3_K, GGMLQuantizationType.Q4_K,
             GGMLQuantizationType.Q5_K, GGMLQuantizationType.Q6_K}


# ----------------------------------------------------------------------------- the model

class KVCache:
    def __init__(self, n_layer):
        self.k = [None] * n_layer  # each (n_kv_head, T, head_dim) float64, after RoPE
        self.v = [None] * n_layer
        self.n = 0

    def append(self, il, k, v):
        if self.k[il] is None:
            self.k[il], self.v[il] = k, v
        else:
            self.k[il] = np.concatenate([self.k[il], k], axis=1)
            self.v[il] = np.concatenate([self.v[il], v], axis=1)
        return self.k[il], self.v[il]


@dataclass
class Generation:
    ids: list
    margins: list
    prompt_logits: np.ndarray | None
    step_logits: np.ndarray | list | None


class RefModel:
    def __init__(self, path, cache_weights=True, precision="f32", act_quant=None):
        self.f = GGUF(path)
        self.path = Path(path)
        self.cache_weights, self.precision, self.act_quant = cache_weights, precision, act_quant
        self._w = {}
        m = self.f.meta
        self.arch = arch = m["general.architecture"]
        if arch not in ROPE_MODE:
            raise NotImplementedError(f"architecture {arch!r} not supported by the reference")

        def hp(key, default=KeyError):
            k = f"{arch}.{key}"
            if k in m:
                return m[k]
            if default is KeyError:
                raise KeyError(f"{self.path.name}: metadata {k} missing")
            return default

        self.n_layer = int(hp("block_count"))
        self.n_embd = int(hp("embedding_length"))
        self.n_head = int(hp("attention.head_count"))
        self.n_head_kv = int(hp("attention.head_count_kv", self.n_head))
        self.head_dim_k = int(hp("attention.key_length", self.n_embd // self.n_head))
        self.head_dim_v = int(hp("attention.value_length", self.head_dim_k))
        self.eps = float(hp("attention.layer_norm_rms_epsilon"))
        self.rope_base = float(hp("rope.freq_base", DEFAULT_ROPE_BASE))
        self.rope_dim = int(hp("rope.dimension_count", self.head_dim_k))
        self.rope_mode = ROPE_MODE[arch]
        self.hp = hp
        self.final_softcap = float(hp("final_logit_softcapping", 0.0) or 0.0)
        self.attn_softcap = float(hp("attn_logit_softcapping", 0.0) or 0.0)
        self.sliding_window = int(hp("attention.sliding_window", 0) or 0)
        self.n_vocab = self.f.shape("token_embd.weight")[0]
        self.tied = not self.f.has("output.weight")

        self.layer_local = [False] * self.n_layer
        self.layer_rope_base = [self.rope_base] * self.n_layer
        # Which layers get the file's rope scaling: all but Gemma 3's local ones (HF builds their
        # rotary embedding with rope_type "default" and rope_local_base_freq).
        self.layer_rope_scaled = [True] * self.n_layer
        if arch == "gemma3":
            pattern = int(hp("attention.sliding_window_pattern", GEMMA3_SWA_PATTERN))
            self.layer_local = [(il + 1) % pattern != 0 for il in range(self.n_layer)]
            self.layer_rope_base = [GEMMA3_ROPE_LOCAL_BASE if loc else self.rope_base
                                    for loc in self.layer_local]
            self.layer_rope_scaled = [not loc for loc in self.layer_local]
            self.embd_scale = math.sqrt(self.n_embd)
        else:
            self.embd_scale = 1.0
        if arch == "gpt-oss":  # one base and the file's scaling on every layer, unlike gemma3
            self.layer_local = [il % GPT_OSS_SWA_PATTERN == 0 for il in range(self.n_layer)]
        # the RMSNorm before the FFN (gpt-oss names it post_attention_norm; gemma3's norm of that
        # name is on the attention output)
        self.ffn_norm_name = "post_attention_norm.weight" if arch == "gpt-oss" else "ffn_norm.weight"
        # use attn_sinks.weight where the file has it (False only to show a test can tell)
        self.attn_sinks = True
        if not self.sliding_window:
            self.layer_local = [False] * self.n_layer
        if self.n_head % self.n_head_kv:
            raise ValueError("head_count not a multiple of head_count_kv")
        self.layer_rope = [self.rope_frequencies(self.layer_rope_base[il], self.layer_rope_scaled[il])
                           for il in range(self.n_layer)]  # (inv_freq, mscale) per layer

        self.moe = arch in MOE_ARCHS
        if self.moe:
            self.n_expert = int(hp("expert_count"))
            self.n_expert_used = int(hp("expert_used_count"))
            self.n_ff_exp = int(hp("expert_feed_forward_length"))
            if not 0 < self.n_expert_used <= self.n_expert:
                raise ValueError(f"expert_used_count {self.n_expert_used} with expert_count {self.n_expert}")
            # HF Qwen3Moe's norm_topk_prob (true in the released models); llama.cpp's qwen3moe graph
            # renormalizes too. A file may say otherwise with {arch}.expert_weights_norm.
            self.expert_weights_norm = bool(hp("expert_weights_norm", True))
        # "softmax": softmax over all router logits, then the top k (qwen3moe); "softmax_weight":
        # the top k logits, then a softmax over those k only (gpt-oss; llama.cpp
        # LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT). The two choose the same experts; with
        # renormalization they weigh them the same too, up to rounding.
        self.expert_gating = "softmax_weight" if arch == "gpt-oss" else "softmax"
        # the expert activation: SwiGLU, or gpt-oss's clamped one with its alpha and limit
        self.glu_oai = arch == "gpt-oss"
        self.glu_alpha, self.glu_limit = GPT_OSS_SWIGLU_ALPHA, GPT_OSS_SWIGLU_LIMIT
        # how many expert gate / up values the clamp changed, out of how many (swiglu_oai only)
        self.glu_clamped_gate = self.glu_clamped_up = self.glu_values = 0
        # smallest nonzero gap, in router logits, between the last chosen and the first unchosen
        # expert over every token and layer so far (a near tie there makes the routing fragile),
        # and how many times the two were exactly equal (the tie rule decided)
        self.router_min_gap = math.inf
        self.router_exact_ties = 0
        # equal router probabilities go to the lower expert index (brasa's rule); "higher" exists
        # only to show that a test can tell the difference
        self.expert_tie_break = "lower"

    def rope_frequencies(self, base, scaled=True):
        """(inv_freq (rope_dim/2,) float64, mscale) of a layer with RoPE base `base`."""
        inv = rope_base_frequencies(base, self.rope_dim)
        if not scaled:
            return inv, 1.0
        hp = self.hp
        if self.f.has("rope_freqs.weight"):
            # Llama 3 (HF _compute_llama3_parameters) as llama.cpp's converter stores it: one
            # divisor per pair (1 for high frequencies, `factor` for low ones, a smooth blend in
            # between), so theta_i / rope_freqs[i] reproduces HF's inv_freq_llama.
            divisors = self.w("rope_freqs.weight").astype(np.float64).reshape(-1)
            if divisors.shape != inv.shape:
                raise ValueError(f"rope_freqs.weight has {divisors.size} values, want {inv.size}")
            if not np.all(divisors > 0):
                raise ValueError("rope_freqs.weight: frequency divisors must be positive")
            inv = inv / divisors
        kind = hp("rope.scaling.type", "none") or "none"
        factor = hp("rope.scaling.factor", None)
        if kind == "none":
            if factor is not None and float(factor) != 1.0:
                raise NotImplementedError(f"rope.scaling.factor {factor} without a scaling type")
            return inv, 1.0
        if kind not in ("linear", "yarn"):
            raise NotImplementedError(f"rope scaling {kind!r} not implemented in the reference")
        if factor is None or not float(factor) > 0:
            raise ValueError(f"rope scaling {kind!r} needs a positive rope.scaling.factor, got {factor}")
        factor = float(factor)
        if kind == "linear":
            # HF _compute_linear_scaling_rope_parameters: inv_freq /= factor (positions / factor)
            return inv / factor, 1.0
        original_ctx = hp("rope.scaling.original_context_length", None)
        if original_ctx is None:
            raise ValueError("rope scaling 'yarn' needs rope.scaling.original_context_length")
        attn = hp("rope.scaling.attn_factor", None)
        return yarn_frequencies(inv, base, self.rope_dim, factor, float(original_ctx),
                                float(hp("rope.scaling.yarn_beta_fast", YARN_BETA_FAST) or YARN_BETA_FAST),
                                float(hp("rope.scaling.yarn_beta_slow", YARN_BETA_SLOW) or YARN_BETA_SLOW),
                                None if attn is None else float(attn))

    # -- weights

    def w(self, name):
        if name in self._w:
            return self._w[name]
        t = self.f.load(name)
        if self.cache_weights:
            self._w[name] = t
        return t

    def norm(self, name):
        """A norm weight as the multiplier (adds Gemma's +1 if the file did not)."""
        w = self.w(name)
        return w + 1.0 if self.arch == "gemma3" and not NORM_WEIGHTS_INCLUDE_ONE else w

    def opt(self, name):
        return self.w(name) if self.f.has(name) else None

    def _embed(self, tokens):
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.min() < 0 or tokens.max() >= self.n_vocab:
            raise ValueError(f"token id out of range [0, {self.n_vocab})")
        if self.tied or "token_embd.weight" in self._w:  # full matrix needed for the output anyway
            e = self.w("token_embd.weight")[tokens]
        else:
            e = self.f.load_rows("token_embd.weight", tokens)
        return e.astype(np.float64) * self.embd_scale

    def matmul(self, x, name, W=None):
        """x (n, k) @ W^T for the weight `name` (out, k), plus its bias when the file has one.
        W: a slice of the named tensor to use instead (one expert of a 3-D tensor); then no bias is
        added (an expert's bias is the same slice of the bias tensor: the caller adds it)."""
        whole = W is None
        W = self.w(name) if whole else W
        if self.precision == "f64":
            y = np.asarray(x, dtype=np.float64) @ W.astype(np.float64).T
        else:
            x32 = np.ascontiguousarray(x, dtype=np.float32)
            if self.act_quant == "q8":
                x32 = fake_quant_rows(x32, 256 if self.f.type_of(name) in _K_QUANTS else 32)
            y = (x32 @ W.T).astype(np.float64)
        bias = name[:-len("weight")] + "bias"
        if whole and self.f.has(bias):
            y = y + self.w(bias)
        return y

    def moe_ffn(self, h, p):
        """The routed experts of layer prefix p on h (n, n_embd) float64 (HF Qwen3MoeSparseMoeBlock;
        for gpt-oss OpenAI's MLPBlock: expert biases, SOFTMAX_WEIGHT gating, swiglu_oai)."""
        n = h.shape[0]
        k = self.n_expert_used
        X, Fx, E = self.n_expert, self.n_ff_exp, self.n_embd
        gate_exps, up_exps = self.w(p + "ffn_gate_exps.weight"), self.w(p + "ffn_up_exps.weight")
        down_exps = self.w(p + "ffn_down_exps.weight")
        want = {p + "ffn_gate_exps.weight": (X, Fx, E), p + "ffn_up_exps.weight": (X, Fx, E),
                p + "ffn_down_exps.weight": (X, E, Fx), p + "ffn_gate_inp.weight": (X, E),
                # biases (gpt-oss), where the file has them
                p + "ffn_gate_inp.bias": (X,), p + "ffn_gate_exps.bias": (X, Fx),
                p + "ffn_up_exps.bias": (X, Fx), p + "ffn_down_exps.bias": (X, E)}
        for name, shape in want.items():
            if (name.endswith(".weight") or self.f.has(name)) and self.f.shape(name) != shape:
                raise ValueError(f"{name}: NumPy shape {self.f.shape(name)}, want {shape}")
        gate_b, up_b = self.opt(p + "ffn_gate_exps.bias"), self.opt(p + "ffn_up_exps.bias")
        down_b = self.opt(p + "ffn_down_exps.bias")
        logits = self.matmul(h, p + "ffn_gate_inp.weight")  # (n, n_expert): gate(hidden_states) (+ bias)
        if self.expert_gating == "softmax":
            probs = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs /= probs.sum(axis=1, keepdims=True)  # softmax over all experts (float64)
            rank = probs
        elif self.expert_gating == "softmax_weight":
            rank = logits  # torch.topk(gate(t)) in OpenAI's MLPBlock
        else:
            raise ValueError(f"expert gating {self.expert_gating!r}")
        # top-k by a STABLE sort of the negated ranking values: equal values keep index order, so a
        # tie goes to the lower expert index (brasa defines ties that way; torch.topk leaves them
        # unspecified)
        if self.expert_tie_break == "lower":
            order = np.argsort(-rank, axis=1, kind="stable")
        else:
            order = self.n_expert - 1 - np.argsort(-rank[:, ::-1], axis=1, kind="stable")
        chosen = order[:, :k]  # (n, k)
        if self.expert_gating == "softmax":
            weights = np.take_along_axis(probs, chosen, axis=1)
            if self.expert_weights_norm:
                weights = weights / weights.sum(axis=1, keepdims=True)  # norm_topk_prob
        else:
            top = np.take_along_axis(logits, chosen, axis=1)
            weights = np.exp(top - top.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)  # softmax over the k chosen logits
        if k < self.n_expert:
            sorted_logits = np.take_along_axis(logits, order, axis=1)
            gaps = sorted_logits[:, k - 1] - sorted_logits[:, k]
            self.router_exact_ties += int(np.sum(gaps == 0))
            if np.any(gaps > 0):
                self.router_min_gap = min(self.router_min_gap, float(np.min(gaps[gaps > 0])))
        out = np.zeros((n, self.n_embd), dtype=np.float64)
        for e in np.unique(chosen):
            rows, slot = np.nonzero(chosen == e)
            x = h[rows]
            gate = self.matmul(x, p + "ffn_gate_exps.weight", gate_exps[e])
            up = self.matmul(x, p + "ffn_up_exps.weight", up_exps[e])
            if gate_b is not None:
                gate = gate + gate_b[e]
            if up_b is not None:
                up = up + up_b[e]
            if self.glu_oai:
                if self.glu_limit is not None:
                    self.glu_clamped_gate += int(np.sum(gate > self.glu_limit))
                    self.glu_clamped_up += int(np.sum(np.abs(up) > self.glu_limit))
                self.glu_values += gate.size
                act = swiglu_oai(gate, up, self.glu_alpha, self.glu_limit)
            else:
                act = silu(gate) * up
            y = self.matmul(act, p + "ffn_down_exps.weight", down_exps[e])
            if down_b is not None:
                y = y + down_b[e]
            out[rows] += weights[rows, slot][:, None] * y
        return out

    # -- forward

    def _forward(self, tokens, kv, all_logits):
        n = len(tokens)
        pos = kv.n + np.arange(n)
        H, Hkv, dk, dv = self.n_head, self.n_head_kv, self.head_dim_k, self.head_dim_v
        g = H // Hkv
        gemma = self.arch == "gemma3"
        x = self._embed(tokens)
        for il in range(self.n_layer):
            p = f"blk.{il}."
            h = rmsnorm(x, self.norm(p + "attn_norm.weight"), self.eps)
            q = self.matmul(h, p + "attn_q.weight").reshape(n, H, dk)
            k = self.matmul(h, p + "attn_k.weight").reshape(n, Hkv, dk)
            v = self.matmul(h, p + "attn_v.weight").reshape(n, Hkv, dv)
            if self.arch in QK_NORM_ARCHS:  # per-head RMSNorm over head_dim, before RoPE
                q = rmsnorm(q, self.norm(p + "attn_q_norm.weight"), self.eps)
                k = rmsnorm(k, self.norm(p + "attn_k_norm.weight"), self.eps)
            inv_freq, mscale = self.layer_rope[il]
            q = rope(q, pos, inv_freq, self.rope_mode, mscale)
            k = rope(k, pos, inv_freq, self.rope_mode, mscale)
            K, V = kv.append(il, k.transpose(1, 0, 2), v.transpose(1, 0, 2))  # (Hkv, T, d)
            T = K.shape[1]
            qh = q.transpose(1, 0, 2).reshape(Hkv, g, n, dk)  # head h uses kv head h // g
            s = np.einsum("kgnd,ktd->kgnt", qh, K) / math.sqrt(dk)
            s = softcap(s, self.attn_softcap)
            diff = pos[:, None] - np.arange(T)[None, :]  # i - j
            allowed = diff >= 0
            if self.layer_local[il]:
                allowed &= diff < self.sliding_window
            s = np.where(allowed, s, -np.inf)
            sinks = self.opt(p + "attn_sinks.weight") if self.attn_sinks else None
            if sinks is not None:  # one logit per query head, (Hkv, g) as qh is laid out
                if sinks.shape != (H,):
                    raise ValueError(f"{p}attn_sinks.weight: NumPy shape {sinks.shape}, want {(H,)}")
                sinks = sinks.astype(np.float64).reshape(Hkv, g, 1, 1)
            s = softmax_with_sinks(s, sinks)
            o = np.einsum("kgnt,ktd->kgnd", s, V).reshape(H, n, dv).transpose(1, 0, 2)
            o = self.matmul(o.reshape(n, H * dv), p + "attn_output.weight")
            if gemma:
                o = rmsnorm(o, self.norm(p + "post_attention_norm.weight"), self.eps)
            x = x + o
            h = rmsnorm(x, self.norm(p + self.ffn_norm_name), self.eps)
            if self.moe:
                f = self.moe_ffn(h, p)
            else:
                gate = self.matmul(h, p + "ffn_gate.weight")
                up = self.matmul(h, p + "ffn_up.weight")
                act = (gelu_tanh(gate) if gemma else silu(gate)) * up
                f = self.matmul(act, p + "ffn_down.weight")
            if gemma:
                f = rmsnorm(f, self.norm(p + "post_ffw_norm.weight"), self.eps)
            x = x + f
        kv.n += n
        if not all_logits:
            x = x[-1:]
        x = rmsnorm(x, self.norm("output_norm.weight"), self.eps)
        out = "token_embd.weight" if self.tied else "output.weight"
        logits = self.matmul(x, out)
        return softcap(logits, self.final_softcap).astype(np.float32)

    def logits(self, tokens):
        """float32 logits (n_tokens, n_vocab) of every position of `tokens` (causal)."""
        return self._forward(list(tokens), KVCache(self.n_layer), all_logits=True)

    def generate(self, tokens, n, prompt_logits=False, step_logits=False):
        """Greedy decoding of n tokens with a KV cache (one position per new token).
        Returns a Generation: ids; margins[i], the gap between the best and second-best logit at
        step i; the prompt's logits (n_prompt, n_vocab) if prompt_logits; the logits each step
        chose from (n, n_vocab) if step_logits."""
        kv = KVCache(self.n_layer)
        lg = self._forward(list(tokens), kv, all_logits=prompt_logits)
        gen = Generation([], [], lg if prompt_logits else None, [] if step_logits else None)
        last = lg[-1]
        for step in range(n):
            best = int(np.argmax(last))
            second = np.partition(last, -2)[-2]
            gen.ids.append(best)
            gen.margins.append(float(last[best]) - float(second))
            if step_logits:
                gen.step_logits.append(last.copy())
            if step + 1 < n:
                last = self._forward([best], kv, all_logits=False)[-1]
        if step_logits:
            gen.step_logits = np.array(gen.step_logits).reshape(n, self.n_vocab)
        return gen

    def greedy(self, tokens, n):
        """n greedily generated token ids continuing `tokens`."""
        return self.generate(tokens, n).ids


# ----------------------------------------------------------------------------- prompts

MODEL_FILES = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
    "qwen2": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
}


def model_cache_dir():
    d = os.environ.get("BRASA_MODEL_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "brasa", "models")
    return Path(d)


def resolve_model(name_or_path):
    if name_or_path in MODEL_FILES:
        return model_cache_dir() / MODEL_FILES[name_or_path]
    return Path(name_or_path)


def chat_prompt(arch, question):
    """The chat-formatted prompt text for one user question, per the models' chat templates."""
    if arch == "gemma3":
        return f"<start_of_turn>user\n{question}<end_of_turn>\n<start_of_turn>model\n"
    if arch == "qwen2":
        return ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                f"assistant.<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
                "<|im_start|>assistant\n")
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def load_tokenizer(path):
    sys.path.insert(0, str(HERE.parent / "tokenizer"))
    import ref_tokenizer  # the reference tokenizer from tests/tokenizer (HF tokenizers library)
    return ref_tokenizer.load(path)


def prompt_tokens(tok, arch, question):
    ids = tok.encode(chat_prompt(arch, question), parse_special=True)
    if tok.vocab.add_bos and tok.vocab.bos_id is not None:
        ids = [int(tok.vocab.bos_id)] + ids
    return [int(i) for i in ids]


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ----------------------------------------------------------------------------- script

SELF_TEST_QUESTIONS = ["What is the capital of France?",
                       "Why is the sky blue? Explain it in a few sentences."]
# Raw text, no chat template (the Gemma 3 270M file is a base model: it echoes chat turns).
SELF_TEST_PLAIN = ["Question: What is the capital of France?\nAnswer: The capital of France is"]


def self_test(path, n):
    t0 = time.perf_counter()
    tok = load_tokenizer(path)
    model = RefModel(path)
    print(f"== {path.name}: arch={model.arch} layers={model.n_layer} embd={model.n_embd} "
          f"heads={model.n_head}/{model.n_head_kv} head_dim={model.head_dim_k}/{model.head_dim_v} "
          f"rope={model.rope_mode} dim={model.rope_dim} base={model.rope_base:g} eps={model.eps:g} "
          f"vocab={model.n_vocab} tied={model.tied} window={model.sliding_window or '-'} "
          f"local_layers={sum(model.layer_local)}")
    ok = True
    bos = [int(tok.vocab.bos_id)] if tok.vocab.add_bos and tok.vocab.bos_id is not None else []
    for q in SELF_TEST_QUESTIONS + SELF_TEST_PLAIN:
        if q in SELF_TEST_PLAIN:
            ids = bos + [int(i) for i in tok.encode(q, parse_special=False)]
        else:
            ids = prompt_tokens(tok, model.arch, q)
        t1 = time.perf_counter()
        gen = model.generate(ids, n)
        out, margins = gen.ids, gen.margins
        t2 = time.perf_counter()
        print(f"-- {q!r} ({len(ids)} prompt tokens, {n} generated in {t2 - t1:.1f} s; "
              f"min top-2 margin {min(margins):.3f} at step {int(np.argmin(margins))})")
        print(tok.decode(out).decode("utf-8", errors="replace"))
        print(f"   ids: {' '.join(map(str, out))}")
    # The KV-cache path against a single causal pass over prompt + continuation.
    seq = ids + out
    full = model.logits(seq)
    again = [int(i) for i in np.argmax(full[len(ids) - 1:-1], axis=-1)]
    same = again == out
    ok &= same
    print(f"   cache check: argmax of one causal pass over prompt+continuation "
          f"{'equals' if same else 'DIFFERS FROM'} the cached greedy ids")
    print(f"   total {time.perf_counter() - t0:.1f} s, peak RSS {peak_rss_mib():.0f} MiB")
    return ok


def rel_err(a, ref):
    rng = ref.max(axis=-1) - ref.min(axis=-1)
    return np.abs(a.astype(np.float64) - ref).max(axis=-1) / rng


def noise_floor(path):
    tok = load_tokenizer(path)
    model = RefModel(path)
    ids = prompt_tokens(tok, model.arch, SELF_TEST_QUESTIONS[1])
    t0 = time.perf_counter()
    ref32 = model.logits(ids)
    print(f"== {path.name}: {len(ids)} tokens, f32 pass {time.perf_counter() - t0:.1f} s")
    model.precision = "f64"
    ref64 = model.logits(ids).astype(np.float64)
    e = rel_err(ref32, ref64)
    print(f"   f32 vs f64 weight products: max|diff|/range max {e.max():.2e} median {np.median(e):.2e}")
    model.precision, model.act_quant = "f32", "q8"
    q8 = model.logits(ids)
    e = rel_err(q8, ref64)
    print(f"   q8 activations vs f64:      max|diff|/range max {e.max():.2e} median {np.median(e):.2e}")
    print(f"   peak RSS {peak_rss_mib():.0f} MiB")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--self-test", action="store_true")
    g.add_argument("--noise-floor", action="store_true")
    ap.add_argument("-n", type=int, default=32, help="tokens to generate (self-test)")
    ap.add_argument("models", nargs="*", default=list(MODEL_FILES))
    args = ap.parse_args(argv)
    ok = True
    for name in args.models:
        path = resolve_model(name)
        if not path.exists():
            print(f"skipped {name}: {path} missing (run scripts/fetch_models.py)")
            continue
        if args.self_test:
            ok &= self_test(path, args.n)
        else:
            noise_floor(path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
