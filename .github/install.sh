#!/usr/bin/env bash
# Installs tracegate for the composite action (action.yml), as fast as the action's ref allows:
#
#   1. TRACEGATE_VERSION set: `cargo install --locked tracegate --version` from crates.io.
#   2. TRACEGATE_BUILD_FROM_SOURCE=true: `cargo install --locked --path` of the action's checkout.
#   3. Otherwise the prebuilt static binary of the action's own release (release.yml), its
#      SHA-256 checked against the release's .sha256 file. A checksum that does not match, or
#      that cannot be fetched, is refused: exit 1 and nothing installed (never a fallback, which
#      would hide a tampered release). When the ref has no release (a branch, a commit, a tag
#      without assets, `uses: ./`) or the platform has no prebuilt binary, it builds from source
#      as in 2.
#
# Environment (action.yml sets them; tests point TRACEGATE_RELEASES_URL at a local server):
#   TRACEGATE_SOURCE        the action's checkout (Cargo.toml, sources); required
#   TRACEGATE_REF           the ref the action was used at (github.action_ref); empty for `uses: ./`
#   TRACEGATE_REPOSITORY    OWNER/NAME of the action (github.action_repository)
#   TRACEGATE_RELEASES_URL  server of the release downloads (default $GITHUB_SERVER_URL, else
#                           https://github.com): URL/OWNER/NAME/releases/download/TAG/ASSET
#   TRACEGATE_INSTALL_ROOT  the binary goes to ROOT/bin/tracegate (default $CARGO_HOME or ~/.cargo)
#   TRACEGATE_BUILD_FROM_SOURCE, TRACEGATE_VERSION  as above
#   TRACEGATE_TARGET        override the target triple (default from uname)
# Writes `installed-from=release|source|crates.io` to $GITHUB_OUTPUT when it is set.
set -euo pipefail

say() { echo "tracegate install: $*" >&2; }
die() {
    say "$*"
    echo "::error title=tracegate install::$*"
    exit 1
}

src="${TRACEGATE_SOURCE:?TRACEGATE_SOURCE must name the action checkout}"
root="${TRACEGATE_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}"
bin="$root/bin/tracegate"

done_with() {
    local version
    version="$("$bin" --version)" || die "the installed $bin does not run"
    say "installed $version from $1 at $bin"
    if [ -n "${GITHUB_OUTPUT:-}" ]; then
        echo "installed-from=$1" >>"$GITHUB_OUTPUT"
    fi
    exit 0
}

from_source() {
    say "building from source: $1"
    cargo install --locked --path "$src" --root "$root"
    done_with source
}

if [ -n "${TRACEGATE_VERSION:-}" ]; then
    cargo install --locked tracegate --version "$TRACEGATE_VERSION" --root "$root"
    done_with crates.io
fi
if [ "${TRACEGATE_BUILD_FROM_SOURCE:-false}" = "true" ]; then
    from_source "build-from-source is true"
fi

# The release of this ref. Release tags are vX.Y.Z, equal to Cargo.toml's version (release.yml
# refuses any other). A moving tag (v1, v1.2) points at a release commit, whose Cargo.toml
# version names the release to download; anything else has no release.
ref="${TRACEGATE_REF:-}"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$src/Cargo.toml" | head -n 1)"
if [[ "$ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    tag="$ref"
elif [[ "$ref" =~ ^v([0-9]+(\.[0-9]+)?)$ ]] && [[ "$version." == "${BASH_REMATCH[1]}."* ]]; then
    tag="v$version"
else
    from_source "the action's ref '${ref}' is not a release tag"
fi
if [ -z "${TRACEGATE_REPOSITORY:-}" ]; then
    from_source "the action's repository is unknown"
fi

target="${TRACEGATE_TARGET:-}"
if [ -z "$target" ]; then
    case "$(uname -s)/$(uname -m)" in
        Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl ;;
        Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl ;;
        *) from_source "no prebuilt binary for $(uname -s)/$(uname -m)" ;;
    esac
fi

asset="tracegate-$target.tar.gz"
url="${TRACEGATE_RELEASES_URL:-${GITHUB_SERVER_URL:-https://github.com}}"
url="$url/$TRACEGATE_REPOSITORY/releases/download/$tag"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Prints the HTTP status of downloading URL to FILE ("000": no answer).
fetch() {
    curl --silent --show-error --location --retry 3 --connect-timeout 10 --max-time 300 \
        --output "$2" --write-out '%{http_code}' "$1" || true
}

status="$(fetch "$url/$asset" "$tmp/$asset")"
if [ "$status" != 200 ]; then
    from_source "no release asset $url/$asset (HTTP $status)"
fi
status="$(fetch "$url/$asset.sha256" "$tmp/$asset.sha256")"
if [ "$status" != 200 ]; then
    die "refusing $asset: its checksum file $url/$asset.sha256 cannot be fetched (HTTP $status)"
fi
expected="$(cut -d ' ' -f 1 "$tmp/$asset.sha256")"
actual="$(sha256sum "$tmp/$asset" | cut -d ' ' -f 1)"
if [[ ! "$expected" =~ ^[0-9a-f]{64}$ ]]; then
    die "refusing $asset: $asset.sha256 holds no SHA-256"
fi
if [ "$expected" != "$actual" ]; then
    die "refusing $asset: SHA-256 $actual does not match the release's $expected"
fi
tar -xzf "$tmp/$asset" -C "$tmp" tracegate
mkdir -p "$root/bin"
install -m 755 "$tmp/tracegate" "$bin"
done_with release
