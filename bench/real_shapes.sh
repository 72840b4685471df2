#!/usr/bin/env bash
# kestrel's decode and prefill speed, peak RSS and distance to the bandwidth bound on
# random-weight checkpoints with the matrix shapes of real models (bench/make_bench_model --hf:
# Qwen3-0.6B written as a Llama architecture, Llama-3.2-1B), for q8 and f16 weights.
#
#   bench/real_shapes.sh
#
# Models and programs are written into WORK_DIR (several GB; kept for later runs, never in the
# repository). For each shape, weight type and thread count, REPS runs of
#   kestrel bench PROGRAM -p PROMPTS -n N_TOKENS -t T -r 1 --json
# each followed by read_bandwidth over a buffer the size of the weights (the decode bound),
# every run after waiting for a quiet machine (bench_lib.sh). Prints one table of medians.
#
# Environment (defaults in brackets):
#   KESTREL_BUILD   kestrel build dir with kestrel and bench/ tools [<repo>/build]
#   WORK_DIR        where models and programs go [/tmp/kestrel-real-shapes]
#   SHAPES          ["qwen3-0.6b llama3.2-1b"]
#   DTYPES          ["q8 f16"]
#   CACHE_DTYPE     KV cache type, f32 or f16 [f32]
#   THREADS_LIST    ["1 <nproc>"]
#   PROMPTS         prompt lengths, comma separated ["128,512"]
#   N_TOKENS        generated tokens [128]
#   PREFILL_STEP    tokens per prefill call [128]
#   EXTRA_PREFILL_STEPS  more prefill steps (buckets), comma separated, empty for none [512]
#   MAX_CONTEXT     cache length [1024]
#   REPS            runs per cell [3]
#   QUIET_BUSY QUIET_MAX_WAIT   see bench_lib.sh [0.10 900]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kestrel_build="${KESTREL_BUILD:-${repo}/build}"
kestrel="${kestrel_build}/kestrel"
make_model="${kestrel_build}/bench/make_bench_model"
read_bw="${kestrel_build}/bench/read_bandwidth"
for tool in "${kestrel}" "${make_model}" "${read_bw}"; do
  [[ -x "${tool}" ]] || { echo "missing ${tool} (ninja -C ${kestrel_build} kestrel_cli make_bench_model read_bandwidth)" >&2; exit 2; }
done
work="${WORK_DIR:-/tmp/kestrel-real-shapes}"
shapes="${SHAPES:-qwen3-0.6b llama3.2-1b}"
dtypes="${DTYPES:-q8 f16}"
cache_dtype="${CACHE_DTYPE:-f32}"
threads_list="${THREADS_LIST:-1 $(nproc)}"
prompts="${PROMPTS:-128,512}"
n_tokens="${N_TOKENS:-128}"
prefill_step="${PREFILL_STEP:-128}"
extra_prefill_steps="${EXTRA_PREFILL_STEPS-512}"
max_context="${MAX_CONTEXT:-1024}"
reps="${REPS:-3}"
quiet_busy="${QUIET_BUSY:-0.10}"
quiet_max_wait="${QUIET_MAX_WAIT:-900}"

log() { echo "[real-shapes] $*" >&2; }
source "${repo}/bench/bench_lib.sh"
log "machine: $(lscpu | sed -n 's/^Model name: *//p') | $(nproc) CPUs | load: $(uptime)"

# One table row from a cell's runs: medians per test, bound, load time, peak RSS.
summarize() {  # shape dtype threads decode_values bytes_per_value bandwidth busy runs...
  python3 -c 'import json, statistics, sys
shape, dtype, t, values, bpv, bw, busy = sys.argv[1:8]
runs = [json.loads(r) for r in sys.argv[8:]]
tests = {}
for run in runs:
    for test in run["tests"]:
        tests.setdefault(test["test"], []).append(test["tok_s_mean"])
mb = int(values) * float(bpv) / 1e6
bound = float(bw) * 1e3 / mb
speeds = " | ".join(f"{statistics.median(v):.1f}" for v in tests.values())
tg = [statistics.median(v) for name, v in tests.items() if name.startswith("tg")]
load = statistics.median(r["load_ms"] for r in runs)
rss = max(r["peak_rss_bytes"] for r in runs) / 2**20
fraction = f"{tg[0] / bound:.0%}" if tg else "-"
print(f"| {shape} | {dtype} | {t} | {speeds} | {mb:.0f} | {float(bw):.1f} | {bound:.1f} | {fraction} | {load:.0f} | {rss:.0f} | {float(busy):.0%} |")' "$@"
}

rows=()
for shape in ${shapes}; do
  dir="${work}/${shape}"
  if [[ ! -f "${dir}/model.json" ]]; then
    mkdir -p "${dir}"
    "${make_model}" "${dir}" --hf "${shape}" > "${dir}/model.json"
  fi
  decode_values="$(json_get "$(cat "${dir}/model.json")" decode_weight_values)"
  for dtype in ${dtypes}; do
    program="${dir}/${dtype}-s${prefill_step}${extra_prefill_steps:+-${extra_prefill_steps//,/-}}$([[ "${cache_dtype}" == f32 ]] || echo "-kv${cache_dtype}").kst"
    [[ -f "${program}" ]] || "${kestrel}" export "${dir}" -o "${program}" --dtype "${dtype}" --cache-dtype "${cache_dtype}" \
      --max-context "${max_context}" --prefill-step "${prefill_step}" \
      ${extra_prefill_steps:+--extra-prefill-steps "${extra_prefill_steps}"} -q
    bytes_per_value="$([[ "${dtype}" == q8 ]] && echo 1.0625 || echo 2)"
    ws_mib="$(python3 -c 'import sys; print(round(int(sys.argv[1]) * float(sys.argv[2]) / 2**20))' \
      "${decode_values}" "${bytes_per_value}")"
    for t in ${threads_list}; do
      runs=() bws=() busy=()
      for ((r = 0; r < reps; ++r)); do
        busy+=("$(wait_quiet)")
        runs+=("$("${kestrel}" bench "${program}" -p "${prompts}" -n "${n_tokens}" -t "${t}" -r 1 --json)")
        bws+=("$(json_get "$("${read_bw}" "${ws_mib}" "${t}" 3)" read_gb_per_s)")
        log "${shape} ${dtype} t=${t} rep ${r}: background ${busy[-1]} read ${bws[-1]} GB/s: ${runs[-1]}"
      done
      rows+=("$(summarize "${shape}" "${dtype}" "${t}" "${decode_values}" "${bytes_per_value}" "$(median "${bws[@]}")" \
        "$(median "${busy[@]}")" "${runs[@]}")")
    done
  done
done
log "load: $(uptime)"

tests="$(python3 -c 'import sys; print(" | ".join([f"pp{p} tok/s" for p in sys.argv[1].split(",")] + [f"tg{sys.argv[2]} tok/s"]))' \
  "${prompts}" "${n_tokens}")"
echo
echo "median of ${reps} runs, ${cache_dtype} KV caches"
echo
echo "| shape | weights | threads | ${tests} | weights MB/token | read GB/s (weights-sized) | bound tok/s | decode / bound | load ms | peak RSS MiB | background busy |"
echo "|---|---|---|$(python3 -c 'import sys; print("---|" * (len(sys.argv[1].split(",")) + 1))' "${prompts}")---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
