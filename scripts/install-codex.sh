#!/usr/bin/env bash
# Installs the pinned OpenAI Codex CLI for `make e2e` into .e2e/node_modules
# (from the npm registry, nothing else), and prints the path of its `codex`
# command (the package's launcher, as `npm install -g` puts it on PATH; it
# runs the native build from the platform package). Idempotent: does
# nothing when that version is already there.
#   CODEX_VERSION=0.1xx.0 scripts/install-codex.sh   to try another pin
set -euo pipefail
. "$(dirname "$0")/lib/npm-pin.sh"
version=${CODEX_VERSION:-0.169.0}

plat=$(npm_platform)
# The native build is an optional dependency under an alias:
# @openai/codex-linux-x64 is @openai/codex@VERSION-linux-x64.
npm_pin install-codex @openai/codex "$version" \
  "$e2e_prefix/node_modules/@openai/codex/bin/codex.js" \
  "@openai/codex-$plat@npm:@openai/codex@$version-$plat" "codex-cli $version"
