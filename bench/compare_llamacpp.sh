#!/usr/bin/env bash
# Side-by-side decode speed of kestrel and llama.cpp on the same model and machine.
#
#   bench/compare_llamacpp.sh LLAMA_CPP_BUILD_DIR        (or set LLAMA_CPP_BUILD)
#
# The llama.cpp build directory must already hold bin/llama-bench, bin/llama-quantize and
# bin/llama-convert-llama2c-to-ggml (a CPU build; this script never fetches or builds
# llama.cpp). Steps, all in WORK_DIR:
#   1. make_bench_model writes a deterministic llama2.c checkpoint (model.bin, shared
#      classifier) and a tokenizer.bin;
#   2. kestrel exports it with f32 and q8 weights;
#   3. llama.cpp's own convert-llama2c-to-ggml converts the same checkpoint to an f32 GGUF, and
#      llama-quantize makes the Q8_0 GGUF (q8 and Q8_0 are the same format: blocks of 32 int8
#      with one f16 scale);
#   4. read_bandwidth measures the memory read bandwidth (the decode bound): once over a large
#      buffer (DRAM), and with every run over a buffer the size of the weights;
#   5. for each weight type and thread count, REPS interleaved runs of
#        kestrel run --json (stats.decode_tokens_per_s over N_TOKENS generated tokens) and
#        llama-bench -p 0 -n N_TOKENS -t THREADS -r 1 (avg_ts);
#      then a table of medians (and bests), the ratio, and the bandwidth bounds.
#
# Environment (defaults in brackets):
#   LLAMA_CPP_BUILD   llama.cpp build dir, when not given as the argument
#   KESTREL_BUILD     kestrel build dir with kestrel and bench/ tools [<repo>/build-cpu]
#   WORK_DIR          scratch dir for models [a new mktemp dir]
#   DIM HIDDEN LAYERS HEADS VOCAB SEQ   model shape [768 2048 12 12 32000 1024]
#   THREADS_LIST      thread counts to compare ["1 <nproc>"]
#   DTYPES            weight types ["q8 f32"]
#   N_TOKENS          generated tokens per run [128]
#   REPS              interleaved repetitions per cell [5]
#   PORTABLE          1: also time kestrel's portable (scalar reference) kernels once [1]
#   BW_MIB            read_bandwidth buffer for the DRAM figure, MiB [1024]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
llama_build="${1:-${LLAMA_CPP_BUILD:-}}"
if [[ -z "${llama_build}" ]]; then
  echo "usage: $0 LLAMA_CPP_BUILD_DIR   (or set LLAMA_CPP_BUILD)" >&2
  exit 2
fi
kestrel_build="${KESTREL_BUILD:-${repo}/build-cpu}"
kestrel="${kestrel_build}/kestrel"
make_model="${kestrel_build}/bench/make_bench_model"
read_bw="${kestrel_build}/bench/read_bandwidth"
llama_bin="${llama_build}/bin"
for tool in "${kestrel}" "${make_model}" "${read_bw}" "${llama_bin}/llama-bench" "${llama_bin}/llama-quantize" \
            "${llama_bin}/llama-convert-llama2c-to-ggml"; do
  if [[ ! -x "${tool}" ]]; then
    echo "missing ${tool}" >&2
    echo "(build kestrel: ninja -C ${kestrel_build} kestrel_cli make_bench_model read_bandwidth;" >&2
    echo " llama.cpp must already be built in ${llama_build})" >&2
    exit 2
  fi
done
command -v python3 > /dev/null || { echo "python3 is needed to read the JSON results" >&2; exit 2; }

work="${WORK_DIR:-$(mktemp -d -t kestrel-vs-llamacpp.XXXXXX)}"
mkdir -p "${work}"
nproc_all="$(nproc)"
threads_list="${THREADS_LIST:-1 ${nproc_all}}"
dtypes="${DTYPES:-q8 f32}"
n_tokens="${N_TOKENS:-128}"
reps="${REPS:-5}"
portable="${PORTABLE:-1}"
bw_mib="${BW_MIB:-1024}"

log() { echo "[compare] $*" >&2; }

log "machine: $(lscpu | sed -n 's/^Model name: *//p') | ${nproc_all} CPUs | $(free -g | awk '/Mem:/ {print $2}') GiB"
log "work dir: ${work}"

# 1. The model.
model_json="$("${make_model}" "${work}" --dim "${DIM:-768}" --hidden "${HIDDEN:-2048}" --layers "${LAYERS:-12}" \
  --heads "${HEADS:-12}" --kv-heads "${HEADS:-12}" --vocab "${VOCAB:-32000}" --seq "${SEQ:-1024}")"
log "model: ${model_json}"
decode_values="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["decode_weight_values"])' "${model_json}")"

# 2. kestrel programs.
"${kestrel}" export "${work}/model.bin" --tokenizer "${work}/tokenizer.bin" -o "${work}/f32.kst" --dtype f32 -q
"${kestrel}" export "${work}/model.bin" --tokenizer "${work}/tokenizer.bin" -o "${work}/q8.kst" --dtype q8 -q

# 3. llama.cpp models from the same checkpoint, with llama.cpp's own tools.
"${llama_bin}/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "${work}/tokenizer.bin" \
  --llama2c-model "${work}/model.bin" --llama2c-output-model "${work}/f32.gguf" > "${work}/convert.log" 2>&1
"${llama_bin}/llama-quantize" "${work}/f32.gguf" "${work}/q8_0.gguf" Q8_0 > "${work}/quantize.log" 2>&1

# 4. Memory read bandwidth with every thread count that is compared, over BW_MIB (no reuse:
#    DRAM). The bandwidth over a buffer of each weight type's size (read again and again like
#    the weights are every token, so whatever stays in a large L3 counts too) is measured in
#    step 5, interleaved with the runs, since a shared machine's bandwidth varies over time.
declare -A bandwidth
for t in ${threads_list}; do
  bw_json="$("${read_bw}" "${bw_mib}" "${t}" 5)"
  bandwidth[$t]="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["read_gb_per_s"])' "${bw_json}")"
  log "read bandwidth, ${t} threads, ${bw_mib} MiB: ${bw_json}"
done

# 5. Interleaved runs.
kestrel_tps() {  # program threads kernels
  "${kestrel}" run "$1" -p "Once upon a time" -n "${n_tokens}" --temperature 0 --ignore-eos --threads "$2" \
    --kernels "$3" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["decode_tokens_per_s"])'
}
llama_tps() {  # gguf threads
  "${llama_bin}/llama-bench" -m "$1" -p 0 -n "${n_tokens}" -t "$2" -r 1 -o json 2> /dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["avg_ts"])'
}
stats() {  # values... -> "median best"
  python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.1f} {max(v):.1f}")' "$@"
}

results=()
for dtype in ${dtypes}; do
  program="${work}/${dtype}.kst"
  gguf="${work}/$([[ "${dtype}" == q8 ]] && echo q8_0 || echo f32).gguf"
  bytes_per_value="$([[ "${dtype}" == q8 ]] && echo 1.0625 || echo 4)"
  ws1=""
  ws_mib="$(python3 -c 'import sys; print(max(1, round(int(sys.argv[1]) * float(sys.argv[2]) / 2**20)))' \
    "${decode_values}" "${bytes_per_value}")"
  for t in ${threads_list}; do
    k=() l=() b=()
    for ((r = 0; r < reps; ++r)); do
      k+=("$(kestrel_tps "${program}" "${t}" optimized)")
      l+=("$(llama_tps "${gguf}" "${t}")")
      b+=("$("${read_bw}" "${ws_mib}" "${t}" 3 | python3 -c 'import json,sys; print(json.load(sys.stdin)["read_gb_per_s"])')")
      log "${dtype} t=${t} rep ${r}: kestrel ${k[-1]} llama.cpp ${l[-1]} read ${b[-1]} GB/s over ${ws_mib} MiB"
    done
    read -r k_med k_best <<< "$(stats "${k[@]}")"
    read -r l_med l_best <<< "$(stats "${l[@]}")"
    read -r b_med b_best <<< "$(stats "${b[@]}")"
    results+=("${dtype} ${t} ${k_med} ${k_best} ${l_med} ${l_best} ${bytes_per_value} ${bandwidth[$t]} ${b_med}")
    [[ "${t}" == 1 ]] && ws1="${b_med}"
  done
  if [[ "${portable}" == 1 ]]; then
    p="$(kestrel_tps "${program}" 1 portable)"
    first="${threads_list%% *}"
    results+=("${dtype} portable ${p} ${p} - - ${bytes_per_value} ${bandwidth[1]:-${bandwidth[$first]}} ${ws1:-${b_med}}")
  fi
done

# 6. The table. Bound: read bandwidth / weight bytes per token (the KV cache reads, a few MB
#    per token at this context, are left out), over DRAM and over a buffer of the weights' size.
python3 - "${decode_values}" "${n_tokens}" "${reps}" "${results[@]}" <<'EOF'
import sys
decode_values = int(sys.argv[1]); n_tokens = sys.argv[2]; reps = sys.argv[3]
print(f"\ndecode tokens/s, {n_tokens} generated tokens, median (best) of {reps} interleaved runs\n")
print("| weights | threads | kestrel | llama.cpp | kestrel / llama.cpp | weights MB/token | read GB/s (DRAM / weights-sized) | bound tok/s (DRAM / weights-sized) |")
print("|---|---|---|---|---|---|---|---|")
for row in sys.argv[4:]:
    dtype, threads, k_med, k_best, l_med, l_best, bpv, bw, bw_ws = row.split()
    mb = decode_values * float(bpv) / 1e6
    bound, bound_ws = float(bw) * 1e3 / mb, float(bw_ws) * 1e3 / mb
    bounds = f"{float(bw):.1f} / {float(bw_ws):.1f} | {bound:.0f} / {bound_ws:.0f}"
    if threads == "portable":
        print(f"| {dtype} | 1, portable kernels | {float(k_med):.1f} | | | {mb:.1f} | {bounds} |")
        continue
    ratio = float(k_med) / float(l_med)
    print(f"| {dtype} | {threads} | {k_med} ({k_best}) | {l_med} ({l_best}) | {ratio:.2f} | {mb:.1f} | {bounds} |")
EOF
