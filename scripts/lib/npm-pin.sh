# Sourced by scripts/install-*.sh: installs one pinned CLI from the npm
# registry (nothing else) into .e2e/node_modules for `make e2e`.
#
#   npm_pin NAME PACKAGE VERSION BINARY PLATFORM_SPEC VERSION_PATTERN
#
# BINARY is the command that must run afterwards; PLATFORM_SPEC is
# the package that holds the native build, asked for by name when npm skipped
# the optional dependency (npm does that on a lock file made elsewhere);
# `BINARY --version` must match the case pattern VERSION_PATTERN. Idempotent:
# nothing is fetched when that version is already there. Prints BINARY.

e2e_prefix=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.e2e

# npm_platform prints node's name for this platform (linux-x64, darwin-arm64).
npm_platform() {
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64)  echo linux-x64 ;;
    Linux-aarch64) echo linux-arm64 ;;
    Darwin-x86_64) echo darwin-x64 ;;
    Darwin-arm64)  echo darwin-arm64 ;;
    *) echo "unsupported platform $(uname -s)-$(uname -m)" >&2; return 1 ;;
  esac
}

# installed_version prints the version the package.json in $1 declares, or nothing.
installed_version() {
  [ -f "$1/package.json" ] || return 0
  sed -n '/^[[:space:]]*"version":/{s/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p;q;}' "$1/package.json"
}

npm_pin() {
  local name=$1 pkg=$2 version=$3 bin=$4 platspec=$5 want=$6
  local dir=$e2e_prefix/node_modules/$pkg got
  # shellcheck disable=SC2254 # $want is a pattern on purpose
  if [ "$(installed_version "$dir")" = "$version" ] && [ -x "$bin" ] &&
     case "$("$bin" --version 2>/dev/null)" in $want) true ;; *) false ;; esac; then
    echo "$name: $pkg@$version already installed" >&2
  else
    command -v npm >/dev/null || { echo "$name: npm is needed (apt-get install nodejs npm)" >&2; return 1; }
    echo "$name: installing $pkg@$version into $e2e_prefix" >&2
    mkdir -p "$e2e_prefix"
    # A package.json of our own keeps npm from walking up to another project.
    [ -f "$e2e_prefix/package.json" ] || printf '{"name":"implloop-e2e","private":true}\n' >"$e2e_prefix/package.json"
    npm install --prefix "$e2e_prefix" --no-audit --no-fund --save-exact --loglevel=error "$pkg@$version" >&2
    if ! "$bin" --version >/dev/null 2>&1; then
      npm install --prefix "$e2e_prefix" --no-audit --no-fund --save-exact --loglevel=error "$platspec" >&2
    fi
    [ -x "$bin" ] || { echo "$name: no binary at $bin" >&2; return 1; }
  fi
  got=$("$bin" --version)
  # shellcheck disable=SC2254
  case "$got" in
    $want) ;;
    *) echo "$name: $bin says '$got', want $version" >&2; return 1 ;;
  esac
  echo "$bin"
}
