#!/usr/bin/env python3
"""Independent reference tokenizer for brasa's tokenizer tests.

Builds a HF `tokenizers.Tokenizer` (the Rust library) from a GGUF file's metadata only: no
tokenizer.json, nothing from the internet. Two GGUF tokenizer kinds are supported:

* ``gpt2``  byte-level BPE: vocab from tokenizer.ggml.tokens, merges from tokenizer.ggml.merges,
  pre-tokenizer chosen by tokenizer.ggml.pre (``smollm``, ``qwen2``; anything else raises).
* ``llama`` SentencePiece-style BPE (Gemma): byte fallback, merges derived from vocab + scores,
  spaces normalised to U+2581, as GemmaTokenizerFast does.

Tokens of type CONTROL (3) and USER_DEFINED (4) become added tokens, matched on the raw text.
With parse_special=False control tokens are not matched while user-defined ones still are, which
is llama.cpp's behaviour (and brasa's). ``decode`` is our own byte-exact decoder (the HF decoders
return str and would hide invalid UTF-8); control tokens decode to their text.

Usage as a script: ``python3 ref_tokenizer.py MODEL [TEXT ...]`` prints the ids and pieces.
"""
import mmap
import os
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6

SPACE_MARK = "\u2581"  # SentencePiece's visible space

# Qwen2's pre-tokenizer split pattern, as in its tokenizer.json (and llama.cpp's "qwen2" pre type).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

REPO_ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- GGUF metadata

# GGUF value types -> (struct format, numpy dtype) for the fixed-size ones.
_GGUF_SCALARS = {0: ("<B", "<u1"), 1: ("<b", "<i1"), 2: ("<H", "<u2"), 3: ("<h", "<i2"),
                 4: ("<I", "<u4"), 5: ("<i", "<i4"), 6: ("<f", "<f4"), 7: ("<?", "<u1"),
                 10: ("<Q", "<u8"), 11: ("<q", "<i8"), 12: ("<d", "<f8")}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


class _MetaReader:
    """A minimal reader of a GGUF file's key/value section (gguf.GGUFReader parses the whole
    file into Python objects and takes ~20 s on Gemma's 262k-token vocab; this takes < 1 s)."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def scalar(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.scalar("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == _GGUF_STRING:
            return self.string()
        if vtype == _GGUF_ARRAY:
            etype, count = self.scalar("<I"), self.scalar("<Q")
            if etype in _GGUF_SCALARS:
                dtype = np.dtype(_GGUF_SCALARS[etype][1])
                arr = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos).copy()
                self.pos += dtype.itemsize * count
                return arr
            return [self.value(etype) for _ in range(count)]
        if vtype in _GGUF_SCALARS:
            return self.scalar(_GGUF_SCALARS[vtype][0])
        raise ValueError(f"unknown GGUF value type {vtype} at offset {self.pos}")


def read_metadata(path):
    """All key/value pairs of a GGUF v2/v3 file as a dict (arrays of numbers as numpy arrays)."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        r = _MetaReader(mm)
        r.pos = 4
        version = r.scalar("<I")
        if version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {version} not supported")
        r.scalar("<Q")  # tensor count
        meta = {}
        for _ in range(r.scalar("<Q")):
            key = r.string()
            meta[key] = r.value(r.scalar("<I"))
        return meta


@dataclass
class GGUFVocab:
    """The tokenizer.* metadata of one GGUF file."""
    model: str
    pre: str | None
    tokens: list[str]
    types: list[int]
    scores: np.ndarray | None
    merges: list[str] | None
    unk_id: int | None
    bos_id: int | None
    eos_id: int | None
    add_bos: bool | None
    add_space_prefix: bool | None


def read_vocab(path):
    meta = read_metadata(path)

    def opt(key, cast=None):
        v = meta.get(key)
        return v if v is None or cast is None else cast(v)

    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        raise ValueError(f"{path}: no tokenizer.ggml.tokens")
    types = meta.get("tokenizer.ggml.token_type")
    types = [int(t) for t in types] if types is not None else [TOKEN_NORMAL] * len(tokens)
    return GGUFVocab(
        model=meta.get("tokenizer.ggml.model"),
        pre=meta.get("tokenizer.ggml.pre"),
        tokens=tokens,
        types=types,
        scores=meta.get("tokenizer.ggml.scores"),
        merges=meta.get("tokenizer.ggml.merges"),
        unk_id=opt("tokenizer.ggml.unknown_token_id", int),
        bos_id=opt("tokenizer.ggml.bos_token_id", int),
        eos_id=opt("tokenizer.ggml.eos_token_id", int),
        add_bos=opt("tokenizer.ggml.add_bos_token", bool),
        add_space_prefix=opt("tokenizer.ggml.add_space_prefix", bool),
    )


def check_against_gguf_reader(path, v):
    """Compare our metadata parse with gguf.GGUFReader's (slow); returns a list of problems."""
    from gguf import GGUFReader
    reader = GGUFReader(str(path))
    problems = []

    def field(key):
        f = reader.fields.get(key)
        return None if f is None else [f.contents(i) for i in range(len(f.data))]

    for key, ours in (("tokenizer.ggml.tokens", v.tokens), ("tokenizer.ggml.merges", v.merges),
                      ("tokenizer.ggml.token_type", v.types),
                      ("tokenizer.ggml.scores", None if v.scores is None else list(v.scores))):
        theirs = field(key)
        if (theirs is None) != (ours is None) or (ours is not None and list(ours) != list(theirs)):
            problems.append(f"{key} differs from gguf.GGUFReader")
    for key, ours in (("tokenizer.ggml.model", v.model), ("tokenizer.ggml.pre", v.pre)):
        f = reader.fields.get(key)
        theirs = None if f is None else f.contents()
        if theirs != ours:
            problems.append(f"{key}: ours {ours!r}, gguf.GGUFReader {theirs!r}")
    return problems


# ----------------------------------------------------------------------------- byte-level map

def byte_level_table():
    """The GPT-2 byte -> printable character map: printable Latin-1 bytes map to themselves,
    the other 68 bytes to U+0100 upwards, in byte order."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


BYTE_TO_CHAR = byte_level_table()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


# ----------------------------------------------------------------------------- builders

# The published split rules (each family's tokenizer.json pre_tokenizer), written here from those
# files independently of brasa's table: Split patterns run by HF's own regex engine (Oniguruma), and
# HF's Digits / Punctuation / ByteLevel pre-tokenizers where the family uses them.
_LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_O200K = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
          r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
          r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
           r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
           r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_KIMI_K2 = (r"[\p{Han}]+"
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
            r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_DEEPSEEK_LLM_LETTERS = (
    r"A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-"
    r"\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}"
    r"\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}"
    r"\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-"
    r"\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}"
    r"\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}"
    r"\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}"
    r"\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}"
    r"\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-"
    r"\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}"
    r"\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}"
    r"\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}"
    r"\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-"
    r"\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}"
)
_BLOOM = " ?[^(\\s|[.,!?…。，、।۔،])]+"


def _splits(*patterns):
    return [pre_tokenizers.Split(Regex(p), behavior="isolated", invert=False) for p in patterns]


def _byte_level_regex():
    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)


PRE_TOKENIZERS = {
    "gpt-2": lambda: [_byte_level_regex()],
    "mpt": lambda: [_byte_level_regex()],
    "smollm": lambda: [pre_tokenizers.Digits(individual_digits=True), _byte_level_regex()],
    "starcoder": lambda: [pre_tokenizers.Digits(individual_digits=True), _byte_level_regex()],
    "refact": lambda: [pre_tokenizers.Digits(individual_digits=True), _byte_level_regex()],
    "command-r": lambda: [pre_tokenizers.Digits(individual_digits=True), _byte_level_regex()],
    "llama-bpe": lambda: _splits(_LLAMA3),
    "dbrx": lambda: _splits(_LLAMA3),
    "glm4": lambda: _splits(_LLAMA3),
    "qwen2": lambda: _splits(QWEN2_PATTERN),
    "qwen35": lambda: _splits(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                              r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "seed-coder": lambda: _splits(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}"
                                  r"| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "bailingmoe": lambda: _splits(r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}"
                                  r"| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"),
    "gpt-4o": lambda: _splits(_O200K),
    "tekken": lambda: _splits(_TEKKEN),
    "kimi-k2": lambda: _splits(_KIMI_K2),
    "deepseek-v3": lambda: _splits(
        r"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
        r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
        r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "deepseek-coder": lambda: _splits(r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", r"\p{N}"),
    "deepseek-llm": lambda: _splits(r"[\r\n]", r"\s?[" + _DEEPSEEK_LLM_LETTERS + "]+",
                                    r"\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+", r"\s+$", "[一-龥ࠀ-一가-퟿]+", r"\p{N}+"),
    "minicpm5": lambda: _splits(r"\p{N}{1,3}", r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+"
                                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "ufakzeka": lambda: _splits(r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "laguna": lambda: _splits(r"[^\n]+|[\n]+", QWEN2_PATTERN),
    "exaone-moe": lambda: _splits(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+"
                                  r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+"),
    "jais-2": lambda: _splits(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                              r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)"
                              r"|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}"),
    "spark2_5": lambda: _splits(
        r"\p{N}{1,3}", r"[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+",
        r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
        r"| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+", r"\p{N}"),
    "youtu": lambda: _splits(
        r"[\x{AC00}-\x{D7A3}\x{3131}-\x{318E}]+|[\x{FF01}\x{2026}\x{201C}\x{201D}\x{2018}\x{2019}\x{2014}"
        r"\x{FF1A}\x{FF1B}\x{FF0C}\x{3001}-\x{303F}\x{FE30}-\x{FE4F}]+|[\x{3105}-\x{312F}]+"
        r"|[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
        r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
    "tiny_aya": lambda: _splits(r"\d{1,3}(?=(?:\d{3})*\b)", _O200K),
    "falcon": lambda: [pre_tokenizers.Punctuation(behavior="contiguous"), _byte_level_regex(),
                       pre_tokenizers.Digits(individual_digits=False)] + _splits("[0-9][0-9][0-9]"),
    "bloom": lambda: _splits(_BLOOM),
    "viking": lambda: _splits(_BLOOM) + [pre_tokenizers.Digits(individual_digits=True)],
}
# Families whose tokenizer.json sets BPE ignore_merges (a piece that is a token is taken whole).
IGNORE_MERGES = {"llama-bpe", "llama3", "tekken", "glm4", "minicpm5", "youtu"}
# Byte-level BPE's pre-tokenizers that instead run BPE over UTF-8 characters (as Gemma 4 does).
RAW_UTF8 = {"sarvam-moe"}


def _gpt2_pre_tokenizer(pre):
    if pre not in PRE_TOKENIZERS:
        raise ValueError(f"unsupported tokenizer.ggml.pre for gpt2: {pre!r}")
    steps = PRE_TOKENIZERS[pre]()
    if not any(isinstance(step, pre_tokenizers.ByteLevel) for step in steps):
        steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
    return pre_tokenizers.Sequence(steps)


def _split_merge(line):
    parts = line.split(" ")
    if len(parts) != 2:
        raise ValueError(f"bad merge {line!r}")
    return parts[0], parts[1]


def build_gpt2(v):
    pre = _gpt2_pre_tokenizer(v.pre)  # raise early on an unknown pre type
    if v.merges is None:
        raise ValueError("gpt2 tokenizer without tokenizer.ggml.merges")
    vocab = {t: i for i, t in enumerate(v.tokens)}
    merges = [_split_merge(m) for m in v.merges]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False,
                              ignore_merges=v.pre in IGNORE_MERGES))
    tk.pre_tokenizer = pre
    tk.decoder = decoders.ByteLevel()
    return tk


def derive_spm_merges(tokens, scores):
    """Merges for a SentencePiece BPE vocab: every split of a piece into two vocab pieces is a
    merge; merges are ranked by the merged piece's score (highest first), then by the merged
    piece's id, then by the left and right pieces' ids."""
    index = {t: i for i, t in enumerate(tokens)}
    found = []  # (score, merged id, left id, right id)
    for merged_id, piece in enumerate(tokens):
        if len(piece) < 2:
            continue
        s = float(scores[merged_id])
        for cut in range(1, len(piece)):
            left = index.get(piece[:cut])
            if left is None:
                continue
            right = index.get(piece[cut:])
            if right is not None:
                found.append((-s, merged_id, left, right))
    found.sort()
    return [(tokens[l], tokens[r]) for _, _, l, r in found]


def build_spm(v):
    if v.scores is None:
        raise ValueError("llama (SentencePiece) tokenizer without tokenizer.ggml.scores")
    vocab = {t: i for i, t in enumerate(v.tokens)}
    if len(vocab) != len(v.tokens):
        raise ValueError("duplicate token strings in vocab")
    merges = derive_spm_merges(v.tokens, v.scores)
    unk = v.tokens[v.unk_id] if v.unk_id is not None else None
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=unk,
                              byte_fallback=True, fuse_unk=True))
    norm = [normalizers.Replace(" ", SPACE_MARK)]
    # a file without the key: SentencePiece's own default (add_dummy_prefix), as llama.cpp reads it
    if v.add_space_prefix is None or v.add_space_prefix:
        norm.insert(0, normalizers.Prepend(SPACE_MARK))
    tk.normalizer = normalizers.Sequence(norm)
    tk.decoder = decoders.Sequence([decoders.Replace(SPACE_MARK, " "), decoders.ByteFallback(),
                                    decoders.Fuse()])
    return tk, len(merges)


def build_raw_bpe(v):
    """Gemma 4 (and Sarvam MoE): BPE with merges over UTF-8 characters, spaces as U+2581, byte
    fallback, split only at line breaks."""
    if v.merges is None:
        raise ValueError(f"{v.model} tokenizer without tokenizer.ggml.merges")
    vocab = {t: i for i, t in enumerate(v.tokens)}
    merges = [_split_merge(m) for m in v.merges]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True, fuse_unk=False))
    tk.normalizer = normalizers.Replace(" ", SPACE_MARK)
    tk.pre_tokenizer = pre_tokenizers.Sequence(_splits(r"[^\n]+|[\n]+"))
    tk.decoder = decoders.Sequence([decoders.Replace(SPACE_MARK, " "), decoders.ByteFallback(), decoders.Fuse()])
    return tk


def _add_special_tokens(tk, v):
    """Control tokens as special added tokens, user-defined ones as plain added tokens; both are
    matched on the raw (not normalised) text, with no stripping."""
    control, user = [], []
    for text, t in zip(v.tokens, v.types):
        if t == TOKEN_CONTROL:
            control.append(AddedToken(text, special=True, normalized=False))
        elif t == TOKEN_USER_DEFINED:
            user.append(AddedToken(text, special=False, normalized=False))
    if control:
        tk.add_special_tokens(control)
    if user:
        tk.add_tokens(user)
    return len(control), len(user)


# ----------------------------------------------------------------------------- reference object

@dataclass
class RefTokenizer:
    path: Path
    vocab: GGUFVocab
    tk: Tokenizer
    build_seconds: float
    n_merges: int
    n_control: int
    n_user: int

    @property
    def kind(self):
        return self.vocab.model

    @property
    def byte_level(self):
        return self.vocab.model == "gpt2" and self.vocab.pre not in RAW_UTF8

    def encode(self, text, parse_special):
        """Token ids of `text` (a str), no BOS/EOS."""
        self.tk.encode_special_tokens = not parse_special
        return self.tk.encode(text, add_special_tokens=False).ids

    def piece_bytes(self, token_id):
        """The bytes token `token_id` decodes to (control tokens: their text)."""
        text, t = self.vocab.tokens[token_id], self.vocab.types[token_id]
        if t in (TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNKNOWN, TOKEN_UNUSED):
            return text.encode("utf-8")
        if self.byte_level:
            try:
                return bytes(CHAR_TO_BYTE[c] for c in text)
            except KeyError:  # not a byte-level string: keep its text
                return text.encode("utf-8")
        if t == TOKEN_BYTE or (len(text) == 6 and text.startswith("<0x") and text.endswith(">")):
            return bytes([int(text[3:5], 16)])
        return text.replace(SPACE_MARK, " ").encode("utf-8")

    def unrepresentable_bytes(self):
        """Bytes that have no single-byte token in a byte-level vocab (empty set otherwise)."""
        if not self.byte_level:
            return set()
        have = set(self.vocab.tokens)
        return {b for b in range(256) if BYTE_TO_CHAR[b] not in have}

    def decode(self, ids):
        """Byte-exact decode of `ids`. A SentencePiece vocabulary that adds the leading space
        takes it off again at the start (the Strip step of Llama 2's decoder)."""
        out = b"".join(self.piece_bytes(i) for i in ids)
        adds_space = self.vocab.model == "llama" and self.vocab.add_space_prefix in (None, True)
        if adds_space and ids and self.vocab.tokens[ids[0]].startswith(SPACE_MARK):
            out = out[1:]
        return out

    def hf_decode(self, ids):
        """The HF decoder's str result, for cross-checking `decode`."""
        return self.tk.decode(ids, skip_special_tokens=False)

    def describe(self, ids):
        """A short human-readable list of (id, piece) for diffs."""
        return " ".join(f"{i}:{self.vocab.tokens[i]!r}" if 0 <= i < len(self.vocab.tokens)
                        else f"{i}:<out of range>" for i in ids)


def load(path):
    """Build the reference tokenizer for the GGUF file at `path`."""
    t0 = time.perf_counter()
    v = read_vocab(path)
    n_merges = 0
    if v.model == "gpt2" and v.pre in RAW_UTF8:
        tk = build_raw_bpe(v)
        n_merges = len(v.merges)
    elif v.model == "gpt2":
        tk = build_gpt2(v)
        n_merges = len(v.merges)
    elif v.model == "llama":
        tk, n_merges = build_spm(v)
    elif v.model == "gemma4":
        tk = build_raw_bpe(v)
        n_merges = len(v.merges)
    else:
        raise ValueError(f"unsupported tokenizer.ggml.model {v.model!r}")
    n_control, n_user = _add_special_tokens(tk, v)
    return RefTokenizer(Path(path), v, tk, time.perf_counter() - t0, n_merges, n_control, n_user)


# ----------------------------------------------------------------------------- model names

MODEL_FILES = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen2": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}


def model_cache_dir():
    """Same rule as scripts/fetch_models.py, without creating anything."""
    d = os.environ.get("BRASA_MODEL_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "brasa", "models")
    return Path(d)


def resolve_model(name_or_path):
    """A model name (smollm2, qwen2, gemma3) or a path -> Path (may not exist)."""
    if name_or_path in MODEL_FILES:
        return model_cache_dir() / MODEL_FILES[name_or_path]
    return Path(name_or_path)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    ref = load(resolve_model(argv[1]))
    print(f"{ref.path.name}: model={ref.kind} pre={ref.vocab.pre} vocab={len(ref.vocab.tokens)} "
          f"merges={ref.n_merges} control={ref.n_control} user_defined={ref.n_user} "
          f"add_bos={ref.vocab.add_bos} add_space_prefix={ref.vocab.add_space_prefix} "
          f"built in {ref.build_seconds:.1f} s")
    for text in argv[2:]:
        for special in (True, False):
            ids = ref.encode(text, special)
            print(f"special={special}: {ids}\n  {ref.describe(ids)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
