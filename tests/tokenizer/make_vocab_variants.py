#!/usr/bin/env python3
"""Write tokenizer-only GGUF files that put real vocabularies under other families' split rules.

No vocabulary of most families (DeepSeek, Falcon, Mistral's tekken, gpt-oss's o200k, Kimi K2,
Gemma 4, ...) is reachable here, so the split rule is what these files test: each copies the
metadata of a real model (Qwen2.5's byte-level BPE, 151k tokens and merges; Gemma 3's
SentencePiece vocabulary) and changes only what makes the family:

* ``pre-NAME.gguf``: Qwen2.5's vocabulary with ``tokenizer.ggml.pre = NAME``, one per family
  (FAMILIES below); the reference builds NAME's published split (ref_tokenizer.PRE_TOKENIZERS).
* ``pre-llama-bpe-unreachable.gguf``: as ``pre-llama-bpe``, less the merges that build a few
  whole words (Vietnamese among them), the way Llama 3's tiktoken-made vocabulary holds tokens
  its merges cannot reach: the reference's ignore_merges must give them whole.
* ``spm-no-prefix-key.gguf``: Gemma 3's SentencePiece vocabulary without the
  ``tokenizer.ggml.add_space_prefix`` key, as Llama 2, Mistral 7B and Phi-3 files come: the
  reference rule is "add the leading space".
* ``gemma4.gguf``: Gemma 3's vocabulary as ``tokenizer.ggml.model = gemma4`` (BPE over UTF-8),
  with merges derived from its scores (as ref_tokenizer.derive_spm_merges ranks them); and
  ``pre-sarvam-moe.gguf``, the same as ``gpt2`` with the ``sarvam-moe`` pre-tokenizer.

Tensors are left out: the files hold metadata only, which brasa opens for tokenizing. Usage:
    make_vocab_variants.py --qwen2 Q.gguf --gemma3 G.gguf --out DIR
"""
import argparse
import mmap
import struct
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ref_tokenizer  # noqa: E402

# One name per split rule of brasa's table; tests/tokenizer/ref_tokenizer.py has each one's rule.
FAMILIES = ["gpt-2", "smollm", "llama-bpe", "dbrx", "glm4", "qwen2", "qwen35", "seed-coder", "bailingmoe",
            "gpt-4o", "tekken", "kimi-k2", "deepseek-v3", "deepseek-coder", "deepseek-llm", "falcon", "bloom",
            "viking", "starcoder", "command-r", "mpt", "refact", "minicpm5", "ufakzeka", "laguna", "exaone-moe",
            "jais-2", "spark2_5", "youtu", "tiny_aya"]

# Words whose last merge is dropped in pre-llama-bpe-unreachable.gguf.
UNREACHABLE_WORDS = [" Việt", "Cửa", " Nam", " months"]

_STRING, _ARRAY = 8, 9


def _raw_items(path):
    """(key, value type, raw value bytes) of every metadata item, and the file's version."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        r = ref_tokenizer._MetaReader(mm)
        r.pos = 4
        version = r.scalar("<I")
        r.scalar("<Q")
        items = []
        for _ in range(r.scalar("<Q")):
            key = r.string()
            vtype = r.scalar("<I")
            start = r.pos
            r.value(vtype)
            items.append((key, vtype, bytes(mm[start:r.pos])))
        return version, items


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _str_array(strings):
    return struct.pack("<IQ", _STRING, len(strings)) + b"".join(_str(s) for s in strings)


def write(path, version, items):
    """A GGUF with these metadata items and no tensors."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, 0, len(items)))
    for key, vtype, raw in items:
        out += _str(key) + struct.pack("<I", vtype) + raw
    path.write_bytes(bytes(out))


def replace(items, key, vtype, raw):
    """items with key set to (vtype, raw) (appended when absent); raw None removes it."""
    out = [it for it in items if it[0] != key]
    if raw is not None:
        out.append((key, vtype, raw))
    return out


def unreachable_merges(vocab):
    """The merges without the last one of each word in UNREACHABLE_WORDS (byte-level spelling)."""
    table = ref_tokenizer.BYTE_TO_CHAR
    drop = set()
    for w in UNREACHABLE_WORDS:
        spelled = "".join(table[b] for b in w.encode("utf-8"))
        if spelled not in vocab.tokens:
            continue
        for m in vocab.merges:
            left, right = m.split(" ")
            if left + right == spelled:
                drop.add(m)
    return [m for m in vocab.merges if m not in drop], len(drop)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qwen2", required=True)
    ap.add_argument("--gemma3", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = Path(args.out)
    for model in (args.qwen2, args.gemma3):
        if not Path(model).is_file():
            print(f"SKIP: model file not found: {model}")
            return 77
    out.mkdir(parents=True, exist_ok=True)

    version, items = _raw_items(args.qwen2)
    items = [it for it in items if it[0].startswith(("general.architecture", "tokenizer.ggml."))]
    for name in FAMILIES:
        write(out / f"pre-{name}.gguf", version, replace(items, "tokenizer.ggml.pre", _STRING, _str(name)))
    vocab = ref_tokenizer.read_vocab(args.qwen2)
    merges, dropped = unreachable_merges(vocab)
    if dropped < 2:
        print("make_vocab_variants: the unreachable words are not in the vocabulary", file=sys.stderr)
        return 1
    variant = replace(items, "tokenizer.ggml.pre", _STRING, _str("llama-bpe"))
    write(out / "pre-llama-bpe-unreachable.gguf", version,
          replace(variant, "tokenizer.ggml.merges", _ARRAY, _str_array(merges)))

    version, items = _raw_items(args.gemma3)
    items = [it for it in items if it[0].startswith(("general.architecture", "tokenizer.ggml."))]
    write(out / "spm-no-prefix-key.gguf", version, replace(items, "tokenizer.ggml.add_space_prefix", 0, None))
    g = ref_tokenizer.read_vocab(args.gemma3)
    merges = [f"{a} {b}" for a, b in ref_tokenizer.derive_spm_merges(g.tokens, g.scores)
              if " " not in a and " " not in b]
    gemma4 = replace(items, "tokenizer.ggml.model", _STRING, _str("gemma4"))
    gemma4 = replace(gemma4, "tokenizer.ggml.scores", 0, None)
    gemma4 = replace(gemma4, "tokenizer.ggml.merges", _ARRAY, _str_array(merges))
    write(out / "gemma4.gguf", version, gemma4)
    sarvam = replace(gemma4, "tokenizer.ggml.model", _STRING, _str("gpt2"))
    write(out / "pre-sarvam-moe.gguf", version, replace(sarvam, "tokenizer.ggml.pre", _STRING, _str("sarvam-moe")))
    print(f"make_vocab_variants: {len(FAMILIES) + 4} files in {out} ({dropped} merges dropped)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
