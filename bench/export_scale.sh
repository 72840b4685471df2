#!/usr/bin/env bash
# Export at real sizes: peak RSS and wall time of `kestrel export` on a random-weight checkpoint
# with Llama-3.2-1B's shape (bf16 safetensors, 2.5 GB), for each program dtype.
#
# usage: bench/export_scale.sh [BUILD_DIR] [SCRATCH_DIR]
#   BUILD_DIR    holds kestrel and bench/make_hf_bench_model (default: build)
#   SCRATCH_DIR  checkpoint and outputs (default: /tmp/kestrel-export-scale); the checkpoint is
#                made once and reused, each output is deleted after it is measured.
# Environment:
#   KESTREL      the kestrel binary to measure (default: BUILD_DIR/kestrel), e.g. an older build
#   DTYPES       program dtypes to export (default: "bf16 q8 f16 f32")
#   LAYERS       decoder layers of the generated checkpoint (default: 16, the real model's)
#
# Needs /usr/bin/time (Debian package `time`, installed by scripts/install-deps.sh) and about
# 2.5 GB for the checkpoint plus the largest output (5 GB for f32) in SCRATCH_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
scratch="${2:-/tmp/kestrel-export-scale}"
kestrel="${KESTREL:-$build/kestrel}"
dtypes="${DTYPES:-bf16 q8 f16 f32}"
layers="${LAYERS:-16}"
checkpoint="$scratch/llama-3.2-1b-shape-L$layers"

for tool in "$kestrel" "$build/bench/make_hf_bench_model" /usr/bin/time; do
  [ -x "$tool" ] || { echo "export_scale: $tool is missing (build with -DKESTREL_BUILD_BENCH=ON; apt-get install time)" >&2; exit 1; }
done
mkdir -p "$scratch"
if [ ! -f "$checkpoint/model.safetensors" ]; then
  echo "export_scale: writing the checkpoint to $checkpoint" >&2
  "$build/bench/make_hf_bench_model" "$checkpoint" --layers "$layers" >&2
fi
checkpoint_bytes=$(stat -c %s "$checkpoint/model.safetensors")

mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }

echo "checkpoint: $checkpoint ($(mib "$checkpoint_bytes") MiB of bf16 safetensors)"
echo "kestrel: $kestrel"
echo
echo "| --dtype | program MiB | peak RSS MiB | peak RSS / checkpoint | wall s | user s | sys s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for dtype in $dtypes; do
  out="$scratch/out-$dtype.kst"
  report="$scratch/time-$dtype.txt"
  rm -f "$out"
  if ! /usr/bin/time -v -o "$report" "$kestrel" export "$checkpoint" -o "$out" --dtype "$dtype" -q; then
    echo "| $dtype | export failed (see $report) | | | | | |"
    continue
  fi
  rss_kib=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$report")
  wall=$(awk -F': ' '/Elapsed \(wall clock\) time/ { print $2 }' "$report" |
         awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.1f", s }')
  user=$(awk -F': ' '/User time \(seconds\)/ { print $2 }' "$report")
  sys=$(awk -F': ' '/System time \(seconds\)/ { print $2 }' "$report")
  program_bytes=$(stat -c %s "$out")
  ratio=$(awk -v r="$rss_kib" -v c="$checkpoint_bytes" 'BEGIN { printf "%.2f", r * 1024 / c }')
  echo "| $dtype | $(mib "$program_bytes") | $(mib $((rss_kib * 1024))) | $ratio | $wall | $user | $sys |"
  rm -f "$out"
done
