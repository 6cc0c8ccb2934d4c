#!/usr/bin/env bash
# Node 24 LTS beside the machine's Node (Node 20 is past its end of life; vigil runs and is tested on
# both). Installs the official Node 24 binary from the npm registry into .cache/node24 when missing
# (the platform package that the npm `node` package itself installs, taken directly: this npm does
# not run dependencies' install scripts unless approved), then:
#   scripts/node24.sh path    prints the path of its `node`
#   scripts/node24.sh test    runs the whole test suite on it (dist/ must be built: `npm test` does)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=24.21.0
case "$(uname -m)" in
  x86_64) platform=linux-x64 ;;
  aarch64) platform=linux-arm64 ;;
  *) echo "node24.sh: no Node 24 package for $(uname -m)" >&2; exit 1 ;;
esac
dir="$PWD/.cache/node24"
bin="$dir/node_modules/node-$platform/bin/node"
if [ ! -x "$bin" ] || [ "$("$bin" --version)" != "v$VERSION" ]; then
  echo "installing Node $VERSION into .cache/node24" >&2
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund "node-$platform@$VERSION" >&2
fi

case "${1:-path}" in
  path) echo "$bin" ;;
  test)
    echo "# the test suite on $("$bin" --version)" >&2
    # Child processes the tests start (`vigil` commands) use the same Node: they run process.execPath.
    PATH="$(dirname "$bin"):$PATH" exec "$bin" scripts/run-tests.mjs
    ;;
  *) echo "usage: scripts/node24.sh [path|test]" >&2; exit 2 ;;
esac
