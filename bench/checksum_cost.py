#!/usr/bin/python3
"""Integrity: what verifying a program's checksums at load costs, on the 110M llama2.c-shaped
model of bench/make_bench_model (exported to f32 and q8).

usage: bench/checksum_cost.py [BUILD_DIR] [SCRATCH_DIR]   (ROUNDS=7 in the environment)

For each program, runs alternate (verified first in odd rounds, skipped first in even ones):
  kestrel inspect P [--no-verify]              wall time of the whole command
  kestrel run P -p Once -n 1 --json [--no-verify]   load_ms and load_ms + ttft_ms from its stats
and prints medians. The page cache is warm (every file was read just before). `inspect` without
checks reads only the description, so its difference is the hash plus faulting in the mapping; a
run faults the weights in during its first step anyway, so its difference is the hash alone.
"""
import json
import os
import statistics
import subprocess
import sys
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build")
scratch = sys.argv[2] if len(sys.argv) > 2 else "/tmp/kestrel-checksum-cost"
rounds = int(os.environ.get("ROUNDS", "7"))
kestrel = os.path.join(build, "kestrel")
model_dir = os.path.join(scratch, "model")

os.makedirs(scratch, exist_ok=True)
if not os.path.exists(os.path.join(model_dir, "model.bin")):
    subprocess.run([os.path.join(build, "bench", "make_bench_model"), model_dir], check=True, stdout=subprocess.DEVNULL)


def wall(args):
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def run_stats(args):
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    stats = json.loads(out)["stats"]
    return stats["load_ms"], stats["load_ms"] + stats["ttft_ms"]


print(f"kestrel: {kestrel}, {rounds} rounds, medians in ms")
print()
print("| program | MiB | inspect, verified | inspect, --no-verify | run load, verified | run load, --no-verify "
      "| run load + first token, verified | the same, --no-verify |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for dtype in ("f32", "q8"):
    program = os.path.join(scratch, f"model-{dtype}.kst")
    subprocess.run([kestrel, "export", os.path.join(model_dir, "model.bin"), "--tokenizer",
                    os.path.join(model_dir, "tokenizer.bin"), "-o", program, "--dtype", dtype, "-q"], check=True)
    results = {True: {"inspect": [], "load": [], "first": []}, False: {"inspect": [], "load": [], "first": []}}
    wall([kestrel, "inspect", program])  # warm the page cache
    for round_index in range(rounds):
        for verify in ((True, False) if round_index % 2 == 0 else (False, True)):
            flag = [] if verify else ["--no-verify"]
            results[verify]["inspect"].append(wall([kestrel, "inspect", program] + flag))
            load, first = run_stats([kestrel, "run", program, "-p", "Once", "-n", "1", "--json",
                                     "--temperature", "0", "--threads", "1"] + flag)
            results[verify]["load"].append(load)
            results[verify]["first"].append(first)
    med = {v: {k: statistics.median(xs) for k, xs in r.items()} for v, r in results.items()}
    mib = os.path.getsize(program) / 2**20
    print(f"| {dtype} | {mib:.0f} | {med[True]['inspect']:.1f} | {med[False]['inspect']:.1f} | "
          f"{med[True]['load']:.1f} | {med[False]['load']:.1f} | {med[True]['first']:.1f} | {med[False]['first']:.1f} |")
