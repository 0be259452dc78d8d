#!/usr/bin/env bash
# Packs a release binary the way release.yml publishes it and .github/install.sh reads it:
# OUTDIR/tracegate-TARGET.tar.gz (tracegate, LICENSE and README.md at the top level) and
# OUTDIR/tracegate-TARGET.tar.gz.sha256 (`sha256sum` format: HASH, two spaces, file name).
# Usage: package.sh BINARY TARGET OUTDIR
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 BINARY TARGET OUTDIR" >&2
    exit 2
fi
binary="$1" target="$2" out="$3"
repo="$(cd "$(dirname "$0")/.." && pwd)"
asset="tracegate-$target.tar.gz"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
install -m 755 "$binary" "$stage/tracegate"
cp "$repo/LICENSE" "$repo/README.md" "$stage/"
mkdir -p "$out"
# The same bytes for the same inputs: fixed order, owner and times.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -C "$stage" -cf - tracegate LICENSE README.md | gzip -n -9 >"$out/$asset"
(cd "$out" && sha256sum "$asset" >"$asset.sha256")
echo "$out/$asset"
