#!/usr/bin/env bash
# Open loop side by side: ringbench --rps against memtier_benchmark --rate-limiting at the same total rate,
# and valkey-benchmark --rps when the valkey-benchmark found has that flag. GET, -c 50, one throwaway
# redis-server (no persistence) on a free port.
#
# For each rate of RATES, every round runs each tool once (A B C A B C ...), and once per round ringbench's
# closed loop (-P 1, no --rps) runs as the reference. Each run is measured from outside the tool:
#   - achieved rate: the tool's own figure, and the server's: its GET calls (INFO commandstats, sampled
#     every 0.1 s) over the time the run was sending (set-up and exit left out);
#   - client CPU per request: user+sys of the client (/usr/bin/time) over the GETs the server counted;
#   - wake-ups per request: the client's voluntary+involuntary context switches (/usr/bin/time %w %c);
#   - syscalls and io_uring_enter calls per request: perf stat on raw_syscalls:sys_enter and
#     syscalls:sys_enter_io_uring_enter (the client and its threads; /usr/bin/time's few calls included),
#     in a second run of the same client right after the first: counting a syscall tracepoint costs about
#     0.15 us per call (dd bs=1 under it), which would weigh on a client making 5 calls per request;
#   - server wake-ups per request: the redis-server event loop's voluntary context switches (/proc), each
#     a sleep a request ended; on loopback the sender of that request pays for the wake-up;
#   - server CPU per request (INFO cpu) and the share of GETs that missed (must be 0: every tool reads keys
#     that a ringbench SET run wrote first).
# Then one table of medians per (tool, rate) and the ratios ringbench/memtier and ringbench open/closed loop
# of client CPU per request. `uptime` is printed before and after: on a busy machine the figures are noisy.
#
# Keys: ringbench and valkey-benchmark read key:__rand_int__ with -r KEYS (key:000000000000 ...
# key:<KEYS-1>, 12 digits). memtier's keys are prefix + decimal id, so it reads the same keys through a
# prefix of zeros: for KEYS=100000, --key-prefix=key:0000000 --key-minimum=10000 --key-maximum=99999 (ids
# with as many digits as KEYS-1, i.e. the top 90% of the keyspace for a power of ten).
#
# memtier's --rate-limiting is per connection: R in total over -c 50 is --rate-limiting R/50. memtier
# refills each connection's budget every 20 ms (ceil(rate/50) requests per tick, unused budget dropped) and
# sends the budget closed-loop (the next request after the previous reply), so its pacing is bursts of
# requests on a 20 ms tick, not a send schedule; its latency is measured from the actual send.
#
# Environment:
#   ROUNDS=5            rounds (each runs every tool at every rate, then the closed loop once; each run twice
#                       with PERF=1)
#   RATES="50000 150000"   total requests per second (multiples of 50: memtier's rate is per connection)
#   SECONDS=4           seconds per open-loop run (ringbench -n R*SECONDS, memtier --test-time); DURATION=4
#                       is the same knob (bash's SECONDS counts up, so it is read first thing)
#   CLOSED_N=           requests of the closed-loop reference run (default 150000 * SECONDS)
#   KEYS=100000         keyspace written before the runs and read by every GET
#   RINGBENCH=path      use this ringbench binary instead of building target/release/ringbench
#   MEMTIER=path        memtier_benchmark (default: $PEERS/memtier/memtier_benchmark if present, else PATH);
#                       required: the script stops when it is not found
#   VALKEY_BENCHMARK=path   valkey-benchmark (default: $PEERS/valkey/src/valkey-benchmark if present, else
#                       PATH); skipped with a note when absent or without --rps
#   PEERS=/work/peers   where the peers were built from their repositories (memtier: autoreconf -ivf &&
#                       ./configure && make, with libevent-dev and libssl-dev; valkey: cd src && make
#                       valkey-benchmark)
#   PERF=1              0 = no counting runs (the syscall columns read "-"); perf is also skipped when missing or
#                       when the tracepoints cannot be opened (root or kernel.perf_event_paranoid <= -1)
#   KEEP=1              keep the raw output directory
set -euo pipefail
ENV_SECONDS=$SECONDS
cd "$(dirname "$0")/.."
source scripts/lib/server.sh
source scripts/lib/bench.sh
need_time

usage_error() { echo "compare-rate.sh: $*" >&2; exit 2; }
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

ROUNDS=${ROUNDS:-5}
RATES=${RATES:-"50000 150000"}
DURATION=${DURATION:-}
if [ -z "$DURATION" ]; then
  DURATION=4
  [ "$ENV_SECONDS" -gt 0 ] && DURATION=$ENV_SECONDS
fi
KEYS=${KEYS:-100000}
PEERS=${PEERS:-/work/peers}
PERF=${PERF:-1}
is_count "$ROUNDS" || usage_error "ROUNDS must be a positive integer, got '$ROUNDS'"
is_count "$DURATION" || usage_error "SECONDS must be a positive integer, got '$DURATION'"
CLOSED_N=${CLOSED_N:-$((150000 * DURATION))}
is_count "$CLOSED_N" || usage_error "CLOSED_N must be a positive integer, got '$CLOSED_N'"
if ! is_count "$KEYS" || [ "$KEYS" -lt 10 ] || [ "${#KEYS}" -gt 12 ]; then
  usage_error "KEYS must be an integer from 10 to 999999999999, got '$KEYS'"
fi
[ -n "$RATES" ] || usage_error "RATES is empty"
for r in $RATES; do
  if ! is_count "$r" || [ $((r % 50)) -ne 0 ]; then
    usage_error "RATES: '$r' is not a positive multiple of 50 (-c 50, memtier's rate is per connection)"
  fi
done

# Peers: an explicit path wins, then the build under $PEERS, then PATH.
find_peer() {
  local given=$1 built=$2 name=$3
  if [ -n "$given" ]; then
    [ -x "$given" ] || command -v "$given" >/dev/null || { echo "compare-rate.sh: $name '$given' is not an executable" >&2; exit 1; }
    command -v "$given"
  elif [ -x "$built" ]; then
    echo "$built"
  else
    command -v "$name" || true
  fi
}
MEMTIER=$(find_peer "${MEMTIER:-}" "$PEERS/memtier/memtier_benchmark" memtier_benchmark)
if [ -z "$MEMTIER" ]; then
  cat >&2 <<'EOF'
compare-rate.sh: memtier_benchmark not found (set MEMTIER=path or put it on PATH); to build it:
  git clone https://github.com/RedisLabs/memtier_benchmark && cd memtier_benchmark
  apt-get install autoconf automake libtool pkg-config libevent-dev libssl-dev
  autoreconf -ivf && ./configure && make
EOF
  exit 1
fi
VALKEY_BENCHMARK=$(find_peer "${VALKEY_BENCHMARK:-}" "$PEERS/valkey/src/valkey-benchmark" valkey-benchmark)
NOTES=()
if [ -n "$VALKEY_BENCHMARK" ] && ! "$VALKEY_BENCHMARK" --help 2>&1 | grep -q -- '--rps'; then
  NOTES+=("valkey-benchmark skipped: $VALKEY_BENCHMARK ($("$VALKEY_BENCHMARK" --version 2>&1 | head -n1)) has no --rps")
  VALKEY_BENCHMARK=""
elif [ -z "$VALKEY_BENCHMARK" ]; then
  NOTES+=("valkey-benchmark skipped: not found (VALKEY_BENCHMARK=path)")
fi

if [ "$PERF" != 0 ]; then
  if ! command -v perf >/dev/null; then
    NOTES+=("perf not installed (Debian: linux-perf): no syscall counts")
    PERF=0
  elif ! perf stat -x, -o /dev/null -e raw_syscalls:sys_enter -e syscalls:sys_enter_io_uring_enter true 2>/dev/null; then
    NOTES+=("perf cannot open the syscall tracepoints (root or kernel.perf_event_paranoid <= -1): no syscall counts")
    PERF=0
  fi
fi

if [ -z "${RINGBENCH:-}" ]; then
  echo "building ringbench (release)..." >&2
  cargo build --release --quiet --bin ringbench
  RINGBENCH=$PWD/target/release/ringbench
fi
[ -x "$RINGBENCH" ] || { echo "compare-rate.sh: RINGBENCH '$RINGBENCH' is not an executable" >&2; exit 1; }

TOOLS="ringbench memtier"
[ -n "$VALKEY_BENCHMARK" ] && TOOLS="$TOOLS valkey"

WORK=$(mktemp -d)
cleanup() {
  stop_server
  if [ "${KEEP:-0}" = 1 ]; then echo "raw output kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# shellcheck disable=SC2119 # (no extra redis-server arguments)
start_server

# memtier's view of the keyspace: ids with as many digits as KEYS-1, behind the zeros that pad them to 12.
last=$((KEYS - 1))
MT_DIGITS=${#last}
MT_MIN=1
for _ in $(seq $((MT_DIGITS - 1))); do MT_MIN=$((MT_MIN * 10)); done
MT_PREFIX="key:$(printf '%0*d' $((12 - MT_DIGITS)) 0)"
MT_KEYS=(--key-prefix="$MT_PREFIX" --key-minimum="$MT_MIN" --key-maximum="$last" --key-pattern=R:R)

# Server counters: "get_calls keyspace_misses cpu_seconds wake_ups" (wake-ups: the event loop thread's
# voluntary context switches, each a sleep that a client's request ended).
server_counts() {
  local wakes
  wakes=$(awk '$1 == "voluntary_ctxt_switches:" { print $2 }' "/proc/$SERVER_PID/status")
  redis-cli -p "$SERVER_PORT" info all | tr -d '\r' | awk -F'[:=,]' -v w="${wakes:-0}" '
    $1 == "cmdstat_get" { calls = $3 }
    $1 == "keyspace_misses" { miss = $2 }
    $1 == "used_cpu_user" || $1 == "used_cpu_sys" { cpu += $2 }
    END { printf "%d %d %.6f %d\n", calls, miss, cpu, w }'
}

# Samples the server's GET calls every 0.1 s over one connection: "seconds calls" lines (the time is the
# middle of the INFO round trip).
cat >"$WORK/poll.py" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rb")
out = open(sys.argv[2], "w", buffering=1)
while True:
    sent = time.monotonic()
    s.sendall(b"INFO commandstats\r\n")
    n = int(f.readline()[1:])
    body = f.read(n + 2).decode()
    calls = 0
    for line in body.splitlines():
        if line.startswith("cmdstat_get:"):
            calls = int(line.split("calls=")[1].split(",")[0])
    out.write(f"{(sent + time.monotonic()) / 2:.6f} {calls}\n")
    time.sleep(0.1)
PY

# The server's GET rate while the run was under way: between the first sample that saw the run's first
# GETs and the last sample before its last ones (so neither set-up nor the tool's exit counts).
server_rate() {
  awk -v b="$2" -v a="$3" '$2 > b && $2 < a { if (!k++) { t0 = $1; c0 = $2 } t1 = $1; c1 = $2 }
    END { if (k >= 2 && t1 > t0) printf "%.2f\n", (c1 - c0) / (t1 - t0); else print "nan" }' "$1"
}

# measure OUT MODE cmd...: runs the client under /usr/bin/time (MODE plain) or under perf stat counting its
# system calls (MODE perf), stdout in OUT.out. Prints "wall user sys voluntary_cs involuntary_cs gets
# misses server_cpu server_rps syscalls io_uring_enters server_wake_ups" (syscalls and io_uring_enters "-" in
# plain mode).
measure() {
  local out=$1 mode=$2; shift 2
  local before after t0 t1 perf=() sc="-" ue="-" poller
  [ "$mode" = perf ] && perf=(perf stat "-x," -o "$out.perf" -e raw_syscalls:sys_enter -e syscalls:sys_enter_io_uring_enter --)
  before=$(server_counts)
  python3 "$WORK/poll.py" "$SERVER_PORT" "$out.samples" &
  poller=$!
  t0=$(date +%s.%N)
  "${perf[@]}" /usr/bin/time -f '%U %S %w %c' -o "$out.time" "$@" >"$out.out" 2>"$out.err" || {
    kill "$poller" 2>/dev/null || true; echo "failed: $* (see below)" >&2; cat "$out.err" >&2; return 1; }
  t1=$(date +%s.%N)
  kill "$poller" 2>/dev/null || true
  wait "$poller" 2>/dev/null || true
  after=$(server_counts)
  if [ "$mode" = perf ]; then
    sc=$(awk -F, '$3 == "raw_syscalls:sys_enter" { print $1 }' "$out.perf")
    ue=$(awk -F, '$3 == "syscalls:sys_enter_io_uring_enter" { print $1 }' "$out.perf")
  fi
  read -r b_get b_miss b_cpu b_wake <<<"$before"
  read -r a_get a_miss a_cpu a_wake <<<"$after"
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }') $(tail -n1 "$out.time")" \
    "$((a_get - b_get)) $((a_miss - b_miss)) $(awk -v a="$a_cpu" -v b="$b_cpu" 'BEGIN { printf "%.6f", a - b }')" \
    "$(server_rate "$out.samples" "$b_get" "$a_get") ${sc:--} ${ue:--} $((a_wake - b_wake))"
}

csv_rps() { awk -F'","' 'NR > 1 && $1 ~ /GET/ { gsub(/"/, "", $2); print $2; exit }' "$1"; }

# client_cmd TOOL RATE OUT: sets CMD to the client's command line (RATE "closed": ringbench's closed loop).
client_cmd() {
  local tool=$1 rate=$2 out=$3
  case $tool in
    ringbench)
      CMD=("$RINGBENCH" -h 127.0.0.1 -p "$SERVER_PORT" -t get -c 50 -r "$KEYS" --csv)
      if [ "$rate" = closed ]; then CMD+=(-P 1 -n "$CLOSED_N"); else CMD+=(--rps "$rate" -n $((rate * DURATION))); fi ;;
    memtier)
      CMD=("$MEMTIER" -s 127.0.0.1 -p "$SERVER_PORT" --protocol=redis -t 1 -c 50 --rate-limiting=$((rate / 50))
        --ratio=0:1 --test-time="$DURATION" "${MT_KEYS[@]}" --hide-histogram --json-out-file="$out.json") ;;
    valkey)
      CMD=("$VALKEY_BENCHMARK" -h 127.0.0.1 -p "$SERVER_PORT" -t get -c 50 -r "$KEYS" --csv
        --rps "$rate" -n $((rate * DURATION))) ;;
  esac
}

# run_one ROUND TOOL RATE: one run for the rate, CPU and wake-ups, then (PERF=1) the same run again under
# perf stat for the system calls, so that the tracepoints' cost stays out of the CPU figures. Appends
# "round tool rate tool_rps wall user sys vcs ics gets misses server_cpu server_rps syscalls
# io_uring_enters gets_of_the_counted_run server_wake_ups" to $WORK/results.
run_one() {
  local round=$1 tool=$2 rate=$3 out=$WORK/$2.$3.$1 m rps counted="- - 0"
  client_cmd "$tool" "$rate" "$out"
  m=$(measure "$out" plain "${CMD[@]}")
  if [ "$tool" = memtier ]; then
    rps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ALL STATS"]["Gets"]["Ops/sec"])' "$out.json")
  else
    rps=$(csv_rps "$out.out")
  fi
  if [ "$PERF" != 0 ]; then
    client_cmd "$tool" "$rate" "$out.counted"
    counted=$(measure "$out.counted" perf "${CMD[@]}" | awk '{ print $10, $11, $6 }')
  fi
  echo "$round $tool $rate ${rps:-nan} $(echo "$m" | cut -d' ' -f1-9) $counted $(echo "$m" | cut -d' ' -f12)" >>"$WORK/results"
  echo "  round $round $tool ${rate}: $(tail -n1 "$WORK/results" | cut -d' ' -f4-)" >&2
}

echo "uptime at start: $(uptime)"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on port $SERVER_PORT; $(nproc) CPUs;" \
  "$ROUNDS rounds; rates: $RATES; $DURATION s per open-loop run; closed loop -n $CLOSED_N"
echo "ringbench: $RINGBENCH"
echo "memtier:   $MEMTIER ($("$MEMTIER" --version 2>&1 | head -n1))"
[ -n "$VALKEY_BENCHMARK" ] && echo "valkey:    $VALKEY_BENCHMARK ($("$VALKEY_BENCHMARK" --version 2>&1 | head -n1))"
for n in "${NOTES[@]}"; do echo "note: $n"; done

# Every GET reads a key that exists: write the whole keyspace first.
"$RINGBENCH" -h 127.0.0.1 -p "$SERVER_PORT" -t set -c 50 -r "$KEYS" --sequential -n "$KEYS" -q >/dev/null
keys=$(redis-cli -p "$SERVER_PORT" dbsize)
[ "$keys" = "$KEYS" ] || { echo "compare-rate.sh: the SET run wrote $keys keys, not $KEYS" >&2; exit 1; }
echo "keyspace: $KEYS keys written by ringbench -t set -r $KEYS --sequential; memtier reads ${MT_PREFIX}N, N in [$MT_MIN, $last]"

for round in $(seq "$ROUNDS"); do
  for rate in $RATES; do
    for tool in $TOOLS; do
      run_one "$round" "$tool" "$rate"
    done
  done
  run_one "$round" ringbench closed
done

python3 - "$WORK/results" "$ROUNDS" "$RATES" "$TOOLS" <<'PY'
import statistics, sys
path, rounds, rates, tools = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
# round tool rate tool_rps wall user sys vcs ics gets misses server_cpu server_rps syscalls uring gets_counted
# server_wakes
runs = {}
for line in open(path):
    f = line.split()
    num = lambda s: float("nan") if s in ("-", "nan", "") else float(s.replace(",", ""))
    rps, wall, user, sys_, vcs, ics, gets, miss, srv, srv_rps, sc, ue, gets_c, srv_wakes = map(num, f[3:])
    d = {
        "rps": rps, "srv_rps": srv_rps, "miss": 100 * miss / gets if gets else float("nan"),
        "cpu": (user + sys_) * 1e6 / gets, "usr": user * 1e6 / gets, "sys": sys_ * 1e6 / gets,
        "wake": (vcs + ics) / gets, "invol": ics / gets,
        "sc": sc / gets_c if gets_c else float("nan"), "ue": ue / gets_c if gets_c else float("nan"),
        "srv": srv * 1e6 / gets, "srv_wake": srv_wakes / gets,
    }
    runs.setdefault((f[1], f[2]), []).append(d)

def med(key, col):
    v = [r[col] for r in runs.get(key, []) if r[col] == r[col]]
    return statistics.median(v) if v else float("nan")

cols = [("rps", "rps (tool)", "{:>11,.0f}"), ("srv_rps", "rps (server)", "{:>12,.0f}"), ("miss", "miss%", "{:>5.1f}"),
        ("cpu", "CPU us/req", "{:>10.2f}"), ("usr", "user", "{:>6.2f}"), ("sys", "sys", "{:>6.2f}"),
        ("wake", "wake/req", "{:>8.3f}"), ("invol", "invol/req", "{:>9.3f}"), ("sc", "syscalls/req", "{:>12.3f}"),
        ("ue", "uring_enter/req", "{:>15.3f}"), ("srv", "server us/req", "{:>13.2f}"),
        ("srv_wake", "server wake/req", "{:>15.3f}")]
print()
print(f"medians of {rounds} rounds, GET -c 50; CPU = client user+sys, per GET the server counted; "
      "wake = client context switches (voluntary+involuntary); server = redis-server CPU; server wake = the "
      "server's sleeps a request ended (its voluntary context switches); "
      "closed = ringbench -P 1 without --rps")
head = f"{'tool':<10} {'rate':>8} " + " ".join(f"{h:>{len(fmt.format(0.0))}}" for _, h, fmt in cols)
print(head)
print("-" * len(head))
order = [(t, r) for r in rates for t in tools] + [("ringbench", "closed")]
for key in order:
    if key not in runs:
        continue
    line = f"{key[0]:<10} {key[1]:>8} "
    line += " ".join(fmt.format(med(key, c)) if med(key, c) == med(key, c) else f"{'-':>{len(fmt.format(0.0))}}"
                     for c, _, fmt in cols)
    print(line)
print()
closed = med(("ringbench", "closed"), "cpu")
for r in rates:
    rb = med(("ringbench", r), "cpu")
    mt = med(("memtier", r), "cpu")
    line = f"rate {r}: CPU per request ringbench/memtier {rb / mt:.2f}x, ringbench open/closed loop {rb / closed:.2f}x"
    if "valkey" in tools:
        line += f", ringbench/valkey {rb / med(('valkey', r), 'cpu'):.2f}x"
    print(line)
print("targets: <= 0.50x memtier's CPU per request at 50000; <= 1.10x the closed loop's at 150000")
# A run that fell well short of its rate was limited by the machine, not paced: its cost is not the pacing's.
for r in rates:
    for t in tools:
        got = med((t, r), "srv_rps")
        if got == got and got < 0.9 * float(r):
            print(f"warning: {t} at {r} rps reached {100 * got / float(r):.0f}% of the rate (server's figure): "
                  "the run was limited by the machine, not paced")
PY
echo "uptime at end: $(uptime)"
