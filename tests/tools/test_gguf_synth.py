#!/usr/bin/env python3
"""gguf_synth makes a model of a real model's shape and tokenizer with random weights (for speed
figures where the real file cannot go): from SmolLM2, the recipe is a small fraction of the file;
the filled model has the same size, the same header byte for byte (metadata, vocabulary, tensor
table), different tensor bytes, and brasa opens it, runs it and benchmarks it. A damaged recipe is
refused with a message.

Usage: test_gguf_synth.py --synth PATH --brasa PATH --model GGUF
Exit status: 0 all passed, 1 any failure, 77 when the model file is missing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("gguf_synth")
expect = CHECKS.expect


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--synth", required=True)
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        print(f"skip: {a.model} is missing")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        recipe, synth = os.path.join(tmp, "m.recipe"), os.path.join(tmp, "m.gguf")
        p = subprocess.run([a.synth, "cut", a.model, recipe], capture_output=True, text=True)
        size = os.path.getsize(a.model)
        expect("cut writes a recipe far smaller than the model", p.returncode == 0 and os.path.getsize(recipe) < size / 10,
               f"{os.path.getsize(recipe) if p.returncode == 0 else p.stderr} bytes of {size}")
        p = subprocess.run([a.synth, "fill", recipe, synth], capture_output=True, text=True)
        expect("fill writes a file of the model's size", p.returncode == 0 and os.path.getsize(synth) == size, p.stderr)
        header = int(open(recipe, "rb").read()[16:24][::-1].hex(), 16)
        with open(a.model, "rb") as f, open(synth, "rb") as g:
            real_head, synth_head = f.read(header), g.read(header)
            real_data, synth_data = f.read(1 << 20), g.read(1 << 20)
        expect("the header is the model's, byte for byte", real_head == synth_head, f"{header} bytes")
        expect("the weights are not", real_data != synth_data)
        p = subprocess.run([a.brasa, "run", "-m", synth, "-p", "Hello", "-n", "3", "--temp", "0"], capture_output=True,
                           text=True, timeout=300)
        expect("brasa runs it", p.returncode == 0 and "generation: 3 tokens" in p.stderr, p.stderr[-200:])
        p = subprocess.run([a.brasa, "bench", "-m", synth, "-p", "16", "-n", "4", "-r", "1", "--json"], capture_output=True,
                           text=True, timeout=300)
        expect("brasa benchmarks it", p.returncode == 0 and '"tg4"' in p.stdout, p.stderr[-200:])
        with open(recipe, "r+b") as f:
            f.seek(-8, os.SEEK_END)
            f.write(b"\xff" * 8)  # the last tensor's row length
        p = subprocess.run([a.synth, "fill", recipe, synth], capture_output=True, text=True)
        expect("a damaged recipe is refused with a message", p.returncode == 1 and "damaged" in p.stderr, p.stderr.strip())
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
