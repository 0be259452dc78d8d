#!/usr/bin/env bash
# `check` of a baseline whose [history] holds N runs (default 20,000) against a clean run: wall
# seconds and peak RSS (issue 39: the history is capped on read, so both stay flat in N).
#   bash bench/history.sh [RUNS] [path/to/tracegate]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20000}
bin=${2:-target/release/tracegate}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" synth --scenario mi355x-dsr1-fp4-tp4 --seed 3 --out "$work/run" >/dev/null 2>&1
python3 - "$runs" "$work/baseline.toml" <<'PY'
import sys
runs, out = int(sys.argv[1]), sys.argv[2]
text = open("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml").read()
values = {}
name = None
for line in text.splitlines():
    if line.startswith("[metrics."):
        name = line[len("[metrics."):-1]
    elif name and line.startswith("value = "):
        values[name] = float(line.split("=")[1])
        name = None
inline = ", ".join(f"{k} = {v}" for k, v in values.items())
with open(out, "w") as f:
    f.write(text)
    f.write("\n[history]\nmax_runs = 20\n")
    for i in range(runs):
        f.write(f'\n[[history.runs]]\ndate = "2026-12-07"\nsource = "run {i}"\nvalues = {{ {inline} }}\n')
PY
awk -v bytes="$(stat -c %s "$work/baseline.toml")" -v runs="$runs" \
    'BEGIN { printf "baseline: %.1f MB, %s history runs\n", bytes / 1e6, runs }'
/usr/bin/time -f "check: %e s wall, %M KB peak RSS, exit %x" \
  "$bin" check "$work/run" --baseline "$work/baseline.toml" --format json >/dev/null 2>"$work/err" || true
tail -1 "$work/err"
