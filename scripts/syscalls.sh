#!/usr/bin/env bash
# Where the client's kernel time goes: system calls per batch (strace -c -f) and reschedule IPIs that
# land on the client's threads (perf stat on the irq_vectors:reschedule_entry tracepoint), for ringbench
# and redis-benchmark with the same flags against one throwaway redis-server.
#
# A batch is one pipeline of -P requests on one connection: N / P batches per run.
# Environment: N=400000  P=16  C=50  TEST=get
# Needs strace and perf (Debian: strace, linux-perf) and root or kernel.perf_event_paranoid <= -1 for
# the tracepoint.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
N=${N:-400000}
P=${P:-16}
C=${C:-50}
TEST=${TEST:-get}
for tool in strace perf; do
  command -v "$tool" >/dev/null || { echo "syscalls.sh: $tool is not installed (apt-get install strace linux-perf)" >&2; exit 1; }
done
cargo build --release --quiet --bin ringbench
RINGBENCH=$PWD/target/release/ringbench
WORK=$(mktemp -d)
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT
start_server
batches=$((N / P))
echo "GET -n $N -P $P -c $C: $batches batches; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %12s %12s %14s %12s\n' client syscalls "per batch" "resched IPIs" "IPIs/batch"
for tool in ringbench redis-benchmark; do
  bin=$tool
  [ "$tool" = ringbench ] && bin=$RINGBENCH
  args=(-h 127.0.0.1 -p "$SERVER_PORT" -t "$TEST" -n "$N" -P "$P" -c "$C" -q)
  strace -c -f -o "$WORK/$tool.strace" "$bin" "${args[@]}" >/dev/null 2>&1
  # strace -c columns: % time, seconds, usecs/call, calls, [errors], syscall.
  calls=$(awk '$NF == "total" { print $4 }' "$WORK/$tool.strace")
  perf stat -x, -e irq_vectors:reschedule_entry -o "$WORK/$tool.perf" "$bin" "${args[@]}" >/dev/null 2>&1
  ipis=$(awk -F, '/reschedule_entry/ { print $1 }' "$WORK/$tool.perf")
  printf '%-16s %12s %12.2f %14s %12.4f\n' "$tool" "$calls" "$(echo "$calls / $batches" | bc -l)" \
    "$ipis" "$(echo "${ipis:-0} / $batches" | bc -l)"
  echo "  top calls of $tool:"
  awk 'NR > 2 && $NF != "total" && $1 ~ /^[0-9.]+$/ { print "   ", $NF, $4 }' "$WORK/$tool.strace" |
    sort -k2 -n -r | head -4
done
