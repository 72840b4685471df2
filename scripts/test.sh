#!/usr/bin/env bash
# Installs dependencies, builds and runs the test suite.
#
# Usage: scripts/test.sh [--sanitize] [--fuzz SECONDS]
#   (no flag)       release build (build/) and the whole suite: what a change must pass.
#   --sanitize      also the AddressSanitizer + UndefinedBehaviorSanitizer build of the suite
#                   (build-sanitize/, gcc), leaks checked.
#   --fuzz SECONDS  also every fuzz target for SECONDS each (scripts/fuzz.sh: clang, build-fuzz/).
# .ci/run runs `scripts/test.sh --sanitize --fuzz 30`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=0
fuzz_seconds=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --fuzz)
      fuzz_seconds="${2:?--fuzz needs SECONDS}"
      shift
      ;;
    *)
      echo "usage: scripts/test.sh [--sanitize] [--fuzz SECONDS]" >&2
      exit 2
      ;;
  esac
  shift
done
jobs="$(nproc 2>/dev/null || echo 2)"
stage() { echo "== [$(date +%T)] $*"; }

"$root/scripts/install-deps.sh"

stage "build (release) and test"
"$root/scripts/build.sh" "$root/build" -DKESTREL_BUILD_BENCH=ON
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

# The SIMD units this CPU can run (a superset of what the kernels' own checks accept is fine).
host_simd_units() {
  local flags units=avx2
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  has() { for flag in "$@"; do [[ "$flags" == *" $flag "* ]] || return 1; done; }
  has avx_vnni && units+=";avx_vnni"
  if has avx512f avx512bw avx512dq avx512vl avx512_vnni; then
    units+=";avx512"
    has avx512_bf16 && units+=";avx512_bf16"
    has avx512_bf16 amx_tile amx_int8 amx_bf16 && units+=";avx512_amx"
  fi
  echo "$units"
}

if [ "$sanitize" = 1 ]; then
  units="$(host_simd_units)"
  stage "build (ASan + UBSan) and test; SIMD units this CPU runs: $units"
  # -O1 with line tables builds in half the time of -O2 -g; asserts stay on. The release build
  # above compiled every SIMD unit; this one only those the tests can run here.
  cmake -S "$root" -B "$root/build-sanitize" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DKESTREL_SANITIZE=ON -DKESTREL_BUILD_BENCH=OFF -DKESTREL_BUILD_PYTHON=OFF \
    -DKESTREL_SIMD_UNITS="$units" >/dev/null
  cmake --build "$root/build-sanitize" -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build-sanitize" --output-on-failure -j "$jobs"
fi

if [ "$fuzz_seconds" != 0 ]; then
  stage "fuzz every target for ${fuzz_seconds} s"
  "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi
stage "done"
