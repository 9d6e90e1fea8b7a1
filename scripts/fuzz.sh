#!/usr/bin/env bash
# Runs every libFuzzer target of a build for a bounded time, on a copy of the seed corpus and the
# regression inputs (the repository is never written), and fails when any run leaves a crash, leak,
# timeout or out-of-memory artifact, printing where it is and, when small, its base64.
#   scripts/fuzz.sh BUILD_DIR SECONDS
# BUILD_DIR is configured with clang and -DBRASA_FUZZ=ON (see tests/fuzz/CMakeLists.txt). Each
# target gets SECONDS: the tokenizer and chat targets split theirs between runs, one per model
# (SmolLM2: byte-level BPE, Gemma 3: SentencePiece; the tokenizer also all-MiniLM-L6-v2: WordPiece),
# taken from the cache scripts/fetch_models.py fills ($BRASA_MODEL_CACHE, ~/.cache/brasa/models...); a
# missing model is reported and skipped. A found crash is fixed and its input kept in tests/fuzz/regressions/.
set -euo pipefail
build="${1:?usage: fuzz.sh BUILD_DIR SECONDS}"
seconds="${2:?usage: fuzz.sh BUILD_DIR SECONDS}"
case "$seconds" in
  '' | *[!0-9]* | 0) echo "fuzz.sh: SECONDS must be a whole number above 0, not '$seconds'" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
repo="$PWD"
bin="$build/tests/fuzz"
# the model cache, by scripts/fetch_models.py's rule
if [ -n "${BRASA_MODEL_CACHE:-}" ]; then models="$BRASA_MODEL_CACHE"
elif [ -n "${BRASA_CACHE_DIR:-}" ]; then models="$BRASA_CACHE_DIR/models"
else models="${XDG_CACHE_HOME:-$HOME/.cache}/brasa/models"
fi

# symbolized stack traces in the logs (clang's own symbolizer first)
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  for s in llvm-symbolizer-19 llvm-symbolizer; do
    if command -v "$s" >/dev/null; then export ASAN_SYMBOLIZER_PATH="$(command -v "$s")"; break; fi
  done
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/brasa-fuzz.XXXXXX")"
failed=0
ran=0
started=()    # each run's name, in order: their reports are printed in this order at the end
parallel="$(nproc 2>/dev/null || echo 1)"

# fuzz_run NAME TARGET SECONDS [MODEL]: one bounded run, in the background beside others (one per
# core: each libFuzzer process is single-threaded). Its report goes to $work/NAME/report, and a file
# "ran" or "failed" beside it says how it went; the loop at the end reads them in order. Inputs
# stay as long as the seeds need (GGUF files up to 64 KB, text and bodies 4 KB): libFuzzer
# would otherwise grow every input to the longest seed, and speed goes with length.
fuzz_one() {
  local name="$1" target="$2" limit="$3" model="${4:-}"
  local max_len=4096
  [ "$target" = gguf ] && max_len=65536
  local exe="$bin/fuzz_$target" dir="$work/$name"
  if [ -n "$model" ] && [ ! -f "$model" ]; then
    echo "$name: skipped, $model is missing (scripts/fetch_models.py fetches it)"
    return
  fi
  mkdir -p "$dir/corpus" "$dir/artifacts"
  for src in "$repo/tests/fuzz/corpus/$target" "$repo/tests/fuzz/regressions/$target"; do
    if [ -d "$src" ]; then cp -R "$src/." "$dir/corpus/"; fi
  done
  local seeds
  seeds=$(find "$dir/corpus" -type f | wc -l)
  # libFuzzer reports its findings with exit status 77 unless told otherwise, and 77 is what the
  # targets return when their model is missing: findings get their own codes.
  local rc=0
  BRASA_FUZZ_MODEL="$model" "$exe" -max_total_time="$limit" -rss_limit_mb=4096 -timeout=30 -max_len="$max_len" \
    -error_exitcode=99 -timeout_exitcode=98 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "$name: skipped ($(tail -n 1 "$dir/log"))"
    return
  fi
  touch "$dir/ran"
  local runs secs corpus
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$dir/log" | tail -n 1)
  [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$dir/log" | tail -n 1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log" | tail -n 1)
  corpus=$(find "$dir/corpus" -type f | wc -l)
  printf '%-16s %10s executions in %3ss (%s/s), corpus %d -> %d inputs\n' "$name" "${runs:-?}" \
    "${secs:-?}" "$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$dir/log" | tail -n 1)" \
    "$seeds" "$corpus"
  local found=0
  for a in "$dir"/artifacts/crash-* "$dir"/artifacts/leak-* "$dir"/artifacts/timeout-* "$dir"/artifacts/oom-*; do
    [ -e "$a" ] || continue
    found=1
    echo "  ARTIFACT $a ($(wc -c <"$a") bytes)"
    if [ "$(wc -c <"$a")" -le 4096 ]; then
      echo "  base64: $(base64 -w0 "$a")"
    fi
  done
  for a in "$dir"/artifacts/slow-unit-*; do
    [ -e "$a" ] && echo "  (slow input, not a failure: $a)"
  done
  if [ "$found" -eq 1 ] || [ "$rc" -ne 0 ]; then
    touch "$dir/failed"
    echo "  exit status $rc; the end of $dir/log:"
    grep -E 'ERROR: |SUMMARY: |invariant broken|#[0-9]+ 0x' "$dir/log" | head -n 30 | sed 's/^/    /'
  fi
}

fuzz_run() {
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  mkdir -p "$work/$1"
  started+=("$1")
  fuzz_one "$@" >"$work/$1/report" 2>&1 &
}

# The targets are the fuzz_<target>.c sources, so a new one is fuzzed without editing this script.
for src in "$repo"/tests/fuzz/fuzz_*.c; do
  target="$(basename "$src" .c)"
  target="${target#fuzz_}"
  if [ ! -x "$bin/fuzz_$target" ]; then
    echo "fuzz_$target: not built in $build (configure with CC=clang -DBRASA_FUZZ=ON)"
    [ "$target" = json_body ] || failed=1 # json_body needs the server's libraries
    continue
  fi
  case "$target" in
    tokenizer)
      third=$(((seconds + 2) / 3))
      fuzz_run "$target/smollm2" "$target" "$third" "$models/SmolLM2-135M-Instruct.Q4_1.gguf"
      fuzz_run "$target/gemma3" "$target" "$third" "$models/gemma-3-270m-q4_k_m.gguf"
      fuzz_run "$target/minilm" "$target" "$third" "$models/all-MiniLM-L6-v2-f16.gguf"
      ;;
    chat)
      half=$(((seconds + 1) / 2))
      fuzz_run "$target/smollm2" "$target" "$half" "$models/SmolLM2-135M-Instruct.Q4_1.gguf"
      fuzz_run "$target/gemma3" "$target" "$half" "$models/gemma-3-270m-q4_k_m.gguf"
      ;;
    *) fuzz_run "$target" "$target" "$seconds" ;;
  esac
done

wait
for name in "${started[@]}"; do
  cat "$work/$name/report"
  if [ -e "$work/$name/ran" ]; then ran=$((ran + 1)); fi
  if [ -e "$work/$name/failed" ]; then failed=1; fi
done

if [ "$failed" -ne 0 ]; then
  echo "fuzzing FAILED; the runs are kept in $work"
  exit 1
fi
rm -rf "$work"
echo "fuzzing passed: $ran runs (${seconds}s per target), no crash, leak or timeout"
