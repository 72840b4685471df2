#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan, in build-fuzz) and runs each one for
# SECONDS (default 60) on its generated seed corpus, its committed regression inputs and the
# corpus earlier runs grew (build-fuzz/fuzz/corpus/<target>).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 fuzz_tokenizer_json
# KESTREL_FUZZ_FLAGS adds libFuzzer flags (e.g. "-fork=1 -ignore_crashes=1" to keep going past a
# known crash and collect every distinct one).
#
# A crash, leak, undefined behaviour, timeout (10 s per input) or out-of-memory (2 GiB) ends that
# target; the input is saved as build-fuzz/fuzz/crashes/<target>/<kind>-<hash>, the other targets
# still run, and the script exits 1. To keep a crash as a regression test, fix it and copy the
# input into fuzz/regressions/<target>/ (ctest replays that folder in every build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
shift || true
build="${KESTREL_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="$(nproc 2>/dev/null || echo 2)"

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ is missing (scripts/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
  exit 2
fi

echo "== build the fuzz targets (clang, ASan + UBSan + libFuzzer) in $build"
# -O1 with line tables: quick to build, fast enough to fuzz, readable stack traces; asserts on.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKESTREL_FUZZ=ON -DKESTREL_BUILD_TESTS=OFF \
  -DKESTREL_BUILD_BENCH=OFF -DKESTREL_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target kestrel_fuzzers

seeds="$build/fuzz/seeds"
rm -rf "$seeds"
"$build/fuzz/fuzz_make_seeds" "$seeds" "$root"

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  for binary in "$build"/fuzz/fuzz_*; do
    name="$(basename "$binary")"
    [ "$name" = fuzz_make_seeds ] || targets+=("$name")
  done
fi

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
failed=()
printf '%-26s %8s %12s %10s %8s  %s\n' target seconds executions exec/s cov result
for target in "${targets[@]}"; do
  corpus="$build/fuzz/corpus/$target"
  crashes="$build/fuzz/crashes/$target"
  log="$build/fuzz/logs/$target.log"
  mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
  inputs=("$corpus" "$seeds/$target")
  [ -d "$root/fuzz/regressions/$target" ] && inputs+=("$root/fuzz/regressions/$target")
  dict=()
  [ -f "$root/fuzz/dicts/$target.dict" ] && dict=("-dict=$root/fuzz/dicts/$target.dict")
  result=ok
  "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" ${KESTREL_FUZZ_FLAGS:-} "${dict[@]}" "${inputs[@]}" >"$log" 2>&1 || result=FAILED
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
  printf '%-26s %8s %12s %10s %8s  %s\n' "$target" "$seconds" "${runs:-?}" "${rate:-?}" "${cov:-?}" "$result"
  if [ "$result" != ok ]; then
    failed+=("$target")
    grep -m1 -E 'ERROR: |runtime error|SUMMARY' "$log" >&2 || true
    echo "  log: $log; input: $(ls -t "$crashes" | head -1)" >&2
  fi
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
