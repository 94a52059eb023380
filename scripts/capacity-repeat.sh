#!/usr/bin/env bash
# Does `ringbench capacity` give the same answer twice? Starts its own redis-server (no persistence) on a
# free port, builds ringbench in release mode, then runs ROUNDS whole capacity searches in a row (each with
# its own closed-loop probe) and prints each answer, then min / median / max and max/min, and checks the
# targets: max/min <= 1.25 on a quiet machine, and no client-limited answer below 80% of the closed-loop
# rate (the median of the searches' probes, which run with the same -c / -P). Prints `uptime` first and
# last: figures taken on a busy machine are its noise, not the server's.
#
# Environment:
#   ROUNDS=5                              searches in a row
#   TEST=get                              the test searched (-t)
#   SLO=p99=1ms WITHIN=5%                 the search's objective and precision
#   STEP= WARMUP=                         step time and warmup in seconds; unset, capacity's own defaults
#                                         (the target is about the command as a user runs it)
#   FLAGS="-c 50 -P 1 --threads 1"        ringbench flags besides -p -t and the search's own
#   EXTRA=                                more capacity flags (e.g. "--borderline 0 --retries 0")
#   SERVER_CPUS=  CLIENT_CPUS=            pin the server / ringbench with taskset
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh

ROUNDS=${ROUNDS:-5}
TEST=${TEST:-get}
SLO=${SLO:-p99=1ms}
WITHIN=${WITHIN:-5%}
STEPS=()
[ -n "${STEP:-}" ] && STEPS+=(--step-duration "$STEP")
[ -n "${WARMUP:-}" ] && STEPS+=(--warmup "$WARMUP")
read -r -a FLAGS <<<"${FLAGS:-"-c 50 -P 1 --threads 1"}"
read -r -a EXTRA <<<"${EXTRA:-}"

echo "building ringbench (release)..." >&2
cargo build --release --quiet --bin ringbench
RINGBENCH=$PWD/target/release/ringbench

pin() { if [ -n "$1" ]; then echo taskset -c "$1"; fi; }
read -r -a SERVER_PIN <<<"$(pin "${SERVER_CPUS:-}")"
read -r -a CLIENT_PIN <<<"$(pin "${CLIENT_CPUS:-}")"

WORK=$(mktemp -d)
trap 'stop_server; rm -rf "$WORK"' EXIT
if [ ${#SERVER_PIN[@]} -gt 0 ]; then
  # start_server runs redis-server itself; pin it once it runs.
  start_server
  taskset -pc "${SERVER_CPUS}" "$SERVER_PID" >/dev/null
else
  start_server
fi

echo "uptime before: $(uptime)"
echo "each search: ringbench capacity -t $TEST ${FLAGS[*]} --slo $SLO ${STEPS[*]} --within $WITHIN ${EXTRA[*]}"
for i in $(seq "$ROUNDS"); do
  "${CLIENT_PIN[@]}" "$RINGBENCH" capacity -p "$SERVER_PORT" -t "$TEST" "${FLAGS[@]}" \
    --slo "$SLO" "${STEPS[@]}" --within "$WITHIN" "${EXTRA[@]}" \
    --json "$WORK/$i.json" >"$WORK/$i.out" 2>"$WORK/$i.err" || {
    echo "search $i failed:" >&2; cat "$WORK/$i.out" "$WORK/$i.err" >&2; exit 1; }
  printf 'search %d: %s\n' "$i" "$(grep '^capacity: ' "$WORK/$i.out")"
  grep -E '^(client-limited: |far below |checked: )' "$WORK/$i.out" | sed 's/^/    /' || true
done
echo "uptime after:  $(uptime)"

python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
caps, probes, limited, runs, conf, spoiled, noisy = [], [], [], [], 0, 0, 0
for i in range(1, rounds + 1):
    c = json.load(open(f"{work}/{i}.json"))["capacity"]
    caps.append(c["capacity_rps"] or 0.0)
    if c["probe"]:
        probes.append(c["probe"]["rps"])
    limited.append(c["client_limited"])
    runs.append(len(c["steps"]))
    conf += c["confirmations"]; spoiled += c["spoiled"]; noisy += c["noisy_steps"]
lo, hi = min(caps), max(caps)
med = sorted(caps)[(len(caps) - 1) // 2]
ratio = hi / lo if lo > 0 else float("inf")
print(f"answers (rps): {' / '.join(f'{c:,.0f}' for c in caps)}")
print(f"min {lo:,.0f}  median {med:,.0f}  max {hi:,.0f}  max/min {ratio:.2f}  (target <= 1.25 on a quiet machine)")
print(f"runs per search: {' / '.join(map(str, runs))}; confirming runs {conf}, spoiled runs retried {spoiled}, steps whose runs disagreed {noisy}")
if probes:
    closed = statistics.median(probes)
    print(f"closed-loop probe (median of {len(probes)}): {closed:,.0f} rps")
    low = [f"{c:,.0f}" for c, l in zip(caps, limited) if l and c < 0.8 * closed]
    if low:
        print(f"client-limited answers below 80% of it: {', '.join(low)} (target: none)")
    else:
        print("client-limited answers below 80% of it: none (target: none)")
PY
