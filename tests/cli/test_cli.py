#!/usr/bin/env python3
"""The command line behaves for people and programs: --help everywhere (exit 0), usage errors exit 2
with a message, failures exit 1 with a message, --json is valid JSON, text survives a tokenize /
detokenize round trip through the commands (standard input included).

Usage: test_cli.py --brasa PATH_TO_brasa --model SMOLLM2_GGUF
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("cli")
expect = CHECKS.expect


def run(brasa, args, stdin=b""):
    r = subprocess.run([brasa, *args], input=stdin, capture_output=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def check_exit(brasa, name, args, want_rc, want_err=None, stdin=b""):
    rc, out, err = run(brasa, args, stdin)
    ok = rc == want_rc and (want_err is None or want_err.encode() in err)
    expect(name, ok, f"rc {rc} (want {want_rc}); stderr {err.decode(errors='replace').strip()[:300]!r}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        print(f"skipped: model missing: {a.model} (run scripts/fetch_models.py)")
        return 77
    b, m = a.brasa, a.model

    # help and usage
    check_exit(b, "help", ["--help"], 0)
    for cmd in ("info", "tokenize", "detokenize"):
        out = check_exit(b, f"{cmd} --help", [cmd, "--help"], 0)
        expect(f"{cmd} --help text", b"Usage: brasa " + cmd.encode() in out, out[:80])
    check_exit(b, "no command", [], 2, "Usage")
    check_exit(b, "unknown command", ["frobnicate"], 2, "unknown command 'frobnicate'")
    check_exit(b, "info unknown flag", ["info", m, "--bogus"], 2, "unknown option '--bogus'")
    check_exit(b, "info missing model", ["info"], 2, "missing MODEL")
    check_exit(b, "tokenize missing text", ["tokenize", "-m", m], 2, "missing TEXT")
    check_exit(b, "tokenize -m without file", ["tokenize", "-m"], 2, "-m needs a FILE")
    check_exit(b, "tokenize missing -m", ["tokenize", "hola"], 2, "missing -m MODEL")
    check_exit(b, "detokenize bad id", ["detokenize", "-m", m, "12x"], 2, "'12x' is not a token id")
    check_exit(b, "detokenize missing ids", ["detokenize", "-m", m], 2, "missing token ids")
    check_exit(b, "detokenize id out of range", ["detokenize", "-m", m, "999999999"], 1, "outside the")

    # failures with messages
    check_exit(b, "missing file", ["info", "/nonexistent/model.gguf"], 1, "cannot open")
    with tempfile.TemporaryDirectory() as tmp:
        not_gguf = os.path.join(tmp, "readme.txt")
        with open(not_gguf, "w") as f:
            f.write("hello, not a model\n")
        check_exit(b, "not a gguf", ["info", not_gguf], 1, "not a GGUF file")
        check_exit(b, "a directory", ["info", tmp], 1, "not a regular file")

    # JSON output parses and says the right things
    out = check_exit(b, "info --json", ["info", m, "--json"], 0)
    try:
        info = json.loads(out)
        expect("info json fields", info["architecture"] == "llama" and info["n_layer"] == 30 and
               info["vocab"]["size"] == 49152 and info["n_params"] > 100_000_000, str(info)[:200])
    except (ValueError, KeyError) as e:
        expect("info json parses", False, str(e))
    out = check_exit(b, "info human", ["info", m, "--tensors", "--metadata"], 0)
    expect("info lists tensors", b"blk.0.attn_q.weight" in out and b"general.architecture" in out)

    text = "¿Qué tal? Canción, pingüino, ñandú 🎉\n日本語"
    out = check_exit(b, "tokenize --json", ["tokenize", "-m", m, "--json", text], 0)
    try:
        toks = json.loads(out)
        expect("tokenize json count", toks["count"] == len(toks["tokens"]) > 0)
    except (ValueError, KeyError) as e:
        expect("tokenize json parses", False, str(e))
    ids = check_exit(b, "tokenize --ids", ["tokenize", "-m", m, "--ids", "--no-bos", text], 0).split()
    ids_stdin = check_exit(b, "tokenize stdin", ["tokenize", "-m", m, "--ids", "--no-bos", "-"], 0,
                           stdin=text.encode()).split()
    expect("stdin equals argument", ids == ids_stdin, f"{ids} vs {ids_stdin}")
    back = check_exit(b, "detokenize", ["detokenize", "-m", m, *[i.decode() for i in ids]], 0)
    expect("round trip through the commands", back == text.encode(), repr(back))
    back = check_exit(b, "detokenize stdin", ["detokenize", "-m", m, "-"], 0, stdin=b" ".join(ids))
    expect("round trip through stdin", back == text.encode(), repr(back))

    # special tokens only where asked
    plain = check_exit(b, "no special", ["tokenize", "-m", m, "--ids", "--no-bos", "<|im_start|>"], 0).split()
    special = check_exit(b, "special", ["tokenize", "-m", m, "--ids", "--no-bos", "--special", "<|im_start|>"], 0).split()
    expect("control token parsed only with --special", special == [b"1"] and len(plain) > 1, f"{plain} {special}")

    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
