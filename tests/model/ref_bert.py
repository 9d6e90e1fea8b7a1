#!/usr/bin/env python3
"""Independent NumPy reference of a BERT sentence-embedding model, for brasa's embedding tests.

Written from Hugging Face's BertModel (modeling_bert.py: BertEmbeddings, BertSelfAttention,
BertSelfOutput, BertIntermediate, BertOutput) and sentence-transformers' Pooling and Normalize
modules. It reads the Hugging Face folder itself: config.json and model.safetensors (parsed here:
a little-endian u64 header length, a JSON header, raw arrays), never the GGUF file brasa reads, so
a mistake in the conversion shows up as a difference. Tokens come from the `tokenizers` library on
the folder's tokenizer.json (truncation and padding off).

Everything is float64: the weights (float32 in the file) are widened once, so the reference's own
rounding is far below what the comparison can see. GELU is the exact erf form (hidden_act "gelu"),
with erf as Chebyshev interpolants of Python's math.erf on unit intervals (NumPy has no erf, and
math.erf element by element costs seconds): checked against math.erf to 1e-14 when loaded.

    ref = RefBert(folder)
    ids = ref.tokenize("A sentence.")        # [CLS] ... [SEP]
    vec = ref.embed(ids, pooling="mean")     # unit length; "cls" and "last" too
"""
import json
import math
import struct
from pathlib import Path

import numpy as np

# erf on [k, k+1) for k = 0..5 (beyond 6 it is 1 to double precision), odd
_ERF_PIECES = [np.polynomial.chebyshev.Chebyshev.interpolate(np.vectorize(math.erf), 24, domain=[k, k + 1])
               for k in range(6)]


def erf(x):
    a = np.abs(x)
    out = np.ones_like(a)
    piece = np.minimum(a, 6).astype(np.int64)
    for k, c in enumerate(_ERF_PIECES):
        m = piece == k
        out[m] = c(a[m])
    return np.sign(x) * out


_probe = np.linspace(-7, 7, 20001)
assert np.max(np.abs(erf(_probe) - np.vectorize(math.erf)(_probe))) < 1e-14, "erf interpolation"


def read_safetensors(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dt = np.dtype(dtypes[info["dtype"]])
        out[name] = np.frombuffer(data, dtype=dt, count=(b - a) // dt.itemsize, offset=8 + n + a).reshape(info["shape"])
    return out


def layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


class RefBert:
    def __init__(self, folder):
        folder = Path(folder)
        self.config = json.loads((folder / "config.json").read_text())
        raw = read_safetensors(folder / "model.safetensors")
        self.w = {k[5:] if k.startswith("bert.") else k: v.astype(np.float64) for k, v in raw.items()}
        self.eps = self.config["layer_norm_eps"]
        self.n_head = self.config["num_attention_heads"]
        self.n_layer = self.config["num_hidden_layers"]
        self.folder = folder
        self._tok = None

    def tokenize(self, text):
        if self._tok is None:
            from tokenizers import Tokenizer
            self._tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
            self._tok.no_truncation()
            self._tok.no_padding()
        return self._tok.encode(text).ids

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def hidden(self, ids):
        """The last layer's hidden states (n, hidden) of one input (attention over all of it)."""
        ids = np.asarray(ids)
        n, w = len(ids), self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        H = self.n_head
        for il in range(self.n_layer):
            p = f"encoder.layer.{il}."
            d = x.shape[1] // H
            q = self.linear(x, p + "attention.self.query").reshape(n, H, d).transpose(1, 0, 2)
            k = self.linear(x, p + "attention.self.key").reshape(n, H, d).transpose(1, 0, 2)
            v = self.linear(x, p + "attention.self.value").reshape(n, H, d).transpose(1, 0, 2)
            s = q @ k.transpose(0, 2, 1) / math.sqrt(d)  # (H, n, n): no mask, every token sees all
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            ctx = (s @ v).transpose(1, 0, 2).reshape(n, H * d)
            a = self.linear(ctx, p + "attention.output.dense")
            x = layer_norm(x + a, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"],
                           self.eps)
            h = gelu(self.linear(x, p + "intermediate.dense"))
            o = self.linear(h, p + "output.dense")
            x = layer_norm(x + o, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x

    def embed(self, ids, pooling="mean"):
        h = self.hidden(ids)
        v = {"mean": lambda: h.mean(axis=0), "cls": lambda: h[0], "last": lambda: h[-1]}[pooling]()
        return v / max(np.linalg.norm(v), 1e-12)
