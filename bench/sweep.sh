#!/usr/bin/env bash
# `sweep` of N verdict files (default 5,000): wall seconds and peak RSS (issue 39: merging is
# linear in the verdicts, sorting n log n). The verdicts are copies of one real `check` verdict
# (a regression of the MI355X synth run), each under its own baseline name, a third of them
# passes.
#   bash bench/sweep.sh [VERDICTS] [path/to/tracegate]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000}
bin=${2:-target/release/tracegate}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" synth --scenario mi355x-dsr1-fp4-tp4 --seed 3 --inject allreduce=1.5 --out "$work/run" >/dev/null 2>&1
"$bin" check "$work/run" --baseline baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml \
    --format json --no-github --verdict-out "$work/one.json" >/dev/null 2>&1 || true
mkdir "$work/verdicts"
python3 - "$n" "$work/one.json" "$work/verdicts" <<'PY'
import copy, json, sys
n, one, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
regressed = json.load(open(one))
for i in range(n):
    v = copy.deepcopy(regressed)
    v["baseline"]["path"] = f"baselines/config-{i:05d}.toml"
    if i % 3 == 0:
        v["status"], v["exit_code"] = "pass", 0
        for m in v["metrics"]:
            m["verdict"] = "ok"
    json.dump(v, open(f"{out}/config-{i:05d}.json", "w"))
PY
/usr/bin/time -f "sweep of $n verdicts: %e s wall, %M KB peak RSS, exit %x" \
    "$bin" sweep "$work/verdicts" --format markdown --output "$work/sweep.md" 2>"$work/err" || true
head -c 300 "$work/sweep.md"; echo
tail -1 "$work/err"
