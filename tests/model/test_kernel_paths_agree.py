#!/usr/bin/env python3
"""Every CPU kernel path gives the same model output, in both activation modes: for each path this
machine runs (forced with BRASA_CPU_KERNELS) and thread counts 1 and 2 (the slow scalar reference at
the first count only: the threads' split of the work is the same code on every path), the logits
of a real prompt stay within 1e-4 of the logit range of the scalar path's, and 32 greedy tokens are
identical to the scalar path's (--greedy sets how many).

Float activations (BRASA_CPU_ACTIVATIONS=f32) are what the NumPy reference is compared with. The
default 8-bit activations are checked here with the prompt run both as one batch (the prefill
kernels) and one token at a time (the decode kernels): each mode bit-identical at 1 and 2 threads,
and every path and mode within a small KL divergence of the scalar batch (integer products are
exact; only the order of float additions differs). How far 8-bit activations move the output from
the reference is test_forward_reference's business.

Usage: test_kernel_paths_agree.py --logits-dump PATH --model GGUF [--model GGUF ...]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import gguf
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer"))
import ref_tokenizer  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

TOLERANCE = 1e-4
Q8_PATH_KL = 0.02  # measured 2026-12-03: SmolLM2 and Gemma 3, avx2+q8 against scalar+q8, below 0.005


def log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def softmax(x):
    return np.exp(log_softmax(x))
PROMPT = "The history of the ocean is long, and the first sailors who crossed it"
# long enough that single-token attention splits its keys (more than 4 tiles of 64 per thread)
def long_prompt(lines):
    return " ".join(f"Line {i}: the tide came in at {i % 12 + 1} o'clock and went out again." for i in range(lines))
CHECKS = Checks("paths")
expect = CHECKS.expect


GREEDY = [32]  # greedy tokens per run (--greedy)


def run(tool, model, ids, path, threads, out, activations, batch=64):
    # An f32 KV cache: rounding keys and values to f16 turns the paths' differences in the order of
    # float additions (1e-7) into a last-bit flip of a half now and then (5e-4), which says nothing
    # about the kernels. The f16 conversions are compared bit for bit in test_cpu_kernels.
    env = dict(os.environ, BRASA_CPU_KERNELS=path, BRASA_CPU_ACTIVATIONS=activations)
    r = subprocess.run([tool, model, "--out", out, "--tokens", " ".join(map(str, ids)), "--greedy", str(GREEDY[0]),
                        "--threads", str(threads), "--batch", str(batch), "--kv-type", "f32"], capture_output=True,
                       text=True, env=env, timeout=900)
    if r.returncode != 0:
        return None, None, r.stderr.strip()
    return np.fromfile(out, dtype=np.float32), r.stdout.split(), ""


def has_k_quants(model):
    reader = gguf.GGUFReader(model)
    return any(t.tensor_type in (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K) for t in reader.tensors)


def avx2_ok(a, model, out):
    """whether this machine runs the avx2 path (else the long-cache check uses scalar)"""
    r = subprocess.run([a.logits_dump, model, "--out", out, "--tokens", "1"], capture_output=True, text=True,
                       env=dict(os.environ, BRASA_CPU_KERNELS="avx2"), timeout=120)
    return r.returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logits-dump", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--greedy", type=int, default=32, help="greedy tokens compared per run")
    ap.add_argument("--threads", default="1,2", help="thread counts each path runs with (comma-separated)")
    ap.add_argument("--long-lines", type=int, default=30,
                    help="lines of the long-cache prompt (about 20 tokens each; splitting starts at 512 keys)")
    a = ap.parse_args()
    GREEDY[0] = a.greedy
    try:
        thread_counts = [int(t) for t in a.threads.split(",")]
    except ValueError:
        ap.error(f"--threads: not a comma-separated list of counts: {a.threads!r}")
    if not thread_counts or min(thread_counts) < 1 or a.long_lines < 1:
        ap.error("--threads needs counts of at least 1, --long-lines at least 1")
    if any(not os.path.exists(m) for m in a.model):
        print("skipped: model file(s) missing (run scripts/fetch_models.py)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.f32")
        for model in a.model:
            name = os.path.basename(model)
            ids = ref_tokenizer.load(model).encode(PROMPT, parse_special=False)
            for act in ("f32", "q8"):
                # float: every path and thread count against scalar's first run. 8-bit: every run
                # against the same path's own first run in the same mode (batch or token by token:
                # threads never change a result), and the rest against scalar's batch by
                # distribution only: the batch kernels may add in another order than the one-token
                # ones (AVX2's eight-row Q4_K kernel does), and a float-order difference of 1e-7 can
                # move an activation across a rounding boundary, which later layers carry.
                ref = {}
                for path, threads, batch in [(p, t, b) for p in ("scalar", "avx2", "avx512vnni")
                                             for t in (thread_counts[:1] if p == "scalar" else thread_counts)
                                             for b in (64, 1) if act == "q8" or b == 64]:
                    got, greedy, err = run(a.logits_dump, model, ids, path, threads, out, act, batch)
                    if got is None and "lacks" in err:
                        print(f"skip {name} {path}: {err}")
                        break
                    what = f"{name} {path}+{act} x{threads}" + (" token by token" if batch == 1 else "")
                    if got is None:
                        expect(what, False, err)
                        continue
                    key = "scalar" if act == "f32" else path + (" token by token" if batch == 1 else "")
                    if key not in ref:
                        ref[key] = (got, greedy, float(got.max() - got.min()))
                        if key == "scalar" or act == "f32":
                            continue
                        base, _, _ = ref["scalar"]
                        vocab = got.size // len(ids)
                        lg, lb = got.reshape(len(ids), vocab).astype(np.float64), base.reshape(len(ids), vocab).astype(np.float64)
                        kl = float(np.mean(np.sum(softmax(lb) * (log_softmax(lb) - log_softmax(lg)), axis=1)))
                        expect(f"{what} next-token distribution close to scalar+q8's (KL <= {Q8_PATH_KL:g})",
                               kl <= Q8_PATH_KL, f"mean KL {kl:.2g}")
                        print(f"     {what}: mean KL {kl:.2g} from scalar+q8")
                        continue
                    base, base_greedy, span = ref[key]
                    rel = float(np.abs(got - base).max()) / span
                    against = f"scalar x{thread_counts[0]}" if act == "f32" else f"{key} x{thread_counts[0]}"
                    expect(f"{what} logits within {TOLERANCE:g} of {against}", rel <= TOLERANCE, f"max diff {rel:.3g} of range")
                    expect(f"{what} greedy tokens equal {against}'s", greedy == base_greedy, f"{greedy} vs {base_greedy}")
                    print(f"     {what}: max diff {rel:.2g} of the logit range")
                # the VNNI path's one- and four-token kernels are the AVX2 ones with fused byte
                # products: token by token, the same logits bit for bit, where the model has no
                # K-quant weights (VNNI keeps those in eight-row layouts of its own, used for every
                # token, whose float order differs: such models are held to the KL check above)
                for mode in (" token by token",):
                    if act == "q8" and "avx2" + mode in ref and "avx512vnni" + mode in ref and not has_k_quants(model):
                        expect(f"{name} avx512vnni+q8{mode} logits equal avx2's bit for bit",
                               np.array_equal(ref["avx2" + mode][0], ref["avx512vnni" + mode][0]))
        # a long cache: one token at a time, the attention of each new token splits its keys between
        # the threads and merges the parts; it must agree with the batch, which does not split
        model = a.model[0]
        name = os.path.basename(model)
        ids = ref_tokenizer.load(model).encode(long_prompt(a.long_lines), parse_special=False)
        expect(f"the long prompt reaches the split ({len(ids)} tokens, more than 512 keys)", len(ids) > 512,
               "raise --long-lines")
        whole, _, err = run(a.logits_dump, model, ids, "avx2" if avx2_ok(a, model, out) else "scalar", 2, out, "f32", 512)
        split, _, err2 = run(a.logits_dump, model, ids, "avx2" if avx2_ok(a, model, out) else "scalar", 2, out, "f32", 1)
        if whole is None or split is None:
            expect(f"{name} long cache", False, err or err2)
        else:
            span = float(whole.max() - whole.min())
            rel = float(np.abs(whole - split).max()) / span
            expect(f"{name} {len(ids)} tokens one by one (keys split between threads) within {TOLERANCE:g} of the batch",
                   rel <= TOLERANCE, f"max diff {rel:.3g} of range")
            print(f"     {name} long cache: max diff {rel:.2g} of the logit range over {len(ids)} positions")
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
