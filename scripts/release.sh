#!/usr/bin/env bash
# Builds xiaozhi-hub for the machines people run it on and packs the release:
#
#   scripts/release.sh [-o DIR] [-v VERSION]
#
# DIR (default dist/) receives one archive per platform and SHA256SUMS:
#   xiaozhi-hub_linux_amd64.tar.gz   xiaozhi-hub_linux_arm64.tar.gz
#   xiaozhi-hub_linux_armv7.tar.gz   (Raspberry Pi 2/3/4/5 with a 32-bit system)
#   xiaozhi-hub_darwin_arm64.tar.gz  xiaozhi-hub_darwin_amd64.tar.gz
#   xiaozhi-hub_windows_amd64.zip
# Each holds the binary, deploy/xiaozhi-hub.service and deploy/hub.yaml (what
# deploy/install.sh installs). The names carry no version, so that
# https://github.com/xiaozhi-hub/hub/releases/latest/download/<name> always
# names the newest one; the binary carries it (`xiaozhi-hub version`).
#
# VERSION defaults to `git describe --tags --always --dirty`; it
# becomes server.Version, which devices and MCP clients are told. The builds
# are static (CGO_ENABLED=0; SQLite is pure Go), -trimpath, and stripped.
# .ci/run runs this script and then checks every binary's format with
# XZ_CROSSBUILD_DIR=DIR go test ./cmd/xiaozhi-hub -run TestCrossBuilds.
set -euo pipefail
cd "$(dirname "$0")/.."

# os/arch[/GOARM] and the name it is published under.
targets=(
  "linux/amd64 linux_amd64"
  "linux/arm64 linux_arm64"
  "linux/arm/7 linux_armv7"
  "darwin/arm64 darwin_arm64"
  "darwin/amd64 darwin_amd64"
  "windows/amd64 windows_amd64"
)

out=dist version=''
while getopts "o:v:h" opt; do
  case $opt in
    o) out=$OPTARG ;;
    v) version=$OPTARG ;;
    h) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) sed -n '2,20s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
done
if [ -z "$version" ]; then
  version=$(git describe --tags --always --dirty 2>/dev/null) ||
    { echo "release.sh: no git to name the version: pass -v VERSION" >&2; exit 2; }
fi
# The version goes into -ldflags -X: no spaces or quotes.
if ! [[ $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$ ]]; then
  echo "release.sh: version '$version' must be letters, digits and . _ + - (at most 64)" >&2
  exit 2
fi
revision=$(git rev-parse HEAD 2>/dev/null || true)
# Archives get the commit's time (reproducible), or now outside git.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ldflags="-s -w -X github.com/xiaozhi-hub/hub/server.Version=$version -X main.buildRevision=$revision"

# build os/arch[/arm] name: one static binary in $work/xiaozhi-hub_<name>/.
build() {
  local goos goarch goarm dir exe=xiaozhi-hub
  IFS=/ read -r goos goarch goarm <<<"$1"
  dir=$work/xiaozhi-hub_$2
  [ "$goos" = windows ] && exe=xiaozhi-hub.exe
  mkdir -p "$dir"
  # -buildvcs=false: the revision is passed above, and VCS stamping fails in
  # checkouts git does not trust (another owner) and in exported trees.
  if ! CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch GOARM=$goarm \
    go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$dir/$exe" ./cmd/xiaozhi-hub; then
    echo "release.sh: $1 does not build" >&2
    return 1
  fi
  cp deploy/xiaozhi-hub.service deploy/hub.yaml "$dir/"
  echo "built $2 ($1)"
}

# One after the other: each `go build` already uses every core. Every
# platform is tried, so that one run names all that fail.
failed=()
for t in "${targets[@]}"; do
  # shellcheck disable=SC2086 # "os/arch name": two words on purpose
  build $t || failed+=("${t% *}")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "release.sh: does not build for ${failed[*]}" >&2
  exit 1
fi

# Pack: tar.gz (zip for Windows), owner root and the commit's time in every
# entry (zip keeps local time: UTC), so that the same commit gives the same bytes.
find "$work" -exec touch -h -d "@$epoch" {} +
names=()
for t in "${targets[@]}"; do
  name=xiaozhi-hub_${t#* }
  if [[ $name == *windows* ]]; then
    rm -f "$out/$name.zip"
    if command -v zip >/dev/null; then
      (cd "$work" && TZ=UTC zip -qrX "$out/$name.zip" "$name")
    else
      (cd "$work" && TZ=UTC python3 -m zipfile -c "$out/$name.zip" "$name")
    fi
    names+=("$name.zip")
  else
    tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mode=go-w \
      -cf - "$name" | gzip -n >"$out/$name.tar.gz"
    names+=("$name.tar.gz")
  fi
done
(cd "$out" && sha256sum "${names[@]}" >SHA256SUMS)
echo "release $version in $out:"
(cd "$out" && cat SHA256SUMS)
