#!/usr/bin/env python3
"""Named regression tests for tokenizer bugs users met, each checked against the reference and
shown to be able to fail (the reference with the bug's rule gives other tokens):

* spm_missing_add_space_prefix: a SentencePiece vocabulary whose file has no
  tokenizer.ggml.add_space_prefix key (Llama 2, Mistral 7B, TinyLlama, Phi-3 files) gets the
  leading space: "ied 4 ½ months" starts with "▁i", not "i".
* llama_bpe_vietnamese_whole_words: a Llama 3 (llama-bpe) vocabulary holds whole words its merges
  cannot build; "Cửa Việt" takes " Việt" whole, as ignore_merges says.
* unknown_tokenizer_refused_by_name: a pre-tokenizer or tokenizer model brasa lacks is a clear
  error that names it, with a non-zero exit, never a silent fallback.

Usage: test_tokenizer_regressions.py --tok-batch TOK_BATCH --brasa BRASA --variants DIR
(DIR: what make_vocab_variants.py wrote). Exit 0 when all pass, 1 otherwise.
"""
import argparse
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_vocab_variants  # noqa: E402
import ref_tokenizer  # noqa: E402

FAILURES = []


def check(cond, name, detail):
    print(f"{'ok  ' if cond else 'FAIL'} {name}: {detail}")
    if not cond:
        FAILURES.append(name)


def brasa_ids(tok_batch, model, text):
    with tempfile.NamedTemporaryFile(suffix=".rec") as f:
        data = text.encode("utf-8")
        f.write(struct.pack("<I", len(data)) + data)
        f.flush()
        out = subprocess.run([str(tok_batch), str(model), f.name], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"tok_batch failed: {out.stderr.strip()}")
    return [int(x) for x in out.stdout.split("\t")[0].split()]


def spm_missing_add_space_prefix(tok_batch, variants):
    path = variants / "spm-no-prefix-key.gguf"
    ref = ref_tokenizer.load(path)
    text = "ied 4 \u00bd months"
    ours, theirs = brasa_ids(tok_batch, path, text), ref.encode(text, False)
    without = ref_tokenizer.load(path)
    without.vocab.add_space_prefix = False
    old_rule = ref_tokenizer.build_spm(without.vocab)[0].encode(text, add_special_tokens=False).ids
    name = "spm_missing_add_space_prefix"
    check(ours == theirs, name, f"brasa {ref.describe(ours)} / reference {ref.describe(theirs)}")
    check(ref.vocab.tokens[ours[0]] == "\u2581i" if ours else False, name, "the first piece is '\u2581i'")
    check(old_rule != theirs, name, f"without the space the reference gives {ref.describe(old_rule)}")


def llama_bpe_vietnamese_whole_words(tok_batch, variants):
    path = variants / "pre-llama-bpe-unreachable.gguf"
    ref = ref_tokenizer.load(path)
    text = "C\u1eeda Vi\u1ec7t"
    ours, theirs = brasa_ids(tok_batch, path, text), ref.encode(text, False)
    spelled = "".join(ref_tokenizer.BYTE_TO_CHAR[b] for b in " Vi\u1ec7t".encode("utf-8"))
    whole = ref.vocab.tokens.index(spelled)
    v = ref.vocab
    merges_only = ref_tokenizer.Tokenizer(ref_tokenizer.models.BPE(
        vocab={t: i for i, t in enumerate(v.tokens)}, merges=[ref_tokenizer._split_merge(m) for m in v.merges],
        ignore_merges=False))
    merges_only.pre_tokenizer = ref_tokenizer._gpt2_pre_tokenizer(v.pre)
    old_rule = merges_only.encode(text, add_special_tokens=False).ids
    name = "llama_bpe_vietnamese_whole_words"
    check(ours == theirs, name, f"brasa {ref.describe(ours)} / reference {ref.describe(theirs)}")
    check(whole in ours, name, f"' Vi\u1ec7t' is one token ({whole})")
    check(old_rule != theirs, name, f"by merges alone the reference gives {ref.describe(old_rule)}")


def unknown_tokenizer_refused_by_name(brasa, variants):
    name = "unknown_tokenizer_refused_by_name"
    version, items = make_vocab_variants._raw_items(variants / "pre-qwen2.gguf")
    with tempfile.TemporaryDirectory() as d:
        for key, value, expect in (
                ("tokenizer.ggml.pre", "no-such-split", "pre-tokenizer 'no-such-split' is not supported"),
                ("tokenizer.ggml.model", "no-such-model", "tokenizer model 'no-such-model' is not supported")):
            path = Path(d) / f"{value}.gguf"
            make_vocab_variants.write(path, version, make_vocab_variants.replace(
                items, key, make_vocab_variants._STRING, make_vocab_variants._str(value)))
            out = subprocess.run([str(brasa), "tokenize", "-m", str(path), "hello"], capture_output=True,
                                 text=True, timeout=60)
            check(out.returncode != 0 and expect in out.stderr, name,
                  f"{key}={value}: exit {out.returncode}, stderr {out.stderr.strip()!r}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tok-batch", type=Path, required=True)
    ap.add_argument("--brasa", type=Path, required=True)
    ap.add_argument("--variants", type=Path, required=True)
    args = ap.parse_args(argv)
    spm_missing_add_space_prefix(args.tok_batch, args.variants)
    llama_bpe_vietnamese_whole_words(args.tok_batch, args.variants)
    unknown_tokenizer_refused_by_name(args.brasa, args.variants)
    print(f"tokenizer regressions: {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
