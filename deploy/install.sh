#!/usr/bin/env bash
# Installs (or upgrades) xiaozhi-hub on Linux with systemd, e.g. a Raspberry
# Pi with Raspberry Pi OS, in one line:
#
#   curl -fsSL https://raw.githubusercontent.com/xiaozhi-hub/hub/main/deploy/install.sh | sudo bash
#
# It downloads the release archive for this machine (linux amd64, arm64 or
# armv7) and SHA256SUMS from the project's GitHub releases,
#   $XZ_HUB_RELEASES/latest/download/xiaozhi-hub_linux_<arch>.tar.gz
#   $XZ_HUB_RELEASES/download/<version>/xiaozhi-hub_linux_<arch>.tar.gz
# (XZ_HUB_RELEASES defaults to https://github.com/xiaozhi-hub/hub/releases),
# checks its SHA-256, and installs:
#   /usr/local/bin/xiaozhi-hub                 the binary (replaced)
#   /etc/systemd/system/xiaozhi-hub.service    the unit (replaced), enabled and (re)started
#   /etc/xiaozhi-hub/hub.yaml                  settings, root's, 0600 (kept if present)
#   /var/lib/xiaozhi-hub                       the data, 0700, of the system user xiaozhi-hub
# Run again to upgrade: settings and data are kept.
#
# Environment: XZ_HUB_VERSION=v1.2.3 (default: the latest release),
# XZ_HUB_RELEASES (another base URL: a mirror, or file:///path for a local
# copy laid out the same way). Needs bash, curl or wget, sha256sum, tar.
set -euo pipefail

releases=${XZ_HUB_RELEASES:-https://github.com/xiaozhi-hub/hub/releases}
version=${XZ_HUB_VERSION:-latest}
user=xiaozhi-hub
bin=/usr/local/bin/xiaozhi-hub
etc=/etc/xiaozhi-hub
data=/var/lib/xiaozhi-hub
unit=/etc/systemd/system/xiaozhi-hub.service

say() { printf 'xiaozhi-hub install: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# The release's name for this machine. The binaries are static, so the
# kernel's architecture is what counts (a 64-bit kernel under a 32-bit
# Raspberry Pi OS runs the arm64 binary).
release_arch() {
  case $(uname -m) in
    x86_64 | amd64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    armv7l | armv8l) echo armv7 ;;
    armv6l) die "ARMv6 (Raspberry Pi 1 and Zero) is not supported: the release is built for ARMv7 and newer" ;;
    *) die "no release for this machine ($(uname -m)); build from source: see docs/install.md" ;;
  esac
}

# fetch URL FILE
fetch() {
  if command -v curl >/dev/null; then
    curl -fsSL --proto '=https,file' --retry 3 -o "$2" "$1"
  elif command -v wget >/dev/null; then
    case $1 in https://*) ;; *) die "wget only fetches https URLs: $1" ;; esac
    wget -q -O "$2" "$1"
  else
    die "needs curl or wget"
  fi || die "could not download $1"
}

main() {
  [ "$(uname -s)" = Linux ] || die "this installs on Linux; see docs/install.md for macOS and Windows"
  [ "$(id -u)" = 0 ] || die "run as root (… | sudo bash)"
  for c in sha256sum tar install useradd; do
    command -v "$c" >/dev/null || die "needs $c"
  done
  case $version in
    latest) base=$releases/latest/download ;;
    *) [[ $version =~ ^[A-Za-z0-9._+-]+$ ]] || die "XZ_HUB_VERSION=$version is not a version"
       base=$releases/download/$version ;;
  esac

  local name tmp
  name=xiaozhi-hub_linux_$(release_arch)
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064 # expand $tmp now
  trap "rm -rf '$tmp'" EXIT

  say "downloading $base/$name.tar.gz"
  fetch "$base/$name.tar.gz" "$tmp/$name.tar.gz"
  fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS"
  # The line for this archive, and the archive's hash must be that.
  local want got
  want=$(awk -v f="$name.tar.gz" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")
  [ -n "$want" ] || die "SHA256SUMS does not list $name.tar.gz"
  got=$(sha256sum "$tmp/$name.tar.gz" | cut -d' ' -f1)
  [ "$got" = "$want" ] || die "SHA-256 of $name.tar.gz is $got, SHA256SUMS says $want: not installing"
  say "SHA-256 verified ($got)"

  tar -xzf "$tmp/$name.tar.gz" -C "$tmp" --no-same-owner
  local new=$tmp/$name
  for f in xiaozhi-hub xiaozhi-hub.service hub.yaml; do
    [ -f "$new/$f" ] || die "the archive has no $name/$f"
  done

  # The system user the hub runs as (no login, no home of its own).
  if ! getent passwd "$user" >/dev/null; then
    local nologin
    nologin=$(command -v nologin || echo /usr/sbin/nologin)
    local group=--user-group
    if getent group "$user" >/dev/null; then group="--gid=$user"; fi
    useradd --system "$group" --home-dir "$data" --no-create-home --shell "$nologin" "$user"
    say "created the system user $user"
  fi

  # Replace the binary by a rename (a running hub keeps its file), once the
  # new one has run here.
  install -m 0755 "$new/xiaozhi-hub" "$bin.new"
  "$bin.new" version >/dev/null || { rm -f "$bin.new"; die "the downloaded binary does not run on this machine"; }
  mv -f "$bin.new" "$bin"
  install -d -m 0750 "$etc"
  if [ ! -e "$etc/hub.yaml" ]; then
    install -m 0600 "$new/hub.yaml" "$etc/hub.yaml"
    say "wrote $etc/hub.yaml (all defaults; edit it, then: systemctl restart xiaozhi-hub)"
  else
    say "kept $etc/hub.yaml"
  fi
  # A symlink here is an earlier DynamicUser= install: systemd moves its data
  # back and gives it to $user at the next start.
  if [ ! -L "$data" ]; then
    install -d -m 0700 -o "$user" -g "$user" "$data"
  fi
  install -m 0644 "$new/xiaozhi-hub.service" "$unit"

  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable --quiet xiaozhi-hub
    systemctl restart xiaozhi-hub
    say "$("$bin" version | head -1) is running: systemctl status xiaozhi-hub"
  else
    # No running systemd (a container, a chroot): enable it for the next boot.
    systemctl --root=/ enable --quiet xiaozhi-hub 2>/dev/null ||
      say "could not enable the unit: systemctl enable xiaozhi-hub"
    say "$("$bin" version | head -1) installed; systemd is not running here, so it was not started"
  fi
  say "the admin token is in $data/api-token (sudo cat $data/api-token); the dashboard is on port 8000"
}

main "$@"
