#!/usr/bin/env bash
# The same ringbench workload against redis-server with io-threads 1, 2 and 4 (io-threads-do-reads yes).
# Prints one table of medians: rps, p50, p99 per test, the client's CPU per request and the server's CPU,
# then for each setting whether its difference from the first is beyond the rounds' noise (`ringbench
# compare ... vs ...`: a 95% interval from a bootstrap of the median, and a verdict).
# On a 2-core machine the server's extra threads compete with the client for the same cores, so the
# figures cannot grow much; the table shows by how much they do (or do not).
#
# `scripts/io-threads.sh capacity` instead runs `ringbench capacity` per io-threads setting and test, and
# prints one table of capacities: the highest rate each setting sustains within the latency objective.
#
# Environment:
#   ROUNDS=3                  runs per io-threads setting (medians are printed)
#   N=2000000                 requests per test
#   IO_THREADS="1 2 4"        settings to compare
#   FLAGS="-t set,get -c 50 -P 16 --threads 1"   ringbench flags (besides -h -p -n --csv)
#   SERVER_CPUS=              pin the server with taskset; CLIENT_CPUS= pin ringbench
# Capacity mode only (FLAGS then defaults to "-c 50 -P 16 --threads 1", without -t):
#   TESTS="set get"           one search per test
#   SLO=p99=1ms STEP=2 WARMUP=0.5 WITHIN=5%   the search's objective, step time, warmup and precision
#   FROM= TO=                 the search's bounds (default: from a short closed-loop probe)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
source scripts/lib/bench.sh
need_time

MODE=${1:-table}
case "$MODE" in
  table | capacity) ;;
  *) echo "usage: $0 [capacity]" >&2; exit 2 ;;
esac
ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
IO_THREADS=${IO_THREADS:-"1 2 4"}
if [ "$MODE" = capacity ]; then
  read -r -a FLAGS <<<"${FLAGS:-"-c 50 -P 16 --threads 1"}"
else
  read -r -a FLAGS <<<"${FLAGS:-"-t set,get -c 50 -P 16 --threads 1"}"
fi

echo "building ringbench (release)..." >&2
cargo build --release --quiet --bin ringbench
RINGBENCH=$PWD/target/release/ringbench
PIN=()
[ -n "${CLIENT_CPUS:-}" ] && PIN=(taskset -c "$CLIENT_CPUS")

WORK=$(mktemp -d)
cleanup() { stop_server; [ "${KEEP:-0}" = 1 ] && echo "raw output kept in $WORK" >&2 || rm -rf "$WORK"; }
trap cleanup EXIT

if [ "$MODE" = capacity ]; then
  TESTS=${TESTS:-"set get"}
  SEARCH=(--slo "${SLO:-p99=1ms}" --step-duration "${STEP:-2}" --warmup "${WARMUP:-0.5}" --within "${WITHIN:-5%}")
  [ -n "${FROM:-}" ] && SEARCH+=(--from "$FROM")
  [ -n "${TO:-}" ] && SEARCH+=(--to "$TO")
  echo "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); ringbench capacity ${SEARCH[*]} ${FLAGS[*]}" >&2
  for io in $IO_THREADS; do
    start_server --io-threads "$io" --io-threads-do-reads yes
    [ -n "${SERVER_CPUS:-}" ] && taskset -apc "$SERVER_CPUS" "$SERVER_PID" >/dev/null
    active=$(redis-cli -p "$SERVER_PORT" config get io-threads | tail -n1)
    for t in $TESTS; do
      json=$WORK/io$active.$t.json
      "${PIN[@]}" "$RINGBENCH" capacity -h 127.0.0.1 -p "$SERVER_PORT" -t "$t" "${FLAGS[@]}" "${SEARCH[@]}" \
        --json "$json" -q >"$WORK/io$active.$t.out"
      echo "  io-threads $active $t: $(cat "$WORK/io$active.$t.out" | head -n1)" >&2
      echo "$active $t $json" >>"$WORK/runs"
    done
    stop_server
  done
  python3 - "$WORK/runs" <<'PY'
import json, sys
print("capacity = highest offered rate that passed, below the lowest that failed; the server was not restarted between steps")
head = f"{'io-threads':>10} {'test':<6} {'capacity rps':>14} {'next step':>12} {'p99 at cap ms':>14} {'steps':>6}  limit"
print(head)
print("-" * len(head))
for line in open(sys.argv[1]):
    io, test, path = line.split()
    f = json.load(open(path))
    c = f["capacity"]
    cap, nxt = c["capacity_rps"], c["next_rps"]
    p99 = "-"
    for t, s in zip(f["tests"], c["steps"]):
        if cap is not None and s["offered_rps"] == cap and s["pass"] and not s["repeated"]:
            p99 = f"{t['latency_ms']['p99']:.3f}"
    limit = "client" if c["client_limited"] else ("server" if nxt is not None else "--to")
    fmt = lambda v: "-" if v is None else f"{v:,.0f}"
    print(f"{io:>10} {test:<6} {fmt(cap):>14} {fmt(nxt):>12} {p99:>14} {len(c['steps']):>6}  {limit}")
PY
  exit 0
fi

echo "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); ringbench ${FLAGS[*]} -n $N; $ROUNDS rounds" >&2
settings=()
for io in $IO_THREADS; do
  start_server --io-threads "$io" --io-threads-do-reads yes
  [ -n "${SERVER_CPUS:-}" ] && taskset -apc "$SERVER_CPUS" "$SERVER_PID" >/dev/null
  active=$(redis-cli -p "$SERVER_PORT" config get io-threads | tail -n1)
  for round in $(seq "$ROUNDS"); do
    out=$WORK/io$io.$round
    read -r wall user sys srv <<<"$(timed_run "$out" "${PIN[@]}" "$RINGBENCH" -h 127.0.0.1 -p "$SERVER_PORT" \
      -n "$N" "${FLAGS[@]}" --csv --json "$WORK/io$active.$round.json")"
    tests=$(awk 'NR > 1' "$out.out" | wc -l)
    # One line per test: io round test rps p50 p99 cpu_ns_per_req server_cpu_pct
    awk -F'","' -v io="$active" -v r="$round" -v u="$user" -v s="$sys" -v n="$N" -v k="$tests" \
      -v srv="$srv" -v w="$wall" 'NR > 1 { gsub(/"/, "", $1); gsub(/"/, "", $8);
        printf "%s %s %s %s %s %s %.1f %.1f\n", io, r, $1, $2, $5, $7, (u + s) * 1e9 / (n * k), srv * 100 / w }' \
      "$out.out" >>"$WORK/results"
    echo "  io-threads $active round $round: $(awk -v io="$active" -v r="$round" '$1 == io && $2 == r { printf "%s %s rps  ", $3, $4 }' "$WORK/results")" >&2
  done
  stop_server
  settings+=("$active")
done

python3 - "$WORK/results" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"medians of {sys.argv[2]} rounds; client CPU = ringbench user+sys per request (whole run); server = redis-server CPU % of one core")
head = f"{'io-threads':>10} {'test':<6} {'rps':>12} {'p50 ms':>8} {'p99 ms':>8} {'client CPU ns/req':>18} {'server CPU':>10}"
print(head)
print("-" * len(head))
seen = []
for r in rows:
    if (r[0], r[2]) not in seen:
        seen.append((r[0], r[2]))
for io, test in seen:
    sel = [r for r in rows if r[0] == io and r[2] == test]
    m = lambda i: statistics.median(float(r[i]) for r in sel)
    print(f"{io:>10} {test:<6} {m(3):>12,.0f} {m(4):>8.3f} {m(5):>8.3f} {m(6):>18,.0f} {m(7):>9.0f}%")
PY

# Is each setting's difference from the first more than the rounds' noise? (ringbench compare, each
# setting's rounds against the first setting's.)
base=${settings[0]}
for io in "${settings[@]:1}"; do
  echo
  echo "io-threads $io against io-threads $base (ringbench compare, $ROUNDS rounds a side):"
  "$RINGBENCH" compare "$WORK"/io"$base".*.json vs "$WORK"/io"$io".*.json | grep -E '^(======|rps: |\(significance)'
done
