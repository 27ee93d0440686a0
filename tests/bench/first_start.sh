#!/usr/bin/env bash
# Time from a fresh clone to a listening gateway: clones this repository
# into a temporary directory, runs the README's share/dev/start there (which
# installs what is missing, builds what runs and starts the gateway), and
# stops the clock when GET /health answers. Packages already installed are
# not installed again, so the first run on a fresh machine is the one that
# counts.
#   tests/bench/first_start.sh [PORT]     (default 18888)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
port=${1:-18888}
work=$(mktemp -d /tmp/sandgate-first-start-XXXXXX)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
began=$(date +%s.%N)
git clone -q "$repo" "$work/sandgate"
"$work/sandgate/share/dev/start" --port "$port" > "$work/start.log" 2>&1 &
pid=$!
until curl -sf -o /dev/null "http://127.0.0.1:$port/health"; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/start.log" >&2; echo "first_start: share/dev/start ended" >&2; exit 1; }
  sleep 0.2
done
ended=$(date +%s.%N)
installed=$(grep -o 'installing .*' "$work/start.log" | head -1 || true)
echo "clone to listening: $(echo "$ended - $began" | bc) s (${installed:-nothing installed}) on $(nproc) CPUs"
