#!/usr/bin/env python3
"""Embeddings on bad input: every case must end with exit status 1 (2 for command-line mistakes)
and a message that names the problem, never a crash.

Inputs (embed_dump, all-MiniLM-L6-v2): an empty input, 513 tokens (one past the learned
positions), token ids outside the vocabulary, a context larger than the model's positions,
brasa_decode on an embedding model; a decoder whose file sets no pooling (SmolLM2). Files: copies
of the model with one byte range patched in place (the header stays valid GGUF): a layer tensor
renamed (so missing), the position table one row short, bert.context_length renamed (so missing),
an unknown pooling type; `brasa info` must still describe each. Command line: `brasa embed`
without text, with a bad --ctx, with an unknown option; `brasa run` on the embedding model.
Usage: test_embed_hostile.py --embed-dump PATH --brasa PATH --model GGUF --work DIR [--decoder GGUF]
Exit status: 0 passed, 1 failed, 77 when the model is missing. Last line `embed hostile: N passed, M failed`.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

SKIP = 77
passed = failed = 0


def report(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}: {detail}")


def expect(what, args, status, needle, stdin=None):
    """Runs args; the exit status must be status and stderr must hold needle."""
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, input=stdin)
    ok = out.returncode == status and needle in out.stderr
    report(ok, what, f"exit {out.returncode} (want {status}), stderr: {out.stderr.strip()[-300:]!r} (want {needle!r})")
    return out


def patched(src, dst, old, new):
    """A copy of src with the one occurrence of the bytes old replaced by new (same length)."""
    assert len(old) == len(new)
    data = bytearray(Path(src).read_bytes())
    at = data.find(old)
    assert at >= 0 and data.find(old, at + 1) < 0, f"{old!r} is not in {src} exactly once"
    data[at:at + len(old)] = new
    Path(dst).write_bytes(bytes(data))
    return str(dst)


def gguf_str(s):
    b = s.encode()
    return len(b).to_bytes(8, "little") + b


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--embed-dump", required=True)
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--decoder")
    a = ap.parse_args(argv)
    if not os.path.exists(a.model):
        print(f"skipped: {a.model} is missing (scripts/fetch_models.py minilm fetches it)")
        return SKIP
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    dump, model = a.embed_dump, a.model

    def inputs(*lines):
        path = work / "inputs.txt"
        path.write_text("".join(line + "\n" for line in lines))
        return str(path)

    ok_line = "101 7592 102"
    expect("an empty input", [dump, model, inputs(ok_line, ""), "--batch"], 1, "input 1 is empty")
    expect("an empty input alone", [dump, model, inputs("")], 1, "the input is empty")
    expect("513 tokens", [dump, model, inputs(" ".join(["101"] + ["7592"] * 511 + ["102"]))], 1,
           "has 513 tokens, more than the context's 512")
    expect("512 tokens are fine", [dump, model, inputs(" ".join(["101"] + ["7592"] * 510 + ["102"]))], 0, "")
    expect("a token past the vocabulary", [dump, model, inputs("101 30522 102")], 1, "token 30522 is outside")
    expect("a negative token", [dump, model, inputs("101 -5 102")], 1, "token -5 is outside")
    expect("a context beyond the learned positions", [dump, model, inputs(ok_line), "--ctx", "1024"], 1,
           "beyond the model's 512 learned positions")
    expect("brasa_decode on an embedding model", [dump, model, "--decode", "101", "102"], 1, "bert is an embedding model")
    if a.decoder and os.path.exists(a.decoder):
        expect("a decoder without pooling", [dump, a.decoder, inputs("1 2 3")], 1, "makes no embeddings")
        expect("brasa embed on a decoder without pooling", [a.brasa, "embed", "-m", a.decoder, "hi"], 1,
               "makes no embeddings")

    # broken files: a header patched in place (tensor data and offsets untouched)
    cases = [
        ("a missing layer tensor", gguf_str("blk.3.ffn_up.bias"), gguf_str("blk.3.ffn_up.biaz"),
         "tensor 'blk.3.ffn_up.bias' is missing"),
        ("position embeddings one row short",
         gguf_str("position_embd.weight") + (2).to_bytes(4, "little") + (384).to_bytes(8, "little") + (512).to_bytes(8, "little"),
         gguf_str("position_embd.weight") + (2).to_bytes(4, "little") + (384).to_bytes(8, "little") + (511).to_bytes(8, "little"),
         "tensor 'position_embd.weight' has shape [384, 511, 1], expected [384, 512, 1]"),
        ("a missing context length", gguf_str("bert.context_length"), gguf_str("bert.context_lengtX"),
         "bert.context_length is required"),
        ("an unknown pooling type", gguf_str("bert.pooling_type") + (4).to_bytes(4, "little") + (1).to_bytes(4, "little"),
         gguf_str("bert.pooling_type") + (4).to_bytes(4, "little") + (9).to_bytes(4, "little"),
         "bert.pooling_type 9 is not one brasa knows"),
    ]
    for what, old, new, needle in cases:
        bad = patched(model, work / "bad.gguf", old, new)
        expect(what, [dump, bad, inputs(ok_line)], 1, needle)
        out = subprocess.run([a.brasa, "info", bad], capture_output=True, text=True, timeout=60)
        report(out.returncode == 0 and needle in out.stdout, f"brasa info describes the file with {what}",
               f"exit {out.returncode}: {out.stdout[-300:]!r} {out.stderr[-200:]!r}")
        os.remove(bad)

    # the command line
    expect("brasa embed without text", [a.brasa, "embed", "-m", model], 2, "missing TEXT")
    expect("brasa embed --ctx 0", [a.brasa, "embed", "-m", model, "--ctx", "0", "x"], 2, "--ctx needs a number")
    expect("brasa embed with an unknown option", [a.brasa, "embed", "-m", model, "--nope", "x"], 2, "unknown option")
    expect("brasa embed - and another text", [a.brasa, "embed", "-m", model, "-", "x"], 2, "is the only text")
    out = expect("brasa embed - reads standard input", [a.brasa, "embed", "-m", model, "-"], 0, "", stdin="Hello there")
    report(len(out.stdout.split()) == 384, "one vector of 384 numbers from standard input", out.stdout[:100])
    expect("brasa run on an embedding model", [a.brasa, "run", "-m", model, "-p", "hi", "-n", "2"], 1,
           "bert is an embedding model")
    print(f"embed hostile: {passed} passed, {failed} failed")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
