#!/usr/bin/env python3
"""Tokenizing is never the slow part: brasa against Hugging Face `tokenizers` on 1 MB of mixed text,
and time that grows linearly with the text.

* Speed: 1 MB of prose in many scripts (the corpus), C source and JSON is tokenized by brasa
  (tok_batch --time) and by the reference (HF `tokenizers` built from the same file, one thread),
  the two alternating three times, best of each, processor time, for each model given. The ids must be equal and
  brasa must be at least as fast; the ratio is printed.
* Linear time: 10 KB and 100 KB of one repeated character (letters, digits, space, line break,
  CJK, marks, emoji, punctuation) with no space between: 10 times the text may take at most
  MAX_GROWTH times as long (quadratic merging or backtracking would take about 100 times).

Timings are only compared within one run on one machine. Usage:
    test_tokenizer_speed.py --tok-batch TOK_BATCH --model M [--model M ...] [--source FILE]
Exit 0 when all pass, 1 otherwise.
"""
import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before tokenizers starts its thread pool
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import ref_tokenizer  # noqa: E402
import tokenizers  # noqa: E402

MIXED_BYTES = 1_000_000
MAX_GROWTH = 40  # linear is about 10 (BPE's heap adds a log factor and cache misses); quadratic 100
FLOOR_US = 200  # below this a 10 KB time is noise; the ratio is taken against this floor
REPEATED = ["a", "A", "1", " ", "\n", "\u4e2d", "\u00e9", "\u0301", "\u0e01", "!", "\U0001f642", "\u0915"]


def mixed_text(source):
    """About MIXED_BYTES of corpus prose, C source and JSON, cut at a character boundary."""
    prose = "\n".join(corpus.CORPUS)
    data = json.dumps({"items": [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "score": i / 7}
                                 for i in range(400)]}, indent=1)
    block = prose + "\n" + source + "\n" + data + "\n"
    text = block * (MIXED_BYTES // len(block.encode("utf-8")) + 1)
    return text.encode("utf-8")[:MIXED_BYTES].decode("utf-8", "ignore")


def write_records(path, texts):
    with open(path, "wb") as f:
        for t in texts:
            b = t.encode("utf-8")
            f.write(struct.pack("<I", len(b)) + b)


def brasa_times(tok_batch, model, texts):
    """(token count, microseconds) per text."""
    with tempfile.NamedTemporaryFile(suffix=".rec") as f:
        write_records(f.name, texts)
        out = subprocess.run([str(tok_batch), str(model), f.name, "--time"], capture_output=True, text=True,
                             timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"tok_batch failed: {out.stderr.strip()}")
    return [(int(a), float(b)) for a, b in (line.split("\t") for line in out.stdout.splitlines())]


def brasa_ids(tok_batch, model, text):
    with tempfile.NamedTemporaryFile(suffix=".rec") as f:
        write_records(f.name, [text])
        out = subprocess.run([str(tok_batch), str(model), f.name], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"tok_batch failed: {out.stderr.strip()}")
    return [int(x) for x in out.stdout.split("\t")[0].split()]


def reference_time(ref, text):
    """The reference's ids and its time in microseconds (processor time, as tok_batch measures)."""
    t0 = time.process_time()
    ids = ref.encode(text, False)
    return ids, (time.process_time() - t0) * 1e6


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tok-batch", type=Path, required=True)
    ap.add_argument("--model", action="append", required=True, help="GGUF path (repeatable)")
    ap.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[2] / "src/tokenizer/regex.c",
                    help="C source for the mixed text")
    args = ap.parse_args(argv)
    text = mixed_text(args.source.read_text(encoding="utf-8"))
    failures = 0
    print(f"mixed text: {len(text.encode('utf-8'))} bytes; brasa vs HF tokenizers {tokenizers.__version__}"
          f" (one thread), best of 3")
    print(f"{'model':34} {'kind':16} {'tokens':>8} {'brasa MB/s':>10} {'HF MB/s':>8} {'x':>6}  linear (100 KB / 10 KB)")
    for m in args.model:
        path = Path(m)
        if not path.is_file():
            print(f"SKIP {m}: not found")
            continue
        ref = ref_tokenizer.load(path)
        kind = f"{ref.kind}/{ref.vocab.pre or '-'}"
        ours = brasa_ids(args.tok_batch, path, text)
        hf_us = us = None
        for _ in range(3):  # the two sides alternate, so a slow spell of the machine hits both
            ids, t = reference_time(ref, text)
            hf_us = t if hf_us is None else min(hf_us, t)
            (n, t), = brasa_times(args.tok_batch, path, [text])
            us = t if us is None else min(us, t)
        mb = len(text.encode("utf-8")) / 1e6
        speedup = hf_us / us
        line = f"{path.name[:34]:34} {kind[:16]:16} {n:8} {mb / (us / 1e6):10.1f} {mb / (hf_us / 1e6):8.1f} {speedup:6.1f}"
        if ours != ids:
            at = next((i for i, (a, b) in enumerate(zip(ours, ids)) if a != b), min(len(ours), len(ids)))
            print(f"FAIL {path.name}: ids differ from the reference at token {at} of {len(ids)}")
            failures += 1
        if speedup < 1.0:
            print(f"FAIL {path.name}: brasa is slower than the reference ({speedup:.2f}x)")
            failures += 1
        texts = []
        for c in REPEATED:
            for size in (10_000, 100_000):
                texts.append(c * (size // len(c.encode("utf-8"))))
        times = brasa_times(args.tok_batch, path, texts)
        worst, worst_c = 0.0, None
        for i, c in enumerate(REPEATED):
            t10, t100 = times[2 * i][1], times[2 * i + 1][1]
            growth = t100 / max(t10, FLOOR_US)
            if growth > worst:
                worst, worst_c = growth, c
            if growth > MAX_GROWTH:
                print(f"FAIL {path.name}: {c!r} x 100 KB took {t100:.0f} us, {growth:.0f} times 10 KB's {t10:.0f} us")
                failures += 1
        print(f"{line}  worst {worst:.1f}x ({worst_c!r})")
    print(f"tokenizer speed: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
