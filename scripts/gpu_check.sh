#!/usr/bin/env bash
# gpu_check.sh: the GPU checks and figures in one run, for a machine that has a GPU. Builds brasa
# with the module of the GPU it finds (NVIDIA: nvidia-smi and nvcc; AMD: rocminfo and hipcc) for
# that GPU's architecture only, runs the kernel test and the model tests on the device, then for
# each model given: brasa bench (pp512, tg128) with every layer on the GPU, brasa tune, and the
# bench again with the tuned choices. Everything it prints is also kept in $OUT (or build-gpu/out).
#
# A lent GPU machine has no network and takes a working tree of 64 MiB, so a real model file does
# not go there: give its recipe instead (`gguf_synth cut MODEL RECIPE` here, a few MB, in a folder
# .git/info/exclude ignores and `carry` names), and the model is made there with its real shape,
# tokenizer and random weights (the same reads, meaningless text; on a CPU it measured 8-15% below
# the real file, so its figures are named "random weights"). A mixture of experts no reachable
# file has goes the same way from its published shape: `scripts/shape_model.py qwen3-30b-a3b
# --tokenizer-from QWEN2.5.gguf --out moe.gguf` writes the header with a hole for the data (no disk
# used), and `gguf_synth cut moe.gguf moe.recipe` its recipe.
#
# Usage: scripts/gpu_check.sh [MODEL.gguf | MODEL.recipe ...]   (about 3 minutes of build on 16 cores)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-build-gpu/out}"
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1

if command -v nvidia-smi >/dev/null && command -v nvcc >/dev/null; then
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')"
  backend=cuda flags=(-DBRASA_CUDA=ON -DBRASA_GPU_TARGETS="sm_$cap")
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
elif command -v rocminfo >/dev/null && command -v hipcc >/dev/null; then
  arch="$(rocminfo | grep -o -m 1 'gfx[0-9a-f]*')"
  backend=hip flags=(-DBRASA_HIP=ON -DBRASA_GPU_TARGETS="$arch")
  rocminfo | grep -m 1 -A 2 "Marketing Name"
else
  echo "no GPU toolchain (nvidia-smi + nvcc, or rocminfo + hipcc) found"
  exit 1
fi

echo "== build ($backend: ${flags[*]})"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DBRASA_SANITIZE_TESTS=OFF "${flags[@]}" >"$out/cmake.log" || exit 1
cmake --build build-gpu -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log"; exit 1; }

echo "== kernels on the device"
build-gpu/tests/test_gpu_kernels_"$backend" | tee "$out/kernels.txt" | grep -v '^ok' || true

models=()
for model in "$@"; do
  if [ "${model%.recipe}" != "$model" ]; then
    name="$(basename "$model" .recipe)-random-weights"
    mkdir -p build-gpu/synth
    build-gpu/tests/gguf_synth fill "$model" "build-gpu/synth/$name.gguf" || continue
    model="build-gpu/synth/$name.gguf"
  fi
  models+=("$model")
done

# the engine on the device against the CPU on the first model (logits, greedy tokens, partial
# offload): a random-weight model serves as well as the real one, both sides run the same weights
if [ ${#models[@]} -gt 0 ]; then
  echo "== the engine on the device: ${models[0]}"
  python3 tests/backend/test_gpu_device.py --logits-dump build-gpu/tests/logits_dump --brasa build-gpu/brasa \
    --modules build-gpu/tests/modules --gpu-modules build-gpu --model "${models[0]}" --real-only | tee "$out/engine.txt"
fi

for model in "${models[@]}"; do
  name="$(basename "$model" .gguf)"
  echo "== $name"
  build-gpu/brasa bench -m "$model" --device "$backend" --gpu-layers all -p 512 -n 128 -r 3 | tee "$out/bench-$name.txt"
  build-gpu/brasa tune -m "$model" --device "$backend" --gpu-layers all | tee "$out/tune-$name.txt"
  build-gpu/brasa bench -m "$model" --device "$backend" --gpu-layers all -p 512 -n 128 -r 3 | tee "$out/bench-$name-tuned.txt"
done
