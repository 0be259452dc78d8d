#!/usr/bin/env bash
# Calibration judged over many calibration draws on synth runs with between-run variation
# (see bench/calibrate.py; figures in bench/RESULTS.md).
#   bench/calibrate.sh [--quick] [--jobs N] [--draws N] [--levels 3 0.5] [--keep DIR]     TRACEGATE=binary (default target/release/tracegate)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/calibrate.py "$@"
