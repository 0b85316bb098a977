#!/usr/bin/env bash
# Tries deploy/install.sh on this machine without changing it:
#
#   scripts/test-install.sh DIST      (DIST: what scripts/release.sh -o DIST made)
#
# As root, in a private mount namespace where /etc, /usr/local/bin and
# /var/lib are overlays on a tmpfs (gone when it ends), it installs from DIST
# as the releases URL (file://), checks what install.sh promises (user, files,
# owners, modes, the unit enabled), changes the settings file, installs again
# and checks they were kept, runs the hub as the unit would (the settings
# copied as a credential, as user xiaozhi-hub, on the data directory) until
# /healthz answers, and checks that a wrong SHA-256 installs nothing.
# Systemd itself is not started (containers have none): the unit is checked
# by TestSystemdUnit. Exits 0 with "skipped" when it cannot make the
# namespace (not root, no unshare or overlay).
set -euo pipefail
cd "$(dirname "$0")/.."
dist=$(cd "${1:?usage: scripts/test-install.sh DIST}" && pwd)

if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
  echo "test-install: skipped (needs root and unshare -m)"
  exit 0
fi
# A releases tree: latest/download is DIST; "bad" has a wrong SHA256SUMS.
rel=$(mktemp -d)
trap 'rm -rf "$rel"' EXIT
mkdir -p "$rel/good/latest" "$rel/bad/latest/download"
ln -s "$dist" "$rel/good/latest/download"
cp "$dist"/*.tar.gz "$rel/bad/latest/download/"
sed 's/^[0-9a-f]/x/' "$dist/SHA256SUMS" >"$rel/bad/latest/download/SHA256SUMS"

unshare -m bash -s "$PWD" "$rel" <<'INNER'
set -euo pipefail
wt=$1 rel=$2
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }
mount --make-rprivate /
scratch=$(mktemp -d)
mount -t tmpfs tmpfs "$scratch"
for d in /etc /usr/local/bin /var/lib; do
  n=$(echo "$d" | tr / _)
  mkdir -p "$scratch/up$n" "$scratch/wk$n"
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$scratch/up$n,workdir=$scratch/wk$n" "$d" ||
    { echo "test-install: skipped (no overlay mounts here)"; exit 0; }
done
# Test runs must not see an earlier install of this machine.
if getent passwd xiaozhi-hub >/dev/null || [ -e /etc/xiaozhi-hub ]; then
  echo "test-install: skipped (xiaozhi-hub is installed on this machine)"; exit 0
fi

expect() { # path owner:group mode
  [ "$(stat -c '%U:%G %a' "$1")" = "$2 $3" ] || fail "$1 is $(stat -c '%U:%G %a' "$1"), want $2 $3"
}

if XZ_HUB_RELEASES=file://$rel/bad bash "$wt/deploy/install.sh" 2>"$scratch/err"; then
  fail "installed despite a wrong SHA-256"
fi
grep -q 'SHA256SUMS says' "$scratch/err" || fail "a wrong SHA-256 was refused without saying so: $(cat "$scratch/err")"
[ ! -e /usr/local/bin/xiaozhi-hub ] && ! getent passwd xiaozhi-hub >/dev/null ||
  fail "a refused install left files or the user behind"

for run in 1 2; do
  XZ_HUB_RELEASES=file://$rel/good bash "$wt/deploy/install.sh"
  getent passwd xiaozhi-hub | grep -q ':/var/lib/xiaozhi-hub:.*nologin$' || fail "user: $(getent passwd xiaozhi-hub)"
  expect /usr/local/bin/xiaozhi-hub root:root 755
  expect /etc/xiaozhi-hub root:root 750
  expect /etc/xiaozhi-hub/hub.yaml root:root 600
  expect /var/lib/xiaozhi-hub xiaozhi-hub:xiaozhi-hub 700
  expect /etc/systemd/system/xiaozhi-hub.service root:root 644
  cmp -s /etc/systemd/system/xiaozhi-hub.service "$wt/deploy/xiaozhi-hub.service" || fail "the unit is not deploy/'s"
  [ -L /etc/systemd/system/multi-user.target.wants/xiaozhi-hub.service ] || fail "the unit is not enabled"
  /usr/local/bin/xiaozhi-hub version | head -1
  [ "$run" = 2 ] || echo "# kept across installs" >>/etc/xiaozhi-hub/hub.yaml
done
grep -q '^# kept across installs$' /etc/xiaozhi-hub/hub.yaml || fail "the second install replaced hub.yaml"

# The hub as the unit runs it: its own copy of the settings, as xiaozhi-hub.
creds=$(mktemp -d)
cp /etc/xiaozhi-hub/hub.yaml "$creds/"
chown -R xiaozhi-hub "$creds"
port=18$((RANDOM % 900 + 100))
runuser -u xiaozhi-hub -- /usr/local/bin/xiaozhi-hub serve --config "$creds/hub.yaml" \
  --data-dir /var/lib/xiaozhi-hub --listen "127.0.0.1:$port" >"$scratch/serve.log" 2>&1 &
pid=$!
ok=
for _ in $(seq 1 120); do
  if /usr/local/bin/xiaozhi-hub healthcheck --url "http://127.0.0.1:$port" >/dev/null 2>&1; then ok=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.5
done
kill "$pid" 2>/dev/null || true
wait "$pid" || true
[ -n "$ok" ] || fail "the installed hub did not answer /healthz as xiaozhi-hub: $(tail -5 "$scratch/serve.log")"
expect /var/lib/xiaozhi-hub/api-token xiaozhi-hub:xiaozhi-hub 600
echo "test-install: ok (refused a wrong SHA-256; installed twice, settings kept; served as xiaozhi-hub)"
INNER
