#!/usr/bin/env bash
# Static checks on brasa's own C code: cppcheck, and a chosen set of clang-tidy checks run from the
# build's compile_commands.json. Any finding fails (exit 1).
#   scripts/static_checks.sh BUILD_DIR   (configured with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
#
# Left out on purpose, with the reason:
#  cppcheck invalidPointerCast: byte offsets into tensor rows are taken on char pointers and cast to the
#    element type, the usual C idiom (the rows are aligned for their type);
#  clang-tidy bugprone-macro-parentheses: kernel macros take type names, which cannot be parenthesized;
#  bugprone-suspicious-include: kernels_avx512.c and kernels_neon_dotprod.c include the AVX2 and NEON
#    sources to compile them again for another instruction set, by design;
#  bugprone-branch-clone: some if/else chains map distinct conditions to the same action on purpose;
#  bugprone-easily-swappable-parameters, -narrowing-conversions, -implicit-widening-...: style checks
#    that flag most numeric code; the compilers' -Wall -Wextra -Werror cover the real cases.
set -euo pipefail
build="${1:?usage: static_checks.sh BUILD_DIR}"
cd "$(dirname "$0")/.."
status=0

echo "-- cppcheck $(cppcheck --version | cut -d' ' -f2)"
if ! cppcheck --enable=warning,portability,performance --inline-suppr --error-exitcode=1 -q --std=c11 \
    -I include -I src --suppress=missingIncludeSystem --suppress=invalidPointerCast \
    --suppress=unknownMacro:src/server/api*.c src cli; then
  echo "cppcheck: findings above"
  status=1
else
  echo "cppcheck: clean ($(find src cli -name '*.c' | wc -l) files)"
fi

checks='-*,bugprone-*,-bugprone-easily-swappable-parameters,-bugprone-narrowing-conversions'
checks+=',-bugprone-implicit-widening-of-multiplication-result,-bugprone-reserved-identifier'
checks+=',-bugprone-assignment-in-if-condition,-bugprone-macro-parentheses,-bugprone-suspicious-include'
checks+=',-bugprone-branch-clone,clang-analyzer-core.*,clang-analyzer-unix.*,clang-analyzer-deadcode.*'
checks+=',clang-analyzer-security.insecureAPI.UncheckedReturn,misc-redundant-expression'
# the files this build compiles (win32.c is checked by the mingw-w64 build's -Werror instead)
files=$(python3 -c 'import json,sys,os
seen=sorted({os.path.relpath(e["file"]) for e in json.load(open(sys.argv[1]))})
print("\n".join(f for f in seen if f.startswith(("src/","cli/"))))' "$build/compile_commands.json")
echo "-- clang-tidy $(clang-tidy --version | grep -o 'version [0-9.]*'), $(echo "$files" | wc -l) files"
out=$(echo "$files" | xargs -P"$(nproc)" -n4 clang-tidy -p "$build" --quiet --checks="$checks" 2>/dev/null || true)
findings=$(echo "$out" | grep -E '(warning|error):' | sort -u || true)
if [ -n "$findings" ]; then
  echo "$out"
  echo "clang-tidy: $(echo "$findings" | wc -l) findings"
  status=1
else
  echo "clang-tidy: clean"
fi
exit $status
