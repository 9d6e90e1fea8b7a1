#!/usr/bin/env python3
"""Hostile-file test for brasa's GGUF reader.

Builds many corrupt or hostile variants of a real GGUF v3 model and checks that `brasa info FILE`
rejects each one cleanly: exit status 1, a message on stderr, and no AddressSanitizer / UBSan /
LeakSanitizer report, no crash, no hang (20 s timeout). Control cases (the untouched model, and
rebuilt copies of it that must still be valid) must exit 0.

Usage (ctest):
    python3 test_hostile_files.py --brasa BUILD/brasa --model MODEL.gguf [--keep] [--verbose]
    python3 test_hostile_files.py --model MODEL.gguf --dry-run   # build + self-check, run nothing

The variants are made with a small GGUF walker and writer of our own (struct module), so every
field's byte offset is known. Variants that keep the header size write only the header and extend
the file with truncate() to the length it must have: the tensor data becomes a sparse run of zeros,
which costs no disk and no time, and the tensor-data bounds stay exactly those of the real file.
Files are made one at a time in a temporary folder and deleted after use unless --keep is given.
With --dry-run each variant is walked back by the strict walker below, which must reject every
hostile variant and accept every control; it says why in --verbose mode.

Model cases: well-formed files whose model is inconsistent (qwen3moe expert counts and expert
tensor shapes, rope scaling parameters, rope_freqs values), written whole by
tests/model/make_arch_models.py (needs numpy and gguf; without them these cases are skipped, said
so on stdout). For each, `brasa info FILE` must still describe it (exit 0) and `brasa run -m FILE`
must exit 1 with a message that names the problem (each case's pattern); their controls must run.
With --dry-run each is walked (it must be a valid container) and given to the NumPy reference
(tests/model/ref_forward.py), which must refuse it too, except where the case says the reference
has no such limit.

Exit status: 0 when every case passed, 1 when any failed, 2 on bad arguments, 77 when the model
file is missing (for ctest's SKIP_RETURN_CODE).
"""
import argparse
import math
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4
MAX_ARRAY_DEPTH = 8          # the walker's own limit; brasa may allow more or none
INT64_MAX = 2**63 - 1
U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1

# GGUF value types
(T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL,
 T_STRING, T_ARRAY, T_U64, T_I64, T_F64) = range(13)
SCALAR_FMT = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
              T_F32: "<f", T_BOOL: "<B", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}
SCALAR_SIZE = {t: struct.calcsize(f) for t, f in SCALAR_FMT.items()}

# ggml tensor types: id -> (elements per block, bytes per block); ids 4, 5, 31-33, 36-38 are retired
GGML_TYPES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
    15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
    21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4),
    27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66),
    39: (32, 17), 40: (64, 36), 41: (128, 18),
}
GGML_F64 = 28

ASAN_OPTIONS = "detect_leaks=1:exitcode=86:abort_on_error=0"
UBSAN_OPTIONS = "halt_on_error=1:exitcode=87:print_stacktrace=1"
SANITIZER_MARKS = ("Sanitizer", "runtime error", "LeakSanitizer")
CRASH_MARKS = SANITIZER_MARKS + ("Segmentation fault", "core dumped", "Aborted", "stack smashing")


# ----------------------------------------------------------------------------------------------
# Walker: a strict reader that records where every field lives.
# ----------------------------------------------------------------------------------------------

class BadGGUF(Exception):
    """The walker's reason for rejecting a file."""


@dataclass
class KV:
    index: int
    key: bytes
    start: int        # offset of the key's u64 length
    vtype_at: int     # offset of the u32 value type
    value_at: int     # offset of the value (for arrays: of the u32 element type)
    end: int          # offset just past the value
    vtype: int
    value: object = None          # scalars and strings only
    elem_type: Optional[int] = None
    count: Optional[int] = None


@dataclass
class TensorInfo:
    index: int
    name: bytes
    start: int
    ndims_at: int
    dims_at: int
    type_at: int
    offset_at: int
    end: int
    dims: list
    ttype: int
    offset: int
    nbytes: int = 0


@dataclass
class Layout:
    version: int
    tensor_count: int
    kv_count: int
    kvs: list = field(default_factory=list)
    tensors: list = field(default_factory=list)
    infos_end: int = 0
    alignment: int = DEFAULT_ALIGNMENT
    data_start: int = 0
    file_size: int = 0


class Cursor:
    """Bounds-checked little-endian reads from a buffer."""

    def __init__(self, buf):
        self.buf, self.size, self.pos = buf, len(buf), 0

    def left(self):
        return self.size - self.pos

    def take(self, n, what):
        if n > self.left():
            raise BadGGUF(f"{what} at byte {self.pos} needs {n} bytes, {self.left()} left")
        start, self.pos = self.pos, self.pos + n
        return start

    def unpack(self, fmt, what):
        return struct.unpack_from(fmt, self.buf, self.take(struct.calcsize(fmt), what))[0]

    def u32(self, what):
        return self.unpack("<I", what)

    def u64(self, what):
        return self.unpack("<Q", what)

    def string(self, what):
        n = self.u64(what + " length")
        start = self.take(n, what)
        return bytes(self.buf[start:start + n])


def skip_array(cur, what, depth):
    """Skip an array value (element type, count, elements); nesting is limited."""
    if depth > MAX_ARRAY_DEPTH:
        raise BadGGUF(f"{what}: arrays nested deeper than {MAX_ARRAY_DEPTH}")
    etype = cur.u32(what + " element type")
    count = cur.u64(what + " count")
    if etype in SCALAR_SIZE:
        cur.take(count * SCALAR_SIZE[etype], f"{what} ({count} elements)")
    elif etype == T_STRING:
        if count > cur.left() // 8:
            raise BadGGUF(f"{what}: {count} strings cannot fit in {cur.left()} bytes")
        for i in range(count):
            cur.string(f"{what}[{i}]")
    elif etype == T_ARRAY:
        if count > cur.left() // 12:
            raise BadGGUF(f"{what}: {count} arrays cannot fit in {cur.left()} bytes")
        for i in range(count):
            skip_array(cur, f"{what}[{i}]", depth + 1)
    else:
        raise BadGGUF(f"{what}: unknown array element type {etype}")
    return etype, count


def read_kv(cur, index):
    start = cur.pos
    key = cur.string(f"KV {index} key")
    what = f"KV {index} {key[:40]!r}"
    vtype_at = cur.pos
    vtype = cur.u32(what + " value type")
    kv = KV(index, key, start, vtype_at, cur.pos, 0, vtype)
    if vtype in SCALAR_FMT:
        kv.value = cur.unpack(SCALAR_FMT[vtype], what + " value")
    elif vtype == T_STRING:
        kv.value = cur.string(what + " value")
    elif vtype == T_ARRAY:
        kv.elem_type, kv.count = skip_array(cur, what, 1)
    else:
        raise BadGGUF(f"{what}: unknown value type {vtype}")
    kv.end = cur.pos
    return kv


def read_tensor_info(cur, index):
    start = cur.pos
    name = cur.string(f"tensor {index} name")
    what = f"tensor {index} {name[:40]!r}"
    ndims_at = cur.pos
    n_dims = cur.u32(what + " n_dims")
    if n_dims > MAX_DIMS:
        raise BadGGUF(f"{what}: n_dims {n_dims} > {MAX_DIMS}")
    dims_at = cur.pos
    dims = [cur.u64(f"{what} dim {d}") for d in range(n_dims)]
    type_at = cur.pos
    ttype = cur.u32(what + " type")
    offset_at = cur.pos
    offset = cur.u64(what + " offset")
    return TensorInfo(index, name, start, ndims_at, dims_at, type_at, offset_at, cur.pos,
                      dims, ttype, offset)


def check_kvs(lay):
    seen = set()
    for kv in lay.kvs:
        what = f"KV {kv.index} {kv.key[:40]!r}"
        try:
            kv.key.decode("utf-8")
        except UnicodeDecodeError:
            raise BadGGUF(f"{what}: key is not valid UTF-8") from None
        if not kv.key or b"\0" in kv.key:
            raise BadGGUF(f"{what}: key is empty or holds a NUL byte")
        if kv.key in seen:
            raise BadGGUF(f"{what}: duplicate key")
        seen.add(kv.key)
        if kv.key == b"general.alignment":
            if kv.vtype != T_U32:
                raise BadGGUF(f"{what}: value type {kv.vtype}, want u32")
            if kv.value == 0 or kv.value & (kv.value - 1):
                raise BadGGUF(f"{what}: {kv.value} is not a power of two")
            lay.alignment = kv.value
        if kv.key == b"tokenizer.ggml.tokens" and (kv.vtype, kv.elem_type) != (T_ARRAY, T_STRING):
            raise BadGGUF(f"{what}: want an array of strings")


def tensor_nbytes(t):
    what = f"tensor {t.index} {t.name[:40]!r}"
    if not t.dims:
        raise BadGGUF(f"{what}: n_dims 0")
    if t.ttype not in GGML_TYPES:
        raise BadGGUF(f"{what}: unknown type {t.ttype}")
    block, bsize = GGML_TYPES[t.ttype]
    n = 1
    for d in t.dims:
        if d == 0 or d > INT64_MAX:
            raise BadGGUF(f"{what}: dimension {d} out of range")
        n *= d
        if n > INT64_MAX:
            raise BadGGUF(f"{what}: element count overflows int64 ({t.dims})")
    if t.dims[0] % block:
        raise BadGGUF(f"{what}: dim 0 = {t.dims[0]} is not a multiple of block size {block}")
    nbytes = n // block * bsize
    if nbytes > INT64_MAX:
        raise BadGGUF(f"{what}: byte size overflows int64")
    return nbytes


def check_tensors(lay):
    names = set()
    for t in lay.tensors:
        what = f"tensor {t.index} {t.name[:40]!r}"
        try:
            t.name.decode("utf-8")
        except UnicodeDecodeError:
            raise BadGGUF(f"{what}: name is not valid UTF-8") from None
        if t.name in names:
            raise BadGGUF(f"{what}: duplicate tensor name")
        names.add(t.name)
        t.nbytes = tensor_nbytes(t)
        if t.offset % lay.alignment:
            raise BadGGUF(f"{what}: offset {t.offset} not a multiple of {lay.alignment}")
        end = lay.data_start + t.offset + t.nbytes
        if end > lay.file_size:
            raise BadGGUF(f"{what}: data ends at byte {end}, past the {lay.file_size}-byte file")
    prev = None
    for t in sorted(lay.tensors, key=lambda t: t.offset):
        if prev and prev.offset + prev.nbytes > t.offset:
            raise BadGGUF(f"tensor {t.index} {t.name[:40]!r} overlaps tensor {prev.index}")
        prev = t


def walk(buf):
    """Parse and validate a whole GGUF file held in buf; return its Layout or raise BadGGUF."""
    cur = Cursor(buf)
    magic = bytes(buf[cur.take(4, "magic"):4])
    if magic != GGUF_MAGIC:
        raise BadGGUF(f"bad magic {magic!r}")
    version = cur.u32("version")
    if version != GGUF_VERSION:
        raise BadGGUF(f"version {version}, want {GGUF_VERSION}")
    tensor_count = cur.u64("tensor_count")
    kv_count = cur.u64("kv_count")
    if kv_count > cur.left() // 13:
        raise BadGGUF(f"kv_count {kv_count} cannot fit in the file")
    lay = Layout(version, tensor_count, kv_count, file_size=len(buf))
    lay.kvs = [read_kv(cur, i) for i in range(kv_count)]
    check_kvs(lay)
    if tensor_count > cur.left() // 24:
        raise BadGGUF(f"tensor_count {tensor_count} cannot fit in the file")
    lay.tensors = [read_tensor_info(cur, i) for i in range(tensor_count)]
    lay.infos_end = cur.pos
    lay.data_start = align_up(cur.pos, lay.alignment)
    if lay.data_start > lay.file_size:
        raise BadGGUF(f"data section starts at {lay.data_start}, past the end of the file")
    check_tensors(lay)
    return lay


def walk_file(path):
    size = os.path.getsize(path)
    if size == 0:
        return walk(b"")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return walk(mm)


def align_up(n, a):
    return (n + a - 1) // a * a


# ----------------------------------------------------------------------------------------------
# Writer
# ----------------------------------------------------------------------------------------------

def enc_str(b):
    return struct.pack("<Q", len(b)) + b


def enc_kv(key, vtype, payload):
    return enc_str(key) + struct.pack("<I", vtype) + payload


def enc_tensor(name, dims, ttype, offset):
    return (enc_str(name) + struct.pack("<I", len(dims))
            + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", ttype, offset))


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


class Model:
    """The real model: its header bytes, layout, and ways to derive variants from it."""

    def __init__(self, path):
        self.path = Path(path)
        self.size = self.path.stat().st_size
        self.lay = walk_file(self.path)
        with open(self.path, "rb") as f:
            self.header = f.read(self.lay.data_start)
        self.data_len = self.size - self.lay.data_start

    # -- lookups
    def kv(self, key):
        return next(kv for kv in self.lay.kvs if kv.key == key)

    def first_kv(self, pred):
        return next(kv for kv in self.lay.kvs if pred(kv))

    def last_string_kv(self):
        return [kv for kv in self.lay.kvs if kv.vtype == T_STRING][-1]

    def tensor(self, pred):
        return next(t for t in self.lay.tensors if pred(t))

    def last_tensor(self):
        return max(self.lay.tensors, key=lambda t: t.offset)

    def tensor_2d(self):
        return self.tensor(lambda t: len(t.dims) == 2 and GGML_TYPES[t.ttype][0] > 1)

    def tensor_f32(self):
        return self.tensor(lambda t: t.ttype == 0)

    def same_length_pair(self, items, name_of):
        seen = {}
        for it in items:
            n = len(name_of(it))
            if n in seen:
                return seen[n], it
            seen[n] = it
        raise LookupError("no two names of the same length")

    # -- variant builders: each returns (header bytes, total file length)
    def truncated(self, n):
        return self.header, n

    def patched(self, *edits, extra=0):
        """The header with bytes replaced at given offsets, file length unchanged (+extra)."""
        h = bytearray(self.header)
        for at, b in edits:
            h[at:at + len(b)] = b
        return bytes(h), self.size + extra

    def kv_blobs(self):
        return [self.header[kv.start:kv.end] for kv in self.lay.kvs]

    def tensor_rows(self):
        return [(t.name, list(t.dims), t.ttype, t.offset) for t in self.lay.tensors]

    def rebuilt(self, kvs=None, tensors=None):
        """A re-serialized header (padded to 32) followed by the data length of the real file."""
        kvs = self.kv_blobs() if kvs is None else kvs
        tensors = self.tensor_rows() if tensors is None else tensors
        h = (GGUF_MAGIC + u32(self.lay.version) + u64(len(tensors)) + u64(len(kvs))
             + b"".join(kvs) + b"".join(enc_tensor(*t) for t in tensors))
        h += b"\0" * (align_up(len(h), DEFAULT_ALIGNMENT) - len(h))
        return h, len(h) + self.data_len

    def with_kv(self, blob, at=None):
        kvs = self.kv_blobs()
        kvs.insert(len(kvs) if at is None else at, blob)
        return self.rebuilt(kvs=kvs)

    def replacing_kv(self, key, blob):
        kvs = [blob if kv.key == key else self.header[kv.start:kv.end] for kv in self.lay.kvs]
        return self.rebuilt(kvs=kvs)

    def retensored(self, index, **changes):
        rows = self.tensor_rows()
        name, dims, ttype, offset = rows[index]
        rows[index] = (changes.get("name", name), changes.get("dims", dims),
                       changes.get("ttype", ttype), changes.get("offset", offset))
        return self.rebuilt(tensors=rows)


def write_variant(path, header, total):
    """Write header[:total], then extend (sparse, zeros) to exactly total bytes."""
    with open(path, "wb") as f:
        f.write(header[:total])
        f.truncate(total)


# ----------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    make: Optional[Callable]   # Model -> (header, total); None: the real file itself
    expect: int = 1


def truncation_cases(m):
    L = m.lay
    kv0 = L.kvs[0]
    s = m.first_kv(lambda kv: kv.vtype == T_STRING and len(kv.value) > 8)
    n = m.first_kv(lambda kv: kv.vtype == T_U32)
    arr = m.first_kv(lambda kv: kv.vtype == T_ARRAY and kv.count > 100)
    t0, tl = L.tensors[0], m.last_tensor()
    points = [
        ("empty-file", 0),
        ("trunc-in-magic", 2),
        ("magic-only", 4),
        ("trunc-in-version", 6),
        ("trunc-in-tensor-count", 12),
        ("trunc-in-kv-count", 20),
        ("trunc-after-counts", 24),
        ("trunc-in-key-length", kv0.start + 3),
        ("trunc-in-key", kv0.start + 8 + 5),
        ("trunc-in-value-type", kv0.vtype_at + 2),
        ("trunc-in-string-value", s.value_at + 8 + 3),
        ("trunc-in-u32-value", n.value_at + 2),
        ("trunc-in-array-count", arr.value_at + 4 + 3),
        ("trunc-mid-array", (arr.value_at + arr.end) // 2),
        ("trunc-before-tensor-infos", L.kvs[-1].end),
        ("trunc-in-tensor-name", t0.start + 8 + 4),
        ("trunc-in-tensor-dims", t0.dims_at + 12),
        ("trunc-in-tensor-offset", L.tensors[-1].offset_at + 4),
        ("trunc-just-before-data", L.data_start - 1),
        ("trunc-at-data-start", L.data_start),
        ("trunc-mid-data", L.data_start + m.data_len // 2),
        ("trunc-mid-last-tensor", L.data_start + tl.offset + tl.nbytes // 2),
        ("trunc-one-byte-short", m.size - 1),
    ]
    if L.infos_end < L.data_start:
        points.append(("trunc-in-padding", L.infos_end))
    return [Case(name, (lambda m, at=at: m.truncated(at))) for name, at in points]


def header_cases(m):
    L = m.lay
    P = m.patched
    kv0, kv1 = L.kvs[0], L.kvs[1]
    sv = m.first_kv(lambda kv: kv.vtype == T_STRING)
    last_s = m.last_string_kv()
    tok = m.kv(b"tokenizer.ggml.tokens")
    i32a = m.first_kv(lambda kv: kv.vtype == T_ARRAY and kv.elem_type in (T_I32, T_U32))
    dk_a, dk_b = m.same_length_pair(L.kvs, lambda kv: kv.key)
    bad_utf8 = kv1.key[:-2] + b"\xff" + kv1.key[-1:]
    with_nul = kv1.key[:-2] + b"\0" + kv1.key[-1:]
    return [
        Case("magic-GGUX", lambda m: P((0, b"GGUX"))),
        Case("magic-legacy-ggml", lambda m: P((0, b"lmgg"))),
        Case("version-0", lambda m: P((4, u32(0)))),
        Case("version-1", lambda m: P((4, u32(1)))),
        Case("version-99", lambda m: P((4, u32(99)))),
        Case("version-byteswapped", lambda m: P((4, struct.pack(">I", 3)))),
        Case("tensor-count-2^63", lambda m: P((8, u64(2**63)))),
        Case("tensor-count-2^40", lambda m: P((8, u64(2**40)))),
        Case("tensor-count-u64max", lambda m: P((8, u64(U64_MAX)))),
        Case("kv-count-2^63", lambda m: P((16, u64(2**63)))),
        Case("kv-count-2^40", lambda m: P((16, u64(2**40)))),
        Case("kv-count-zero", lambda m: P((16, u64(0)))),
        Case("kv-count-plus-one", lambda m: P((16, u64(L.kv_count + 1)))),
        Case("key-len-u64max", lambda m: P((kv0.start, u64(U64_MAX)))),
        Case("key-len-2^63", lambda m: P((kv0.start, u64(2**63)))),
        Case("key-len-past-eof", lambda m: P((kv0.start, u64(m.size - kv0.start - 8 + 1)))),
        Case("key-invalid-utf8", lambda m: P((kv1.start + 8, bad_utf8))),
        Case("key-embedded-nul", lambda m: P((kv1.start + 8, with_nul))),
        Case("key-duplicate", lambda m: P((dk_b.start + 8, dk_a.key))),
        Case("kv-type-13", lambda m: P((kv1.vtype_at, u32(13)))),
        Case("kv-type-u32max", lambda m: P((kv1.vtype_at, u32(U32_MAX)))),
        Case("string-len-u64max", lambda m: P((sv.value_at, u64(U64_MAX)))),
        Case("string-len-2^63", lambda m: P((sv.value_at, u64(2**63)))),
        Case("string-len-past-eof",
             lambda m: P((last_s.value_at, u64(m.size - last_s.value_at - 8 + 1)))),
        Case("array-elem-type-13", lambda m: P((tok.value_at, u32(13)))),
        Case("array-elem-type-u32max", lambda m: P((tok.value_at, u32(U32_MAX)))),
        Case("array-count-u64max-string", lambda m: P((tok.value_at + 4, u64(U64_MAX)))),
        Case("array-count-2^62-string", lambda m: P((tok.value_at + 4, u64(2**62)))),
        Case("array-count-2^62-i32-wraps", lambda m: P((i32a.value_at + 4, u64(2**62)))),
    ]


def inserted_kv_cases(m):
    def arr(etype, count, rest=b""):
        return lambda m: m.with_kv(enc_kv(b"brasa.test.array", T_ARRAY,
                                          struct.pack("<IQ", etype, count) + rest))

    deep = struct.pack("<IQ", T_ARRAY, 1) * (1_000_000 - 1) + struct.pack("<IQ", T_U8, 0)

    def alignment(vtype, payload):
        return lambda m: m.with_kv(enc_kv(b"general.alignment", vtype, payload), at=1)

    tok = m.kv(b"tokenizer.ggml.tokens")
    n = tok.count
    tokens_u32 = enc_kv(tok.key, T_ARRAY, struct.pack(f"<IQ{n}I", T_U32, n, *range(n)))
    tokens_str = enc_kv(tok.key, T_STRING, enc_str(b"hello"))
    return [
        Case("array-count-2^62-u8", arr(T_U8, 2**62)),
        Case("array-count-u64max-u8", arr(T_U8, U64_MAX)),
        Case("array-count-2^62-nested", arr(T_ARRAY, 2**62)),
        Case("array-count-u64max-nested", arr(T_ARRAY, U64_MAX)),
        Case("nested-array-deep-1e6", lambda m: m.with_kv(
            enc_kv(b"brasa.test.deep", T_ARRAY, deep))),
        Case("nested-array-unknown-type", arr(T_ARRAY, 1, struct.pack("<IQ", 13, 1) + b"\0" * 8)),
        Case("alignment-0", alignment(T_U32, u32(0))),
        Case("alignment-3", alignment(T_U32, u32(3))),
        Case("alignment-u32max", alignment(T_U32, u32(U32_MAX))),
        Case("alignment-as-string", alignment(T_STRING, enc_str(b"32"))),
        Case("tokens-elem-u32", lambda m: m.replacing_kv(tok.key, tokens_u32)),
        Case("tokens-not-array", lambda m: m.replacing_kv(tok.key, tokens_str)),
    ]


def tensor_cases(m):
    L = m.lay
    P = m.patched
    t0 = L.tensors[0]
    tl = m.last_tensor()
    t2 = m.tensor_2d()
    tf = m.tensor_f32()
    by_off = sorted(L.tensors, key=lambda t: t.offset)
    t_ov, t_prev = by_off[2], by_off[1]
    dn_a, dn_b = m.same_length_pair(L.tensors, lambda t: t.name)
    at_eof = align_up(m.data_len, L.alignment)
    return [
        Case("ndims-0", lambda m: m.retensored(tf.index, dims=[])),
        Case("ndims-5", lambda m: P((t0.ndims_at, u32(5)))),
        Case("ndims-1000", lambda m: P((t0.ndims_at, u32(1000)))),
        Case("ndims-u32max", lambda m: P((t0.ndims_at, u32(U32_MAX)))),
        Case("dim-zero", lambda m: P((tl.dims_at, u64(0)))),
        Case("dim-2^63", lambda m: P((t2.dims_at + 8, u64(2**63)))),
        Case("dim-u64max", lambda m: P((t2.dims_at, u64(U64_MAX)))),
        Case("dims-2^32x2^32-wraps", lambda m: P((t2.dims_at, u64(2**32) + u64(2**32)))),
        Case("dims-2^32x2^32x4", lambda m: m.retensored(t2.index, dims=[2**32, 2**32, 4])),
        Case("dim-f32-2^62-bytes-overflow", lambda m: P((tf.dims_at, u64(2**62)))),
        Case("dim0-not-block-multiple", lambda m: P((t2.dims_at, u64(t2.dims[0] + 1)))),
        Case("tensor-type-4-retired", lambda m: P((t0.type_at, u32(4)))),
        Case("tensor-type-42", lambda m: P((t0.type_at, u32(42)))),
        Case("tensor-type-1000", lambda m: P((t0.type_at, u32(1000)))),
        Case("tensor-type-u32max", lambda m: P((t0.type_at, u32(U32_MAX)))),
        Case("last-tensor-type-f64-past-eof", lambda m: P((tl.type_at, u32(GGML_F64)))),
        Case("offset-at-eof", lambda m: P((tl.offset_at, u64(at_eof)))),
        Case("offset-32-past-end", lambda m: P((tl.offset_at, u64(tl.offset + 32)))),
        Case("offset-2^63", lambda m: P((tl.offset_at, u64(2**63)))),
        Case("offset-plus-size-wraps", lambda m: P((tl.offset_at, u64(2**64 - 32)))),
        Case("offset-misaligned-16", lambda m: P((tl.offset_at, u64(tl.offset + 16)), extra=32)),
        Case("tensors-overlap", lambda m: P((t_ov.offset_at, u64(t_prev.offset)))),
        Case("tensor-name-duplicate", lambda m: P((dn_b.start + 8, dn_a.name))),
    ]


def control_cases():
    return [
        Case("control-real-file", None, expect=0),
        Case("control-rebuilt-sparse", lambda m: m.rebuilt(), expect=0),
        Case("control-alignment-32", lambda m: m.with_kv(
            enc_kv(b"general.alignment", T_U32, u32(32)), at=1), expect=0),
    ]


def all_cases(m):
    return control_cases() + truncation_cases(m) + header_cases(m) + inserted_kv_cases(m) \
        + tensor_cases(m)


# ----------------------------------------------------------------------------------------------
# Model cases: valid GGUF files whose model brasa must refuse to run
# ----------------------------------------------------------------------------------------------

def model_writer():
    """tests/model/make_arch_models.py, or the reason it cannot be imported (no numpy / gguf)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "model"))
    try:
        import make_arch_models
        return make_arch_models, None
    except ImportError as e:
        return None, str(e)


@dataclass
class ModelCase:
    name: str
    base: str                     # "moe" (qwen3moe), "qwen3" or "llama3" (llama with rope_freqs)
    edit: Optional[Callable]      # (metadata, tensors) -> None, on make_arch_models.make()'s dicts
    message: Optional[str]        # regex `brasa run`'s stderr must match; None: a control
    reference_refuses: bool = True
    patch: Optional[Callable] = None  # (path) -> None: edits the written file's header in place,
                                      # making a container the strict walker must reject


def model_base_spec(mk, base):
    """Small models: one layer, n_embd 64, tied output (about 3.5 MB with SmolLM2's vocabulary)."""
    if base == "moe":
        return mk.Spec("hostile-moe", "qwen3moe", seed=31, n_layer=1, tied=True, n_expert=8,
                       n_expert_used=2, n_ff_exp=32)
    if base == "qwen3":
        return mk.Spec("hostile-qwen3", "qwen3", seed=32, n_layer=1, tied=True)
    if base == "gpt-oss":  # two layers: a sliding one and a full one
        spec = mk.SPEC_BY_NAME["gpt-oss-8x2"]
        return mk.Spec("hostile-gpt-oss", "gpt-oss", seed=34, n_layer=2, tied=True, n_ff=spec.n_ff, n_head=spec.n_head,
                       n_head_kv=spec.n_head_kv, head_dim=spec.head_dim, rope_base=spec.rope_base,
                       context_length=spec.context_length, eps=spec.eps, n_expert=8, n_expert_used=2, n_ff_exp=32,
                       expert_type=spec.expert_type, sliding_window=spec.sliding_window, rope_scaling=spec.rope_scaling)
    return mk.Spec("hostile-llama3", "llama", seed=33, n_layer=1, tied=True, rope_base=500000.0,
                   llama3_rope=(8.0, 1.0, 4.0, 8192))


def set_kv(key, value, vtype):
    def edit(meta, tensors):
        from gguf import GGUFValueType
        meta[key] = (value, GGUFValueType(vtype), None)
    return edit


def drop_kv(key):
    return lambda meta, tensors: meta.pop(key)


def set_kvs(*edits):
    def edit(meta, tensors):
        for e in edits:
            e(meta, tensors)
    return edit


def slice_tensor(name, index):
    """Keep tensor[index] (a NumPy index: fewer rows, experts, or a reshape via a callable)."""
    def edit(meta, tensors):
        arr, qtype = tensors[name]
        tensors[name] = (index(arr) if callable(index) else arr[index], qtype)
    return edit


def drop_tensor(name):
    return lambda meta, tensors: tensors.pop(name)


def rope_freq_value(value):
    def edit(meta, tensors):
        arr, qtype = tensors["rope_freqs.weight"]
        arr = arr.copy()
        arr[3] = value
        tensors["rope_freqs.weight"] = (arr, qtype)
    return edit


def yarn(factor=None, original_ctx=None):
    edits = [set_kv("qwen3.rope.scaling.type", "yarn", T_STRING)]
    if factor is not None:
        edits.append(set_kv("qwen3.rope.scaling.factor", factor, T_F32))
    if original_ctx is not None:
        edits.append(set_kv("qwen3.rope.scaling.original_context_length", original_ctx, T_U32))
    return set_kvs(*edits)


def scaling(kind, factor):
    return set_kvs(set_kv("qwen3.rope.scaling.type", kind, T_STRING),
                   set_kv("qwen3.rope.scaling.factor", factor, T_F32))


def mk_qt(name):
    from gguf import GGMLQuantizationType
    return GGMLQuantizationType[name]


def tensor_dim0(name, delta):
    """Patch: the named tensor's first dimension changed by delta in the header (its data stays)."""
    def patch(path):
        t = next(t for t in walk_file(path).tensors if t.name == name.encode())
        with open(path, "r+b") as f:
            f.seek(t.dims_at)
            f.write(u64(t.dims[0] + delta))
    return patch


def model_cases():
    up, gate, down = (f"blk.0.ffn_{w}_exps.weight" for w in ("up", "gate", "down"))
    router = "blk.0.ffn_gate_inp.weight"
    sinks = "blk.0.attn_sinks.weight"
    return [
        ModelCase("control-model-qwen3moe", "moe", None, None),
        ModelCase("control-model-qwen3-yarn", "qwen3", yarn(4.0, 64), None),
        ModelCase("control-model-llama3-rope-freqs", "llama3", None, None),
        ModelCase("moe-expert-count-0", "moe", set_kv("qwen3moe.expert_count", 0, T_U32), r"expert_count is 0"),
        ModelCase("moe-expert-count-100000", "moe", set_kv("qwen3moe.expert_count", 100000, T_U32),
                  r"expert_count is 100000|has shape"),
        ModelCase("moe-expert-used-9-of-8", "moe", set_kv("qwen3moe.expert_used_count", 9, T_U32),
                  r"expert_used_count is 9"),
        ModelCase("moe-expert-used-0", "moe", set_kv("qwen3moe.expert_used_count", 0, T_U32),
                  r"expert_used_count is 0"),
        ModelCase("moe-no-expert-ff-length", "moe", drop_kv("qwen3moe.expert_feed_forward_length"),
                  r"expert_feed_forward_length"),
        ModelCase("moe-up-exps-other-n-ff", "moe", slice_tensor(up, (slice(None), slice(0, 16))),
                  re.escape(f"tensor '{up}' has shape")),
        ModelCase("moe-down-exps-7-experts", "moe", slice_tensor(down, slice(0, 7)),
                  re.escape(f"tensor '{down}' has shape")),
        ModelCase("moe-gate-exps-2d", "moe", slice_tensor(gate, lambda a: a.reshape(-1, a.shape[-1])),
                  re.escape(f"tensor '{gate}' has shape")),
        ModelCase("moe-router-7-experts", "moe", slice_tensor(router, slice(0, 7)),
                  re.escape(f"tensor '{router}' has shape")),
        ModelCase("moe-router-missing", "moe", drop_tensor(router), re.escape(router)),
        ModelCase("rope-yarn-no-factor", "qwen3", yarn(original_ctx=64), r"needs .*rope\.scaling\.factor"),
        ModelCase("rope-yarn-no-original-ctx", "qwen3", yarn(factor=4.0), r"needs .*original_context_length"),
        ModelCase("rope-yarn-original-ctx-0", "qwen3", yarn(4.0, 0), r"original_context_length",
                  reference_refuses=False),
        ModelCase("rope-yarn-factor-1e30", "qwen3", yarn(1e30, 64), r"rope\.scaling\.factor",
                  reference_refuses=False),
        ModelCase("rope-longrope", "qwen3", scaling("longrope", 4.0), r"rope scaling 'longrope' is not supported"),
        ModelCase("rope-linear-factor-0", "qwen3", scaling("linear", 0.0), r"rope\.scaling\.factor"),
        ModelCase("rope-linear-factor-negative", "qwen3", scaling("linear", -2.0), r"rope\.scaling\.factor"),
        ModelCase("rope-linear-factor-nan", "qwen3", scaling("linear", math.nan), r"rope\.scaling\.factor"),
        ModelCase("rope-freqs-zero", "llama3", rope_freq_value(0.0), r"frequency divisors must be positive"),
        ModelCase("rope-freqs-negative", "llama3", rope_freq_value(-1.0), r"frequency divisors must be positive"),
        ModelCase("rope-freqs-nan", "llama3", rope_freq_value(math.nan), r"frequency divisors must be positive"),
        ModelCase("control-model-gpt-oss", "gpt-oss", None, None),
        ModelCase("gpt-oss-sinks-3-of-8", "gpt-oss", slice_tensor(sinks, slice(0, 3)), re.escape(f"tensor '{sinks}' has shape")),
        ModelCase("gpt-oss-sinks-missing", "gpt-oss", drop_tensor(sinks), re.escape(sinks), reference_refuses=False),
        ModelCase("gpt-oss-sliding-window-0", "gpt-oss", set_kv("gpt-oss.attention.sliding_window", 0, T_U32),
                  r"sliding_window is 0", reference_refuses=False),
        ModelCase("gpt-oss-expert-bias-f16", "gpt-oss",
                  lambda meta, tensors: tensors.update({"blk.1.ffn_up_exps.bias": (tensors["blk.1.ffn_up_exps.bias"][0],
                                                                                  mk_qt("F16"))}),
                  r"ffn_up_exps\.bias' is f16; brasa needs f32", reference_refuses=False),
        ModelCase("gpt-oss-mxfp4-row-not-whole-blocks", "gpt-oss", None,
                  r"not a multiple of the mxfp4 block size 32", patch=tensor_dim0(up, -1)),
    ]


def write_model_case(mk, case, path, tokenizer_model):
    spec = model_base_spec(mk, case.base)
    meta, tensors = mk.make(spec)
    if case.edit:
        case.edit(meta, tensors)
    mk.write_gguf(path, spec.arch, meta, tensors, tokenizer_model)
    if case.patch:
        case.patch(path)


def check_model_case_live(case, path, args):
    """`brasa info` describes the file; `brasa run` refuses it with the case's message (or runs it).
    An invalid container (a patched case) is refused by both, with the message."""
    rc, out, err = run_cli(args.brasa, ["info", str(path)], args.timeout)
    reason = judge(1 if case.patch else 0, rc, out, err, args.timeout)
    if not reason and case.patch and not re.search(case.message, err):
        reason = f"the message does not match /{case.message}/"
    if reason:
        reason = f"info: {reason} ({describe_rc(rc)}, {last_line(err)})"
    else:
        rc, out, err = run_cli(args.brasa, ["run", "-m", str(path), "-p", "hi", "-n", "1", "--temp", "0",
                                            "--ctx", "64"], args.timeout)
        reason = judge(0 if case.message is None else 1, rc, out, err, args.timeout)
        if not reason and case.message and not re.search(case.message, err):
            reason = f"the message does not match /{case.message}/"
        if reason:
            reason = f"run: {reason} ({describe_rc(rc)}, {last_line(err)})"
    print(f"FAIL {case.name}: {reason}" if reason else f"ok   {case.name}")
    if args.verbose:
        for ln in (err.strip().splitlines() or ["<no stderr>"])[-5:]:
            print(f"       {ln[:300]}")
    return reason is None


def check_model_case_dry(case, path, args):
    """The file is a valid container, and the NumPy reference refuses it too (or runs a control)."""
    try:
        walk_file(path)
        reason = "the walker accepts a container made to be invalid" if case.patch else None
    except BadGGUF as e:
        reason = None if case.patch else f"walker rejects it: {e}"
    if case.patch:  # the container is invalid: nothing for the reference to read
        print(f"FAIL {case.name}: {reason}" if reason else f"ok   {case.name}")
        return reason is None
    verdict = None
    if not reason and (case.message is None or case.reference_refuses):
        import ref_forward  # tests/model, on sys.path since model_writer()
        try:
            ref_forward.RefModel(path).logits([1, 2, 3])
        except (ValueError, KeyError, NotImplementedError) as e:
            verdict = f"{type(e).__name__}: {e}"
        if case.message is None and verdict:
            reason = f"the reference refuses a control: {verdict}"
        elif case.message is not None and not verdict:
            reason = "the reference runs it"
    print(f"FAIL {case.name}: {reason}" if reason else f"ok   {case.name}")
    if args.verbose and verdict:
        print(f"       reference: {verdict}")
    return reason is None


# ----------------------------------------------------------------------------------------------
# Running and judging
# ----------------------------------------------------------------------------------------------

def run_brasa(brasa, path, timeout):
    return run_cli(brasa, ["info", str(path)], timeout)


def run_cli(brasa, argv, timeout):
    env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS, UBSAN_OPTIONS=UBSAN_OPTIONS)
    try:
        p = subprocess.run([brasa] + argv, capture_output=True, env=env,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, e.stdout or b"", e.stderr or b""
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def describe_rc(rc):
    if rc is None:
        return "timeout"
    if rc < 0:
        return f"killed by signal {-rc}"
    return {86: "rc 86 (ASan)", 87: "rc 87 (UBSan)"}.get(rc, f"rc {rc}")


def judge(expect, rc, out, err, timeout):
    """Return None when the run is a pass, else the reason it failed."""
    if rc is None:
        return f"no exit within {timeout} s"
    if any(mark in err for mark in SANITIZER_MARKS):
        return "sanitizer report on stderr"
    if any(mark in out for mark in CRASH_MARKS):
        return "crash report on stdout"
    if rc != expect:
        return f"want exit status {expect}"
    if expect != 0 and not err.strip():
        return "no message on stderr"
    return None


def last_line(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "<empty>"


def check_case_live(case, path, args):
    rc, out, err = run_brasa(args.brasa, path, args.timeout)
    reason = judge(case.expect, rc, out, err, args.timeout)
    if reason:
        print(f"FAIL {case.name}: {reason} ({describe_rc(rc)}, {last_line(err)})")
    else:
        print(f"ok   {case.name}")
    if args.verbose:
        for ln in (err.strip().splitlines() or ["<no stderr>"])[:20]:
            print(f"       {ln[:300]}")
    return reason is None


def check_case_dry(case, path, args):
    """Walk the variant back: hostile ones must be rejected, controls accepted."""
    try:
        walk_file(path)
        verdict = None
    except BadGGUF as e:
        verdict = str(e)
    if case.expect == 0:
        reason = f"walker rejects a control: {verdict}" if verdict else None
    else:
        reason = None if verdict else "walker accepts this variant: it is not hostile"
    print(f"FAIL {case.name}: {reason}" if reason else f"ok   {case.name}")
    if args.verbose and verdict:
        print(f"       walker: {verdict}")
    return reason is None


def self_check(m):
    """Dry-run sanity checks on the writer and walker against the real model."""
    h, total = m.rebuilt()
    problems = []
    if h != m.header or total != m.size:
        problems.append("re-serialized header differs from the real one")
    try:
        from gguf import GGUFReader
    except ImportError:
        return problems
    r = GGUFReader(str(m.path))
    if r.data_offset != m.lay.data_start:
        problems.append(f"data start {m.lay.data_start} != gguf's {r.data_offset}")
    for t, rt in zip(m.lay.tensors, r.tensors):
        if (t.name.decode(), m.lay.data_start + t.offset, t.nbytes) != \
                (rt.name, rt.data_offset, rt.n_bytes):
            problems.append(f"tensor {t.index} disagrees with gguf's reader")
            break
    for kv in m.lay.kvs:
        f = r.fields[kv.key.decode()]
        if f.offset != kv.start:
            problems.append(f"KV {kv.key!r} at {kv.start}, gguf says {f.offset}")
            break
    return problems


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brasa", help="path to the brasa binary (ASan+UBSan build)")
    ap.add_argument("--model", required=True, help="path to a real GGUF v3 model")
    ap.add_argument("--keep", action="store_true", help="keep the variant files")
    ap.add_argument("--verbose", action="store_true", help="print brasa's message for each case")
    ap.add_argument("--dry-run", action="store_true", help="build and self-check, run nothing")
    ap.add_argument("--only", metavar="TEXT", help="run only the cases whose name contains TEXT")
    ap.add_argument("--list", action="store_true", help="list the case names and exit")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per run (default 20)")
    ap.add_argument("--workdir", help="where to make the temporary folder")
    args = ap.parse_args(argv)
    if not (args.dry_run or args.list) and not args.brasa:
        ap.error("--brasa is required unless --dry-run or --list")
    return args


def main(argv=None):
    args = parse_args(argv)
    if not os.path.isfile(args.model):
        print(f"hostile: model {args.model} not found; skipped", file=sys.stderr)
        return 77
    if args.brasa and not args.dry_run and not os.access(args.brasa, os.X_OK):
        print(f"hostile: {args.brasa} is not an executable", file=sys.stderr)
        return 2
    m = Model(args.model)
    cases = [c for c in all_cases(m) if not args.only or args.only in c.name]
    mcases = [c for c in model_cases() if not args.only or args.only in c.name]
    if args.list:
        print("\n".join(f"{c.name} (expect {c.expect})" for c in cases))
        print("\n".join(f"{c.name} (info 0, run {'0' if c.message is None else '1: /' + c.message + '/'})"
                        for c in mcases))
        return 0
    failed = []
    if args.dry_run:
        for p in self_check(m):
            print(f"FAIL self-check: {p}")
            failed.append("self-check")
    check = check_case_dry if args.dry_run else check_case_live
    tmp = Path(tempfile.mkdtemp(prefix="brasa-hostile-", dir=args.workdir))
    passed = 0
    try:
        for i, case in enumerate(cases):
            if case.make is None:
                path = m.path
            else:
                path = tmp / f"{i:02d}-{case.name}.gguf"
                write_variant(path, *case.make(m))
            if check(case, path, args):
                passed += 1
            else:
                failed.append(case.name)
            if path != m.path and not args.keep:
                path.unlink()
        mk, why = model_writer() if mcases else (None, None)
        if mcases and mk is None:
            print(f"hostile: {len(mcases)} model cases skipped: cannot import make_arch_models ({why})")
            mcases = []
        check_model = check_model_case_dry if args.dry_run else check_model_case_live
        for i, case in enumerate(mcases):
            path = tmp / f"m{i:02d}-{case.name}.gguf"
            write_model_case(mk, case, path, args.model)
            if check_model(case, path, args):
                passed += 1
            else:
                failed.append(case.name)
            if not args.keep:
                path.unlink()
    finally:
        if args.keep:
            print(f"hostile: variant files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"hostile: {passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
