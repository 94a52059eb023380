#!/usr/bin/env bash
# Runs ringbench's default suite against the local server on 127.0.0.1:6379 (or $RINGBENCH_PORT).
# When no server answers there, installs redis-server if needed and starts a throwaway one,
# which is stopped again when the suite ends. Extra arguments go to ringbench.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${RINGBENCH_PORT:-6379}
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "redis-server is not installed: installing it (apt-get)" >&2
  apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
fi
started=""
if [ "$(redis-cli -p "$port" ping 2>/dev/null || true)" != "PONG" ]; then
  dir=$(mktemp -d)
  echo "no server on port $port: starting a throwaway redis-server (data in $dir)" >&2
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize no >"$dir/server.log" 2>&1 &
  started=$!
  trap 'kill $started 2>/dev/null; wait $started 2>/dev/null; rm -rf "$dir"' EXIT
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null || true)" = "PONG" ] && break
    sleep 0.05
  done
fi
cargo build --release
./target/release/ringbench -p "$port" "$@"
