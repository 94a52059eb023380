#!/usr/bin/env bash
# Client memory and CPU per request as connections grow: ringbench and redis-benchmark side by side.
#
# Starts its own redis-server (no persistence, maxclients 16000) on a free port, builds ringbench in
# release mode, then for each -c runs the two tools alternately (A B A B ...) with the same flags
# (GET, -n requests, one thread) and prints one table of medians: peak RSS (/usr/bin/time %M), the peak
# above the -c 50 row divided by the extra connections, client CPU (user+sys) per request, and the
# ratios ringbench / redis-benchmark.
#
# Environment:
#   ROUNDS=5            rounds per -c (each round runs both tools once)
#   CLIENTS="50 1000 5000 15000"
#   N=400000            requests per run
# The open-files limit must allow the largest -c (ulimit -n; 15000 needs about 15100).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
source scripts/lib/bench.sh
need_time

ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-"50 1000 5000 15000"}
N=${N:-400000}

echo "building ringbench (release)..." >&2
cargo build --release --quiet --bin ringbench
RINGBENCH=$PWD/target/release/ringbench

WORK=$(mktemp -d)
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT
start_server --maxclients 16000
echo "redis-server on port $SERVER_PORT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds; GET -n $N" >&2

for c in $CLIENTS; do
  for round in $(seq "$ROUNDS"); do
    for tool in ringbench redis-benchmark; do
      bin=$tool
      [ "$tool" = ringbench ] && bin=$RINGBENCH
      /usr/bin/time -f '%M %U %S' -o "$WORK/t" "$bin" -h 127.0.0.1 -p "$SERVER_PORT" -t get -n "$N" \
        -c "$c" -q >"$WORK/out" 2>"$WORK/err" || { echo "failed: $tool -c $c" >&2; cat "$WORK/err" >&2; exit 1; }
      read -r kb user sys <"$WORK/t"
      echo "$c $tool $kb $user $sys" >>"$WORK/results"
      echo "  -c $c round $round $tool: peak RSS $kb KB, CPU $user+$sys s" >&2
    done
  done
done

python3 - "$WORK/results" "$N" "$ROUNDS" <<'PY'
import statistics, sys
path, n, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [l.split() for l in open(path)]
cs = sorted({int(r[0]) for r in rows})
def med(c, tool, f):
    return statistics.median(f(r) for r in rows if int(r[0]) == c and r[1] == tool)
rss = lambda c, t: med(c, t, lambda r: float(r[2]) * 1024)
cpu = lambda c, t: med(c, t, lambda r: (float(r[3]) + float(r[4])) * 1e9 / n)
base = cs[0]
print(f"medians of {rounds} rounds; GET -n {n}; peak RSS from /usr/bin/time; CPU = client user+sys per request")
head = f"{'-c':>6} | {'ringbench RSS':>13} {'B/conn':>7} {'CPU ns/req':>10} | {'redis-bm RSS':>12} {'B/conn':>7} {'CPU ns/req':>10} | {'RSS ratio':>9} {'CPU ratio':>9} {'rb CPU vs -c ' + str(base):>16}"
print(head)
print("-" * len(head))
for c in cs:
    line = f"{c:>6} |"
    for t in ("ringbench", "redis-benchmark"):
        per = (rss(c, t) - rss(base, t)) / (c - base) if c > base else float("nan")
        width = 13 if t == "ringbench" else 12
        line += f" {rss(c, t) / 1e6:>{width - 3},.1f} MB {per:>7,.0f} {cpu(c, t):>10,.0f} |"
    line += f" {rss(c, 'ringbench') / rss(c, 'redis-benchmark'):>8.2f}x {cpu(c, 'ringbench') / cpu(c, 'redis-benchmark'):>8.2f}x"
    line += f" {cpu(c, 'ringbench') / cpu(base, 'ringbench'):>15.2f}x"
    print(line)
PY
