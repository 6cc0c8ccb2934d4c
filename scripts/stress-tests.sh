#!/usr/bin/env bash
# Runs the test suite, or the folders and files given, while other processes keep every core busy:
# the machine as CI may find it. A test that leans on wall-clock time fails here first.
#
#   scripts/stress-tests.sh [--node24] [--rounds N] [--load K] [PATH ...]
#
#   --node24     run on Node 24 LTS (scripts/node24.sh installs it when missing)
#   --rounds N   run N times in a row, stop at the first failure (default 1)
#   --load K     K busy processes beside the tests (default: one per core)
#
# dist/ must be built (`npm run build`): the end-to-end tests start the built commands. Prints each
# round's outcome and wall-clock time; exits with the first failing round's status. The busy
# processes are this script's own children and end with it.
set -euo pipefail
cd "$(dirname "$0")/.."

node_bin=node
rounds=1
load=$(nproc)
paths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --node24) node_bin=$(bash scripts/node24.sh path); shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) paths+=("$1"); shift ;;
  esac
done
case "$rounds$load" in *[!0-9]*) echo "stress-tests.sh: --rounds and --load take whole numbers" >&2; exit 2 ;; esac

busy=()
stop_load() {
  for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${busy[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_load EXIT INT TERM
for _ in $(seq 1 "$load"); do
  "$node_bin" -e 'for (;;) Math.sqrt(Math.random());' &
  busy+=("$!")
done

echo "# stress: $("$node_bin" --version), $load busy processes on $(nproc) cores, $rounds round(s), ${paths[*]:-the whole suite}" >&2
for round in $(seq 1 "$rounds"); do
  started=$(date +%s)
  status=0
  # Child processes the tests start (`vigil` commands) run process.execPath: the same Node.
  PATH="$(dirname "$(command -v "$node_bin")"):$PATH" "$node_bin" scripts/run-tests.mjs "${paths[@]}" || status=$?
  elapsed=$(( $(date +%s) - started ))
  if [ "$status" -ne 0 ]; then
    echo "# stress round $round of $rounds: FAILED (status $status) after ${elapsed} s" >&2
    exit "$status"
  fi
  echo "# stress round $round of $rounds: passed in ${elapsed} s" >&2
done
