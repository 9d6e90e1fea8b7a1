#!/usr/bin/env python3
"""The whole pipeline under AddressSanitizer + UBSan (brasa-asan): tokenizing the tricky corpus and
invalid UTF-8 for every model, detokenizing arbitrary ids, chat-formatted generation with sampling
and stop strings, and a tiny benchmark. Any sanitizer report, crash or leak fails the test.

Usage: test_sanitized_pipeline.py --brasa PATH_TO_brasa-asan --model GGUF [--model GGUF ...]
The first model is also used for generation (SmolLM2 keeps it quick).
"""
import argparse
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer"))
import corpus  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:exitcode=86:abort_on_error=0",
           UBSAN_OPTIONS="halt_on_error=1:exitcode=87:print_stacktrace=1")
CHECKS = Checks("sanitized")


def check(name, args, stdin=b"", want_rc=0, timeout=600):
    r = subprocess.run(args, input=stdin, capture_output=True, env=ENV, timeout=timeout)
    err = r.stderr.decode("utf-8", "replace")
    bad = [k for k in ("Sanitizer", "runtime error", "LeakSanitizer") if k in err]
    CHECKS.expect(name, r.returncode == want_rc and not bad, f"rc {r.returncode} (want {want_rc}) {bad} {err[-600:]}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", action="append", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.brasa):
        print("skipped: no sanitized build")
        return 77
    if any(not os.path.exists(m) for m in a.model):
        print("skipped: model file(s) missing (run scripts/fetch_models.py)")
        return 77
    rng = random.Random(7)
    texts = [s.encode("utf-8") for s in corpus.CORPUS if s] + list(corpus.INVALID_UTF8)
    for m in a.model:
        name = os.path.basename(m)
        check(f"{name} info", [a.brasa, "info", m, "--tensors", "--metadata"])
        # the corpus in a few large inputs, with and without special-token parsing
        for k in range(0, len(texts), 60):
            blob = b"\n".join(texts[k:k + 60])
            check(f"{name} tokenize {k}", [a.brasa, "tokenize", "-m", m, "--ids", "-"], stdin=blob)
            check(f"{name} tokenize --special {k}", [a.brasa, "tokenize", "-m", m, "--json", "--special", "-"],
                  stdin=blob)
        ids = [str(rng.randrange(0, 49152)) for _ in range(300)]
        check(f"{name} detokenize", [a.brasa, "detokenize", "-m", m, *ids])
        check(f"{name} detokenize out of range", [a.brasa, "detokenize", "-m", m, "4000000"], want_rc=1)
    m = a.model[0]
    check("run chat sampled", [a.brasa, "run", "-m", m, "--chat", "--system", "Be brief.", "-p",
                               "¿Qué tal? Name three colours.", "-n", "12", "--temp", "0.9", "--seed", "3",
                               "--top-k", "20", "--top-p", "0.9", "--min-p", "0.05", "--repeat-penalty", "1.1",
                               "--presence-penalty", "0.2", "--frequency-penalty", "0.1", "--stop", "\n\n"])
    check("run raw greedy", [a.brasa, "run", "-m", m, "-p", "<|im_start|>user\nHi<|im_end|>\n", "-n", "6", "--temp", "0"])
    check("run context full", [a.brasa, "run", "-m", m, "-p", "word " * 50, "--ctx", "16"], want_rc=1)
    check("chat two turns", [a.brasa, "chat", "-m", m, "-n", "6", "--temp", "0"], stdin=b"Hi\n/reset\nHello again\n/exit\n")
    check("bench", [a.brasa, "bench", "-m", m, "-p", "8", "-n", "2", "-r", "1", "--json"])
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
