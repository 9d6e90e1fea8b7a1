#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to an answer: installs the build tools, builds
# brasa, fetches SmolLM2-135M (98 MB, sha256-checked) and asks it a question.
#   bash scripts/quickstart.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
question="${1:-What is the capital of France?}"
# the build tools, and the libraries of `brasa serve` (libmicrohttpd, cJSON) and `brasa pull`
# (libcurl): without them those commands are left out of the build
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v cc >/dev/null || need+=(build-essential)
command -v python3 >/dev/null || need+=(python3 python3-pip)
if command -v dpkg >/dev/null; then
  for pkg in pkg-config libmicrohttpd-dev libcjson-dev libcurl4-openssl-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBRASA_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
if ./build/brasa serve --help 2>&1 | grep -q "this build has no server"; then
  echo "quickstart: brasa serve was left out: install libmicrohttpd and cJSON (see the README), then rerun" >&2
  exit 1
fi
model="$(python3 scripts/fetch_models.py smollm2)"
./build/brasa run -m "$model" --chat -p "$question" -n 128
