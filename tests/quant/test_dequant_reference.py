#!/usr/bin/env python3
"""Block formats against an independent reference: the gguf package's NumPy dequantization.

Checks, bit for bit:
  * real tensors of every type in each given model (a few per type, the smaller ones first);
  * generated blocks of every supported type: random codes, all-zero and all-one codes, and scales
    set to edge half floats (zero, negative zero, subnormals, max, infinities, NaN);
  * F16 and BF16 over all 65,536 bit patterns.
And the reference dot product against NumPy's float64 dot of the reference dequantization.

Usage: test_dequant_reference.py --dump PATH_TO_dequant_dump [--model GGUF ...]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

SUPPORTED = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K, T.MXFP4]
# Where each type keeps its f16 scales (byte offsets in the block), to plant edge values there.
SCALE_OFFSETS = {T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
                 T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}
EDGE_HALVES = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00, 0xBC00]
MAX_ELEMENTS = 12_000_000  # per real tensor, to keep the run short

CHECKS = Checks("dequant")


def report(ok, what, detail=""):
    CHECKS.expect(what, ok, detail)


def same_bits(a, b):
    """Bitwise equality of float32 arrays; returns (ok, detail)."""
    a = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    b = np.ascontiguousarray(b, dtype=np.float32).reshape(-1)
    if a.shape != b.shape:
        return False, f"{a.size} values vs reference {b.size}"
    diff = np.nonzero(a.view(np.uint32) != b.view(np.uint32))[0]
    if diff.size == 0:
        return True, ""
    i = diff[0]
    return False, (f"{diff.size} of {a.size} values differ; first at {i}: brasa {a[i]!r} "
                   f"(0x{a.view(np.uint32)[i]:08x}) reference {b[i]!r} (0x{b.view(np.uint32)[i]:08x})")


def run_dump(dump, *args):
    r = subprocess.run([dump, *map(str, args)], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def check_raw(dump, tmp, qtype, raw, what):
    inp, out = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.f32")
    raw.tofile(inp)
    rc, _, err = run_dump(dump, "raw", int(qtype), inp, out)
    if rc != 0:
        report(False, what, f"dequant_dump exited {rc}: {err.strip()}")
        return
    block, size = GGML_QUANT_SIZES[qtype]
    ref = dequantize(raw.reshape(-1, size) if block > 1 else raw, qtype)
    ok, detail = same_bits(np.fromfile(out, dtype=np.float32), ref)
    report(ok, what, detail)


def generated_blocks(qtype, rng):
    """Yields (name, uint8 array) of whole blocks with edge values for qtype."""
    block, size = GGML_QUANT_SIZES[qtype]
    if qtype in (T.F16, T.BF16):
        yield "all 65536 bit patterns", np.arange(65536, dtype=np.uint16).view(np.uint8)
        return
    if qtype == T.F32:
        vals = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, 1e-45, 3.4e38], dtype=np.float32)
        yield "edge floats", vals.view(np.uint8)
        return
    if qtype == T.MXFP4:  # one E8M0 exponent byte first: every one of the 256, under random codes
        b = rng.integers(0, 256, size=(256, size), dtype=np.uint8)
        b[:, 0] = np.arange(256, dtype=np.uint8)
        yield "random codes under every exponent", b.reshape(-1)
        b = np.tile((np.arange(size) * 17 % 256).astype(np.uint8), (256, 1))  # codes 0..15 in both nibbles
        b[:, 0] = np.arange(256, dtype=np.uint8)
        yield "every code under every exponent", b.reshape(-1)
        return
    nblocks = 64
    rand = rng.integers(0, 256, size=(nblocks, size), dtype=np.uint8)
    for off in SCALE_OFFSETS[qtype]:  # random codes with sane scales
        rand[:, off:off + 2] = np.frombuffer(np.float16(rng.uniform(-0.1, 0.1, nblocks)).tobytes(),
                                             dtype=np.uint8).reshape(nblocks, 2)
    yield "random codes", rand.reshape(-1)
    for fill in (0x00, 0xFF):
        b = np.full((len(EDGE_HALVES), size), fill, dtype=np.uint8)
        for k, h in enumerate(EDGE_HALVES):
            for off in SCALE_OFFSETS[qtype]:
                b[k, off:off + 2] = np.frombuffer(np.uint16(h).tobytes(), dtype=np.uint8)
        yield f"codes 0x{fill:02x} with edge scales", b.reshape(-1)
    edge = rng.integers(0, 256, size=(len(EDGE_HALVES), size), dtype=np.uint8)
    for k, h in enumerate(EDGE_HALVES):
        for off in SCALE_OFFSETS[qtype]:
            edge[k, off:off + 2] = np.frombuffer(np.uint16(h).tobytes(), dtype=np.uint8)
    yield "random codes with edge scales", edge.reshape(-1)


def check_generated(dump, tmp):
    rng = np.random.default_rng(1234)
    for qtype in SUPPORTED:
        for name, raw in generated_blocks(qtype, rng):
            check_raw(dump, tmp, qtype, raw, f"{qtype.name} {name}")


def check_dot(dump, tmp):
    rng = np.random.default_rng(99)
    for qtype in SUPPORTED:
        block, size = GGML_QUANT_SIZES[qtype]
        n = 1024
        if qtype == T.F32:
            raw = rng.standard_normal(n).astype(np.float32).view(np.uint8)
        elif qtype in (T.F16, T.BF16):
            raw = (rng.standard_normal(n).astype(np.float16).view(np.uint8) if qtype == T.F16 else
                   (rng.standard_normal(n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8))
        else:
            nb = n // block
            blocks = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)
            for off in SCALE_OFFSETS.get(qtype, []):
                blocks[:, off:off + 2] = np.frombuffer(np.float16(rng.uniform(-0.05, 0.05, nb)).tobytes(),
                                                       dtype=np.uint8).reshape(nb, 2)
            if qtype == T.MXFP4:  # exponents around 2^-5
                blocks[:, 0] = rng.integers(118, 126, size=nb, dtype=np.uint8)
            raw = blocks.reshape(-1)
        x = rng.standard_normal(n).astype(np.float32)
        inp, xp = os.path.join(tmp, "row.bin"), os.path.join(tmp, "x.f32")
        raw.tofile(inp)
        x.tofile(xp)
        rc, out, err = run_dump(dump, "dot", int(qtype), inp, xp)
        if rc != 0:
            report(False, f"{qtype.name} dot", f"exit {rc}: {err.strip()}")
            continue
        ref_w = dequantize(raw.reshape(-1, size) if block > 1 else raw, qtype).astype(np.float64).reshape(-1)
        ref = float(np.dot(ref_w, x.astype(np.float64)))
        got = float(out)
        scale = float(np.abs(ref_w).dot(np.abs(x.astype(np.float64)))) or 1.0
        report(abs(got - ref) <= 1e-12 * scale, f"{qtype.name} dot", f"brasa {got!r} reference {ref!r}")


def check_model(dump, tmp, path):
    reader = GGUFReader(path)
    by_type = {}
    for t in reader.tensors:
        by_type.setdefault(t.tensor_type, []).append(t)
    for qtype, tensors in sorted(by_type.items()):
        tensors = sorted(tensors, key=lambda t: int(t.n_elements))
        chosen = [t for t in tensors if int(t.n_elements) <= MAX_ELEMENTS][:2]
        chosen += [t for t in tensors[::-1] if int(t.n_elements) <= MAX_ELEMENTS][:1]
        for t in {t.name: t for t in chosen}.values():
            what = f"{os.path.basename(path)} {t.name} ({qtype.name}, {int(t.n_elements)} values)"
            out = os.path.join(tmp, "tensor.f32")
            rc, _, err = run_dump(dump, "tensor", path, t.name, out)
            if rc != 0:
                report(False, what, f"dequant_dump exited {rc}: {err.strip()}")
                continue
            ref = dequantize(t.data, qtype)
            ok, detail = same_bits(np.fromfile(out, dtype=np.float32), ref)
            report(ok, what, detail)
            os.remove(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="path to the dequant_dump program")
    ap.add_argument("--model", action="append", default=[], help="a real GGUF model (repeatable)")
    args = ap.parse_args()
    missing = [m for m in args.model if not os.path.exists(m)]
    if missing:
        print(f"skipped: model file(s) missing: {', '.join(missing)} (run scripts/fetch_models.py)")
        return 77
    np.seterr(all="ignore")  # edge scales (inf, NaN) make the reference warn; the values are compared
    with tempfile.TemporaryDirectory(prefix="brasa-quant-") as tmp:
        check_generated(args.dump, tmp)
        check_dot(args.dump, tmp)
        for m in args.model:
            check_model(args.dump, tmp, m)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
