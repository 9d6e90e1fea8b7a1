#!/usr/bin/env python3
"""brasa's qwen3, qwen3moe, gpt-oss and rope scaling (linear, Llama 3 rope_freqs, YaRN) against the
NumPy reference (ref_forward.py), on small random-weight models that make_arch_models.py writes.

First the reference's own checks (its new paths reduce to known ones: make_arch_models
reference_self_checks). Then, for each model, a fixed prompt of PROMPT_LEN random token ids goes
through brasa's logits_dump, which writes the float32 logits of every prompt position and greedily
continues. Checks per model:
  logits  for each kernel path (BRASA_CPU_KERNELS=scalar, then the default fast path), float
          activations and an f32 KV cache: at EVERY prompt position max|brasa - ref| / (max ref
          logit - min ref logit) <= TOLERANCE;
  greedy  on each of those paths, the GREEDY_N ids equal the reference's; on a divergence the step
          and the reference's top-2 margin there are reported;
  q8      the defaults (8-bit activations, f16 cache, fast path): mean KL from the reference
          <= Q8_KL and top-1 agreement >= Q8_TOP1.
Without --quick, each model's distinctive feature must also matter: the reference with it switched
off (FEATURE_OFF) must move the logits by more than FEATURE_MIN times the tolerance, so that a
brasa ignoring it would fail. For MoE models the reference prints the smallest router gap it met
(last chosen vs first unchosen expert, in router logits; a near tie would make the routing, and so
the logits, fragile) and how often the two tied exactly (qwen3moe-8x2-ties: the lower index wins);
for gpt-oss how many expert gate and up values its SwiGLU clamp changed.
--quick skips the reference self-checks, the scalar path and FEATURE_OFF.

Usage: test_arch_reference.py --logits-dump PATH --models-dir DIR [--tokenizer-model SMOLLM2.gguf]
       [--quick] [--only NAME] [--tolerance T] [--greedy N] [--threads T] [--verbose]
--models-dir is where the models are written (and reused while make_arch_models.py is unchanged).
Exit status: 0 all passed, 1 any failure, 2 bad arguments, 77 when the SmolLM2 file (whose tokenizer
the models copy) is missing.
Prints `arch: N passed, M failed` last.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_arch_models  # noqa: E402
import ref_forward  # noqa: E402
import test_forward_reference as tfr  # noqa: E402  (report(), parse_ids(), the KL helpers)

SKIP = 77
TOLERANCE = 1e-4  # as test_forward_reference: float32 noise is a few 1e-6 of the logit range
GREEDY_N = 32
PROMPT_LEN = 40
PROMPT_SEED = 2026
CTX = 128  # prompt + greedy tokens fit; below some files' original YaRN context on purpose
Q8_KL = 0.02
Q8_TOP1 = 0.9


def _unscaled(m):
    m.layer_rope = [(ref_forward.rope_base_frequencies(b, m.rope_dim), 1.0) for b in m.layer_rope_base]


def _yarn_with(**change):
    def mutate(m):
        hp = m.hp
        args = dict(factor=float(hp("rope.scaling.factor")),
                    original_ctx=float(hp("rope.scaling.original_context_length")),
                    beta_fast=float(hp("rope.scaling.yarn_beta_fast", ref_forward.YARN_BETA_FAST)),
                    beta_slow=float(hp("rope.scaling.yarn_beta_slow", ref_forward.YARN_BETA_SLOW)),
                    attn_factor=hp("rope.scaling.attn_factor", None))
        args.update(change)
        inv = ref_forward.rope_base_frequencies(m.rope_base, m.rope_dim)
        m.layer_rope = [ref_forward.yarn_frequencies(inv, m.rope_base, m.rope_dim, **args)] * m.n_layer
    return mutate


def _scale_local_layers_too(m):
    m.layer_rope = [(ref_forward.rope_base_frequencies(b, m.rope_dim) / float(m.hp("rope.scaling.factor")), 1.0)
                    for b in m.layer_rope_base]


def _no_renormalization(m):
    m.expert_weights_norm = False


def _ties_to_higher(m):
    m.expert_tie_break = "higher"


def _no_sinks(m):
    m.attn_sinks = False


def _no_clamp(m):
    m.glu_limit = None


def _plain_swiglu(m):
    m.glu_oai = False


def _all_full(m):
    m.layer_local = [False] * m.n_layer


def _odd_layers_sliding(m):
    m.layer_local = [il % 2 == 1 for il in range(m.n_layer)]


def _local_layers_unscaled(m):
    m.layer_rope = [(ref_forward.rope_base_frequencies(m.rope_base, m.rope_dim), 1.0) if loc else r
                    for loc, r in zip(m.layer_local, m.layer_rope)]


def _softmax_over_all_experts(m):
    m.expert_gating, m.expert_weights_norm = "softmax", False


def _no_biases(m):
    for name in m.f.tensors:
        if name.endswith(".bias"):
            m._w[name] = np.zeros(m.f.shape(name), np.float32)


GPT_OSS_FEATURES = [("without attention sinks", _no_sinks), ("without the SwiGLU clamp", _no_clamp),
                    ("with a plain SwiGLU in the experts", _plain_swiglu),
                    ("with full attention on every layer", _all_full),
                    ("with the odd layers sliding instead", _odd_layers_sliding),
                    ("unscaled", _unscaled), ("with the sliding layers unscaled", _local_layers_unscaled),
                    ("with a softmax over all experts, not renormalized", _softmax_over_all_experts),
                    ("without any bias", _no_biases)]


# model -> what a brasa that got one thing wrong would compute (the reference, mutated)
FEATURE_OFF = {
    "llama3-rope-freqs": [("without rope_freqs", _unscaled)],
    "llama3-rope-freqs-short": [("without rope_freqs", _unscaled)],
    "llama-linear4": [("unscaled", _unscaled)],
    "qwen3-linear4": [("unscaled", _unscaled)],
    "qwen3-yarn4": [("unscaled", _unscaled), ("YaRN without the attention factor", _yarn_with(attn_factor=1.0))],
    "qwen3-yarn4-attn": [("YaRN ignoring attn_factor", _yarn_with(attn_factor=None)),
                         ("YaRN ignoring the betas", _yarn_with(beta_fast=32.0, beta_slow=1.0))],
    "qwen3moe-8x2": [("without renormalized expert weights", _no_renormalization)],
    "qwen3moe-8x2-ties": [("giving router ties to the higher index", _ties_to_higher)],
    "qwen3moe-16x4-q4_0": [("without renormalized expert weights", _no_renormalization)],
    "qwen3moe-8x2-yarn": [("unscaled", _unscaled)],
    "gemma3-linear8": [("unscaled", _unscaled), ("local layers scaled too", _scale_local_layers_too)],
    "gpt-oss-8x2": GPT_OSS_FEATURES,
    "gpt-oss-16x4-f16": GPT_OSS_FEATURES,
}
FEATURE_MIN = 10


def prompt_ids():
    return [int(i) for i in np.random.default_rng(PROMPT_SEED).integers(0, make_arch_models.N_VOCAB, PROMPT_LEN)]


def run_brasa(args, model, ids, out, kernels=None, float_acts=True):
    """logits_dump on model: kernels forces BRASA_CPU_KERNELS (None: the default path);
    float_acts sets float activations and an f32 KV cache, else brasa's defaults.
    Returns (logits (n, V) or None, greedy ids, backend text, error or None)."""
    cmd = [args.logits_dump, str(model), "--out", out, "--tokens", " ".join(map(str, ids)),
           "--greedy", str(args.greedy), "--ctx", str(CTX)]
    env = {k: v for k, v in os.environ.items() if k not in ("BRASA_CPU_KERNELS", "BRASA_CPU_ACTIVATIONS")}
    if float_acts:
        cmd += ["--kv-type", "f32"]
        env["BRASA_CPU_ACTIVATIONS"] = "f32"
    if kernels:
        env["BRASA_CPU_KERNELS"] = kernels
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        return None, [], "", "timed out after 600 s"
    backend = next((ln.split("backend:")[-1].strip() for ln in r.stderr.splitlines() if "backend:" in ln), "?")
    if r.returncode != 0:
        return None, [], backend, f"exited {r.returncode}: {r.stderr.strip()[-1500:]}"
    if not os.path.exists(out):
        return None, [], backend, f"wrote no logits file {out}"
    return np.fromfile(out, dtype=np.float32), tfr.parse_ids(r.stdout), backend, None


def check_logits(what, got, ref, tol, verbose):
    if got.size != ref.size:
        tfr.report(False, what, f"logits file holds {got.size} floats, expected {ref.shape[0]} x {ref.shape[1]}")
        return
    got = got.reshape(ref.shape).astype(np.float64)
    if not np.all(np.isfinite(got)):
        bad = np.argwhere(~np.isfinite(got))[0]
        tfr.report(False, what, f"non-finite logit at position {bad[0]}, token {bad[1]}")
        return
    rng = ref.max(axis=1) - ref.min(axis=1)
    rel = np.abs(got - ref).max(axis=1) / rng
    worst = int(np.argmax(rel))
    top_same = int(np.sum(np.argmax(got, axis=1) == np.argmax(ref, axis=1)))
    if verbose or rel.max() > tol:
        print(f"   max|diff|/range per position (logit range {rng.min():.1f}..{rng.max():.1f}):")
        print(tfr.fmt_row(rel))
    tfr.report(bool(rel.max() <= tol), what, f"max {rel.max():.2e} at position {worst} (median "
               f"{np.median(rel):.2e}); top-1 agrees at {top_same}/{len(rel)} positions")


def check_greedy(what, brasa_ids, gen, tol, stdout_hint=""):
    if brasa_ids == gen.ids:
        tfr.report(True, what, "identical")
        return
    n_same = next((i for i, (a, b) in enumerate(zip(brasa_ids, gen.ids)) if a != b),
                  min(len(brasa_ids), len(gen.ids)))
    if n_same >= len(brasa_ids):
        tfr.report(False, what, f"brasa printed {len(brasa_ids)} ids, expected {len(gen.ids)}{stdout_hint}")
        return
    b, r = brasa_ids[n_same], gen.ids[n_same]
    row = gen.step_logits[n_same]
    gap = float(row[r]) - float(row[b]) if 0 <= b < row.size else float("nan")
    rng = float(row.max() - row.min())
    margin = gen.margins[n_same]
    tie = " (a NEAR TIE)" if margin <= 2 * tol * rng else ""
    tfr.report(False, what, f"diverges at step {n_same}: brasa {b} vs reference {r}; reference top-2 margin "
               f"there {margin:.4f}{tie}, brasa's token is {gap:.4f} below the best in the reference "
               f"(logit range {rng:.1f})\n      brasa:     {' '.join(map(str, brasa_ids))}\n"
               f"      reference: {' '.join(map(str, gen.ids))}")


def check_model(args, path, ids):
    name = path.stem
    t0 = time.perf_counter()
    model = ref_forward.RefModel(path)
    with tempfile.TemporaryDirectory(prefix="brasa_arch_") as tmp:
        out = os.path.join(tmp, "logits.f32")
        runs = []
        for kernels in ([] if args.quick else ["scalar"]) + [None]:
            runs.append((kernels or "default",) + run_brasa(args, path, ids, out, kernels))
        q8 = run_brasa(args, path, ids, out, None, float_acts=False)
    t_brasa = time.perf_counter() - t0

    t1 = time.perf_counter()
    gen = model.generate(ids, args.greedy, prompt_logits=True, step_logits=True)
    ref = gen.prompt_logits.astype(np.float64)
    scaling = model.hp("rope.scaling.type", "none")
    extra = f"; rope_freqs {'yes' if model.f.has('rope_freqs.weight') else 'no'}, scaling {scaling}"
    if model.moe:
        extra += (f"; {model.n_expert} experts, top-{model.n_expert_used}, smallest router gap "
                  f"{model.router_min_gap:.2e}, exact ties at the cut {model.router_exact_ties}")
    if model.moe and model.glu_oai:
        extra += (f"; the SwiGLU clamp changed {model.glu_clamped_gate} gate and {model.glu_clamped_up} up "
                  f"values of {model.glu_values} each")
    if any(model.layer_local):
        sliding = [il for il, local in enumerate(model.layer_local) if local]
        extra += f"; sliding window {model.sliding_window} on layers {sliding}"
    print(f"== {name} (arch {model.arch}, {model.n_layer} layers, embd {model.n_embd}, heads "
          f"{model.n_head}/{model.n_head_kv}, head_dim {model.head_dim_k}{extra})")
    print(f"   brasa {t_brasa:.1f} s, reference {time.perf_counter() - t1:.1f} s; reference's smallest "
          f"top-2 margin over its {args.greedy} greedy steps {min(gen.margins):.3f} "
          f"(step {int(np.argmin(gen.margins))})")

    for path_name, got, brasa_ids, backend, err in runs:
        label = f"{name} [{path_name}: {backend}, f32 activations]"
        what = f"{label} logits at all {len(ids)} positions (max|diff|/range <= {args.tolerance:g})"
        if err:
            tfr.report(False, what, f"logits_dump {err}")
            tfr.report(False, f"{label} greedy {args.greedy} ids", "no run")
            continue
        check_logits(what, got, ref, args.tolerance, args.verbose)
        check_greedy(f"{label} greedy {args.greedy} ids", brasa_ids, gen, args.tolerance)

    for label, mutate in ([] if args.quick else FEATURE_OFF.get(name, [])):
        wrong = ref_forward.RefModel(path)
        mutate(wrong)
        lg = wrong.logits(ids).astype(np.float64)
        d = float((np.abs(lg - ref).max(axis=1) / (ref.max(axis=1) - ref.min(axis=1))).max())
        tfr.report(d > FEATURE_MIN * args.tolerance, f"{name}: the reference {label} differs by > "
                   f"{FEATURE_MIN}x the tolerance", f"max|diff|/range {d:.2e}")

    got, _, backend, err = q8
    what = f"{name} [default: {backend}, 8-bit activations, f16 cache] mean KL <= {Q8_KL:g}, top-1 >= {Q8_TOP1:.0%}"
    if err or got.size != ref.size:
        tfr.report(False, what, f"logits_dump {err or f'wrote {got.size} floats'}")
    else:
        q = got.reshape(ref.shape).astype(np.float64)
        kl = float(np.mean(np.sum(tfr.softmax(ref) * (tfr.log_softmax(ref) - tfr.log_softmax(q)), axis=1)))
        top1 = float(np.mean(np.argmax(q, axis=1) == np.argmax(ref, axis=1)))
        tfr.report(bool(kl <= Q8_KL and top1 >= Q8_TOP1), what, f"KL {kl:.5f}, top-1 {top1:.0%}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logits-dump", required=True, help="path to brasa's logits_dump tool")
    ap.add_argument("--models-dir", required=True, help="where to write (and reuse) the test models")
    ap.add_argument("--tokenizer-model", default=str(ref_forward.resolve_model("smollm2")),
                    help="the SmolLM2 GGUF whose tokenizer the models copy")
    ap.add_argument("--quick", action="store_true", help="skip the reference self-checks and the scalar path")
    ap.add_argument("--only", action="append", choices=list(make_arch_models.SPEC_BY_NAME),
                    help="run only this model (repeatable)")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE)
    ap.add_argument("--greedy", type=int, default=GREEDY_N)
    ap.add_argument("--threads", type=int, default=0, help="passed to logits_dump if set")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    if not os.path.exists(args.tokenizer_model):
        print(f"skipped: {args.tokenizer_model} missing (run scripts/fetch_models.py)")
        return SKIP
    if not os.access(args.logits_dump, os.X_OK):
        print(f"FAIL: {args.logits_dump} is not an executable")
        print("arch: 0 passed, 1 failed")
        return 1
    t0 = time.perf_counter()
    if not args.quick:
        with tempfile.TemporaryDirectory(prefix="brasa_refchk_") as tmp:
            try:
                make_arch_models.reference_self_checks(args.tokenizer_model, tmp,
                                                       lambda what, ok, detail="": tfr.report(ok, what, detail))
            except Exception as e:  # a broken reference is a failure, not a crash
                tfr.report(False, "reference self-checks", f"{type(e).__name__}: {e}")
    paths = make_arch_models.ensure_models(args.models_dir, args.tokenizer_model, args.only)
    ids = prompt_ids()
    print(f"prompt: {len(ids)} fixed random ids (seed {PROMPT_SEED}); tolerance max|brasa - reference| / "
          f"(max - min reference logit) <= {args.tolerance:g} at every position; greedy {args.greedy} ids identical")
    for path in paths:
        try:
            check_model(args, path, ids)
        except Exception as e:
            tfr.report(False, path.stem, f"{type(e).__name__}: {e}")
    print(f"total {time.perf_counter() - t0:.1f} s")
    print(f"arch: {tfr.passed} passed, {tfr.failed} failed")
    return 1 if tfr.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
