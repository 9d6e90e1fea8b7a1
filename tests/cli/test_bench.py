#!/usr/bin/env python3
"""`brasa bench --json` reports what it promises (fields, not speed): one result per test and thread
count, named ppN / tgN, with mean and sd tokens/s, threads, backend, the measured bandwidth and the
decode share; lists are swept; bad lists are usage errors. --json-schema adds tgN sampled and tgN
schema results; a schema brasa cannot enforce is an error naming the keyword.

Usage: test_bench.py --brasa PATH_TO_brasa --model SMOLLM2_GGUF
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("bench")
expect = CHECKS.expect


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        print(f"skipped: model missing: {a.model}")
        return 77
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "8,16", "-n", "4", "-r", "2", "-t", "1,2", "--json"],
                       capture_output=True, text=True, timeout=600)
    expect("bench exits 0", r.returncode == 0, r.stderr[-300:])
    try:
        doc = json.loads(r.stdout)
    except ValueError as e:
        expect("bench --json parses", False, f"{e}: {r.stdout[:200]!r}")
        doc = None
    if doc:
        results = doc.get("results", [])
        tests = sorted((x["test"], x["threads"]) for x in results)
        expect("one result per test and thread count", tests ==
               sorted([("pp8", 1), ("pp16", 1), ("tg4", 1), ("pp8", 2), ("pp16", 2), ("tg4", 2)]), str(tests))
        for x in results:
            tps = x.get("tokens_per_second", {})
            expect(f"{x.get('test')} fields", isinstance(tps.get("mean"), (int, float)) and tps["mean"] > 0 and
                   isinstance(tps.get("sd"), (int, float)) and tps["sd"] >= 0 and
                   x.get("backend", "").startswith("cpu/") and x.get("n_tokens") > 0, str(x))
            if x.get("test", "").startswith("tg"):
                expect(f"{x['test']} bandwidth share", 0 < x.get("bandwidth_share", 0) < 1.5, str(x))
        bw = doc.get("bandwidth", {})
        expect("bandwidth measured", bw.get("gb_per_second", 0) > 0.1 and bw.get("decode_limit_tokens_per_second", 0) > 0,
               str(bw))
        expect("model facts", doc.get("architecture") == "llama" and doc.get("weight_bytes_per_token", 0) > 50e6 and
               doc.get("peak_memory_bytes", 0) > 0 and doc.get("cpu_features"), str(doc)[:300])
        expect("the KV cache is f16 by default", doc.get("kv_type") == "f16", str(doc.get("kv_type")))
    # sequences generating together: one result per count, all their tokens counted
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "4", "-s", "1,3", "-r", "2", "-t", "1", "--json"],
                       capture_output=True, text=True, timeout=600)
    expect("bench -s exits 0", r.returncode == 0, r.stderr[-300:])
    try:
        res = json.loads(r.stdout).get("results", [])
    except ValueError:
        res = []
    got = sorted((x.get("test"), x.get("sequences"), x.get("n_tokens")) for x in res)
    expect("one tg result per sequence count, counting every sequence's tokens",
           got == [("tg4", 1, 4), ("tg4", 3, 12)], str(got))
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "4", "-r", "1", "-t", "1", "--kv-type", "f32",
                        "--json"], capture_output=True, text=True, timeout=600)
    try:
        kv = json.loads(r.stdout).get("kv_type")
    except ValueError:
        kv = None
    expect("--kv-type f32 is measured as f32", r.returncode == 0 and kv == "f32", r.stderr[-300:])
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "--kv-type", "q4"], capture_output=True, text=True, timeout=60)
    expect("an unknown --kv-type is a usage error", r.returncode == 2 and "--kv-type" in r.stderr, r.stderr)
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "--gpu-layers", "x"], capture_output=True, text=True, timeout=60)
    expect("a bad --gpu-layers is a usage error", r.returncode == 2 and "--gpu-layers" in r.stderr, r.stderr)
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-s", "0"], capture_output=True, text=True, timeout=60)
    expect("-s 0 is a usage error", r.returncode == 2 and "-s" in r.stderr, r.stderr)
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "8,,16"], capture_output=True, text=True, timeout=60)
    expect("bad list is a usage error", r.returncode == 2 and "comma-separated" in r.stderr, r.stderr)
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "0"], capture_output=True, text=True, timeout=60)
    expect("nothing to measure", r.returncode == 2 and "nothing to measure" in r.stderr, r.stderr)

    import tempfile
    with tempfile.TemporaryDirectory(prefix="brasa-bench-") as work:
        good, bad = os.path.join(work, "good.json"), os.path.join(work, "bad.json")
        with open(good, "w") as f:
            json.dump({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, f)
        with open(bad, "w") as f:
            json.dump({"type": "string", "pattern": "^x"}, f)
        r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "8", "-r", "1", "-t", "1", "--json",
                            "--json-schema", good], capture_output=True, text=True, timeout=600)
        try:
            names = [x["test"] for x in json.loads(r.stdout)["results"]]
        except (ValueError, KeyError):
            names = None
        expect("--json-schema: tg8, tg8 sampled and tg8 schema", r.returncode == 0 and
               names == ["tg8", "tg8 sampled", "tg8 schema"], f"{names} {r.stderr[-300:]}")
        r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "8", "-r", "1", "--json-schema", bad],
                           capture_output=True, text=True, timeout=60)
        expect("--json-schema with an unsupported keyword: exit 1 naming it", r.returncode == 1 and
               "pattern" in r.stderr, r.stderr)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
