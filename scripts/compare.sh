#!/usr/bin/env bash
# ringbench side by side with redis-benchmark (and valkey-benchmark / memtier_benchmark when on PATH).
#
# Starts its own redis-server (no persistence) on a free port, builds ringbench in release mode, then for
# each case runs the tools alternately (A B A B ...) with identical flags and prints one table of medians:
# reported rps, client CPU (user+sys) per request, the server's CPU use during the run, and the ratios
# ringbench / redis-benchmark.
#
# Environment:
#   ROUNDS=3        rounds per case (each round runs every tool once)
#   SCALE=1         multiplies the request counts (defaults give >= 1 s per run at full speed on 2 cores)
#   N_P1=400000 N_P16=3000000 N_P64=6000000   requests per test (-n) before SCALE
#   SERVER_CPUS=    pin the server with taskset (e.g. 0); CLIENT_CPUS= pin the clients (e.g. 1)
#   CASES="p1 p16 p64 t2p64"   which cases to run
#   KEEP=1          keep the raw output directory
#   RINGBENCH_BASE=path   also run this ringbench binary (the build before a change) as "ringbench-base",
#                   alternating with the others, and add its CPU ratio (ringbench / base) to the table
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
source scripts/lib/bench.sh
need_time

ROUNDS=${ROUNDS:-3}
SCALE=${SCALE:-1}
CASES=${CASES:-"p1 p16 p64 t2p64"}
scaled() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s); if (v < 1000) v = 1000; print v }'; }
N_P1=$(scaled "${N_P1:-400000}")
N_P16=$(scaled "${N_P16:-3000000}")
N_P64=$(scaled "${N_P64:-6000000}")

echo "building ringbench (release)..." >&2
cargo build --release --quiet --bin ringbench
RINGBENCH=$PWD/target/release/ringbench

TOOLS="ringbench redis-benchmark"
if [ -n "${RINGBENCH_BASE:-}" ]; then
  [ -x "$RINGBENCH_BASE" ] || { echo "RINGBENCH_BASE=$RINGBENCH_BASE is not an executable" >&2; exit 2; }
  TOOLS="ringbench ringbench-base redis-benchmark"
fi
command -v valkey-benchmark >/dev/null && TOOLS="$TOOLS valkey-benchmark"
command -v memtier_benchmark >/dev/null && TOOLS="$TOOLS memtier_benchmark"

WORK=$(mktemp -d)
cleanup() { stop_server; [ "${KEEP:-0}" = 1 ] && echo "raw output kept in $WORK" >&2 || rm -rf "$WORK"; }
trap cleanup EXIT
start_server
[ -n "${SERVER_CPUS:-}" ] && taskset -pc "$SERVER_CPUS" "$SERVER_PID" >/dev/null
PIN=()
[ -n "${CLIENT_CPUS:-}" ] && PIN=(taskset -c "$CLIENT_CPUS")

# case name -> "requests pipeline threads"
case_args() {
  case $1 in
    p1) echo "$N_P1 1 0" ;;
    p16) echo "$N_P16 16 0" ;;
    p64) echo "$N_P64 64 0" ;;
    t2p64) echo "$N_P64 64 2" ;;
    *) echo "unknown case '$1' in CASES (p1 p16 p64 t2p64)" >&2; exit 2 ;;
  esac
}
case_label() {
  case $1 in
    p1) echo "-P 1" ;; p16) echo "-P 16" ;; p64) echo "-P 64" ;; t2p64) echo "--threads 2 -P 64" ;;
  esac
}

# Runs one tool once; appends "case tool round rps cpu_ns_per_req server_cpu_pct wall_s" to $WORK/results.
run_tool() {
  local cs=$1 tool=$2 round=$3 n=$4 pipe=$5 threads=$6
  local out=$WORK/$cs.$tool.$round common rps total
  common=(-h 127.0.0.1 -p "$SERVER_PORT" -t get,set -c 50 -n "$n" -P "$pipe")
  [ "$threads" -gt 0 ] && common+=(--threads "$threads")
  total=$((2 * n))
  local t
  case $tool in
    ringbench) t=$(timed_run "$out" "${PIN[@]}" "$RINGBENCH" "${common[@]}" --csv) ;;
    ringbench-base) t=$(timed_run "$out" "${PIN[@]}" "$RINGBENCH_BASE" "${common[@]}" --csv) ;;
    redis-benchmark | valkey-benchmark) t=$(timed_run "$out" "${PIN[@]}" "$tool" "${common[@]}" --csv) ;;
    memtier_benchmark)
      # memtier spells the same load differently: -c is per thread, -n per connection, SET:GET 1:1.
      local mt=$((threads > 0 ? threads : 1))
      t=$(timed_run "$out" "${PIN[@]}" memtier_benchmark -s 127.0.0.1 -p "$SERVER_PORT" --protocol=redis \
        -t "$mt" -c $((50 / mt)) --pipeline="$pipe" --ratio=1:1 -n $((total / 50)) \
        --hide-histogram --json-out-file="$out.json") ;;
  esac
  if [ "$tool" = memtier_benchmark ]; then
    rps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ALL STATS"]["Totals"]["Ops/sec"])' "$out.json")
  else
    # Both tests ran n requests: the run's rate is 2n over the sum of the tests' times.
    rps=$(awk -F'","' -v n="$n" 'NR > 1 { gsub(/"/, "", $2); if ($2 > 0) { s += n / $2; k++ } }
      END { if (k == 2) printf "%.2f", 2 * n / s; else print "nan" }' "$out.out")
  fi
  read -r wall user sys srv <<<"$t"
  awk -v c="$cs" -v tool="$tool" -v r="$round" -v rps="$rps" -v u="$user" -v s="$sys" -v tot="$total" \
    -v srv="$srv" -v w="$wall" \
    'BEGIN { printf "%s %s %s %s %.1f %.1f %.3f\n", c, tool, r, rps, (u + s) * 1e9 / tot, srv * 100 / w, w }' \
    >>"$WORK/results"
  echo "  $cs round $round $tool: $rps rps, $(tail -n1 "$WORK/results" | cut -d' ' -f5) ns CPU/request" >&2
}

echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on port $SERVER_PORT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds; tools: $TOOLS" >&2
for cs in $CASES; do
  read -r n pipe threads <<<"$(case_args "$cs")"
  for round in $(seq "$ROUNDS"); do
    for tool in $TOOLS; do
      run_tool "$cs" "$tool" "$round" "$n" "$pipe" "$threads"
    done
  done
done

python3 - "$WORK/results" "$TOOLS" "$N_P1" "$N_P16" "$N_P64" "$ROUNDS" <<'PY'
import statistics, sys
path, tools, n1, n16, n64, rounds = sys.argv[1], sys.argv[2].split(), *sys.argv[3:]
rows = [l.split() for l in open(path)]
labels = {"p1": ("-P 1", n1), "p16": ("-P 16", n16), "p64": ("-P 64", n64), "t2p64": ("--threads 2 -P 64", n64)}
def med(case, tool, col):
    v = [float(r[col]) for r in rows if r[0] == case and r[1] == tool and r[col] != "nan"]
    return statistics.median(v) if v else float("nan")
short = {"ringbench": "ringbench", "ringbench-base": "rb-base", "redis-benchmark": "redis-bm", "valkey-benchmark": "valkey-bm", "memtier_benchmark": "memtier"}
head = f"{'case (-t get,set -c 50)':<24} {'-n':>8}"
for t in tools:
    head += f" | {short[t] + ' rps':>14} {'CPU ns/req':>10} {'server':>6}"
head += f" | {'rps ratio':>9} {'CPU ratio':>9}"
base = "ringbench-base" in tools
if base:
    head += f" | {'CPU vs base':>11}"
print(f"medians of {rounds} rounds; CPU ns/req = client user+sys per request; server = redis-server CPU % of one core during the run")
print(head)
print("-" * len(head))
for case in [c for c in labels if any(r[0] == c for r in rows)]:
    label, n = labels[case]
    line = f"{label:<24} {n:>8}"
    for t in tools:
        line += f" | {med(case, t, 3):>14,.0f} {med(case, t, 4):>10,.0f} {med(case, t, 5):>5.0f}%"
    rr = med(case, "ringbench", 3) / med(case, "redis-benchmark", 3)
    cr = med(case, "ringbench", 4) / med(case, "redis-benchmark", 4)
    line += f" | {rr:>8.2f}x {cr:>8.2f}x"
    if base:
        line += f" | {med(case, 'ringbench', 4) / med(case, 'ringbench-base', 4):>10.3f}x"
    print(line)
PY
