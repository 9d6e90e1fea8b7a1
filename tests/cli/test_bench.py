#!/usr/bin/env python3
"""`brasa bench --json` reports what it promises (fields, not speed): one result per test and thread
count, named ppN / tgN, with mean and sd tokens/s, threads, backend, the measured bandwidth and the
decode share, the kernels' int8 peak (path, figure) and each prompt's share of the prefill limit;
the two machine figures are measured by a first run in an empty cache directory, read back by the
next and measured again with --remeasure; lists are swept; bad lists are usage errors.
--json-schema adds tgN sampled and tgN schema results; a schema brasa cannot enforce is an error
naming the keyword.

Usage: test_bench.py --brasa PATH_TO_brasa --model SMOLLM2_GGUF
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

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
    with tempfile.TemporaryDirectory(prefix="brasa-bench-cache-") as cache:
        # the machine figures go to a cache of the test's own, never the user's
        return run(a, dict(os.environ, BRASA_CACHE_DIR=cache))


def bench_json(a, env, *args):
    """bench --json with args: (exit code, document or None, stderr)."""
    r = subprocess.run([a.brasa, "bench", "-m", a.model, *args, "--json"], capture_output=True, text=True, env=env,
                       timeout=600)
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, None, r.stderr


def machine_figures(doc):
    """(bandwidth source, GB/s, peak source, MACs/s) of a bench document."""
    bw, peak = doc.get("bandwidth", {}), doc.get("int8_peak", {})
    return bw.get("source"), bw.get("gb_per_second"), peak.get("source"), peak.get("macs_per_second")


def run(a, env):
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "8,16", "-n", "4", "-r", "2", "-t", "1,2", "--json"],
                       capture_output=True, text=True, timeout=600, env=env)
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
        # prefill against the int8 peak: the layers' products per token, from the shape `info`
        # reports (q and output n_embd x n_head*head_dim, k and v n_embd x n_head_kv*head_dim, gate,
        # up and down n_embd x n_ff; SmolLM2: 106.2 M), the embedding rows and the head left out
        peak = doc.get("int8_peak", {})
        kernels = doc.get("backend", "/").split("/", 1)[1].split("+")[0]
        macs = doc.get("macs_per_token", 0)
        r = subprocess.run([a.brasa, "info", "--json", a.model], capture_output=True, text=True, timeout=120)
        hp = json.loads(r.stdout) if r.returncode == 0 else {}
        want = hp and hp["n_layer"] * hp["n_embd"] * (2 * hp["n_head"] * hp["head_dim"] +
                                                      2 * hp["n_head_kv"] * hp["head_dim"] + 3 * hp["n_ff"])
        expect("macs_per_token counts the layers' matrices, not the embedding or the head", macs == want,
               f"{macs} against {want}")
        expect("the int8 peak is plausible and names the kernel path", isinstance(peak.get("macs_per_second"), int)
               and 1e8 < peak["macs_per_second"] < 1e15 and peak.get("path") == kernels, str(peak))
        expect("a first run in an empty cache measures both figures",
               machine_figures(doc)[0] == "measured" and machine_figures(doc)[2] == "measured", str(machine_figures(doc)))
        limit = peak.get("prefill_limit_tokens_per_second") or 0
        expect("the prefill limit is the peak over the multiply-adds per token",
               macs > 0 and abs(limit - (peak.get("macs_per_second") or 0) / macs) < 1e-3 * max(limit, 1), str(peak))
        for x in results:
            if not x.get("test", "").startswith("pp") or not peak.get("macs_per_second"):
                continue
            want = x["tokens_per_second"]["mean"] * macs / peak["macs_per_second"]
            got = x.get("compute_share")
            expect(f"{x['test']} x{x['threads']} compute share = tokens/s x multiply-adds per token / peak",
                   isinstance(got, (int, float)) and 0 < got < 1.5 and abs(got - want) <= 1e-4 + 1e-6 * want,
                   f"{got} against {want}")
            expect(f"{x['test']} has no bandwidth share", "bandwidth_share" not in x, str(x))
        for x in results:
            if x.get("test", "").startswith("tg"):
                expect(f"{x['test']} has no compute share", "compute_share" not in x, str(x))
        # the figures are kept: read back by the next run, measured again on request
        rc, again, err = bench_json(a, env, "-p", "8", "-n", "0", "-r", "1", "-t", "1")
        first = machine_figures(doc)
        expect("a second run reads both figures from the cache", rc == 0 and again and machine_figures(again) ==
               ("cached", first[1], "cached", first[3]), f"{again and machine_figures(again)} {first} {err[-300:]}")
        rc, fresh, err = bench_json(a, env, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "--remeasure")
        expect("--remeasure measures both again", rc == 0 and fresh and machine_figures(fresh)[0] == "measured" and
               machine_figures(fresh)[2] == "measured", f"{fresh and machine_figures(fresh)} {err[-300:]}")
        # one file for both: a file without the peak (an older brasa's, or doctor's alone) has only
        # the peak measured, and an absurd peak is measured over, the bandwidth kept either way
        path = os.path.join(env["BRASA_CACHE_DIR"], "machine.txt")
        kept = open(path, encoding="utf-8").read()
        for name, text in (("no peak", "".join(line for line in kept.splitlines(True) if not line.startswith("int8_"))),
                           ("an absurd peak", "".join("int8_peak_macs_per_second=9e99\n" if
                                                      line.startswith("int8_peak_macs") else line
                                                      for line in kept.splitlines(True)))):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            rc, got, err = bench_json(a, env, "-p", "8", "-n", "0", "-r", "1", "-t", "1")
            figures = got and machine_figures(got)
            expect(f"a cache file with {name}: the peak measured, the bandwidth read back", rc == 0 and figures and
                   figures[:3] == ("cached", fresh and machine_figures(fresh)[1], "measured") and 1e8 < figures[3] < 1e15,
                   f"{figures} {err[-300:]}")
            after = open(path, encoding="utf-8").read()
            expect(f"... and both kept in the file again ({name})", "bandwidth_gbs=" in after and
                   f"int8_peak_macs_per_second={figures and figures[3]}" in after, after)
    # sequences generating together: one result per count, all their tokens counted
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "4", "-s", "1,3", "-r", "2", "-t", "1", "--json"],
                       capture_output=True, text=True, timeout=600, env=env)
    expect("bench -s exits 0", r.returncode == 0, r.stderr[-300:])
    try:
        res = json.loads(r.stdout).get("results", [])
    except ValueError:
        res = []
    got = sorted((x.get("test"), x.get("sequences"), x.get("n_tokens")) for x in res)
    expect("one tg result per sequence count, counting every sequence's tokens",
           got == [("tg4", 1, 4), ("tg4", 3, 12)], str(got))
    r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "4", "-r", "1", "-t", "1", "--kv-type", "f32",
                        "--json"], capture_output=True, text=True, timeout=600, env=env)
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

    with tempfile.TemporaryDirectory(prefix="brasa-bench-") as work:
        good, bad = os.path.join(work, "good.json"), os.path.join(work, "bad.json")
        with open(good, "w") as f:
            json.dump({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, f)
        with open(bad, "w") as f:
            json.dump({"type": "string", "pattern": "^x"}, f)
        r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "8", "-r", "1", "-t", "1", "--json",
                            "--json-schema", good], capture_output=True, text=True, timeout=600, env=env)
        try:
            names = [x["test"] for x in json.loads(r.stdout)["results"]]
        except (ValueError, KeyError):
            names = None
        expect("--json-schema: tg8, tg8 sampled and tg8 schema", r.returncode == 0 and
               names == ["tg8", "tg8 sampled", "tg8 schema"], f"{names} {r.stderr[-300:]}")
        r = subprocess.run([a.brasa, "bench", "-m", a.model, "-p", "0", "-n", "8", "-r", "1", "--json-schema", bad],
                           capture_output=True, text=True, timeout=60, env=env)
        expect("--json-schema with an unsupported keyword: exit 1 naming it", r.returncode == 1 and
               "pattern" in r.stderr, r.stderr)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
