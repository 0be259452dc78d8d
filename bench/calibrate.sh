#!/usr/bin/env bash
# Calibrated tolerances against the shipped defaults on synth runs with between-run variation
# (see bench/calibrate.py; figures in bench/RESULTS.md).
#   bench/calibrate.sh [--quick] [--jobs N] [--keep DIR]     TRACEGATE=binary (default target/release/tracegate)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/calibrate.py "$@"
