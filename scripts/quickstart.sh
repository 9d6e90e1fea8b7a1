#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to an answer: installs the build tools, builds
# brasa, fetches SmolLM2-135M (98 MB, sha256-checked) and asks it a question.
#   bash scripts/quickstart.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
question="${1:-What is the capital of France?}"
if ! command -v cmake >/dev/null || ! command -v cc >/dev/null || ! command -v python3 >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends build-essential cmake python3 python3-pip
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBRASA_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
model="$(python3 scripts/fetch_models.py smollm2)"
./build/brasa run -m "$model" --chat -p "$question" -n 128
