#!/usr/bin/env bash
# Installs the pinned Claude Code CLI for `make e2e` into .e2e/node_modules
# (from the npm registry, nothing else), and prints the path of the real
# binary. Idempotent: does nothing when that version is already there.
#   CLAUDE_CODE_VERSION=2.1.x scripts/install-claude.sh   to try another pin
set -euo pipefail
. "$(dirname "$0")/lib/npm-pin.sh"
version=${CLAUDE_CODE_VERSION:-2.1.328}

plat=$(npm_platform)
# musl systems get the -musl build.
if [ "$plat" = linux-x64 ] || [ "$plat" = linux-arm64 ]; then
  # (Captured first: grep -q closing the pipe early would fail it under pipefail.)
  libc=$(ldd --version 2>&1 || true)
  case "$libc" in *GLIBC*|*glibc*|*"GNU libc"*) ;; *) plat=$plat-musl ;; esac
fi
npm_pin install-claude @anthropic-ai/claude-code "$version" \
  "$e2e_prefix/node_modules/@anthropic-ai/claude-code-$plat/claude" \
  "@anthropic-ai/claude-code-$plat@$version" "$version *"
