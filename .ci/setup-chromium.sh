#!/usr/bin/env bash
# Installs Debian's chromium for `npm run test:browser` (playwright-core drives it; it downloads
# no browser of its own). Idempotent: does nothing when a chromium is already installed.
# Prints the path of the browser; CHROMIUM_PATH (if set) names the one to check.
set -euo pipefail

want="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$want" ]; then
  echo "$want"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup-chromium: not root and no sudo; install chromium yourself" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq chromium fonts-liberation >/dev/null

if [ ! -x "$want" ]; then
  echo "setup-chromium: chromium was installed but $want is not there; set CHROMIUM_PATH" >&2
  exit 1
fi
"$want" --version >&2 || true
echo "$want"
