#!/usr/bin/env python3
"""Reader benchmark: `tracegate inspect` against `gzip -dc` of the same files, in the same run.

Makes a `tracegate synth --scale` run of about --size-gb of uncompressed JSON over --ranks ranks,
then times, alternating, (a) `tracegate inspect <dir> --format json` and (b) `gzip -dc <files>`
to /dev/null. Reports wall time (median of --repeats), peak memory (max RSS of the process), MB/s
of uncompressed JSON, and the ratio of the two wall times. Needs only python3, gzip and cargo.

    python3 bench/reader.py --size-gb 1 --ranks 8 --repeats 3
"""
import argparse
import math
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "tracegate")


def run_measured(cmd, stdout=subprocess.DEVNULL):
    """Runs cmd; returns (wall seconds, peak RSS in MB of the process and its children)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024.0


def uncompressed_bytes(files):
    total = 0
    for f in files:
        out = subprocess.run(f"gzip -dc '{f}' | wc -c", shell=True, capture_output=True, check=True)
        total += int(out.stdout)
    return total


def synth(out_dir, ranks, scale, scenario):
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    subprocess.run([BIN, "synth", "--scenario", scenario, "--ranks", str(ranks), "--scale", str(scale),
                    "--seed", "1", "--out", out_dir], check=True, stdout=subprocess.DEVNULL)
    return sorted(os.path.join(out_dir, f) for f in os.listdir(out_dir) if f.endswith(".json.gz"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scenario", default="mi325x-dsr1-fp8-tp8")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    probe = synth(os.path.join(args.out, "probe"), args.ranks, 1, args.scenario)
    per_scale = uncompressed_bytes(probe)
    # Warm-up and prefill do not scale: overshoot a little so the run is at least the size asked.
    scale = max(1, math.ceil(args.size_gb * 1e9 / per_scale * 1.25))
    run_dir = os.path.join(args.out, f"run-{args.size_gb:g}gb")
    print(f"probe: {per_scale / 1e6:.1f} MB at --scale 1; generating --scale {scale}", file=sys.stderr)
    files = synth(run_dir, args.ranks, scale, args.scenario)
    raw = uncompressed_bytes(files)
    packed = sum(os.path.getsize(f) for f in files)

    reader, gzip = [], []
    for i in range(args.repeats):
        reader.append(run_measured([BIN, "inspect", run_dir, "--format", "json"]))
        gzip.append(run_measured(["gzip", "-dc", *files]))
        print(f"repeat {i + 1}: tracegate {reader[-1][0]:.2f}s, gzip -dc {gzip[-1][0]:.2f}s", file=sys.stderr)

    r_wall = statistics.median(w for w, _ in reader)
    g_wall = statistics.median(w for w, _ in gzip)
    r_rss = max(m for _, m in reader)
    g_rss = max(m for _, m in gzip)
    mb = raw / 1e6
    table = "\n".join([
        f"## Reader benchmark ({datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores)",
        "",
        f"`python3 bench/reader.py --size-gb {args.size_gb:g} --ranks {args.ranks} --repeats {args.repeats}`: "
        f"scenario `{args.scenario}`, {len(files)} files, {mb:,.0f} MB of JSON ({packed / 1e6:,.0f} MB gzip), "
        f"median of {args.repeats} alternating runs.",
        "",
        "| command | wall s | MB/s of JSON | peak RSS MB | ratio to gzip -dc |",
        "|---|---:|---:|---:|---:|",
        f"| `tracegate inspect` | {r_wall:.2f} | {mb / r_wall:,.0f} | {r_rss:,.0f} | {r_wall / g_wall:.2f} |",
        f"| `gzip -dc` > /dev/null | {g_wall:.2f} | {mb / g_wall:,.0f} | {g_rss:,.0f} | 1.00 |",
        "",
        f"Peak memory of tracegate: {r_rss / mb * 100:.1f}% of the uncompressed size.",
        "",
    ])
    print(table)
    with open(args.results, "a") as out:
        out.write(table + "\n")


if __name__ == "__main__":
    main()
