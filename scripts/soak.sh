#!/usr/bin/env bash
# Soak: `ringbench -l` at full speed for SECONDS (default 60) against a throwaway redis-server,
# sampling the client's resident memory once a second. Prints RSS after the first loop and at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
seconds=${1:-60}
cargo build --release --quiet
start_server
trap stop_server EXIT
./target/release/ringbench -p "$SERVER_PORT" -l -q -t set,get,lpush,lpop,lrange_100 -n 100000 -P 16 -r 100000 >/dev/null &
pid=$!
samples=()
for i in $(seq "$seconds"); do
  sleep 1
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  samples+=("$rss")
done
kill -INT $pid
wait $pid || true
first=${samples[1]}
last=${samples[-1]}
max=$(printf '%s\n' "${samples[@]}" | sort -n | tail -1)
echo "soak: ${seconds}s of -l; RSS after 2 s: ${first} KiB, at the end: ${last} KiB, max: ${max} KiB"
echo "samples (KiB, one a second): ${samples[*]}"
