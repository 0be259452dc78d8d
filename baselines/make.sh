#!/usr/bin/env bash
# Regenerates the shipped baselines of the synth scenarios with tracegate itself:
#   bash baselines/make.sh [path/to/tracegate]
# Each baseline comes from `tracegate synth --seed 1`; the gate's tests check other seeds against it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/tracegate}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make_one() { # scenario, baseline name, framework, extra `baseline new` options...
  local scenario=$1 name=$2 framework=$3
  shift 3
  "$bin" synth --scenario "$scenario" --seed 1 --out "$work/$scenario" 2>/dev/null
  "$bin" baseline new "$work/$scenario" --baseline "baselines/$name.toml" --force \
    --model DeepSeek-R1-0528 --framework "$framework" --concurrency 64 --moe-layers 58 \
    --source "tracegate synth --scenario $scenario --seed 1" "$@" >/dev/null
  # Say where the file comes from, above what `baseline new` writes.
  local file="baselines/$name.toml"
  { echo "# Shipped baseline, written by baselines/make.sh from \`tracegate synth --scenario $scenario --seed 1\`:"
    echo "# regenerate it there (decode iterations, host gap, batch and step mix included), not by hand."
    cat "$file"; } > "$file.tmp" && mv "$file.tmp" "$file"
  echo "$file"
}
make_one mi355x-dsr1-fp4-tp4 dsr1-fp4-mi355x-sglang-tp4-conc64 sglang --precision fp4 --tp 4 --ep 1
make_one b200-dsr1-fp4-tp4-ep4 dsr1-fp4-b200-sglang-tp4-ep4-conc64 sglang --precision fp4 --tp 4 --ep 4
make_one h200-dsr1-fp8-tp8 dsr1-fp8-h200-sglang-tp8-conc64 sglang --precision fp8 --tp 8 --ep 1
make_one mi325x-dsr1-fp8-tp8 dsr1-fp8-mi325x-sglang-tp8-conc64 sglang --precision fp8 --tp 8 --ep 1 \
  --image lmsysorg/sglang:v0.5.9-rocm700-mi30x
# Eager serving loops on the MI355X model: no annotations, forwards 0.1 to 4 ms apart. In their
# own directory: their traces do not tell the framework, so `--key framework=vllm` chooses them.
# `mode` (an extra key) tells the two apart: `check --baselines baselines/vllm --key mode=eager`.
make_one vllm-eager vllm/dsr1-fp4-mi355x-vllm-eager-tp4-conc64 vllm --precision fp4 --tp 4 --ep 1 \
  --meta mode=eager
make_one vllm-piecewise vllm/dsr1-fp4-mi355x-vllm-piecewise-tp4-conc64 vllm --precision fp4 --tp 4 --ep 1 \
  --meta mode=piecewise
# Speculative decoding (SGLang MTP) on the MI355X model, in its own directory: its decode step is a
# whole speculative iteration (draft forwards and the verify), not comparable with plain decode.
make_one mi355x-dsr1-fp4-tp4-mtp mtp/dsr1-fp4-mi355x-sglang-tp4-mtp-conc64 sglang --precision fp4 --tp 4 \
  --ep 1 --meta spec=mtp
# Stock vLLM v0.16+ (worker file names, the default execute_context_… annotation, vllm_version at
# the top level, the frontend's trace beside the workers'), full graphs: the version is recorded
# from the trace, `mode=stock` tells it from the eager loops.
make_one vllm-stock vllm/dsr1-fp4-mi355x-vllm-stock-tp4-conc64 vllm --precision fp4 --tp 4 --ep 1 \
  --meta mode=stock
