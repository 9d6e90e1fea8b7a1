#!/usr/bin/env python3
"""The GPU device through the whole engine, with no GPU: brasa loads the tests' backend module
brasa-simt (the real gpu_device.c and kernel source, run by the CPU fiber executor) exactly as it
loads brasa-cuda or brasa-hip, and runs a real model on it.

Checks:
  logits   every prompt position's logits within 1e-4 (f32 cache) or 1e-3 (f16 cache) of the logit
           range of the CPU backend's (float activations, same KV type), with 32-lane warps and
           an f32 cache, and with 64-lane warps and an f16 cache; the greedy continuation equal
  split    partial offload: the last N layers on the device and the rest on the CPU in one pass give
           the full offload's logits (within the same tolerance) and greedy tokens, for N = 10 and
           for "auto" on a device whose memory holds only some layers (it says how many); 0 layers
           is the CPU's result exactly; "auto" with room takes every layer; an integrated GPU
           smaller than the model reads the weights in place and runs it all
  tuning   `brasa tune` measures every product variant on the model's shapes and writes the cache
           file; the next context takes every stored choice (and still gives the CPU's logits and
           tokens), and a second tune finds them in use; a damaged file, a stale one (another brasa
           version) and a foreign one (another device's) are ignored with a warning that says
           so, and the run goes on with the rule. (--quick: a hand-written file instead of a tune.)
  reasons  a backend that cannot be used says why, with exit status 1 and no crash: module not in
           this build, a module file that does not load, no device, device out of memory (with
           the numbers), bad device names
  tools    `brasa doctor --json` reports every GPU backend with a reason; `brasa bench --device`
           runs on the device and names it; `brasa serve --device` answers a completion from the
           device, and a second server of the same device refuses, naming the first's PID
  experts  with --moe-model (a mixture of experts the tests write), the same logits and greedy
           checks on the device (router, top-k, products by expert id and weighted sum all there),
           and with its last layer alone on the device
  real     with --gpu-modules, each real backend module built there (brasa-cuda, brasa-hip) runs
           the same logits, greedy and partial-offload checks on its device 0, or is skipped with
           the reason it gives (no driver, no device); --real-only runs only these

Usage: test_gpu_device.py --logits-dump PATH --brasa PATH --modules DIR --model GGUF [--quick]
       [--gpu-modules DIR] [--moe-model GGUF]
Exit status: 0 all passed, 1 any failure, 77 when the model file is missing.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from serverproc import Server  # noqa: E402

SKIP = 77
# of the logit range; measured on SmolLM2 through brasa-simt: 8e-7 with an f32 cache, 7.8e-5 with
# an f16 one (a 1e-7 difference in a key before rounding flips a half's last bit)
TOLERANCE = {"f32": 1e-4, "f16": 1e-3}
PROMPT = [1, 504, 3458, 282, 4649, 314, 253, 1789]
GREEDY = 4

passed = failed = 0


def report(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)


def run(cmd, env_extra=None, timeout=900):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def dump(args, model, tokens, greedy, extra, env_extra):
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        out = f.name
    try:
        p = run([args.logits_dump, model, "--out", out, "--tokens", " ".join(map(str, tokens)), "--greedy", str(greedy)]
                + extra, env_extra)
        logits = np.fromfile(out, dtype=np.float32) if p.returncode == 0 else None
        return p, logits
    finally:
        os.unlink(out)


def said(p, key):
    """A field of the line logits_dump writes on stderr ("gpu layers: N; tuned choices: N; ...")."""
    for line in p.stderr.splitlines():
        if line.startswith("gpu layers: "):
            for part in line.split("; "):
                if part.startswith(key + ": "):
                    return part[len(key) + 2:]
    return None


def layers_said(p):
    """The layer count logits_dump reports, or -1."""
    n = said(p, "gpu layers")
    return int(n) if n is not None else -1


def check_experts(args, name, device, env, kv, tokens, greedy):
    """The mixture of experts on the device, whole and with only its last layer there, against the CPU."""
    cpu, want = dump(args, args.moe_model, tokens, greedy, ["--kv-type", kv], {"BRASA_CPU_ACTIVATIONS": "f32"})
    for what, layers in (("all layers", "all"), ("the last layer", "1")):
        gpu, got = dump(args, args.moe_model, tokens, greedy, ["--kv-type", kv, "--device", device, "--gpu-layers", layers],
                        dict(env, BRASA_CPU_ACTIVATIONS="f32"))
        if cpu.returncode != 0 or gpu.returncode != 0:
            report(False, f"experts on the device ({name}, {what})", (cpu.stderr + gpu.stderr).strip()[-400:])
            continue
        err = float(np.abs(got - want).max() / (want.max() - want.min()))
        report(err <= TOLERANCE[kv] and got.shape == want.shape, f"experts: logits ({name}, {what})",
               f"max |gpu - cpu| = {err:.2e} of the range (limit {TOLERANCE[kv]:.0e})")
        report(gpu.stdout.split() == cpu.stdout.split(), f"experts: greedy continuation ({name}, {what})",
               f"gpu {gpu.stdout.strip()} / cpu {cpu.stdout.strip()}")


def check_split(args, device, env, tokens, greedy, cpu, want, gpu, got):
    """Partial offload against the CPU (float activations) and the full offload of the same run."""
    f32 = dict(env, BRASA_CPU_ACTIVATIONS="f32")
    span = float(want.max() - want.min())
    n_layer = layers_said(gpu)  # all of them: the full offload's run
    cases = [("the last 10 layers", ["--gpu-layers", "10"], f32, 10)]
    if device == "simt":
        # a device of 100 MiB holds the head and some layers with their f32 caches of 4096 rows,
        # not all 30 (188 MB of cache alone)
        cases.append(("auto on a 100 MiB device", ["--gpu-layers", "auto"], dict(f32, BRASA_SIMT_MEMORY_MB="100"), None))
    for what, extra, e, expect_layers in cases:
        p, part = dump(args, args.model, tokens, greedy, ["--kv-type", "f32", "--device", device] + extra, e)
        if p.returncode != 0:
            report(False, f"split ({device}, {what})", p.stderr.strip()[-400:])
            continue
        layers = layers_said(p)
        ok_layers = layers == expect_layers if expect_layers else 0 < layers < n_layer
        err_cpu = float(np.abs(part - want).max()) / span
        err_full = float(np.abs(part - got).max()) / span
        report(ok_layers and err_cpu <= TOLERANCE["f32"] and err_full <= TOLERANCE["f32"],
               f"split logits ({device}, {what})",
               f"{layers} layers on the device; max difference {err_cpu:.2e} from the CPU, {err_full:.2e} from all on "
               f"the device (limit {TOLERANCE['f32']:.0e})")
        report(p.stdout.split() == gpu.stdout.split(), f"split greedy continuation ({device}, {what})",
               f"split {p.stdout.strip()} / full {gpu.stdout.strip()}")
    if device != "simt":
        return
    p, none = dump(args, args.model, tokens, greedy, ["--kv-type", "f32", "--device", device, "--gpu-layers", "0"], f32)
    report(p.returncode == 0 and layers_said(p) == 0 and none is not None and np.array_equal(none, want),
           "--gpu-layers 0 runs every layer on the CPU (the CPU's logits exactly)", p.stderr.strip().splitlines()[-1])
    p, _ = dump(args, args.model, tokens[:2], 0, ["--kv-type", "f32", "--device", device], env)
    report(p.returncode == 0 and layers_said(p) == n_layer, "auto with room takes every layer",
           p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}")
    # an integrated GPU of 40 MiB reads the 98 MB model where it is mapped: all of it runs there
    # ("auto" counts no weights against its memory), as the CPU would; a discrete one cannot hold it
    # (four positions and one greedy token: every layer's weights are read in place either way)
    small = ["--kv-type", "f32", "--device", device, "--ctx", "64"]
    cpu64, want64 = dump(args, args.model, tokens[:4], 1, ["--kv-type", "f32", "--ctx", "64"], {"BRASA_CPU_ACTIVATIONS": "f32"})
    p, got = dump(args, args.model, tokens[:4], 1, small, dict(f32, BRASA_SIMT_UNIFIED="1", BRASA_SIMT_MEMORY_MB="40"))
    err = float(np.abs(got - want64).max()) / span if got is not None and want64 is not None else 1.0
    report(p.returncode == 0 and layers_said(p) == n_layer and "weights read in place" in p.stderr and err <= TOLERANCE["f32"]
           and p.stdout.split() == cpu64.stdout.split(),
           "an integrated GPU smaller than the model reads the weights in place", f"max difference {err:.2e} of the range; "
           + (p.stderr.strip().splitlines()[-1][-60:] if p.stderr.strip() else ""))
    p, _ = dump(args, args.model, tokens[:2], 0, small + ["--gpu-layers", "all"], dict(env, BRASA_SIMT_MEMORY_MB="40"))
    report(p.returncode == 1 and "out of device memory for a weight" in p.stderr,
           "a discrete GPU of that size cannot hold all the weights", p.stderr.strip().splitlines()[-1][:120])


def tuning_file(cache, name, arch):
    """The path brasa keeps a simt device's tuning in (FNV-1a of the device name, as gpu_tuning.c)."""
    h = 2166136261
    for b in name.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return os.path.join(cache, f"gpu-tuning-simt-{arch}-{h:08x}.txt")


def check_tuning(args, mod, tokens, greedy, quick):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(mod, BRASA_CACHE_DIR=cache, BRASA_CPU_ACTIVATIONS="f32")
        path = tuning_file(cache, "CPU fiber executor (32-lane warps)", "simt32")
        header = ["brasa-gpu-tuning 1", "backend simt", "device CPU fiber executor (32-lane warps)", "arch simt32",
                  "driver 0"]
        if quick:  # written by hand: the format is the contract, and the sanitized build parses it
            version = run([args.brasa, "--version"]).stdout.split()[-1]
            shapes = [("decode", "q4_1", 576, 576, 6), ("decode", "q8_0", 49152, 576, 8), ("prefill", "q4_1", 576, 576, 1)]
            with open(path, "w") as f:
                f.write("\n".join(header + [f"brasa {version}"] + [" ".join(map(str, s)) + " 1.0" for s in shapes]) + "\n")
            stored = len(shapes)
        else:
            p = run([args.brasa, "tune", "-m", args.model, "--device", "simt", "--gpu-layers", "2", "--prefill-tokens", "16",
                     "-r", "1", "--json"], env)
            try:
                first = json.loads(p.stdout)
                stored = len(first["shapes"])
                ok = p.returncode == 0 and first["stored_before"] == 0 and stored >= 8 and first["cache_path"] == path \
                    and os.path.exists(path)
                report(ok, "brasa tune measures the variants of every shape and writes the cache",
                       f"{stored} shapes (decode and prefill) into {os.path.basename(first['cache_path'])}")
            except (ValueError, KeyError) as e:
                report(False, "brasa tune", f"{e}: {p.stdout[:200]} {p.stderr[-300:]}")
                return
        cpu, want = dump(args, args.model, tokens, greedy, ["--kv-type", "f32"], {"BRASA_CPU_ACTIVATIONS": "f32"})
        p, got = dump(args, args.model, tokens, greedy, ["--kv-type", "f32", "--device", "simt", "--gpu-layers", "2"], env)
        ok = p.returncode == 0 and said(p, "tuned choices") == str(stored) and said(p, "tuning note") == "none"
        err = float(np.abs(got - want).max() / (want.max() - want.min())) if ok else 1.0
        report(ok and err <= TOLERANCE["f32"] and p.stdout.split() == cpu.stdout.split(),
               "the next run takes every stored choice, with the CPU's logits and tokens",
               f"tuned choices {said(p, 'tuned choices')}, max difference {err:.2e} of the range")
        if not quick:
            p = run([args.brasa, "tune", "-m", args.model, "--device", "simt", "--gpu-layers", "2", "--prefill-tokens", "16",
                     "-r", "1", "--json"], env)
            try:
                second = json.loads(p.stdout)
                in_use = [s["before"] for s in second["shapes"]] == [s["best"] for s in first["shapes"]]
                report(p.returncode == 0 and second["stored_before"] == stored and in_use,
                       "a second tune finds the stored choices in use", f"{second['stored_before']} stored before it")
            except (ValueError, KeyError) as e:
                report(False, "second brasa tune", f"{e}: {p.stdout[:200]}")
        with open(path) as f:
            good = f.read()
        foreign = tuning_file(cache, "CPU fiber executor (64-lane warps)", "simt64")
        cases = [("a damaged tuning file", path, good + "decode q4_1 576 5x76 6 12.0\n", {}, "damaged at line"),
                 ("a variant the module has not", path, good + "decode q4_1 576 576 99 12.0\n", {}, "damaged at line"),
                 ("a file cut in its header", path, "\n".join(good.splitlines()[:3]) + "\n", {}, "ends inside its header"),
                 ("a stale file (another brasa)", path, good.replace("\nbrasa ", "\nbrasa 0.0.0-old"), {},
                  "stale or for another"),
                 ("a foreign file (another device's)", foreign, good, {"BRASA_SIMT_WARP": "64"}, "stale or for another"),
                 ("another program's file", path, "hello\nworld\n", {}, "not a tuning file"),
                 ("a binary file", path, "\x00\xff garbage\n", {}, "binary data")]
        for what, where, text, extra, needle in cases:
            with open(where, "w", encoding="latin-1") as f:
                f.write(text)
            p, got = dump(args, args.model, tokens[:2], 0, ["--kv-type", "f32", "--device", "simt", "--gpu-layers", "2"],
                          dict(env, **extra))
            note = said(p, "tuning note") or ""
            report(p.returncode == 0 and said(p, "tuned choices") == "0" and needle in note and got is not None,
                   f"{what} is ignored with a note", note[-110:] or p.stderr[-200:])
            if where == foreign:
                os.unlink(foreign)
        with open(path, "w") as f:
            f.write(good + "decode q4_1 576 5x76 6 12.0\n")
        p = run([args.brasa, "run", "-m", args.model, "-p", "Hi", "-n", "1", "--temp", "0", "--device", "simt",
                 "--gpu-layers", "1"], env)
        report(p.returncode == 0 and "warning:" in p.stderr and "damaged" in p.stderr,
               "run warns about a damaged tuning file and answers", p.stderr.strip().splitlines()[0][:150])


def check_serve(args, mod):
    srv = Server(args.brasa, args.model, "--device", "simt", "--parallel", "1", "--ctx", "64", env=mod)
    try:
        if srv.port is None:
            report(False, "serve --device", srv.stderr()[-300:])
            return
        body = json.dumps({"model": "m", "prompt": "The capital of France is", "max_tokens": 2, "temperature": 0}).encode()
        req = urllib.request.Request(srv.base + "/v1/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            reply = json.loads(r.read())
        ok = reply["usage"]["completion_tokens"] == 2 and reply["choices"][0]["text"] != ""
        report(ok, "serve --device answers from the device", repr(reply["choices"][0]["text"]))
        second = Server(args.brasa, args.model, "--device", "simt:0", env=mod, runtime_dir=srv.runtime_dir)
        rc = second.stop()
        said = second.stderr()
        report(rc == 1 and f"PID {srv.proc.pid}" in said and "simt-0 device" in said,
               "a second server of the same device refuses", said.strip().splitlines()[-1] if said.strip() else "")
    except (OSError, ValueError, KeyError) as e:
        report(False, "serve --device", f"{e}: {srv.stderr()[-300:]}")
    finally:
        rc = srv.stop()
        report(rc == 0, "serve --device stops cleanly", f"exit {rc}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logits-dump", required=True)
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--modules", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer tokens (sanitized builds)")
    ap.add_argument("--gpu-modules", help="where brasa-cuda / brasa-hip were built")
    ap.add_argument("--moe-model", help="a mixture-of-experts model to run on the device too")
    ap.add_argument("--real-only", action="store_true",
                    help="only the checks of the real modules (on a GPU machine, whose time is short)")
    args = ap.parse_args()
    if not os.path.exists(args.model):
        print(f"skip: {args.model} is missing")
        return SKIP
    # a cache directory of the test's own: no tuning file of an earlier run is found
    own_cache = tempfile.TemporaryDirectory()
    mod = {"BRASA_MODULE_DIR": args.modules, "BRASA_CACHE_DIR": own_cache.name}
    tokens, greedy = (PROMPT[:4], 1) if args.quick else (PROMPT, GREEDY)
    configs = [] if args.real_only else [("32-lane warps, f32 cache", "32", "f32")]
    if not args.quick and not args.real_only:
        configs.append(("64-lane warps, f16 cache", "64", "f16"))
    runs = [(name, "simt", dict(mod, BRASA_SIMT_WARP=warp), kv) for name, warp, kv in configs]
    for backend in ("cuda", "hip"):
        if not args.gpu_modules:
            break
        if not os.path.exists(os.path.join(args.gpu_modules, f"brasa-{backend}.so")):
            print(f"skip {backend}: not built")
            continue
        env = {"BRASA_MODULE_DIR": args.gpu_modules}
        p, _ = dump(args, args.model, PROMPT[:2], 0, ["--device", backend], env)
        if p.returncode != 0:
            reason = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}"
            known = any(k in reason for k in ("no device", "no NVIDIA driver", "driver too old", "does not load"))
            if known:
                print(f"skip {backend}: {reason}")
            else:
                report(False, f"{backend} device", reason)
            continue
        runs += [(f"{backend}, f32 cache", backend, env, "f32"), (f"{backend}, f16 cache", backend, env, "f16")]
    full = {}
    for name, device, env, kv in runs:
        cpu, want = dump(args, args.model, tokens, greedy, ["--kv-type", kv], {"BRASA_CPU_ACTIVATIONS": "f32"})
        gpu, got = dump(args, args.model, tokens, greedy, ["--kv-type", kv, "--device", device, "--gpu-layers", "all"], env)
        if cpu.returncode != 0 or gpu.returncode != 0:
            report(False, f"logits ({name})", (cpu.stderr + gpu.stderr).strip()[-400:])
            continue
        full.setdefault(device, (cpu, want, gpu, got))
        err = float(np.abs(got - want).max() / (want.max() - want.min()))
        report(err <= TOLERANCE[kv] and got.shape == want.shape, f"logits of {len(tokens)} positions ({name})",
               f"max |gpu - cpu| = {err:.2e} of the range (limit {TOLERANCE[kv]:.0e})")
        report(gpu.stdout.split() == cpu.stdout.split(), f"greedy continuation ({name})",
               f"gpu {gpu.stdout.strip()} / cpu {cpu.stdout.strip()}")
    for device, env in [("simt", mod)] + [(d, {"BRASA_MODULE_DIR": args.gpu_modules}) for d in full if d != "simt"]:
        if device in full:
            check_split(args, device, env, tokens, greedy, *full[device])
    if args.moe_model:  # on the fiber executor once (it is slow), on each real device in full
        for i, (name, device, env, kv) in enumerate(runs):
            if device != "simt" or i == 0:
                check_experts(args, name, device, env, kv, tokens, greedy)
    if args.real_only:
        print(f"gpu device: {passed} passed, {failed} failed")
        return 1 if failed or not full else 0
    check_tuning(args, mod, tokens, greedy, args.quick)

    # Reasons, each a clean failure of the context, never a crash.
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as bad:
        with open(os.path.join(bad, "brasa-simt.so"), "w") as f:
            f.write("not a shared object\n")
        cases = [
            ("a backend not in this build", ["--device", "cuda"], {"BRASA_MODULE_DIR": empty}, "not in this build"),
            ("a module file that does not load", ["--device", "simt"], {"BRASA_MODULE_DIR": bad}, "does not load"),
            ("no device", ["--device", "simt"], dict(mod, BRASA_SIMT_DEVICES="0"), "no device"),
            ("a device index past the last", ["--device", "simt:3"], mod, "no device 3"),
            ("a bad device index", ["--device", "simt:x"], mod, "must be a number"),
            ("a bad backend name", ["--device", "Bad/Name"], mod, "not a backend name"),
            ("device out of memory", ["--device", "simt", "--gpu-layers", "all"], dict(mod, BRASA_SIMT_MEMORY_MB="40"),
             "MiB free of"),
        ]
        for what, extra, env, needle in cases:
            p, _ = dump(args, args.model, PROMPT[:2], 0, extra, env)
            ok = p.returncode == 1 and needle in p.stderr and "Segmentation" not in p.stderr
            report(ok, f"refuses {what}", p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}")

    p = run([args.brasa, "doctor", "--json"], {"BRASA_MODULE_DIR": args.modules})
    try:
        backends = {b["name"]: b for b in json.loads(p.stdout)["backends"]}
        ok = all(n in backends and (backends[n]["loads"] or backends[n]["detail"]) for n in ("cpu", "cuda", "hip"))
        report(ok, "doctor reports each GPU backend, or why it does not load",
               "; ".join(f"{n}: {backends[n]['detail'][:60]}" for n in ("cuda", "hip") if n in backends))
    except (ValueError, KeyError) as e:
        report(False, "doctor --json", f"{e}: {p.stdout[:200]} {p.stderr[:200]}")

    if not args.quick:  # (a sanitized build runs the fiber executor too slowly for a benchmark)
        p = run([args.brasa, "bench", "-m", args.model, "-p", "2", "-n", "1", "-r", "1", "--device", "simt", "--json"], mod)
        try:
            b = json.loads(p.stdout)
            ok = p.returncode == 0 and b["backend"].startswith("simt:0/") and len(b["results"]) == 2 and \
                all(r["tokens_per_second"]["mean"] > 0 for r in b["results"])
            report(ok, "bench --device runs on the device", f"backend {b['backend']}, bandwidth {b['bandwidth']['source']}")
        except (ValueError, KeyError) as e:
            report(False, "bench --device", f"{e}: {p.stdout[:200]} {p.stderr[-300:]}")
    if not args.quick:
        check_serve(args, mod)
    p = run([args.brasa, "run", "-m", args.model, "-p", "Hi", "-n", "2", "--device", "nosuch"], {"BRASA_MODULE_DIR": args.modules})
    report(p.returncode == 1 and "not in this build" in p.stderr, "run --device names a missing backend",
           p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}")

    print(f"gpu device: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
