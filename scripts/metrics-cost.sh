#!/usr/bin/env bash
# What live metrics cost the client: the same run with and without --metrics-listen (scraped once a
# second, as a Prometheus server would) and --statsd, alternately (off on off on ...), and the median
# client CPU (user+sys) per request of each, with the ratio on/off.
#
# Starts its own redis-server (no persistence) on a free port and builds ringbench in release mode.
# Environment:
#   ROUNDS=5     rounds (each runs every variant once)
#   N=1000000    requests per run (-n)
#   FLAGS="-t get -c 50 -P 1"   the benchmark's flags
#   SERVER_CPUS=    pin the server with taskset (e.g. 0); CLIENT_CPUS= pin ringbench (e.g. 1)
#   KEEP=1       keep the raw output directory
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
source scripts/lib/bench.sh
need_time

ROUNDS=${ROUNDS:-5}
N=${N:-1000000}
read -r -a FLAGS <<<"${FLAGS:--t get -c 50 -P 1}"
echo "building ringbench (release)..." >&2
cargo build --release --quiet --bin ringbench
RINGBENCH=$PWD/target/release/ringbench

WORK=$(mktemp -d)
SCRAPER=
cleanup() {
  [ -n "$SCRAPER" ] && kill "$SCRAPER" 2>/dev/null
  stop_server
  [ "${KEEP:-0}" = 1 ] && echo "raw output kept in $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT
start_server
[ -n "${SERVER_CPUS:-}" ] && taskset -pc "$SERVER_CPUS" "$SERVER_PID" >/dev/null
PIN=()
[ -n "${CLIENT_CPUS:-}" ] && PIN=(taskset -c "$CLIENT_CPUS")
METRICS_PORT=$(free_port)
STATSD_PORT=$(free_port)

# A scraper: GET /metrics once a second while anything listens (a failed connect is the run not up).
(
  while :; do
    if exec 3<>"/dev/tcp/127.0.0.1/$METRICS_PORT" 2>/dev/null; then
      printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
      cat <&3 >/dev/null
      exec 3>&-
    fi
    sleep 1
  done
) 2>/dev/null &
SCRAPER=$!

variant_args() {
  case $1 in
    off) ;;
    prometheus) echo "--metrics-listen 127.0.0.1:$METRICS_PORT --metrics-linger 0" ;;
    statsd) echo "--statsd 127.0.0.1:$STATSD_PORT" ;;
  esac
}
VARIANTS="off prometheus statsd"
echo "uptime at the start: $(uptime)" >&2
for r in $(seq 1 "$ROUNDS"); do
  for v in $VARIANTS; do
    # shellcheck disable=SC2046
    read -r wall user sys _ < <(timed_run "$WORK/$v.$r" "${PIN[@]}" "$RINGBENCH" -p "$SERVER_PORT" -n "$N" "${FLAGS[@]}" \
      $(variant_args "$v") -q)
    awk -v v="$v" -v u="$user" -v s="$sys" -v n="$N" -v w="$wall" \
      'BEGIN { printf "%s %.3f %.1f\n", v, (u + s) * 1e9 / n, n / w }' >>"$WORK/rows"
    echo "round $r: $(tail -n1 "$WORK/rows")" >&2
  done
done
echo "uptime at the end: $(uptime)" >&2
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
off=$(awk '$1=="off"{print $2}' "$WORK/rows" | median)
printf '%-11s %12s %12s %8s   (ringbench %s, %s rounds, -n %s)\n' variant "CPU ns/req" "median rps" "vs off" "${FLAGS[*]}" "$ROUNDS" "$N"
for v in $VARIANTS; do
  cpu=$(awk -v v="$v" '$1==v{print $2}' "$WORK/rows" | median)
  rps=$(awk -v v="$v" '$1==v{print $3}' "$WORK/rows" | median)
  awk -v v="$v" -v c="$cpu" -v r="$rps" -v o="$off" 'BEGIN { printf "%-11s %12.0f %12.0f %7.3fx\n", v, c, r, c / o }'
done
