#!/usr/bin/env bash
# The hostile inputs of issue 21, cases 5-10, and of issue 27, D6 and D7, at full size: generates them into a temp dir and
# prints, for each, the exit status, the wall time and the peak RSS (/usr/bin/time), and the first
# line of what tracegate said. Every case must answer in under 10 s (15 s for 10^6 names, 5 s for
# the pooled calls) and the huge strings must stay under --max-memory 1G; the renames (D6) in
# under 2 s, and --rules /dev/zero or a FIFO (D7) at once.
#
# usage: [LIMIT=60] [BEFORE_LIMIT=20] [HOSTILE_DIR=DIR] [CASES="8 9"] bench/hostile.sh [TRACEGATE] [BEFORE]   (default: target/release/tracegate; BEFORE, another
#        build, is run on the same inputs, each command cut at BEFORE_LIMIT s, default 20; the
#        build measured is cut at 60 s; CASES: the cases measured, default all; with HOSTILE_DIR,
#        `bench/hostile.py DIR TRACEGATE names calls` makes only what cases 8 and 9 read, and
#        `... renames` what D6 reads)
set -u
cd "$(dirname "$0")/.."
BIN=${1:-target/release/tracegate}
BEFORE=${2:-}
BASELINE=baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml
# HOSTILE_DIR: inputs generated before (by `bench/hostile.py DIR TRACEGATE`), kept.
if [ -n "${HOSTILE_DIR:-}" ]; then
  TMP=$HOSTILE_DIR
else
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/hostile.XXXXXX")
  trap 'rm -rf "$TMP"' EXIT
  echo "generating into $TMP ..." >&2
  python3 bench/hostile.py "$TMP" "$BIN" || exit 1
fi

measure() { # label binary args...
  local label=$1 bin=$2; shift 2
  local limit=${LIMIT:-60}
  [ "$bin" = "$BEFORE" ] && limit=${BEFORE_LIMIT:-20}
  /usr/bin/time -f "%e %M" -o "$TMP/time" timeout "$limit" "$bin" "$@" >/dev/null 2>"$TMP/err"
  local rc=$?
  # With a non-zero exit, time writes "Command exited with non-zero status N" first.
  read -r wall rss < <(tail -n 1 "$TMP/time") || { wall=?; rss=0; }
  [ "$rc" = 124 ] && wall=">$limit"
  printf '%-34s %-7s exit %-3s %8s s %8.1f MiB  %s\n' "$label" "$(basename "$bin")" "$rc" "$wall" \
    "$(awk -v k="${rss:-0}" 'BEGIN { print k / 1024 }')" "$(grep -v '^Command' "$TMP/err" | head -1 | cut -c1-150)"
}

both() { # label args...
  local label=$1; shift
  case " ${CASES:-5 6 7 8 9 10 D6 D7} " in *" ${label%% *} "*) ;; *) return ;; esac
  measure "$label" "$BIN" "$@"
  [ -n "$BEFORE" ] && measure "$label" "$BEFORE" "$@"
}

# 5, 6: rank counts and world sizes far beyond the files given.
both "5 world_size 2^32-1" extract "$TMP/world-2e32"
both "5 world_size 2^64-1" extract "$TMP/world-2e64"
both "6 TP-0 + TP-4000000000" extract "$TMP/tp-4e9"
# 7: huge strings, under --max-memory 1G.
both "7 name 128 MiB" --max-memory 1G inspect "$TMP/name-128m.json"
both "7 name 128 MiB, --max-string 256M" --max-memory 1G --max-string 256M inspect "$TMP/name-128m.json"
only() { # label args...: the build measured only
  case " ${CASES:-5 6 7 8 9 10 D6 D7} " in *" ${1%% *} "*) measure "$@" ;; esac
}
only "7 name 2 GiB" "$BIN" --max-memory 1G inspect "$TMP/name-2g.json"
only "7 name 2 GiB, --max-string 4G" "$BIN" --max-memory 1G --max-string 4G inspect "$TMP/name-2g.json"
only "7 args string 2 GiB" "$BIN" --max-memory 1G inspect "$TMP/args-2g.json"
only "7 unknown top-level key 2 GiB" "$BIN" --max-memory 1G inspect "$TMP/top-2g.json"
# 8: ~10^6 distinct kernel names against a small baseline.
both "8 extract, 10^6 names" extract "$TMP/names"
both "8 check, 10^6 names" check "$TMP/names" --baseline "$BASELINE" --no-github
# 9: pooled allreduce calls.
both "9 check, pooled calls" check "$TMP/pooled" --baseline "$BASELINE" --no-github
both "9 extract, pooled calls" extract "$TMP/pooled"
# 9 at 1.6 M calls: the lean run of hostile.py (allreduce kernels and a little compute per step).
both "9 check, 1.6 M pooled calls" check "$TMP/calls" --baseline "$BASELINE" --no-github
both "9 extract, 1.6 M pooled calls" extract "$TMP/calls"
# 10: an endless GitHub event payload, refused before anything is read (run through env).
only "10 GITHUB_EVENT_PATH=/dev/zero" env GITHUB_EVENT_PATH=/dev/zero GITHUB_TOKEN=t "$BIN" \
  check "$TMP/world-2e32" --baseline "$BASELINE" --github --repo o/r
# Issue 27, D6: renames of huge names, all of one function (every pair compared); each under 2 s.
for r in renames-60k renames-122 renames-122-head renames-10x30k; do
  [ -d "$TMP/$r" ] && both "D6 check, $r" check "$TMP/$r" --baseline "$TMP/$r.toml" --no-github
done
# D7: --rules from /dev/zero or a FIFO no one writes, refused at once (exit 2).
only "D7 --rules /dev/zero" "$BIN" check "$TMP/world-2e32" --baseline "$BASELINE" --rules /dev/zero --no-github
[ -p "$TMP/rules.fifo" ] || mkfifo "$TMP/rules.fifo"
only "D7 --rules FIFO" "$BIN" check "$TMP/world-2e32" --baseline "$BASELINE" --rules "$TMP/rules.fifo" --no-github
