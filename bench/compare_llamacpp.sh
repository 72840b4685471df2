#!/usr/bin/env bash
# Side-by-side prompt processing (prefill) and generation (decode) speed of kestrel and
# llama.cpp on the same model and machine.
#
#   bench/compare_llamacpp.sh LLAMA_CPP_BUILD_DIR        (or set LLAMA_CPP_BUILD)
#
# The llama.cpp build directory must already hold bin/llama-bench, bin/llama-quantize and
# bin/llama-convert-llama2c-to-ggml (a CPU build; this script never fetches or builds
# llama.cpp). Steps, all in WORK_DIR:
#   1. make_bench_model writes a deterministic llama2.c checkpoint (model.bin, shared
#      classifier) and a tokenizer.bin;
#   2. kestrel exports it with f32 and q8 weights (prefill step PREFILL_STEP, and a prefill
#      bucket of each of EXTRA_PREFILL_STEPS: a prompt's full chunks take the largest step that
#      fits, as llama.cpp processes a prompt in micro-batches of up to 512 tokens by default);
#   3. llama.cpp's own convert-llama2c-to-ggml converts the same checkpoint to an f32 GGUF, and
#      llama-quantize makes the Q8_0 GGUF (q8 and Q8_0 are the same format: blocks of 32 int8
#      with one f16 scale);
#   4. compute_peak measures the arithmetic peak (f32 FMA, int8 dot products) and
#      read_bandwidth the memory read bandwidth (the decode bound): once at the start, and
#      again next to every run (the f32 FMA peak next to each prefill run, the bandwidth over a
#      buffer the size of the weights next to each decode run), because a shared host's speed
#      drifts by 20% and more between minutes: each run is set against what the machine gave
#      at that time;
#   5. for each weight type, thread count and test (ppN for every N in PROMPTS, tgN_TOKENS),
#      REPS interleaved runs of
#        kestrel bench PROGRAM -p N -n 0 -t T -r 1 --json   (or -p 0 -n N)
#        llama-bench -m GGUF -p N -n 0 -t T -ctk C -ctv C -r 1 -o json     (or -p 0 -n N)
#      both from an empty cache, without sampling; then a table of medians (and bests), the
#      ratio, and for prefill the arithmetic rate against the peak, for decode the bandwidth
#      bound. With one thread, each decode repetition also runs bench/decode_vs_read (two rounds
#      of the test's tokens, every step followed by a read of the bytes it streams): its share
#      sets each step against a read made right after it, so the host's drift cancels, and both
#      are means, where the bound beside a run is the best read pass.
#
# Environment (defaults in brackets):
#   LLAMA_CPP_BUILD   llama.cpp build dir, when not given as the argument
#   KESTREL_BUILD     kestrel build dir with kestrel and bench/ tools [<repo>/build]
#   WORK_DIR          scratch dir for models [a new mktemp dir]
#   DIM HIDDEN LAYERS HEADS VOCAB SEQ   model shape [768 2048 12 12 32000 1024]
#   THREADS_LIST      thread counts to compare ["1 <nproc>"]
#   DTYPES            weight types, of q8 f32 f16 bf16 ["q8 f32"]
#   CACHE_DTYPE       KV cache type of both sides, f16 or f32 [f16, llama.cpp's default]
#   PROMPTS           prompt lengths ["128 512"]
#   N_TOKENS          generated tokens per decode run [128]
#   PREFILL_STEP      kestrel's prefill step (tokens per prefill call) [128]
#   EXTRA_PREFILL_STEPS  more prefill steps, comma-separated, empty for none [512]
#   REPS              interleaved repetitions per cell [5]
#   BW_MIB            read_bandwidth buffer for the DRAM figure, MiB [1024]
#   QUIET_BUSY        before every repetition, wait until the other processes keep at most this
#                     fraction of the CPUs busy (sampled over one second) [0.10]
#   QUIET_MAX_WAIT    ... but never longer than this many seconds per repetition [900]
#
# The machine may be shared: the background load measured before each repetition is logged
# and reported per cell (median), next to the results.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
llama_build="${1:-${LLAMA_CPP_BUILD:-}}"
if [[ -z "${llama_build}" ]]; then
  echo "usage: $0 LLAMA_CPP_BUILD_DIR   (or set LLAMA_CPP_BUILD)" >&2
  exit 2
fi
kestrel_build="${KESTREL_BUILD:-${repo}/build}"
kestrel="${kestrel_build}/kestrel"
make_model="${kestrel_build}/bench/make_bench_model"
read_bw="${kestrel_build}/bench/read_bandwidth"
vs_read="${kestrel_build}/bench/decode_vs_read"
peak="${kestrel_build}/bench/compute_peak"
llama_bin="${llama_build}/bin"
for tool in "${kestrel}" "${make_model}" "${read_bw}" "${vs_read}" "${peak}" "${llama_bin}/llama-bench" "${llama_bin}/llama-quantize" \
            "${llama_bin}/llama-convert-llama2c-to-ggml"; do
  if [[ ! -x "${tool}" ]]; then
    echo "missing ${tool}" >&2
    echo "(build kestrel: ninja -C ${kestrel_build} kestrel_cli make_bench_model read_bandwidth decode_vs_read compute_peak;" >&2
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
cache_dtype="${CACHE_DTYPE:-f16}"
prompts="${PROMPTS:-128 512}"
n_tokens="${N_TOKENS:-128}"
prefill_step="${PREFILL_STEP:-128}"
extra_prefill_steps="${EXTRA_PREFILL_STEPS-512}"
reps="${REPS:-5}"
bw_mib="${BW_MIB:-1024}"
quiet_busy="${QUIET_BUSY:-0.10}"
quiet_max_wait="${QUIET_MAX_WAIT:-900}"

log() { echo "[compare] $*" >&2; }
source "${repo}/bench/bench_lib.sh"

log "machine: $(lscpu | sed -n 's/^Model name: *//p') | ${nproc_all} CPUs | $(free -g | awk '/Mem:/ {print $2}') GiB"
log "load: $(uptime)"
log "work dir: ${work}"
log "KV caches: ${cache_dtype} on both sides"

# 1. The model.
model_json="$("${make_model}" "${work}" --dim "${DIM:-768}" --hidden "${HIDDEN:-2048}" --layers "${LAYERS:-12}" \
  --heads "${HEADS:-12}" --kv-heads "${HEADS:-12}" --vocab "${VOCAB:-32000}" --seq "${SEQ:-1024}")"
log "model: ${model_json}"
decode_values="$(json_get "${model_json}" decode_weight_values)"
# Multiply-adds per prompt token: every layer matrix once (the classifier runs for the last
# token only, on both sides). Attention adds, per layer, dim multiply-adds per (token, earlier
# or same position) for the scores and as many for the weighted sums: a prompt of N tokens
# averages dim * layers * (N + 1) per token (1.4% more at N = 128, 5.6% at 512 on the default
# shape). The tables give the rate against the peak both ways: the linears alone, and all the
# model's arithmetic (what a model-FLOPs utilization counts).
layer_values="$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); print(m["decode_weight_values"] - m["vocab"] * m["dim"])' "${model_json}")"
attention_values_per_position="$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); print(m["dim"] * m["layers"])' "${model_json}")"

# 2. kestrel programs.
for dtype in ${dtypes}; do
  "${kestrel}" export "${work}/model.bin" --tokenizer "${work}/tokenizer.bin" -o "${work}/${dtype}.kst" --dtype "${dtype}" \
    --cache-dtype "${cache_dtype}" --prefill-step "${prefill_step}" ${extra_prefill_steps:+--extra-prefill-steps "${extra_prefill_steps}"} -q
done

# 3. llama.cpp models from the same checkpoint, with llama.cpp's own tools.
"${llama_bin}/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "${work}/tokenizer.bin" \
  --llama2c-model "${work}/model.bin" --llama2c-output-model "${work}/f32.gguf" > "${work}/convert.log" 2>&1
# The llama.cpp file type for each kestrel weight type, and bytes per weight value.
gguf_type() { case "$1" in q8) echo Q8_0 ;; f16) echo F16 ;; bf16) echo BF16 ;; *) echo F32 ;; esac; }
value_bytes() { case "$1" in q8) echo 1.0625 ;; f16 | bf16) echo 2 ;; *) echo 4 ;; esac; }
for dtype in ${dtypes}; do
  type="$(gguf_type "${dtype}")"
  [[ "${type}" == F32 ]] || "${llama_bin}/llama-quantize" "${work}/f32.gguf" "${work}/${type,,}.gguf" "${type}" \
    >> "${work}/quantize.log" 2>&1
done

# 4. Arithmetic peak and memory read bandwidth for every thread count compared.
declare -A bandwidth peak_json
for t in ${threads_list}; do
  peak_json[$t]="$("${peak}" "${t}")"
  log "compute peak, ${t} threads: ${peak_json[$t]}"
  bw_json="$("${read_bw}" "${bw_mib}" "${t}" 5)"
  bandwidth[$t]="$(json_get "${bw_json}" read_gb_per_s)"
  log "read bandwidth, ${t} threads, ${bw_mib} MiB: ${bw_json}"
done

# 5. Interleaved runs.
kestrel_tps() {  # program threads prompt gen
  json_get "$("${kestrel}" bench "$1" -t "$2" -p "$3" -n "$4" -r 1 --json)" tests 0 tok_s_mean
}
llama_tps() {  # gguf threads prompt gen
  json_get "$("${llama_bin}/llama-bench" -m "$1" -t "$2" -p "$3" -n "$4" -ctk "${cache_dtype}" -ctv "${cache_dtype}" -r 1 -o json 2> /dev/null)" 0 avg_ts
}
f32_peak() {  # compute_peak JSON -> the f32 FMA peak, GFLOP/s (512-bit vectors where the CPU has them)
  python3 -c 'import json, sys; p = json.loads(sys.argv[1]); print(p.get("f32_fma_512_gflops", p.get("f32_fma_256_gflops", 0)))' "$1"
}
share_of_peak() {  # multiply-adds per token, then the rates, then the peaks -> median of rate / peak
  python3 -c 'import statistics, sys
n = (len(sys.argv) - 2) // 2
tps, peaks = sys.argv[2:2 + n], sys.argv[2 + n:]
print(f"{statistics.median(float(k) * 2 * float(sys.argv[1]) / 1e9 / float(p) if float(p) > 0 else 0 for k, p in zip(tps, peaks)):.4f}")' "$@"
}
stats() {  # values... -> "median best"
  python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.1f} {max(v):.1f}")' "$@"
}

results=()
for dtype in ${dtypes}; do
  program="${work}/${dtype}.kst"
  type="$(gguf_type "${dtype}")"
  gguf="${work}/${type,,}.gguf"
  bytes_per_value="$(value_bytes "${dtype}")"
  ws_mib="$(python3 -c 'import sys; print(max(1, round(int(sys.argv[1]) * float(sys.argv[2]) / 2**20)))' \
    "${decode_values}" "${bytes_per_value}")"
  for t in ${threads_list}; do
    for test in $(for p in ${prompts}; do echo "pp${p}"; done) "tg${n_tokens}"; do
      n="${test#??}"
      if [[ "${test}" == pp* ]]; then p="${n}" g=0; else p=0 g="${n}"; fi
      k=() l=() b=() q=() f=() v=()
      for ((r = 0; r < reps; ++r)); do
        q+=("$(wait_quiet)")
        k+=("$(kestrel_tps "${program}" "${t}" "${p}" "${g}")")
        l+=("$(llama_tps "${gguf}" "${t}" "${p}" "${g}")")
        if [[ "${test}" == tg* ]]; then
          b+=("$(json_get "$("${read_bw}" "${ws_mib}" "${t}" 3)" read_gb_per_s)")
          f+=(0)
          # One thread: the decode steps alternated step by step with reads of their bytes.
          if [[ "${t}" == 1 ]]; then v+=("$(json_get "$("${vs_read}" "${program}" "${n}" 0 2)" decode_share)"); else v+=(0); fi
        else
          b+=(0) v+=(0)
          f+=("$(f32_peak "$("${peak}" "${t}" 100)")")
        fi
        log "${dtype} t=${t} ${test} rep ${r}: background ${q[-1]} kestrel ${k[-1]} llama.cpp ${l[-1]} read ${b[-1]} GB/s f32 peak ${f[-1]} GFLOP/s decode_vs_read share ${v[-1]}"
      done
      read -r k_med k_best <<< "$(stats "${k[@]}")"
      read -r l_med l_best <<< "$(stats "${l[@]}")"
      read -r b_med b_best <<< "$(stats "${b[@]}")"
      q_med="$(median "${q[@]}")"
      v_med="$(median "${v[@]}")"
      # Kestrel's rate against the peak of its own repetition, the median over repetitions:
      # the linears' multiply-adds only, and with attention's (0 for decode).
      model_values="$((layer_values + (p > 0 ? attention_values_per_position * (p + 1) : 0)))"
      peak_share="$(share_of_peak "${layer_values}" "${k[@]}" "${f[@]}")"
      model_peak_share="$(share_of_peak "${model_values}" "${k[@]}" "${f[@]}")"
      read -r f_med f_best <<< "$(stats "${f[@]}")"
      results+=("${dtype} ${t} ${test} ${k_med} ${k_best} ${l_med} ${l_best} ${bytes_per_value} ${bandwidth[$t]} ${b_med} ${q_med} ${f_med} ${peak_share} ${model_values} ${model_peak_share} ${v_med}")
    done
  done
done
log "load: $(uptime)"

# 6. The tables.
peaks="$(for t in ${threads_list}; do echo "${t}=$(f32_peak "${peak_json[$t]}")"; done)"
python3 - "${decode_values}" "${layer_values}" "${reps}" "${peaks}" "${results[@]}" <<'EOF'
import sys
decode_values, layer_values, reps = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
peaks = {}  # threads -> the f32 FMA peak measured at the start, GFLOP/s
for line in sys.argv[4].splitlines():
    t, value = line.split("=", 1)
    peaks[t] = float(value)
rows = [r.split() for r in sys.argv[5:]]

print(f"\nprompt processing, tokens/s, median (best) of {reps} interleaved runs\n")
print("kestrel / peak: each repetition's rate against the f32 FMA peak measured right after it, the median;")
print("the peak column is the median of those peaks (and the one measured at the start). GFLOP/s and")
print("the share of the peak count the linears' arithmetic, then (after the slash) all the model's,")
print("attention over the prompt included.\n")
print("| weights | threads | test | kestrel | llama.cpp | kestrel / llama.cpp | kestrel GFLOP/s (linears / model) | f32 FMA peak GFLOP/s (at start) | kestrel / peak (linears / model) | background busy |")
print("|---|---|---|---|---|---|---|---|---|---|")
for dtype, t, test, k_med, k_best, l_med, l_best, bpv, bw, bw_ws, busy, f_med, share, model_values, model_share, vs_read in rows:
    if not test.startswith("pp"):
        continue
    gflops = float(k_med) * 2 * layer_values / 1e9
    model_gflops = float(k_med) * 2 * int(model_values) / 1e9
    peak = peaks[t]
    ratio = float(k_med) / float(l_med)
    print(f"| {dtype} | {t} | {test} | {k_med} ({k_best}) | {l_med} ({l_best}) | {ratio:.2f} | {gflops:.1f} / {model_gflops:.1f} | "
          f"{float(f_med):.1f} ({peak:.1f}) | {float(share):.0%} / {float(model_share):.0%} | {float(busy):.0%} |")

print(f"\ngeneration tokens/s, median (best) of {reps} interleaved runs\n")
print("kestrel / weights-sized bound: the median run against the best read pass measured next to it. Step by step:")
print("bench/decode_vs_read's share (one thread), decode steps alternated with reads of their bytes, each a mean\n")
print("| weights | threads | test | kestrel | llama.cpp | kestrel / llama.cpp | weights MB/token | read GB/s (DRAM / weights-sized) | bound tok/s (DRAM / weights-sized) | kestrel / weights-sized bound | step by step | background busy |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for dtype, t, test, k_med, k_best, l_med, l_best, bpv, bw, bw_ws, busy, f_med, share, model_values, model_share, vs_read in rows:
    if not test.startswith("tg"):
        continue
    mb = decode_values * float(bpv) / 1e6
    bound, bound_ws = float(bw) * 1e3 / mb, float(bw_ws) * 1e3 / mb
    ratio = float(k_med) / float(l_med)
    print(f"| {dtype} | {t} | {test} | {k_med} ({k_best}) | {l_med} ({l_best}) | {ratio:.2f} | {mb:.1f} | "
          f"{float(bw):.1f} / {float(bw_ws):.1f} | {bound:.0f} / {bound_ws:.0f} | {float(k_med) / bound_ws:.0%} | "
          f"{(format(float(vs_read), '.0%') if float(vs_read) > 0 else '-')} | {float(busy):.0%} |")
EOF
