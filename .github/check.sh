#!/usr/bin/env bash
# The action's gate step (action.yml runs it; tests/it/action.rs runs it with a stand-in and the
# real tracegate, with hostile values in every input). Every input arrives through the
# environment, set by action.yml's `env:`, and reaches tracegate as one argument each: nothing
# here is evaluated, and only the traces input is split, into paths (globs expanded), passed
# after a `--` so that none of them can become an option.
#   TRACEGATE_TRACES              traces (split on white space, globs expanded)
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
#   TRACEGATE_SWEEP               sweep: verdict files or directories (split and confined as
#                                 traces are): run `tracegate sweep` over them instead of check
#   TRACEGATE_EXPECT              expect: configurations that must have a verdict, one per line
#                                 or comma-separated, each an --expect
#
# The runner reads every line the step prints as a possible workflow command, and
# $GITHUB_OUTPUT as `name=value` lines. So, as tracegate itself does (src/output.rs):
# - every message that holds outside text goes through `runner_safe` below, the script's copy of
#   src/output.rs's `runner_safe` over src/text.rs's `printable`: control characters escaped,
#   `::` at the start of a line and `##[` anywhere broken by a word joiner;
# - tracegate's standard error passes through the same filter (clap prints its usage errors,
#   which quote the arguments, as they are);
# - $GITHUB_OUTPUT is written in the heredoc form with a random delimiter, as the runner's
#   toolkit does, so that no value can add a line of its own.
set -euo pipefail

# Outside text as src/text.rs's `printable` shows it, on stdout: each control character (C0,
# DEL, C1), the line and paragraph separators and the bidirectional controls as an escape (`\n`,
# `\r`, `\t`, `\x1b`, `\x85`, `\u{202e}`). Byte-wise in the C locale: bash 3.2 (macOS) runs this
# too, and a UTF-8 character is matched by its bytes.
printable() {
    local LC_ALL=C
    local text="$1" i hex byte
    case "$text" in
        *[![:print:]]*) ;;
        *)
            printf '%s' "$text"
            return
            ;;
    esac
    # Unquoted on the right of `=`, replacements quoted: bash before 4.3 keeps the quotes of a
    # replacement inside a double-quoted expansion, and bash 5.2 substitutes an unquoted `&`.
    text=${text//$'\n'/'\n'}
    text=${text//$'\r'/'\r'}
    text=${text//$'\t'/'\t'}
    for i in 1 2 3 4 5 6 7 8 11 12 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 127; do
        hex="$(printf '%02x' "$i")"
        printf -v byte '%b' "\\x$hex"
        text=${text//"$byte"/"\\x$hex"}
    done
    case "$text" in
        *$'\xc2'*)
            # C1: U+0080 to U+009F, bytes C2 80 to C2 9F.
            for i in 8 9; do
                for byte in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
                    printf -v hex '%b' "\\xc2\\x$i$byte"
                    text=${text//"$hex"/"\\x$i$byte"}
                done
            done
            ;;
    esac
    case "$text" in
        *$'\xe2\x80'* | *$'\xe2\x81'* | *$'\xd8\x9c'*)
            # U+2028, U+2029, U+200E, U+200F, U+202A to U+202E (E2 80 xx), U+2066 to U+2069
            # (E2 81 xx), U+061C (D8 9C).
            for hex in 2028:80:a8 2029:80:a9 200e:80:8e 200f:80:8f 202a:80:aa 202b:80:ab \
                202c:80:ac 202d:80:ad 202e:80:ae 2066:81:a6 2067:81:a7 2068:81:a8 2069:81:a9; do
                printf -v byte '%b' "\\xe2\\x${hex:5:2}\\x${hex:8:2}"
                text=${text//"$byte"/"\\u{${hex:0:4}}"}
            done
            text=${text//$'\xd8\x9c'/'\u{61c}'}
            ;;
    esac
    printf '%s' "$text"
}

# src/output.rs's `runner_safe`, on stdout: line by line (line feeds kept), each part between
# tabs `printable`, then a word joiner (U+2060, invisible, not white space) before a `::` that
# starts a line after white space (what the runner trims) and inside every `##[`.
joiner=$'\xe2\x81\xa0'
runner_safe() {
    local LC_ALL=C
    local rest="$1" line part parts body out="" first=1
    while :; do
        line="${rest%%$'\n'*}"
        parts=""
        while :; do
            part="${line%%$'\t'*}"
            parts="$parts$(printable "$part")"
            [ "$part" != "$line" ] || break
            line="${line#*$'\t'}"
            parts="$parts"$'\t'
        done
        # The white space Rust's trim_start (and the runner's TrimStart) skips.
        body="$parts"
        while :; do
            case "$body" in
                [' '$'\t']*) body="${body:1}" ;;
                $'\xc2\xa0'*) body="${body:2}" ;;
                $'\xe1\x9a\x80'* | $'\xe2\x80'[$'\x80'-$'\x8a']* | $'\xe2\x80\xaf'* \
                    | $'\xe2\x81\x9f'* | $'\xe3\x80\x80'*) body="${body:3}" ;;
                *) break ;;
            esac
        done
        case "$body" in
            ::*) parts="${parts:0:${#parts}-${#body}}$joiner$body" ;;
        esac
        parts=${parts//'##['/"##${joiner}["}
        if [ "$first" = 1 ]; then
            out="$parts"
            first=0
        else
            out="$out"$'\n'"$parts"
        fi
        [ "$rest" != "${rest#*$'\n'}" ] || break
        rest="${rest#*$'\n'}"
    done
    printf '%s' "$out"
}

# A workflow command's message (src/github/actions.rs `escape_data`).
escape_data() {
    local text
    text=${1//%/'%25'}
    text=${text//$'\r'/'%0D'}
    printf '%s' "${text//$'\n'/%0A}"
}

# The error (an annotation and a line on stderr), exit 2. Outside text in the message is
# escaped by the caller with `printable`; the whole message goes through `runner_safe`.
fail() {
    local message
    message="$(runner_safe "$1")"
    echo "::error title=tracegate action::$(escape_data "$message")"
    echo "tracegate action: $message" >&2
    exit 2
}

# A step output, as the runner's toolkit writes one: `name<<ghadelimiter_RANDOM`, the value,
# the delimiter; 128 random bits from /dev/urandom, so no value can end it early.
set_output() {
    [ -n "${GITHUB_OUTPUT:-}" ] || return 0
    local delimiter
    delimiter="ghadelimiter_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
    [ "${#delimiter}" -eq 45 ] || fail "cannot read a random delimiter from /dev/urandom"
    case "$1$2" in
        *"$delimiter"*) fail "the output $1 holds its delimiter" ;;
    esac
    printf '%s<<%s\n%s\n%s\n' "$1" "$delimiter" "$2" "$delimiter" >> "$GITHUB_OUTPUT"
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
args=()
if [ -n "${TRACEGATE_SWEEP:-}" ]; then
    # Sweep mode: the verdicts of a matrix merged; the check's inputs have no place here.
    for input in TRACEGATE_TRACES TRACEGATE_BASELINE TRACEGATE_BASELINES TRACEGATE_KEY \
        TRACEGATE_HARDWARE TRACEGATE_RULES; do
        [ -z "${!input:-}" ] || fail "sweep merges verdict files: leave the check's inputs (traces, baseline, baselines, key, hardware, rules) empty"
    done
    expect="${TRACEGATE_EXPECT:-}"
    lines_of "${expect//,/$'\n'}"
    for name in ${lines[@]+"${lines[@]}"}; do
        args+=("--expect=$name")
    done
else
    if [ -n "$baseline" ] && [ -n "$baselines" ]; then
        fail "give baseline (one file) or baselines (a directory to pick from), not both"
    elif [ -z "$baseline" ] && [ -z "$baselines" ]; then
        fail "give baseline (one file) or baselines (a directory to pick from)"
    fi

    # Each value as `--option=VALUE`: a value that starts with `-` stays the option's value.
    if [ -n "$baseline" ]; then
        args+=("--baseline=$baseline")
    else
        args+=("--baselines=$baselines")
    fi
    lines_of "${TRACEGATE_KEY:-}"
    for pair in ${lines[@]+"${lines[@]}"}; do
        args+=("--key=$pair")
    done
    if [ -n "${TRACEGATE_HARDWARE:-}" ]; then
        args+=("--hardware=$TRACEGATE_HARDWARE")
    fi
    if [ -n "${TRACEGATE_RULES:-}" ]; then
        args+=("--rules=$TRACEGATE_RULES")
    fi
    case "${TRACEGATE_FAIL_ON_IMPROVEMENT:-false}" in
        true) args+=(--fail-on-improvement) ;;
        false | "") ;;
        *)
            fail "fail-on-improvement is true or false, not '$(printable "$TRACEGATE_FAIL_ON_IMPROVEMENT")'"
            ;;
    esac
fi
if [ -n "${RUN_IMAGE:-}" ]; then
    args+=("--image=$RUN_IMAGE")
fi
lines_of "${RUN_META:-}"
for pair in ${lines[@]+"${lines[@]}"}; do
    args+=("--meta=$pair")
done
lines_of "${TRACEGATE_ARGS:-}"
extra=(${lines[@]+"${lines[@]}"})

# The traces input: split on white space into paths, nothing else. A word with a glob character
# is expanded (no match: left as it is, and tracegate says it is missing); it must stay inside
# the workspace or the runner's temporary directory, the directories tracegate confines every
# path to (src/confine.rs, which judges each path it is given, symlinks followed): no `..`,
# absolute only under one of them. The paths go after `--`: none becomes an option.
workspace="${GITHUB_WORKSPACE:-$PWD}"
matches=()
glob() {
    # Word splitting off (IFS empty): the glob is the only expansion.
    local IFS=''
    # shellcheck disable=SC2206
    matches=($1)
}
# The words of input $1's value $2 as paths, into the array `found`.
found=()
paths_of() {
    local input="$1" word root inside
    local words=()
    IFS=$' \t\r\n' read -r -d '' -a words <<< "$2" || true
    found=()
    for word in ${words[@]+"${words[@]}"}; do
        case "$word" in
            *[][*?]*) ;;
            *)
                found+=("$word")
                continue
                ;;
        esac
        case "/$word/" in
            */../*) fail "$input: the glob '$(printable "$word")' leaves the workspace ('..')" ;;
        esac
        case "$word" in
            /*)
                inside=false
                for root in "$workspace" "${RUNNER_TEMP:-}"; do
                    case "$root" in
                        /*) ;;
                        *) continue ;;
                    esac
                    case "$word" in
                        "${root%/}"/*) inside=true ;;
                    esac
                done
                [ "$inside" = true ] ||
                    fail "$input: the glob '$(printable "$word")' is outside the workspace and the runner's temporary directory"
                ;;
        esac
        glob "$word"
        found+=("${matches[@]}")
    done
}

if [ -n "${TRACEGATE_SWEEP:-}" ]; then
    paths_of sweep "$TRACEGATE_SWEEP"
    [ "${#found[@]}" -gt 0 ] || fail "sweep is empty: give the verdict files or directories"
    verdicts=("${found[@]}")
else
    paths_of traces "${TRACEGATE_TRACES:-}"
    traces=(${found[@]+"${found[@]}"})
fi
[ -n "${TRACEGATE_SWEEP:-}" ] || [ "${#traces[@]}" -gt 0 ] ||
    fail "traces is empty: give the run's trace files or directories"

# The report and the verdict JSON: NAME.md and NAME.json under $RUNNER_TEMP/tracegate/, NAME
# the name input, else the baseline file's stem, else "verdict". In a matrix whose verdict
# artifacts are merged into one directory, give each job its own name (sweep names each
# configuration after the baseline its verdict records, whatever the file is called).
[ -n "${RUNNER_TEMP:-}" ] || fail "RUNNER_TEMP is not set: run this as the action's step"
out="$RUNNER_TEMP/tracegate"
mkdir -p "$out"
name="${TRACEGATE_NAME:-}"
from=""
if [ -z "$name" ]; then
    if [ -n "${TRACEGATE_SWEEP:-}" ]; then
        name=sweep
    elif [ -n "$baseline" ]; then
        name="$(basename "$baseline" .toml)"
        from=" (the baseline file's stem: give the name input)"
    else
        name=verdict
    fi
fi
case "$name" in
    */* | .* | "" | *[[:cntrl:]]*)
        fail "name '$(printable "$name")'$from must be a file name (no '/' or control character, not starting with '.')"
        ;;
esac

# tracegate's standard error, line by line through `runner_safe` (its own lines already are:
# the filter changes nothing in them). Its standard output, the report wrapped in
# ::stop-commands:: and its own workflow commands, goes through as it is.
safe_lines() {
    local LC_ALL=C
    local line
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
            *[![:print:]]* | *::* | *'##['*) printf '%s\n' "$(runner_safe "$line")" ;;
            *) printf '%s\n' "$line" ;;
        esac
    done
}

# The exit status is the verdict's: 0 pass, 1 regression, 2 could not judge. A sweep's report
# is `report-path` (tracegate announces its --output), its verdict the sweep's JSON.
exec 3>&1
set +e
if [ -n "${TRACEGATE_SWEEP:-}" ]; then
    tracegate sweep "${args[@]}" "--name=$name" \
        --github "--comment=${TRACEGATE_COMMENT:-on-regression}" \
        "--output=$out/$name.md" ${extra[@]+"${extra[@]}"} \
        -- "${verdicts[@]}" 2>&1 1>&3 3>&- | safe_lines >&2
else
    tracegate check "${args[@]}" \
        --github "--comment=${TRACEGATE_COMMENT:-on-regression}" \
        "--output=$out/$name.md" "--verdict-out=$out/$name.json" ${extra[@]+"${extra[@]}"} \
        -- "${traces[@]}" 2>&1 1>&3 3>&- | safe_lines >&2
fi
status="${PIPESTATUS[0]}"
set -e
exec 3>&-
if [ -f "$out/$name.json" ]; then
    set_output verdict-path "$out/$name.json"
fi
exit "$status"
