#!/usr/bin/env python3
"""brasa's embeddings against an independent NumPy reference (ref_bert.py, which reads the Hugging
Face folder's model.safetensors and config.json, never the GGUF) on all-MiniLM-L6-v2, and a
decoder's pooled hidden states against ref_forward.py on a small random-weight llama.

Inputs: ten varied sentences (English, accents, German, CJK, emoji, code, punctuation, a long
word, one of 510 tokens near the 512-token limit), tokenized by HF `tokenizers` on the folder's
tokenizer.json. Checks:
  f16 file    the fetched GGUF (F16 matrices): cosine >= COS_F16 and max |diff| <= ABS_F16 per input
  f32 file    the same folder converted with F32 weights: max |diff| <= ABS_F32 (float rounding only)
  batch       all inputs in one brasa_embed_batch call equal one call each to BATCH_ABS
  threads     one thread and two give the same bits
  pooling     copies of the file with bert.pooling_type set to cls (2) and last (3) against the
              reference pooled the same way
  text        `brasa embed --json` on the sentences' text (brasa's own tokenizer) matches too
  decoder     a llama with llama.pooling_type last (3) and mean (1), an input of 100 tokens read in
              batches of 64 through the cache: rmsnorm(h) pooled, against the reference
Usage: test_embeddings_reference.py --embed-dump PATH --brasa PATH --model GGUF --hf-dir DIR --work DIR
Exit status: 0 passed, 1 failed, 77 when the model is missing. Last line `embeddings: N passed, M failed`.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# one BLAS thread: the reference's products are small, and threads that spin while brasa (or a
# neighbouring test) holds the cores made it several times slower
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "scripts"))
import ref_bert  # noqa: E402

SKIP = 77
# Measured 2026-12-06 (all-MiniLM-L6-v2, AVX-512 and AVX2 paths): F16 weights cosine >= 0.9999997,
# max |diff| 1.4e-4 (of components around 0.05: F16 rounds each weight to 11 bits); F32 weights
# max |diff| 6e-8. Bounds with room for other CPUs' rounding.
COS_F16 = 0.99999
ABS_F16 = 1e-3
ABS_F32 = 1e-6
BATCH_ABS = 1e-6  # measured 0 to 1e-8: a batch's products take the float path of a larger batch
DECODER_ABS = 1e-5

SENTENCES = [
    "This is a test sentence.",
    "The quick brown fox jumps over the lazy dog!",
    "¿Qué tal? Canción, pingüino, ñandú — naïve café résumé.",
    "Grüße aus München: Straße, Äpfel und Öl.",
    "日本語のテキストと中文字符が混ざっています。",
    "I love pizza 🍕 and emojis 👍🏽 :)",
    "def f(x): return x ** 2  # squares [1, 2, 3]",
    "Pneumonoultramicroscopicsilicovolcanoconiosis is a long word.",
    "A",
]
LONG = ("Embeddings map text to vectors so that similar meanings land close together; "
        "sentence transformers average the token states of a small BERT. ")

passed = failed = 0


def report(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}{': ' + detail if detail else ''}")
    else:
        failed += 1
        print(f"FAIL {what}: {detail}")


def run_dump(embed_dump, model, inputs, work, extra=()):
    path = Path(work) / "inputs.txt"
    path.write_text("".join(" ".join(map(str, ids)) + "\n" for ids in inputs))
    out = subprocess.run([embed_dump, str(model), str(path), *extra], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"embed_dump {model} {' '.join(extra)}: {out.stderr.strip()}")
    return np.array([[float(x) for x in line.split()] for line in out.stdout.strip().split("\n")])


def with_pooling(src, dst, pooling):
    """A copy of src whose bert.pooling_type (a u32) is pooling: the key's value patched in place."""
    data = bytearray(Path(src).read_bytes())
    key = b"bert.pooling_type"
    at = data.find(len(key).to_bytes(8, "little") + key)
    assert at > 0 and data.find(key, at + 8 + len(key)) < 0, "bert.pooling_type is not in the file exactly once"
    vtype = at + 8 + len(key)
    assert int.from_bytes(data[vtype:vtype + 4], "little") == 4, "bert.pooling_type is not a u32"
    data[vtype + 4:vtype + 8] = pooling.to_bytes(4, "little")
    Path(dst).write_bytes(bytes(data))
    return dst


def compare(what, got, want, cos_min, abs_max):
    cos = float(np.min(np.sum(got * want, axis=1)))
    diff = float(np.max(np.abs(got - want)))
    report(cos >= cos_min and diff <= abs_max, what, f"cosine >= {cos:.8f}, max |diff| {diff:.2e}")


def bert_checks(a, work):
    ref = ref_bert.RefBert(a.hf_dir)
    long_ids = ref.tokenize(LONG * 20)
    long_ids = long_ids[:509] + [long_ids[-1]]  # 510 tokens: [CLS] ... [SEP]
    inputs = [ref.tokenize(s) for s in SENTENCES] + [long_ids]
    t0 = time.time()
    hidden = [ref.hidden(ids) for ids in inputs]
    pool = {
        "mean": lambda h: h.mean(axis=0), "cls": lambda h: h[0], "last": lambda h: h[-1],
    }
    want = {p: np.array([f(h) / np.linalg.norm(f(h)) for h in hidden]) for p, f in pool.items()}
    print(f"     reference: {len(inputs)} inputs ({sum(map(len, inputs))} tokens) in {time.time() - t0:.1f} s")

    one = run_dump(a.embed_dump, a.model, inputs, work)
    compare("f16 file, one input per call", one, want["mean"], COS_F16, ABS_F16)
    batch = run_dump(a.embed_dump, a.model, inputs, work, ["--batch"])
    d = float(np.max(np.abs(batch - one)))
    report(d <= BATCH_ABS, "one brasa_embed_batch call equals a call per input", f"max |diff| {d:.2e}")
    single = run_dump(a.embed_dump, a.model, inputs[:3], work, ["--batch", "--threads", "1"])
    report(np.array_equal(single, batch[:3]), "one thread and two give the same bits")

    f32 = Path(work) / "minilm-f32.gguf"
    import convert_bert  # the fetch-time converter, with every tensor kept in F32
    convert_bert.convert(a.hf_dir, f32, f32=True)
    got = run_dump(a.embed_dump, f32, inputs, work, ["--batch"])
    compare("f32 file (float rounding only)", got, want["mean"], 1 - 1e-7, ABS_F32)

    for name, number in (("cls", 2), ("last", 3)):
        path = with_pooling(a.model, Path(work) / f"minilm-{name}.gguf", number)
        got = run_dump(a.embed_dump, path, inputs[:-1], work, ["--batch"])  # (the short ones: time)
        compare(f"pooling {name} (bert.pooling_type {number})", got, want[name][:-1], COS_F16, ABS_F16)
        report(float(np.min(np.sum(got * want["mean"][:-1], axis=1))) < 0.999, f"pooling {name} differs from mean")
        os.remove(path)
    os.remove(f32)

    # end to end: brasa's own tokenizer on the text
    out = subprocess.run([a.brasa, "embed", "-m", a.model, "--json", *SENTENCES], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        report(False, "brasa embed --json", out.stderr.strip())
        return
    doc = json.loads(out.stdout)
    report(doc["dim"] == 384 and doc["pooling"] == "mean" and doc["tokens"] == [len(i) for i in inputs[:-1]],
           "brasa embed --json: dim, pooling, token counts", f"{doc['dim']} {doc['pooling']} {doc['tokens']}")
    compare("brasa embed on the text", np.array(doc["embeddings"]), want["mean"][:len(SENTENCES)], COS_F16, ABS_F16)


def decoder_checks(a, work):
    """A small llama whose file sets a pooling type: its hidden states after the output norm. Its
    vocabulary is made up (1000 pieces; the inputs are ids), which keeps the file small."""
    import gguf
    import make_arch_models as mam
    import ref_forward
    VT = gguf.GGUFValueType
    spec = mam.Spec("llama-pooled", "llama", seed=121, n_layer=2, matrix_type=gguf.GGMLQuantizationType.F32)
    meta, tensors = mam.make(spec)
    n_vocab = 1000
    for name in ("token_embd.weight", "output.weight"):
        arr, qtype = tensors[name]
        tensors[name] = (arr[:n_vocab], qtype)
    meta["llama.vocab_size"] = (n_vocab, VT.UINT32, None)
    meta["tokenizer.ggml.model"] = ("llama", VT.STRING, None)
    meta["tokenizer.ggml.tokens"] = (["<unk>", "<s>", "</s>"] + [f"p{i}" for i in range(3, n_vocab)], VT.ARRAY, VT.STRING)
    meta["tokenizer.ggml.scores"] = ([-float(i) for i in range(n_vocab)], VT.ARRAY, VT.FLOAT32)
    meta["tokenizer.ggml.token_type"] = ([2, 3, 3] + [1] * (n_vocab - 3), VT.ARRAY, VT.INT32)
    rng = np.random.default_rng(5)
    ids = [int(i) for i in rng.integers(3, n_vocab, size=100)]

    class Hidden(ref_forward.RefModel):
        """The reference, keeping what goes into the output head: rmsnorm(x) of every position."""
        def matmul(self, x, name, W=None):
            if name in ("output.weight", "token_embd.weight") and x.ndim == 2 and x.shape[0] == len(ids):
                self.kept = np.array(x, dtype=np.float64)
            return super().matmul(x, name, W)

    for name, number in (("last", 3), ("mean", 1)):
        meta["llama.pooling_type"] = (number, gguf.GGUFValueType.UINT32, None)
        path = mam.write_gguf(Path(work) / f"llama-pooled-{name}.gguf", "llama", meta, tensors, None)
        ref = Hidden(str(path))
        ref.logits(ids)
        h = ref.kept[-1] if name == "last" else ref.kept.mean(axis=0)
        want = h / np.linalg.norm(h)
        got = run_dump(a.embed_dump, path, [ids], work, ["--ctx", "256", "--kv-f32"])[0]
        d = float(np.max(np.abs(got - want)))
        report(d <= DECODER_ABS, f"decoder pooling {name} over 100 tokens in batches of 64", f"max |diff| {d:.2e}")
        os.remove(path)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--embed-dump", required=True)
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--hf-dir", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args(argv)
    if not os.path.exists(a.model) or not os.path.exists(os.path.join(a.hf_dir, "model.safetensors")):
        print(f"skipped: {a.model} or {a.hf_dir} is missing (scripts/fetch_models.py minilm fetches them)")
        return SKIP
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        bert_checks(a, work)
        decoder_checks(a, work)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report(False, "run", str(e))
    print(f"embeddings: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
