#!/usr/bin/env bash
# Installs bubblewrap (bwrap), which `implloop run --sandbox` uses on Linux
# and its tests run for real, from the system's packages, and prints its
# path. Idempotent: does nothing when bwrap is already on PATH. Not needed
# on macOS (sandbox-exec is part of it): prints nothing there.
set -euo pipefail
if [ "$(uname -s)" != Linux ]; then
  exit 0
fi
if p=$(command -v bwrap); then
  echo "$p"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
if command -v apt-get >/dev/null; then
  echo "install-bwrap: installing bubblewrap (apt-get)" >&2
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends bubblewrap >&2
elif command -v dnf >/dev/null; then
  echo "install-bwrap: installing bubblewrap (dnf)" >&2
  $sudo dnf install -y -q bubblewrap >&2
elif command -v apk >/dev/null; then
  echo "install-bwrap: installing bubblewrap (apk)" >&2
  $sudo apk add -q bubblewrap >&2
else
  echo "install-bwrap: no bwrap on PATH and no apt-get, dnf or apk; install bubblewrap" >&2
  exit 1
fi
command -v bwrap
