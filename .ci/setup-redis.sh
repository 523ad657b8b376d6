#!/usr/bin/env bash
# Installs redis-server (the Debian package) for the tests that need a real Redis (test/scale/).
# It only installs: each test starts its own server on a random loopback port, without
# persistence, and stops it. Idempotent; exits non-zero if the install fails.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
  echo "redis-server is installed: $(redis-server --version)"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends redis-server >/dev/null
echo "redis-server installed: $(redis-server --version)"
