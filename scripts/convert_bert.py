#!/usr/bin/env python3
"""Convert a Hugging Face BERT embedding model (a sentence-transformers folder: config.json,
model.safetensors, tokenizer.json, 1_Pooling/config.json) into a GGUF file that brasa and llama.cpp
both read, written the way llama.cpp's converter writes the `bert` architecture:

* tensors `token_embd`, `position_embd`, `token_types`, `token_embd_norm` and per layer `attn_q`,
  `attn_k`, `attn_v`, `attn_output`, `attn_output_norm`, `ffn_up`, `ffn_down`, `layer_output_norm`
  (weights and biases); the pooler and masked-LM heads are left out (embeddings need neither);
* keys `bert.context_length`, `embedding_length`, `feed_forward_length`, `block_count`,
  `attention.head_count`, `attention.layer_norm_epsilon`, `attention.causal` (false) and
  `pooling_type` (llama.cpp's numbers: 0 none, 1 mean, 2 cls, 3 last, 4 rank) from the
  sentence-transformers pooling config;
* the vocabulary as llama.cpp stores WordPiece: a word-initial piece `w` becomes `\u2581w`, a
  continuation `##w` becomes `w`, control tokens stay as they are; the special ids under both the
  current keys (bos = [CLS], eos = [SEP]) and the older cls/seperator ones (llama.cpp's spelling);
  `tokenizer.ggml.normalizer.lowercase` (and `strip_accents` when the tokenizer sets it).

Matrices are stored as F16 and vectors (norms, biases) as F32, as llama.cpp's default f16 output
does: half the file, and brasa's products read F16 rows as exactly as F32 ones (float activations).
--f32 keeps everything in F32.

Reads safetensors itself (a JSON header and raw little-endian arrays): only numpy and gguf needed.
Usage: convert_bert.py HF_DIR OUT.gguf [--pooling mean|cls|last|none] [--f32] [--name NAME]
"""
import argparse
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

POOLING = {"none": 0, "mean": 1, "cls": 2, "last": 3}
TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_USER_DEFINED = 1, 3, 4
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}

# Hugging Face BERT tensor names (after "bert." is dropped) -> GGUF names; {i} is the layer.
TOP_TENSORS = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
LAYER_TENSORS = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
SKIPPED_PREFIXES = ("pooler.", "cls.", "embeddings.position_ids")


def read_safetensors(path):
    """name -> numpy array (float32 for float data), from a .safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack_from("<Q", data, 0)
    if header_len > len(data) - 8:
        raise ValueError(f"{path}: header of {header_len} bytes is past the end of the file")
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = info["dtype"]
        if dtype == "BF16":  # the high half of a float32
            raw = np.frombuffer(data, dtype="<u2", count=(end - start) // 2, offset=base + start)
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        elif dtype in SAFETENSORS_DTYPES:
            dt = np.dtype(SAFETENSORS_DTYPES[dtype]).newbyteorder("<")
            arr = np.frombuffer(data, dtype=dt, count=(end - start) // dt.itemsize, offset=base + start)
        else:
            raise ValueError(f"{path}: tensor {name} has dtype {dtype}, which this converter does not read")
        out[name] = arr.reshape(info["shape"])
    return out


def gguf_name(hf_name):
    """The GGUF name of a Hugging Face BERT tensor, or None when embeddings do not need it."""
    name = hf_name[5:] if hf_name.startswith("bert.") else hf_name
    if name.startswith(SKIPPED_PREFIXES):
        return None
    if name in TOP_TENSORS:
        return TOP_TENSORS[name]
    parts = name.split(".")
    if len(parts) >= 5 and parts[0] == "encoder" and parts[1] == "layer" and parts[2].isdigit():
        stem, kind = ".".join(parts[3:-1]), parts[-1]
        if stem in LAYER_TENSORS and kind in ("weight", "bias"):
            return f"blk.{int(parts[2])}.{LAYER_TENSORS[stem]}.{kind}"
    raise ValueError(f"tensor {hf_name} is not part of a BERT model this converter knows")


def pooling_of(model_dir):
    """llama.cpp's pooling number from the sentence-transformers pooling module, as its converter
    reads it; none when the folder has no pooling module."""
    modules = model_dir / "modules.json"
    if not modules.is_file():
        return POOLING["none"]
    for mod in json.loads(modules.read_text()):
        if mod.get("type", "").endswith("Pooling"):
            cfg = json.loads((model_dir / mod["path"] / "config.json").read_text())
            if cfg.get("pooling_mode_mean_tokens"):
                return POOLING["mean"]
            if cfg.get("pooling_mode_cls_token"):
                return POOLING["cls"]
            if cfg.get("pooling_mode_lasttoken"):
                return POOLING["last"]
            raise ValueError(f"{model_dir}: pooling {cfg} is not mean, cls or last")
    return POOLING["none"]


def phantom(token, toktype):
    """llama.cpp's WordPiece spelling: word starts carry U+2581, continuations lose their ##."""
    if toktype == TOKEN_CONTROL:
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def vocabulary(tok_json):
    """(tokens in id order, token types) from a tokenizer.json with a WordPiece model."""
    model = tok_json["model"]
    if model.get("type") != "WordPiece":
        raise ValueError(f"tokenizer model {model.get('type')} is not WordPiece")
    vocab = model["vocab"]
    n = max(vocab.values()) + 1
    tokens = [None] * n
    for text, i in vocab.items():
        tokens[i] = text
    if any(t is None for t in tokens):
        raise ValueError("the vocabulary's ids have gaps")
    types = [TOKEN_NORMAL] * n
    for added in tok_json.get("added_tokens", []):
        i = added["id"]
        if not 0 <= i < n or tokens[i] != added["content"]:
            raise ValueError(f"added token {added} is not in the vocabulary")
        types[i] = TOKEN_CONTROL if added.get("special") else TOKEN_USER_DEFINED
    return [phantom(t, k) for t, k in zip(tokens, types)], types


def special_id(tokens, tok_config, key, default_text):
    text = tok_config.get(key, default_text)
    if isinstance(text, dict):
        text = text.get("content", default_text)
    if text not in tokens:
        raise ValueError(f"special token {text!r} ({key}) is not in the vocabulary")
    return tokens.index(text)


def convert(model_dir, out_path, pooling=None, f32=False, name=None):
    """Writes OUT_PATH (atomically) from the model folder; pooling overrides the folder's."""
    import gguf  # noqa: PLC0415 (imported here so --help works without it)

    model_dir = Path(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") not in (None, "bert"):
        raise ValueError(f"model_type {config.get('model_type')} is not bert")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"hidden_act {config['hidden_act']} is not gelu")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only absolute position embeddings are supported")
    tok_json = json.loads((model_dir / "tokenizer.json").read_text())
    tok_config_path = model_dir / "tokenizer_config.json"
    tok_config = json.loads(tok_config_path.read_text()) if tok_config_path.is_file() else {}
    tensors = read_safetensors(model_dir / "model.safetensors")

    tokens, types = vocabulary(tok_json)
    raw_tokens = [t if k == TOKEN_CONTROL else None for t, k in zip(tokens, types)]
    cls = special_id(raw_tokens, tok_config, "cls_token", "[CLS]")
    sep = special_id(raw_tokens, tok_config, "sep_token", "[SEP]")
    pad = special_id(raw_tokens, tok_config, "pad_token", "[PAD]")
    unk = special_id(raw_tokens, tok_config, "unk_token", "[UNK]")
    mask = special_id(raw_tokens, tok_config, "mask_token", "[MASK]")
    normalizer = tok_json.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer" or (tok_json.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer":
        raise ValueError("the tokenizer is not BERT's (BertNormalizer and BertPreTokenizer)")

    n_layer = config["num_hidden_layers"]
    arch = "bert"
    tmp = Path(str(out_path) + ".partial")
    w = gguf.GGUFWriter(str(tmp), arch)
    w.add_name(name or model_dir.name)
    w.add_file_type(0 if f32 else 1)  # all F32, or mostly F16
    w.add_uint32(f"{arch}.context_length", config["max_position_embeddings"])
    w.add_uint32(f"{arch}.embedding_length", config["hidden_size"])
    w.add_uint32(f"{arch}.feed_forward_length", config["intermediate_size"])
    w.add_uint32(f"{arch}.block_count", n_layer)
    w.add_uint32(f"{arch}.attention.head_count", config["num_attention_heads"])
    w.add_float32(f"{arch}.attention.layer_norm_epsilon", config.get("layer_norm_eps", 1e-12))
    w.add_bool(f"{arch}.attention.causal", False)
    w.add_uint32(f"{arch}.pooling_type", pooling_of(model_dir) if pooling is None else POOLING[pooling])

    w.add_string("tokenizer.ggml.model", "bert")
    w.add_string("tokenizer.ggml.pre", "bert-bge")  # llama.cpp's name for this vocabulary's hash
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_uint32("tokenizer.ggml.token_type_count", config.get("type_vocab_size", 2))
    for key, value in (("bos_token_id", cls), ("eos_token_id", sep), ("cls_token_id", cls),
                       ("seperator_token_id", sep), ("padding_token_id", pad), ("unknown_token_id", unk),
                       ("mask_token_id", mask)):
        w.add_uint32(f"tokenizer.ggml.{key}", value)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", True)
    w.add_bool("tokenizer.ggml.normalizer.lowercase", bool(normalizer.get("lowercase", True)))
    if normalizer.get("strip_accents") is not None:
        w.add_bool("tokenizer.ggml.normalizer.strip_accents", bool(normalizer["strip_accents"]))

    written = set()
    for hf_name in sorted(tensors):
        gname = gguf_name(hf_name)
        if gname is None:
            continue
        arr = np.ascontiguousarray(tensors[hf_name], dtype=np.float32)
        if arr.ndim == 2 and not f32:
            arr = arr.astype(np.float16)
        w.add_tensor(gname, arr)
        written.add(gname)
    needed = set(TOP_TENSORS.values()) | {f"blk.{i}.{t}.{k}" for i in range(n_layer)
                                           for t in LAYER_TENSORS.values() for k in ("weight", "bias")}
    if needed - written:
        raise ValueError(f"tensors missing from {model_dir}: {sorted(needed - written)[:5]}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out_path)
    return out_path


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--pooling", choices=sorted(POOLING), help="override the folder's pooling")
    ap.add_argument("--f32", action="store_true", help="keep every tensor in F32")
    ap.add_argument("--name", help="general.name (default: the folder's name)")
    a = ap.parse_args(argv)
    try:
        print(convert(a.model_dir, a.out, a.pooling, a.f32, a.name))
    except (OSError, ValueError, KeyError) as e:
        print(f"convert_bert: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
