#!/usr/bin/env bash
# Installs dependencies, builds and runs the whole test suite.
# Usage: scripts/test.sh [--sanitize]   --sanitize: also build and run it under
#                                       AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sanitize=0
[ "${1:-}" = "--sanitize" ] && sanitize=1
jobs="$(nproc 2>/dev/null || echo 2)"

"$root/scripts/install-deps.sh"

echo "== build (release) and test"
"$root/scripts/build.sh" "$root/build" -DKESTREL_BUILD_BENCH=ON
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

if [ "$sanitize" = 1 ]; then
  echo "== build (ASan + UBSan) and test"
  cmake -S "$root" -B "$root/build-sanitize" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKESTREL_SANITIZE=ON -DKESTREL_BUILD_BENCH=OFF >/dev/null
  cmake --build "$root/build-sanitize" -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build-sanitize" --output-on-failure -j "$jobs"
fi
