#!/usr/bin/env bash
# Installs headless Chromium for `make browser` (the HTML report's tests in
# a real browser) from the system's packages, and prints its path.
# Idempotent: does nothing when a chromium is already on PATH.
#   CHROMIUM=/path/to/chrome make browser   to use another build
set -euo pipefail
if [ -n "${CHROMIUM:-}" ]; then
  command -v "$CHROMIUM"
  exit 0
fi
for name in chromium chromium-browser; do
  if p=$(command -v "$name"); then
    echo "$p"
    exit 0
  fi
done
if command -v apt-get >/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "install-chromium: installing Debian's chromium (apt-get)" >&2
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
  command -v chromium
  exit 0
fi
echo "install-chromium: no chromium on PATH and no apt-get; install Chromium and set CHROMIUM" >&2
exit 1
