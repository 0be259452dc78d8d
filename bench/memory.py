#!/usr/bin/env python3
"""Peak memory of `tracegate extract` grows with kept GPU activities, not with file size.

Makes two synth runs with the same GPU work (4 ranks x 26 decode steps of mi355x-dsr1-fp4-tp4):
one with 200,000 `python_function` events per step (about 4 GB of JSON, like real SGLang traces
with Python tracing on) and one with 50. Measures the peak RSS of `tracegate extract` on each
(`os.wait4`), the kept GPU activities (`inspect --format json`) and the JSON size, and prints a
markdown table. Exits 1 when the big run's peak RSS passes --bound-mib (64 by default) or 1.5x
the small run's. Usage: python3 bench/memory.py [--pf-per-step N] [--bound-mib N] [--keep DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, build, run_measured  # noqa: E402  (the HTA benchmark's own measuring)


def inspect(traces):
    out = subprocess.run([BIN, "inspect", "--format", "json", traces],
                         check=True, capture_output=True).stdout
    ranks = json.loads(out)["ranks"]
    kept = sum(r["kernels"] + r["memcpys"] + r["memsets"] for r in ranks)
    skipped = sum(r["read"]["python_functions_skipped"] for r in ranks)
    json_bytes = sum(r["read"]["json_bytes"] for r in ranks)
    return kept, skipped, json_bytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pf-per-step", type=int, default=200_000)
    ap.add_argument("--bound-mib", type=float, default=64.0)
    ap.add_argument("--keep", help="keep the generated runs in this directory")
    args = ap.parse_args()
    build()
    work = args.keep or tempfile.mkdtemp(prefix="tracegate-memory-")
    rows = []
    try:
        for pf in (args.pf_per_step, 50):
            out = os.path.join(work, f"pf{pf}")
            if not os.path.isdir(out):
                t0 = time.monotonic()
                subprocess.run([BIN, "synth", "--scenario", "mi355x-dsr1-fp4-tp4", "--out", out,
                                "--python-functions-per-step", str(pf)],
                               check=True, stdout=subprocess.DEVNULL)
                print(f"generated pf={pf} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
            kept, skipped, json_bytes = inspect(out)
            m = run_measured([BIN, "extract", out, "--format", "json"])
            if not m["ok"]:
                sys.exit(f"tracegate extract {out}: {m['why']}")
            rows.append((pf, json_bytes, kept, skipped, m["wall"], m["rss_mb"] * 2**20))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("| python_function per step | JSON | kept GPU activities | python_function skipped "
          "| extract wall | peak RSS | RSS / JSON | RSS per kept activity |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for pf, jb, kept, skipped, wall, rss in rows:
        print(f"| {pf:,} | {jb / 1e6:,.0f} MB | {kept:,} | {skipped:,} | {wall:.2f} s "
              f"| {rss / 2**20:,.0f} MiB | {100 * rss / jb:.1f}% | {rss / kept:,.0f} B |")
    big, small = rows
    print(f"\nPeak RSS ratio (200k vs 50 python_function per step): {big[5] / small[5]:.2f} "
          f"for {big[1] / small[1]:.0f}x the JSON and the same {big[2]:,} kept activities.")
    if big[5] > args.bound_mib * 2**20 or big[5] > 1.5 * small[5]:
        sys.exit(f"FAIL: peak RSS {big[5] / 2**20:.0f} MiB passes the bound "
                 f"({args.bound_mib:.0f} MiB, or 1.5x the small run's {small[5] / 2**20:.0f} MiB)")
    print(f"PASS: peak RSS within {args.bound_mib:.0f} MiB and 1.5x the small run's.")


if __name__ == "__main__":
    main()
