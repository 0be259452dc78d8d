#!/usr/bin/env bash
# The action's gate step (action.yml runs it; tests/it/action.rs runs it with a stand-in and the
# real tracegate). Every input arrives through the environment, set by action.yml's `env:`, and
# reaches tracegate as one argument each: nothing here is evaluated, and only the traces input
# is split into words and globs (documented: several paths in one input).
#   TRACEGATE_TRACES              traces (split on whitespace, globs expanded)
#   TRACEGATE_BASELINE            baseline: one baseline file
#   TRACEGATE_BASELINES           baselines: a directory to pick the matching baseline from
#   TRACEGATE_KEY                 key: KEY=VALUE lines, each a --key
#   TRACEGATE_HARDWARE            hardware: --hardware NAME
#   TRACEGATE_RULES               rules: --rules FILE
#   TRACEGATE_FAIL_ON_IMPROVEMENT fail-on-improvement: true or false
#   TRACEGATE_ARGS                args: more arguments, one per line
#   TRACEGATE_NAME                name: the report and verdict file stem
#   TRACEGATE_COMMENT             comment: off, always or on-regression
#   RUN_IMAGE, RUN_META           image, meta (not TRACEGATE_IMAGE/_META_*, which tracegate reads)
set -euo pipefail

fail() {
    echo "::error title=tracegate action::$1"
    echo "tracegate action: $1" >&2
    exit 2
}

# The lines of $1 into the array `lines`, blank lines (and a trailing CR) dropped. No
# namerefs or mapfile: bash 3.2 (macOS) runs this too.
lines=()
lines_of() {
    local line
    lines=()
    while IFS= read -r line || [ -n "$line" ]; do
        line="${line%$'\r'}"
        if [ -n "${line//[[:space:]]/}" ]; then
            lines+=("$line")
        fi
    done <<< "$1"
}

baseline="${TRACEGATE_BASELINE:-}"
baselines="${TRACEGATE_BASELINES:-}"
if [ -n "$baseline" ] && [ -n "$baselines" ]; then
    fail "give baseline (one file) or baselines (a directory to pick from), not both"
elif [ -z "$baseline" ] && [ -z "$baselines" ]; then
    fail "give baseline (one file) or baselines (a directory to pick from)"
fi

args=()
if [ -n "$baseline" ]; then
    args+=(--baseline "$baseline")
else
    args+=(--baselines "$baselines")
fi
lines_of "${TRACEGATE_KEY:-}"
for pair in ${lines[@]+"${lines[@]}"}; do
    args+=(--key "$pair")
done
if [ -n "${TRACEGATE_HARDWARE:-}" ]; then
    args+=(--hardware "$TRACEGATE_HARDWARE")
fi
if [ -n "${TRACEGATE_RULES:-}" ]; then
    args+=(--rules "$TRACEGATE_RULES")
fi
case "${TRACEGATE_FAIL_ON_IMPROVEMENT:-false}" in
    true) args+=(--fail-on-improvement) ;;
    false | "") ;;
    *) fail "fail-on-improvement is true or false, not '$TRACEGATE_FAIL_ON_IMPROVEMENT'" ;;
esac
if [ -n "${RUN_IMAGE:-}" ]; then
    args+=(--image "$RUN_IMAGE")
fi
lines_of "${RUN_META:-}"
for pair in ${lines[@]+"${lines[@]}"}; do
    args+=(--meta "$pair")
done
lines_of "${TRACEGATE_ARGS:-}"
extra=(${lines[@]+"${lines[@]}"})

# The report and the verdict JSON: NAME.md and NAME.json under $RUNNER_TEMP/tracegate/, NAME
# the name input, else the baseline file's stem, else "verdict". In a matrix whose verdict
# artifacts are merged into one directory, give each job its own name (sweep names each
# configuration after the baseline its verdict records, whatever the file is called).
[ -n "${RUNNER_TEMP:-}" ] || fail "RUNNER_TEMP is not set: run this as the action's step"
out="$RUNNER_TEMP/tracegate"
mkdir -p "$out"
name="${TRACEGATE_NAME:-}"
if [ -z "$name" ]; then
    if [ -n "$baseline" ]; then
        name="$(basename "$baseline" .toml)"
    else
        name=verdict
    fi
fi
case "$name" in
    */* | .* | "") fail "name '$name' must be a file name (no '/', not starting with '.')" ;;
esac

# Word splitting and globbing of the traces input are wanted here.
# shellcheck disable=SC2206
traces=($TRACEGATE_TRACES)
status=0
# The exit status is the verdict's: 0 pass, 1 regression, 2 could not judge.
tracegate check ${traces[@]+"${traces[@]}"} "${args[@]}" \
    --github --comment "${TRACEGATE_COMMENT:-on-regression}" \
    --output "$out/$name.md" --verdict-out "$out/$name.json" ${extra[@]+"${extra[@]}"} || status=$?
if [ -f "$out/$name.json" ]; then
    echo "verdict-path=$out/$name.json" >> "${GITHUB_OUTPUT:-/dev/null}"
fi
exit "$status"
