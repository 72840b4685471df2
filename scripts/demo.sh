#!/usr/bin/env bash
# The main job: install dependencies, build, create the embedded default model, export it to
# a program, and generate text from it. Usage: scripts/demo.sh ["prompt"]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prompt="${1:-The little bird sang}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build"
kestrel="$root/build/kestrel"
out="$root/build/demo"
mkdir -p "$out"

echo "== create the default model"
"$kestrel" create-model "$out/default-model"
echo "== export it to a program"
"$kestrel" export "$out/default-model" -o "$out/default.kst" --prefill-step 32
echo "== inspect the program"
"$kestrel" inspect "$out/default.kst" | head -n 40
echo "== generate"
"$kestrel" run "$out/default.kst" --prompt "$prompt" -n 48 --temperature 0 --repeat-penalty 1.5 --stats
