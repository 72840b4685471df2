#!/usr/bin/env bash
# Builds Kestrel with the QNN SDK adapter (src/backends/qnn/sdk) against a QNN SDK:
#   scripts/check-qnn-sdk.sh QNN_SDK_ROOT [BUILD_DIR]
# QNN_SDK_ROOT must hold include/QNN (QnnInterface.h, QnnGraph.h, HTP/QnnHtpGraph.h, ...).
# BUILD_DIR defaults to a folder under ${TMPDIR:-/tmp}, outside the repository. The headers
# are only read from QNN_SDK_ROOT; nothing of the SDK is copied into the tree.
#
# When the SDK ships the x86_64 saver backend (lib/x86_64-linux-clang/libQnnSaver.so), the
# script also exports the embedded default model with --backend qnn and loads it through the
# adapter on that library: every graph is created, finalized and executed through the real QNN
# API (the saver records the calls; it computes nothing, so the text is not checked).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 QNN_SDK_ROOT [BUILD_DIR]" >&2
  exit 2
fi
sdk="$(cd "$1" && pwd)"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${2:-${TMPDIR:-/tmp}/kestrel-qnn-sdk-check}"
if [[ ! -f "$sdk/include/QNN/QnnInterface.h" ]]; then
  echo "$sdk has no include/QNN/QnnInterface.h" >&2
  exit 1
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_BENCH=OFF \
  -DKESTREL_BUILD_TESTS=OFF -DQNN_SDK_ROOT="$sdk" >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target kestrel_backend_qnn kestrel_cli
echo "built the QNN SDK adapter against $sdk (QNN API $(grep -m1 -o 'QNN_API_VERSION_MAJOR *[0-9]*' "$sdk/include/QNN/QnnCommon.h" | grep -o '[0-9]*$').$(grep -m1 -o 'QNN_API_VERSION_MINOR *[0-9]*' "$sdk/include/QNN/QnnCommon.h" | grep -o '[0-9]*$'))"

saver="$sdk/lib/x86_64-linux-clang/libQnnSaver.so"
if [[ -f "$saver" && "$(uname -m)" == "x86_64" ]]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  "$build/kestrel" create-model "$work/model" >/dev/null
  "$build/kestrel" export "$work/model" -o "$work/model.kst" --prefill-step 8 --max-context 64 --backend qnn -q
  (cd "$work" && LD_LIBRARY_PATH="$sdk/lib/x86_64-linux-clang${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$build/kestrel" run model.kst -p "The little bird" -n 4 --temperature 0 \
    --backend-option "qnn.library=$saver" >/dev/null)
  echo "ran the exported model's graphs through the adapter on $saver"
fi
