#!/usr/bin/env bash
# Installs the pinned Claude Code CLI for `make e2e` into .e2e/node_modules
# (from the npm registry, nothing else), and prints the path of the real
# binary. Idempotent: does nothing when that version is already there.
#   CLAUDE_CODE_VERSION=2.1.x scripts/install-claude.sh   to try another pin
set -euo pipefail
version=${CLAUDE_CODE_VERSION:-2.1.328}
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$root/.e2e
pkg=$prefix/node_modules/@anthropic-ai/claude-code

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64)  plat=linux-x64 ;;
  Linux-aarch64) plat=linux-arm64 ;;
  Darwin-x86_64) plat=darwin-x64 ;;
  Darwin-arm64)  plat=darwin-arm64 ;;
  *) echo "install-claude: unsupported platform $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
# musl systems get the -musl build.
if [ "$plat" = linux-x64 ] || [ "$plat" = linux-arm64 ]; then
  # (Captured first: grep -q closing the pipe early would fail it under pipefail.)
  libc=$(ldd --version 2>&1 || true)
  case "$libc" in *GLIBC*|*glibc*|*"GNU libc"*) ;; *) plat=$plat-musl ;; esac
fi
native=$prefix/node_modules/@anthropic-ai/claude-code-$plat/claude

installed_version() {
  # The version the package.json of $1 declares, or nothing.
  [ -f "$1/package.json" ] || return 0
  sed -n '/^[[:space:]]*"version":/{s/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p;q;}' "$1/package.json"
}

if [ "$(installed_version "$pkg")" = "$version" ] && [ -x "$native" ] &&
   case "$("$native" --version 2>/dev/null)" in "$version "*) true ;; *) false ;; esac; then
  echo "install-claude: @anthropic-ai/claude-code@$version already installed" >&2
else
  command -v npm >/dev/null || { echo "install-claude: npm is needed (apt-get install nodejs npm)" >&2; exit 1; }
  echo "install-claude: installing @anthropic-ai/claude-code@$version into $prefix" >&2
  mkdir -p "$prefix"
  # A package.json of our own keeps npm from walking up to another project.
  [ -f "$prefix/package.json" ] || printf '{"name":"implloop-e2e","private":true}\n' >"$prefix/package.json"
  npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
    "@anthropic-ai/claude-code@$version" >&2
  if [ ! -x "$native" ]; then
    # The platform package is an optional dependency; ask for it by name.
    npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
      "@anthropic-ai/claude-code-$plat@$version" >&2
  fi
  [ -x "$native" ] || { echo "install-claude: no binary at $native" >&2; exit 1; }
fi
got=$("$native" --version)
case "$got" in
  "$version "*) ;;
  *) echo "install-claude: $native says '$got', want $version" >&2; exit 1 ;;
esac
echo "$native"
