#!/usr/bin/env python3
"""brasa fit, doctor and cost, checked against reality and against hand computations:

- memory: `brasa fit --device cpu` predicts the peak resident memory `brasa run` reaches, within
  10%, for the three real models at three context sizes;
- KV cache: an independent formula from the GGUF metadata (read with the gguf package; gemma3's
  sliding-window layers keep window + batch - 1 rows) equals both fit's figure and what contexts
  really allocate;
- known cases: a 7B Q4 model (a Llama-2-7B-shaped header, sparse on disk, and a description) fits
  a 16 GB card at 8k; 120B at 4.25 bits does not fit 16 GB but fits 128 GB unified memory; the
  layer split of a partial fit sums to the model;
- doctor: a truthful report on this machine, valid JSON, and stand-in CUDA and HIP libraries and
  KFD trees for present, absent and broken runtimes;
- cost: the arithmetic against hand-computed cases, zero and absurd inputs;
- bad input of every kind: clear errors and exit codes, under the sanitized build.

Usage: test_fit_doctor_cost.py --brasa BRASA --brasa-checked BRASA_ASAN --kv-alloc KV_ALLOC
       --fake-cuda LIB --fake-hip LIB --model SMOLLM2 --model GEMMA3 --model QWEN2
"""
import argparse
import json
import math
import os
import pty
import subprocess
import sys
import threading
import tempfile

import gguf
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("fit, doctor and cost")
expect = CHECKS.expect
GIB = 1024 ** 3
BATCH = 64  # brasa's default batch, which sizes the sliding-window rings


def run(cmd, env=None, timeout=300):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)


def run_json(name, cmd, env=None):
    r = run(cmd, env)
    if not expect(f"{name} exits 0", r.returncode == 0, f"rc {r.returncode}: {r.stderr[-400:]}"):
        return None
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        expect(f"{name} prints JSON", False, f"{e}: {r.stdout[:300]!r}")
        return None


def peak_rss(cmd):
    """Peak resident bytes of a child process, as the kernel accounts them. Its standard error is a
    terminal, as a person's is: brasa then reads the model in with progress before the first token,
    so every weight is in memory, also the experts of a mixture that no token of the run chose."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    drain = threading.Thread(target=lambda: _drain(master), daemon=True)
    drain.start()
    _, status, usage = os.wait4(p.pid, 0)
    drain.join(timeout=5)
    os.close(master)
    return (usage.ru_maxrss * 1024 if os.WEXITSTATUS(status) == 0 else None)


def _drain(fd):
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass  # the child closed the terminal


# ---- the independent KV formula ----

def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    v = f.parts[f.data[0]]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(v).decode()
    return v.tolist()[0]


SHAPES = {}


def kv_shape(path):
    """(arch, layers, KV heads, head size, window, pattern) from the file's metadata (read once:
    the reader parses the whole vocabulary)."""
    if path not in SHAPES:
        r = gguf.GGUFReader(path)
        arch = field(r, "general.architecture")
        n_head = field(r, f"{arch}.attention.head_count")
        SHAPES[path] = (arch, field(r, f"{arch}.block_count"), field(r, f"{arch}.attention.head_count_kv", n_head),
                        field(r, f"{arch}.attention.key_length", field(r, f"{arch}.embedding_length") // n_head),
                        field(r, f"{arch}.attention.sliding_window", 0) if arch == "gemma3" else 0,
                        field(r, f"{arch}.attention.sliding_window_pattern", 6))
    return SHAPES[path]


def kv_expected(path, n_ctx, value_bytes=2.0, aligned=True):
    """Keys and values of one sequence: per layer 2 tensors of rows x (kv heads x head size),
    rows = n_ctx, or for gemma3's local layers (all but every 6th) window + batch - 1."""
    arch, n_layer, n_kv, head, window, pattern = kv_shape(path)
    total = 0
    for il in range(n_layer):
        local = window > 0 and (il + 1) % pattern != 0
        rows = min(n_ctx, window + BATCH - 1) if local else n_ctx
        raw = rows * n_kv * head * value_bytes
        total += 2 * ((int(raw) + 63) // 64 * 64 if aligned else int(raw))
    return total, arch


# A prompt long enough that a mixture of experts routes its tokens to every expert (8 of 128 per
# token: an expert escapes ~200 tokens with odds (1 - 1/16)^200), so that all its weights are in
# memory, as in a server's steady state; a dense model reads all of them for any prompt ("Hello").
MEMORY_PROMPT = " ".join(f"Item {i}: the {w} of the day." for i, w in
                         enumerate(["weather", "news", "market", "game", "song", "word", "plan", "meal"] * 5))


def check_memory(a, models):
    for path in models:
        name = os.path.basename(path)
        info = run_json(f"info {name}", [a.brasa, "info", path, "--json"])
        prompt = MEMORY_PROMPT if info and info.get("n_expert", 0) > 0 else "Hello"
        for ctx in (512, 4096, 16384):
            peak = peak_rss([a.brasa, "run", "-m", path, "--ctx", str(ctx), "-p", prompt, "-n", "2", "--temp", "0"])
            doc = run_json(f"fit {name} ctx {ctx}", [a.brasa, "fit", path, "--device", "cpu", "--ctx", str(ctx), "--json"])
            if not expect(f"run {name} ctx {ctx}", peak is not None, "brasa run failed") or not doc:
                continue
            pred = doc["memory"]["total_bytes"]
            print(f"{name} ctx {ctx}: predicted {pred / 1e6:.1f} MB, measured peak {peak / 1e6:.1f} MB "
                  f"({pred / peak - 1:+.1%})")
            expect(f"{name} ctx {ctx}: prediction within 10% of the peak", abs(pred / peak - 1) <= 0.10,
                   f"{pred} against {peak}")


def check_kv(a, models):
    for path in models:
        name = os.path.basename(path)
        ctxs = [512, 4096, 16384]
        r = run([a.kv_alloc, path] + [str(c) for c in ctxs])
        expect(f"kv_alloc {name}", r.returncode == 0, r.stderr[-300:])
        allocated = {}
        for line in r.stdout.splitlines():
            d = json.loads(line)
            allocated[d["n_ctx"]] = d["kv_bytes"]
        for ctx in ctxs:
            want, arch = kv_expected(path, ctx)
            doc = run_json(f"fit {name} kv", [a.brasa, "fit", path, "--device", "cpu", "--ctx", str(ctx), "--json"])
            expect(f"{name} ctx {ctx}: allocated KV equals the formula", allocated.get(ctx) == want,
                   f"{allocated.get(ctx)} against {want}")
            expect(f"{name} ctx {ctx}: fit's KV equals the formula", doc and doc["memory"]["kv_cache_bytes"] == want,
                   f"{doc and doc['memory']['kv_cache_bytes']} against {want}")
            want32, _ = kv_expected(path, ctx, 4.0)
            doc32 = run_json(f"fit {name} f32", [a.brasa, "fit", path, "--device", "cpu", "--ctx", str(ctx),
                                                 "--kv-type", "f32", "--json"])
            expect(f"{name} ctx {ctx}: f32 KV is the formula's", doc32 and doc32["memory"]["kv_cache_bytes"] == want32)
            want8, _ = kv_expected(path, ctx, 34.0 / 32.0, aligned=False)
            doc8 = run_json(f"fit {name} q8_0", [a.brasa, "fit", path, "--device", "cpu", "--ctx", str(ctx),
                                                 "--kv-type", "q8_0", "--json"])
            expect(f"{name} ctx {ctx}: q8_0 KV is the formula's", doc8 and doc8["memory"]["kv_cache_bytes"] == want8)
            if arch == "gemma3" and ctx > 1024:
                _, n_layer, n_kv, head, _, _ = kv_shape(path)
                full_rows = 2 * n_layer * ctx * n_kv * head * 2
                expect(f"{name} ctx {ctx}: sliding-window rings save memory", want < full_rows / 2,
                       f"{want} of {full_rows}")


# ---- known cases ----

def write_llama7b_header(path):
    """A GGUF file with Llama-2-7B's shape and Q4_0 tensors, all header: the data is a sparse hole."""
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("llama-2-7b-shaped")
    w.add_block_count(32)
    w.add_embedding_length(4096)
    w.add_feed_forward_length(11008)
    w.add_head_count(32)
    w.add_head_count_kv(32)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_context_length(16384)
    w.add_rope_dimension_count(128)
    q4 = gguf.GGMLQuantizationType.Q4_0
    sizes = []

    def tensor(name, shape, quant=True):
        n = int(np.prod(shape))
        nbytes = n // 32 * 18 if quant else n * 4
        w.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=q4 if quant else gguf.GGMLQuantizationType.F32)
        sizes.append(nbytes)

    tensor("token_embd.weight", (32000, 4096))
    tensor("output_norm.weight", (4096,), quant=False)
    tensor("output.weight", (32000, 4096))
    for i in range(32):
        tensor(f"blk.{i}.attn_norm.weight", (4096,), quant=False)
        tensor(f"blk.{i}.ffn_norm.weight", (4096,), quant=False)
        for t in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensor(f"blk.{i}.{t}.weight", (4096, 4096))
        tensor(f"blk.{i}.ffn_gate.weight", (11008, 4096))
        tensor(f"blk.{i}.ffn_up.weight", (11008, 4096))
        tensor(f"blk.{i}.ffn_down.weight", (4096, 11008))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    data_start = (os.path.getsize(path) + 31) // 32 * 32
    with open(path, "r+b") as f:
        f.truncate(data_start + sum((s + 31) // 32 * 32 for s in sizes))
    return sum(sizes), 32000 * 4096 // 32 * 18


def check_known_cases(a, tmp):
    path = os.path.join(tmp, "llama-7b-shaped.gguf")
    total_bytes, embd_bytes = write_llama7b_header(path)
    doc = run_json("fit 7B header", [a.brasa_checked, "fit", path, "--device", "RX 6800 XT", "--ctx", "8192",
                                     "--kv-type", "f16", "--json"])
    if doc:
        expect("a 7B Q4 model fits a 16 GB card at 8k context", doc["fits"] is True, json.dumps(doc)[:300])
        expect("7B KV at 8k in f16 is 32 layers x 2 x 4096 x 8192 x 2 bytes",
               doc["memory"]["kv_cache_bytes"] == 32 * 2 * 4096 * 8192 * 2, doc["memory"])
        expect("7B weights on the card: every tensor but the input embeddings",
               doc["memory"]["weights_bytes"] == total_bytes - embd_bytes, doc["memory"])
        expect("7B longest context on a 16 GB card is beyond 8k", doc["max_context"] > 8192, doc["max_context"])
    doc = run_json("fit 7B description", [a.brasa_checked, "fit", "--params", "7B", "--bits", "4.5",
                                          "--device", "RX 6800 XT", "--ctx", "8192", "--json"])
    expect("a described 7B Q4 model fits a 16 GB card at 8k", doc and doc["fits"] is True)
    # a partial fit of the file: a 12 GB card at 16k context with f32 keys and values
    doc = run_json("fit 7B split", [a.brasa_checked, "fit", path, "--device", "RTX 5070", "--ctx", "16384",
                                    "--kv-type", "f32", "--json"])
    if doc:
        s = doc["split"]
        expect("7B at 16k does not fit 12 GB whole", doc["fits"] is False)
        expect("its split puts some layers on the card", 0 < doc["gpu_layers"] < 32, doc["gpu_layers"])
        expect("the split's weights sum to the model", s["device_weight_bytes"] + s["host_weight_bytes"] == total_bytes,
               f"{s} against {total_bytes}")
    big = ["--params", "120B", "--bits", "4.25"]
    for device, fits in (("RX 6800 XT", False), ("RTX 5060 Ti 16GB", False), ("Ryzen AI Max+ 395", True),
                         ("DGX Spark", True)):
        doc = run_json(f"fit 120B on {device}", [a.brasa_checked, "fit"] + big + ["--device", device, "--json"])
        expect(f"120B at 4.25 bits {'fits' if fits else 'does not fit'} {device}", doc and doc["fits"] is fits,
               doc and doc["memory"])
        if doc and not fits:
            s = doc["split"]
            expect(f"120B split on {device} sums to the model",
                   s["device_weight_bytes"] + s["host_weight_bytes"] == int(120e9 * 4.25 / 8), s)
            expect(f"120B split on {device} puts layers on the card", 0 < doc["gpu_layers"] < doc["n_layer"])
    doc = run_json("fit --compare", [a.brasa_checked, "fit"] + big + ["--compare", "--json"])
    if doc:
        names = {d["name"] for d in doc["devices"]}
        for want in ("RX 6800 XT", "RX 7900 XTX", "RX 9060 XT 16GB", "RX 9070 XT", "RTX 5060 Ti 16GB", "RTX 5070",
                     "RTX 4090", "RTX 5090", "Ryzen AI Max+ 395", "DGX Spark", "Apple M4 Pro", "H100", "H200", "cpu"):
            expect(f"--compare lists {want}", want in names, sorted(names))
        rx = [d for d in doc["devices"] if d["name"] == "RX 6800 XT"]
        expect("the RX 6800 XT has 16 GB and 512 GB/s",
               rx and rx[0]["memory_bytes"] == 16 * GIB and rx[0]["price"] > 0 and rx[0]["currency"] == "EUR", rx)
        expect("--compare gives memory per price", all(d["gib_per_1000"] > 0 for d in doc["devices"] if d["price"] > 0))
    # devices from a file
    dev = os.path.join(tmp, "devices.ini")
    with open(dev, "w") as f:
        f.write("# my cards\n[My Card 8G]\nkind = gpu\nmemory_gb = 8\nbandwidth_gbs = 288\ntflops = 21\n"
                "price = 279\ncurrency = USD\nprice_date = 2026-11\n")
    doc = run_json("fit on a user device", [a.brasa_checked, "fit", path, "--devices", dev, "--device", "my card 8g",
                                            "--json"])
    expect("a device from a file is used", doc and doc["device"]["name"] == "My Card 8G"
           and doc["device"]["bandwidth_gbs"] == 288)


# ---- doctor ----

def make_kfd(root, target):
    node = os.path.join(root, "sys/class/kfd/kfd/topology/nodes")
    os.makedirs(os.path.join(node, "0"), exist_ok=True)
    with open(os.path.join(node, "0/properties"), "w") as f:
        f.write("cpu_cores_count 8\nsimd_count 0\ngfx_target_version 0\n")
    os.makedirs(os.path.join(node, "1/mem_banks/0"), exist_ok=True)
    with open(os.path.join(node, "1/properties"), "w") as f:
        f.write(f"cpu_cores_count 0\nsimd_count 80\ngfx_target_version {target}\n")
    with open(os.path.join(node, "1/name"), "w") as f:
        f.write("navi22\n")
    with open(os.path.join(node, "1/mem_banks/0/properties"), "w") as f:
        f.write(f"heap_type 1\nsize_in_bytes {12 * GIB}\n")


# The architectures brasa runs (src/models/arch.c's registry); doctor must recommend no other.
RUNNABLE_ARCHS = {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3"}


def check_doctor(a, tmp):
    empty = os.path.join(tmp, "empty-root")
    os.makedirs(empty, exist_ok=True)
    none = {"BRASA_CUDA_LIBRARY": "/nonexistent/libcuda.so.1", "BRASA_HIP_LIBRARY": "/nonexistent/libamdhip64.so",
            "BRASA_SYSFS_ROOT": empty, "BRASA_DEV_ROOT": empty, "HSA_OVERRIDE_GFX_VERSION": ""}
    doc = run_json("doctor without GPUs", [a.brasa_checked, "doctor", "--json"], none)
    if doc:
        expect("doctor: no GPUs", doc["gpus"] == [], doc["gpus"])
        meminfo = open("/proc/meminfo").read().split()
        total = int(meminfo[meminfo.index("MemTotal:") + 1]) * 1024
        expect("doctor: memory is /proc/meminfo's", doc["memory"]["total_bytes"] == total)
        expect("doctor: the CPU's cores", doc["cpu"]["physical_cores"] >= 1 and doc["cpu"]["kernels"] != "")
        expect("doctor: bandwidth measured", doc["memory"]["bandwidth_gbs"] > 0.5)
        rts = {r["name"]: r for r in doc["runtimes"]}
        cuda = rts.get("CUDA driver", {})
        expect("doctor: a missing CUDA library is reported with its path and a fix",
               cuda.get("loaded") is False and "/nonexistent/libcuda.so.1" in cuda.get("problem", "")
               and cuda.get("fix"), cuda)
        expect("doctor: the CPU backend loads", any(b["name"] == "cpu" and b["loads"] for b in doc["backends"]))
        expect("doctor: GPU backends say why they do not load",
               all(b["detail"] for b in doc["backends"] if not b["loads"]))
        cpu_fits = [f for f in doc["fits"] if f["device"] == "cpu"]
        expect("doctor: models that fit this machine", cpu_fits and cpu_fits[0]["models"]
               and all(m["total_bytes"] <= cpu_fits[0]["usable_bytes"] for m in cpu_fits[0]["models"]), cpu_fits)
        # only models brasa runs
        listed = {m.get("architecture") for f in doc["fits"] for m in f["models"]}
        expect("doctor: recommends only architectures brasa runs",
               listed and listed <= RUNNABLE_ARCHS and "gpt-oss" not in listed, listed)
    r = run([a.brasa_checked, "doctor"], none)
    expect("doctor (text) without GPUs", r.returncode == 0 and "none found" in r.stdout and "fix:" in r.stdout,
           r.stdout[-500:] + r.stderr[-300:])

    cuda_env = dict(none, BRASA_CUDA_LIBRARY=a.fake_cuda)
    doc = run_json("doctor with a CUDA GPU", [a.brasa_checked, "doctor", "--json"], cuda_env)
    if doc:
        g = doc["gpus"][0] if doc["gpus"] else {}
        expect("doctor: the CUDA GPU's name, compute capability and memory",
               g.get("name") == "NVIDIA GeForce RTX 4090" and g.get("arch") == "sm_89"
               and g.get("memory_total_bytes") == 24 * GIB and g.get("memory_free_bytes") == 23 * GIB, g)
        expect("doctor: bandwidth from the memory clock and bus", abs(g.get("bandwidth_gbs", 0) - 1008.1) < 0.2, g)
        cuda = [r for r in doc["runtimes"] if r["name"] == "CUDA driver"][0]
        expect("doctor: the CUDA driver's version", cuda["loaded"] and cuda["version"] == "12.4", cuda)
    doc = run_json("fit --device auto with a CUDA GPU",
                   [a.brasa_checked, "fit", "--params", "8B", "--bits", "4.85", "--json"], cuda_env)
    expect("fit auto picks the GPU, with the table's figures for its name",
           doc and doc["device"]["name"] == "NVIDIA GeForce RTX 4090" and doc["device"]["tflops"] > 100
           and doc["fits"] is True, doc and doc["device"])
    doc = run_json("doctor with an old driver", [a.brasa_checked, "doctor", "--json"], dict(cuda_env, FAKE_CUDA_INIT_ERROR="35"))
    if doc:
        cuda = [r for r in doc["runtimes"] if r["name"] == "CUDA driver"][0]
        expect("doctor: a driver older than its library is named, with the fix",
               "older" in cuda["problem"] and "update" in cuda["fix"].lower() and doc["gpus"] == [], cuda)

    kfd = os.path.join(tmp, "kfd-root")
    make_kfd(kfd, 100301)
    hip_env = dict(none, BRASA_HIP_LIBRARY=a.fake_hip, BRASA_SYSFS_ROOT=kfd)
    doc = run_json("doctor with an RDNA2 card", [a.brasa_checked, "doctor", "--json"], hip_env)
    if doc:
        g = doc["gpus"][0] if doc["gpus"] else {}
        expect("doctor: the HIP GPU's name, gfx target and memory",
               g.get("name") == "AMD Radeon RX 6700 XT" and g.get("arch") == "gfx1031"
               and g.get("memory_total_bytes") == 12 * GIB and len(doc["gpus"]) == 1, doc["gpus"])
        hip = [r for r in doc["runtimes"] if r["name"] == "HIP runtime"][0]
        expect("doctor: the HIP runtime's version", hip["loaded"] and hip["version"] == "6.2", hip)
        fixes = " ".join(n["fix"] for n in doc["notes"])
        expect("doctor: gfx1031 needs HSA_OVERRIDE_GFX_VERSION=10.3.0", "HSA_OVERRIDE_GFX_VERSION=10.3.0" in fixes,
               doc["notes"])
        expect("doctor: a missing /dev/kfd is reported", any("/dev/kfd" in n["problem"] for n in doc["notes"]),
               doc["notes"])
    doc = run_json("doctor with the override set", [a.brasa_checked, "doctor", "--json"],
                   dict(hip_env, HSA_OVERRIDE_GFX_VERSION="10.3.0"))
    expect("doctor: no override advice once it is set",
           doc and not any("HSA_OVERRIDE" in n["fix"] for n in doc["notes"]), doc and doc["notes"])
    doc = run_json("doctor from the KFD topology alone", [a.brasa_checked, "doctor", "--json"], dict(none, BRASA_SYSFS_ROOT=kfd))
    if doc:
        g = doc["gpus"][0] if doc["gpus"] else {}
        expect("doctor: a GPU from the KFD topology without ROCm",
               g.get("arch") == "gfx1031" and g.get("memory_total_bytes") == 12 * GIB and g.get("found_by") == "KFD topology", g)
    r = run([a.brasa_checked, "doctor", "--bogus"])
    expect("doctor: an unknown option is a usage error", r.returncode == 2 and "--bogus" in r.stderr)


# ---- cost ----

def hand_cost(price, watts, kwh, tokens, share, years, api_in, api_out, usd, pp, tg):
    sec = (1 - share) / pp + share / tg
    days = years * 365
    e_tok = sec / 3600 * watts / 1000 * kwh
    a_tok = ((1 - share) * api_in + share * api_out) / 1e6 / usd
    local = price + e_tok * tokens * days
    api = a_tok * tokens * days
    return {"hours_per_day": tokens * sec / 3600, "electricity": e_tok * tokens * days, "local_total": local,
            "api_total": api, "ratio": api / local,
            "break_even_tokens_per_day": price / (a_tok - e_tok) / days if a_tok > e_tok else None}


def check_cost(a, tmp):
    bench = os.path.join(tmp, "bench.json")
    with open(bench, "w") as f:
        json.dump({"results": [{"test": "pp128", "tokens_per_second": {"mean": 800.0, "sd": 1}},
                               {"test": "pp512", "tokens_per_second": {"mean": 1000.0, "sd": 1}},
                               {"test": "tg128", "tokens_per_second": {"mean": 100.0, "sd": 1}}]}, f)
    cases = [
        dict(price=1000, watts=200, kwh=0.5, tokens=1e6, share=0.5, years=1, api_in=1, api_out=3, usd=1, device="DGX Spark"),
        dict(price=450, watts=300, kwh=0.3, tokens=5e6, share=0.25, years=3, api_in=0.4, api_out=1.6, usd=1.16,
             device="RX 6800 XT"),
    ]
    for i, c in enumerate(cases):
        doc = run_json(f"cost case {i}", [a.brasa_checked, "cost", "--device", c["device"], "--bench", bench,
                                          "--price", str(c["price"]), "--watts", str(c["watts"]),
                                          "--kwh-price", str(c["kwh"]), "--tokens-per-day", str(int(c["tokens"])),
                                          "--output-share", str(c["share"]), "--years", str(c["years"]),
                                          "--api-price-in", str(c["api_in"]), "--api-price-out", str(c["api_out"]),
                                          "--json"])
        if not doc:
            continue
        want = hand_cost(c["price"], c["watts"], c["kwh"], c["tokens"], c["share"], c["years"], c["api_in"],
                         c["api_out"], c["usd"], 1000.0, 100.0)
        expect(f"cost case {i}: speeds from the bench file (largest pp, tg)",
               doc["assumptions"]["prefill_tokens_per_second"] == 1000 and doc["assumptions"]["decode_tokens_per_second"] == 100)
        expect(f"cost case {i}: exchange rate", abs(doc["assumptions"]["usd_per_unit"] - c["usd"]) < 1e-9)
        for k, v in want.items():
            got = doc[k]
            ok = (v is None and not doc["breaks_even"]) or (v is not None and math.isclose(got, v, rel_tol=1e-4))
            expect(f"cost case {i}: {k}", ok, f"{got} against {v}")
    # electricity dearer than the API: never breaks even
    doc = run_json("cost never", [a.brasa_checked, "cost", "--device", "H200", "--bench", bench, "--kwh-price", "5",
                                  "--api-price-in", "0.001", "--api-price-out", "0.001", "--json"])
    expect("cost: no break-even when electricity alone is dearer", doc and doc["breaks_even"] is False, doc)
    # a workload beyond one machine
    doc = run_json("cost over capacity", [a.brasa_checked, "cost", "--device", "DGX Spark", "--bench", bench,
                                          "--tokens-per-day", "100000000", "--json"])
    expect("cost: more than 24 busy hours a day is flagged", doc and doc["over_capacity"] is True and doc["hours_per_day"] > 24)
    doc = run_json("cost from a model", [a.brasa_checked, "cost", "--device", "RX 6800 XT", "--params", "8B", "--bits",
                                         "4.85", "--json"])
    expect("cost: expected speeds from fit", doc and doc["assumptions"]["decode_tokens_per_second"] > 10
           and "expected" in doc["assumptions"]["speeds_from"])
    bad = [
        (["--tokens-per-day", "0"], 2, "tokens-per-day"), (["--tokens-per-day", "-5"], 2, "tokens-per-day"),
        (["--years", "0"], 2, "years"), (["--years", "1000"], 2, "years"), (["--kwh-price", "-1"], 2, "kwh"),
        (["--watts", "1e9"], 2, "watts"), (["--output-share", "2"], 2, "output-share"),
        (["--api-price-in", "0", "--api-price-out", "0"], 2, "API"), (["--price", "abc"], 2, "--price"),
        (["--years", "nan"], 2, "years"), (["--tokens-per-day", "inf"], 2, "tokens-per-day"),
        (["--usd-per-unit", "0"], 2, "exchange"), (["--device", "nosuch"], 1, "unknown device"),
    ]
    for extra, rc, word in bad:
        r = run([a.brasa_checked, "cost", "--device", "DGX Spark", "--bench", bench] + extra)
        expect(f"cost {' '.join(extra)}: exit {rc} naming {word}", r.returncode == rc and word in r.stderr,
               f"rc {r.returncode}: {r.stderr[-300:]}")
    r = run([a.brasa_checked, "cost", "--device", "DGX Spark"])
    expect("cost without speeds is a usage error", r.returncode == 2 and "--bench" in r.stderr, r.stderr[-200:])
    garbage = os.path.join(tmp, "garbage.json")
    with open(garbage, "w") as f:
        f.write("{\"results\": [{\"test\": \"pp")
    r = run([a.brasa_checked, "cost", "--device", "DGX Spark", "--bench", garbage])
    expect("cost with a broken bench file fails clearly", r.returncode == 1 and "no pp and tg results" in r.stderr,
           r.stderr[-200:])
    r = run([a.brasa_checked, "cost", "--device", "DGX Spark", "--bench", os.path.join(tmp, "missing.json")])
    expect("cost with a missing bench file fails clearly", r.returncode == 1 and "cannot open" in r.stderr)


def check_bad_fit_input(a, tmp, model):
    junk = os.path.join(tmp, "junk.gguf")
    with open(junk, "wb") as f:
        f.write(b"GGUF\x03\x00\x00\x00" + b"\xff" * 40)
    cases = [
        ([os.path.join(tmp, "missing.gguf")], 1, "missing.gguf"), ([junk], 1, "junk.gguf"),
        (["--params", "abc", "--bits", "4"], 2, "--params"), (["--params", "7B", "--bits", "0"], 2, "--bits"),
        (["--params", "7B"], 2, "--bits"), (["--params", "0", "--bits", "4"], 2, "--params"),
        (["--params", "7B", "--bits", "4", "--active", "9B"], 2, "--active"),
        ([model, "--ctx", "0"], 2, "--ctx"), ([model, "--ctx", "99999999999"], 2, "--ctx"),
        ([model, "--kv-type", "q3"], 2, "--kv-type"), ([model, "--device", "nosuch"], 1, "RX 6800 XT"),
        ([model, "--params", "7B", "--bits", "4"], 2, "not both"), ([model, "--parallel", "0"], 2, "--parallel"),
        ([model, "--bogus"], 2, "--bogus"), ([model, "--ctx"], 2, "needs a value"), ([], 2, "required"),
    ]
    for args, rc, word in cases:
        r = run([a.brasa_checked, "fit"] + args)
        expect(f"fit {' '.join(os.path.basename(x) for x in args)}: exit {rc} naming {word}",
               r.returncode == rc and word in r.stderr, f"rc {r.returncode}: {r.stderr[-300:]}")
    bad_files = [
        ("[A]\nkind = gpu\nmemory_gb = lots\n", "3", "not a number"),
        ("[A]\ncolour = red\n", "2", "unknown key"),
        ("memory_gb = 8\n", "1", "before the first"),
        ("[A]\nkind = tpu\n", "2", "kind must be"),
        ("[A\n", "1", "section"),
        ("[A]\nkind = gpu\nmemory_gb = 8\n", None, "bandwidth_gbs"),
        ("# nothing\n", None, "no [Device name]"),
        ("[A]\nmemory_gb = 8\nbandwidth_gbs = 100\nprice = -3\n", None, "price"),
    ]
    for i, (text, line, word) in enumerate(bad_files):
        path = os.path.join(tmp, f"bad{i}.ini")
        with open(path, "w") as f:
            f.write(text)
        r = run([a.brasa_checked, "fit", model, "--devices", path, "--device", "cpu"])
        where = f"bad{i}.ini:{line}:" if line else f"bad{i}.ini"
        expect(f"devices file {i}: exit 1 naming {where} and {word}",
               r.returncode == 1 and where in r.stderr and word in r.stderr, f"rc {r.returncode}: {r.stderr[-300:]}")
    r = run([a.brasa_checked, "fit", model, "--devices", os.path.join(tmp, "nofile.ini")])
    expect("a missing devices file fails clearly", r.returncode == 1 and "cannot open" in r.stderr)


def check_hosts(a, model):
    """fit --hosts: the layers in contiguous ranges over the hosts by their memory, every tensor's
    bytes on exactly one host (the gguf package's sum), a host too small says so; bad lists are
    usage errors."""
    import gguf
    reader = gguf.GGUFReader(model)
    total = sum(int(t.n_bytes) for t in reader.tensors)
    layer = {}
    for t in reader.tensors:
        if t.name.startswith("blk."):
            il = int(t.name.split(".")[1])
            layer[il] = layer.get(il, 0) + int(t.n_bytes)
    n_layer = len(layer)
    base = [a.brasa, "fit", model, "--device", "cpu", "--ctx", "512", "--json"]
    for hosts, shares in (("a:64G,b:64G", (1, 1)), ("a:96G,b:32G", (3, 1)), ("a:40G,b:40G,c:40G", (1, 1, 1))):
        doc = run_json(f"fit --hosts {hosts}", base + ["--hosts", hosts])
        if not doc:
            continue
        hs = doc["hosts"]
        ranges = [(h["first_layer"], h["end_layer"]) for h in hs]
        expect(f"fit --hosts {hosts}: contiguous ranges over all {n_layer} layers", ranges[0][0] == 0 and
               ranges[-1][1] == n_layer and all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1)) and
               all(f < e for f, e in ranges), str(ranges))
        expect(f"fit --hosts {hosts}: every tensor's bytes on one host", sum(h["weights_bytes"] for h in hs) == total,
               f"{sum(h['weights_bytes'] for h in hs)} vs {total}")
        # each host's share of the layers' bytes within a layer of its share of the memory
        layers_total = sum(layer.values())
        biggest = max(layer.values())
        for h, share in zip(hs, shares):
            got = sum(layer[il] for il in range(h["first_layer"], h["end_layer"]))
            want = layers_total * share / sum(shares)
            expect(f"fit --hosts {hosts}: {h['name']} holds its share of the layers", abs(got - want) <= biggest,
                   f"{got} vs {want:.0f} (a layer is {biggest})")
        expect(f"fit --hosts {hosts}: fits", doc["fits"] and all(h["fits"] for h in hs), str(hs))
        expect(f"fit --hosts {hosts}: speeds", doc["speed"]["decode_tokens_per_second"] > 0 and
               doc["speed"]["prefill_tokens_per_second"] > 0, str(doc["speed"]))
    doc = run_json("fit --hosts with a host too small", base + ["--hosts", "a:64G,b:0.01G"])
    if doc:
        expect("fit --hosts with a host too small: does not fit, that host named", not doc["fits"] and
               not doc["hosts"][1]["fits"], str(doc["hosts"]))
    r = run([a.brasa, "fit", model, "--device", "cpu", "--hosts", "a:64G,b:64G"])
    expect("fit --hosts in words: the command to run it", r.returncode == 0 and "mpirun --host a,b -n 2" in r.stdout,
           r.stdout[-400:] + r.stderr[-300:])
    for bad in ("a", "a:", "a:12X", ":5G", "a:0G", "a:5G,,b:5G"):
        r = run([a.brasa_checked, "fit", model, "--hosts", bad])
        expect(f"fit --hosts '{bad}': a usage error naming --hosts", r.returncode == 2 and "--hosts" in r.stderr,
               f"rc {r.returncode}: {r.stderr[-300:]}")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--brasa", "--brasa-checked", "--kv-alloc", "--fake-cuda", "--fake-hip"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--no-peak-memory", action="store_true",
                    help="skip the peak-RSS predictions (a sanitized build's memory is mostly shadow)")
    a = ap.parse_args()
    missing = [m for m in a.model if not os.path.exists(m)]
    if missing:
        print(f"skipped: models missing: {missing} (scripts/fetch_models.py fetches them)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        if a.no_peak_memory:
            print("peak-memory predictions skipped (--no-peak-memory)")
        else:
            check_memory(a, a.model)
        check_kv(a, a.model)
        check_known_cases(a, tmp)
        check_doctor(a, tmp)
        check_cost(a, tmp)
        check_bad_fit_input(a, tmp, a.model[0])
        check_hosts(a, a.model[min(2, len(a.model) - 1)])  # Qwen's 28 layers (the mixture's shape has 2)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
