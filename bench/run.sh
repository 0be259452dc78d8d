#!/usr/bin/env bash
# tracegate against Holistic Trace Analysis: speed, memory and fidelity (see bench/run.py).
#   bench/run.sh [--quick | --fidelity-only | --threads-only] [--repeats N] [--hta-timeout SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/run.py "$@"
