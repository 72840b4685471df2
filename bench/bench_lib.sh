# Shell helpers shared by the end-to-end benchmark scripts (sourced, not run).
# Needs python3 on PATH; reads quiet_busy and quiet_max_wait (set by the sourcing script).

# json_get JSON KEY...: the value at the keys / list indices.
json_get() {
  python3 -c 'import json, sys
v = json.loads(sys.argv[1])
for k in sys.argv[2:]:
    v = v[int(k)] if k.isdigit() else v[k]
print(v)' "$@"
}

# Fraction of all CPUs busy over one second (nothing of the calling script runs meanwhile).
busy_fraction() {
  python3 -c 'import time
def snap():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v)
i0, t0 = snap(); time.sleep(1.0); i1, t1 = snap()
print(f"{1 - (i1 - i0) / max(1, t1 - t0):.2f}")'
}

# Waits until the background load is at most ${quiet_busy} (or ${quiet_max_wait} seconds
# passed) and prints the last measured load.
wait_quiet() {
  local start="${SECONDS}" busy
  while :; do
    busy="$(busy_fraction)"
    if python3 -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "${busy}" "${quiet_busy}" ||
       (( SECONDS - start >= quiet_max_wait )); then
      echo "${busy}"
      return
    fi
    sleep 4
  done
}

# median VALUES...: the median, one decimal.
median() {
  python3 -c 'import statistics, sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.2f}")' "$@"
}
