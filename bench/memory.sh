#!/usr/bin/env bash
# Peak memory grows with kept GPU activities, not with file size (see bench/memory.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/memory.py "$@"
