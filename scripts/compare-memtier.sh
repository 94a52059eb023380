#!/usr/bin/env bash
# ringbench's memtier personality side by side with memtier_benchmark: the SAME memtier command line run once
# with memtier_benchmark and once with `ringbench memtier`, judged from the server's side.
#
# Starts its own redis-server (no persistence) on a free port, builds ringbench in release mode, then for
# each case runs the two tools alternately (round 1: memtier then ringbench, round 2: ringbench then memtier,
# ...). Before every run: FLUSHALL, the case's preload if any (its CPU not measured), CONFIG RESETSTAT. After
# every run the server is read (INFO all, DBSIZE):
#   - calls per command (INFO commandstats; the script's own CONFIG RESETSTAT taken out) and their sum, the
#     run's requests;
#   - error replies: the errorstats total (every error reply the server sent), with the commandstats
#     failed_calls + rejected_calls shown beside it as a cross-check;
#   - DBSIZE, keyspace_hits / keyspace_misses (hit ratio = hits / (hits + misses)), used_memory;
#   - the client's CPU (user+sys, /usr/bin/time; bash `times` around a subshell when /usr/bin/time is missing)
#     over the requests the server counted: CPU us per request.
# Both tools' stdout and stderr go to files in a temp dir; ringbench's stderr must be empty on success and the
# script warns loudly when it is not. A run that fails (non-zero exit) is recorded with its exit code and the
# first line of its stderr, left out of the medians, and the script goes on: it never works around a refused
# option.
#
# Then per case: the median over the rounds per tool of each command's share of all calls, the error share,
# DBSIZE, hit ratio, used_memory, requests and CPU us per request; the comparisons ringbench/memtier (share
# relative difference in %, DBSIZE ratio, hit-ratio difference, CPU ratio) and one verdict per target:
#   shares   every workload command's share (>= 0.5% of the calls for either tool) within 10% relative of
#            memtier's; the other commands (a tool's own probes of the server, say) are listed with their counts
#   errors   the same error share (both 0, or within 10% relative); `multi` expects 0 errors for both
#   dbsize   DBSIZE within 10% relative (`allkeys`: exactly 20000 in every run of both tools)
#   hits     hit ratio within 10% relative (cases with GETs)
#   cpu      CPU per request ringbench/memtier <= 0.5 (cases p16, p1, rate)
#   conns    connections the server accepted (total_connections_received) within 2 of memtier's (reconnect)
# `uptime` is printed before and after: on a busy machine the CPU figures are noisy.
#
# Cases (memtier command lines, each with -s 127.0.0.1 -p PORT --hide-histogram):
#   p16       -t 1 -c 50 --pipeline 16 --ratio 0:1 -n 20000 --key-maximum 100000, after a preload
#   p1        the same with --pipeline 1 -n 2000, after a preload
#             (preload: memtier --ratio 1:0 -n allkeys --key-pattern P:P --key-minimum 1 --key-maximum 100000
#             -t 1 -c 10, before each measured run of either tool)
#   ratio     -t 2 -c 10 --ratio 1:10 -n 2000 --key-maximum 10000
#   multi     --command MULTI --command "SET __key__ __data__" --command "INCR counter:__key__"
#             --command EXEC -t 1 -c 10 -n 2000 --key-maximum 1000
#   seq       --ratio 1:1 --key-pattern S:S --key-minimum 1 --key-maximum 5000 -t 1 -c 4 -n 3000
#   gauss     the same with --key-pattern G:G --key-stddev 500
#   zipf      the same with --key-pattern Z:Z
#   range     --data-size-range 10-1000 --ratio 1:1 -t 1 -c 10 -n 3000 --key-maximum 10000
#   rate      --rate-limiting 500 -t 1 -c 20 --test-time 3 --ratio 0:1 --key-maximum 10000
#   allkeys   --ratio 1:0 -n allkeys --key-pattern P:P --key-minimum 1 --key-maximum 20000 -t 2 -c 5
#   scan      --command "SCAN 0 COUNT 10" --scan-incremental-iteration --scan-incremental-max-iterations 50
#             --command-key-pattern=R -t 1 -c 5 -n 2000, after the preload
#   reconnect --ratio 0:1 --key-pattern R:R -t 4 -c 1 -n 1000 --reconnect-interval 10 --key-maximum 100000,
#             after the preload; also judged on the connections the server accepted (a tool's probe aside)
#
# Environment:
#   ROUNDS=5        rounds per case (each round runs both tools once)
#   CASES="p16 p1 ratio multi seq gauss zipf range rate allkeys scan reconnect"   which cases to run
#   PEERS=/work/peers   memtier_benchmark is $PEERS/memtier_benchmark/memtier_benchmark
#   MEMTIER=path    memtier_benchmark binary (overrides PEERS)
#   RINGBENCH=path  use this ringbench binary instead of building target/release/ringbench
#   FORCE_TIMES=1   take the client CPU from bash `times` even when /usr/bin/time is installed
#   RUN_TIMEOUT=120 seconds before a run is killed (recorded as failed, exit 124)
#   KEEP=1          keep the raw output directory
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/server.sh

usage_error() { echo "compare-memtier.sh: $*" >&2; exit 2; }
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

ALL_CASES="p16 p1 ratio multi seq gauss zipf range rate allkeys scan reconnect"
ROUNDS=${ROUNDS:-5}
CASES=${CASES:-$ALL_CASES}
PEERS=${PEERS:-/work/peers}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
MEMTIER=${MEMTIER:-$PEERS/memtier_benchmark/memtier_benchmark}
is_count "$ROUNDS" || usage_error "ROUNDS must be a positive integer, got '$ROUNDS'"
is_count "$RUN_TIMEOUT" || usage_error "RUN_TIMEOUT must be a positive integer, got '$RUN_TIMEOUT'"
[ -n "$CASES" ] || usage_error "CASES is empty"
for cs in $CASES; do
  [[ " $ALL_CASES " == *" $cs "* ]] || usage_error "unknown case '$cs' in CASES ($ALL_CASES)"
done
if [ ! -x "$MEMTIER" ]; then
  cat >&2 <<EOF
compare-memtier.sh: memtier_benchmark not found at $MEMTIER (set PEERS=dir or MEMTIER=path); to build it:
  git clone https://github.com/RedisLabs/memtier_benchmark && cd memtier_benchmark
  apt-get install autoconf automake libtool pkg-config libevent-dev libssl-dev
  autoreconf -ivf && ./configure && make
EOF
  exit 1
fi

if [ -z "${RINGBENCH:-}" ]; then
  echo "building ringbench (release)..." >&2
  cargo build --release --quiet --bin ringbench
  RINGBENCH=$PWD/target/release/ringbench
fi
[ -x "$RINGBENCH" ] || { echo "compare-memtier.sh: RINGBENCH '$RINGBENCH' is not an executable" >&2; exit 1; }

WORK=$(mktemp -d)
cleanup() {
  stop_server
  if [ "${KEEP:-0}" = 1 ]; then echo "raw output kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# shellcheck disable=SC2119 # (no extra redis-server arguments)
start_server

rcli() { redis-cli -p "$SERVER_PORT" "$@"; }

CPU_SOURCE="/usr/bin/time"
[ -x /usr/bin/time ] || CPU_SOURCE="bash times"
[ -n "${FORCE_TIMES:-}" ] && CPU_SOURCE="bash times" # (to test the fallback)

# children_cpu FILE: the user+sys seconds of this shell's waited-for children in a `times` output (its second
# line). `times` itself must run in the measuring shell, not in a $(...) subshell (which starts from zero).
children_cpu() {
  tail -n1 "$1" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); s += p[1] * 60 + p[2] } printf "%.6f\n", s }'
}

# timed OUT cmd...: runs the command (killed after RUN_TIMEOUT seconds: exit 124), stdout in OUT.out, stderr in OUT.err; writes "user sys" to OUT.time
# and "wall" to OUT.wall; returns the command's exit code.
timed() {
  local out=$1 rc=0 t0 t1 c0 c1; shift
  t0=$(date +%s.%N)
  if [ "$CPU_SOURCE" = /usr/bin/time ]; then
    /usr/bin/time -f '%U %S' -o "$out.time" timeout -k 5 "$RUN_TIMEOUT" "$@" >"$out.out" 2>"$out.err" || rc=$?
  else
    times >"$out.times0"
    (timeout -k 5 "$RUN_TIMEOUT" "$@") >"$out.out" 2>"$out.err" || rc=$?
    times >"$out.times1"
    c0=$(children_cpu "$out.times0")
    c1=$(children_cpu "$out.times1")
    awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.6f 0\n", b - a }' >"$out.time"
  fi
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }' >"$out.wall"
  return "$rc"
}

# The memtier command line of a case (without the tool), in ARGS; PRELOAD=1 when the case preloads.
case_args() {
  local base=(-s 127.0.0.1 -p "$SERVER_PORT" --hide-histogram)
  PRELOAD=0
  case $1 in
    p16) PRELOAD=1; ARGS=("${base[@]}" -t 1 -c 50 --pipeline 16 --ratio 0:1 -n 20000 --key-maximum 100000) ;;
    p1) PRELOAD=1; ARGS=("${base[@]}" -t 1 -c 50 --pipeline 1 --ratio 0:1 -n 2000 --key-maximum 100000) ;;
    ratio) ARGS=("${base[@]}" -t 2 -c 10 --ratio 1:10 -n 2000 --key-maximum 10000) ;;
    multi) ARGS=("${base[@]}" --command "MULTI" --command "SET __key__ __data__" --command "INCR counter:__key__"
      --command "EXEC" -t 1 -c 10 -n 2000 --key-maximum 1000) ;;
    seq) ARGS=("${base[@]}" --ratio 1:1 --key-pattern S:S --key-minimum 1 --key-maximum 5000 -t 1 -c 4 -n 3000) ;;
    gauss) ARGS=("${base[@]}" --ratio 1:1 --key-pattern G:G --key-stddev 500 --key-minimum 1 --key-maximum 5000
      -t 1 -c 4 -n 3000) ;;
    zipf) ARGS=("${base[@]}" --ratio 1:1 --key-pattern Z:Z --key-minimum 1 --key-maximum 5000 -t 1 -c 4 -n 3000) ;;
    range) ARGS=("${base[@]}" --data-size-range 10-1000 --ratio 1:1 -t 1 -c 10 -n 3000 --key-maximum 10000) ;;
    rate) ARGS=("${base[@]}" --rate-limiting 500 -t 1 -c 20 --test-time 3 --ratio 0:1 --key-maximum 10000) ;;
    allkeys) ARGS=("${base[@]}" --ratio 1:0 -n allkeys --key-pattern P:P --key-minimum 1 --key-maximum 20000
      -t 2 -c 5) ;;
    scan) PRELOAD=1; ARGS=("${base[@]}" --command "SCAN 0 COUNT 10" --scan-incremental-iteration
      --scan-incremental-max-iterations 50 --command-key-pattern=R -t 1 -c 5 -n 2000) ;;
    reconnect) PRELOAD=1; ARGS=("${base[@]}" --ratio 0:1 --key-pattern R:R -t 4 -c 1 -n 1000
      --reconnect-interval 10 --key-maximum 100000) ;;
  esac
}
PRELOAD_ARGS=(--ratio 1:0 -n allkeys --key-pattern P:P --key-minimum 1 --key-maximum 100000 -t 1 -c 10)

# Reads the server after a run into one JSON line: calls per command, errors, dbsize, hits, misses, memory.
cat >"$WORK/stats.py" <<'PY'
import json, sys
info, dbsize, case, tool, rnd, rc, cpu_file, wall_file, err_file = sys.argv[1:]
calls, failed, errors, st = {}, 0, 0, {}
for line in open(info, encoding="utf-8", errors="replace"):
    line = line.strip()
    if line.startswith("cmdstat_"):
        name, rest = line[len("cmdstat_"):].split(":", 1)
        f = dict(kv.split("=", 1) for kv in rest.split(","))
        calls[name] = int(f["calls"])
        failed += int(f.get("failed_calls", 0)) + int(f.get("rejected_calls", 0))
    elif line.startswith("errorstat_"):
        errors += int(line.split("count=")[1].split(",")[0])
    elif ":" in line and not line.startswith("#"):
        k, v = line.split(":", 1)
        st[k] = v
# The script's own CONFIG RESETSTAT is counted once, after the reset.
if calls.get("config|resetstat", 0) > 0:
    calls["config|resetstat"] -= 1
    if calls["config|resetstat"] == 0:
        del calls["config|resetstat"]
# /usr/bin/time writes "Command exited with non-zero status N" before its figures on failure: the last line.
user, sys_ = (float(x) for x in open(cpu_file).read().strip().splitlines()[-1].split()[:2])
err_first = ""
for l in open(err_file, encoding="utf-8", errors="replace"):
    if l.strip():
        err_first = l.strip()
        break
print(json.dumps({
    "case": case, "tool": tool, "round": int(rnd), "rc": int(rc), "calls": calls,
    "total": sum(calls.values()), "errors": errors, "failed_rejected": failed,
    "dbsize": int(dbsize), "hits": int(st.get("keyspace_hits", 0)), "misses": int(st.get("keyspace_misses", 0)),
    "used_memory": int(st.get("used_memory", 0)), "cpu": user + sys_,
    "conns": int(st.get("total_connections_received", 0)), "wall": float(open(wall_file).read()),
    "err_first": err_first,
}))
PY

# run_one CASE TOOL ROUND: one measured run; appends a JSON line to $WORK/results.
run_one() {
  local cs=$1 tool=$2 round=$3 out=$WORK/$1.$2.$3 rc=0 cmd
  case_args "$cs"
  rcli flushall >/dev/null
  if [ "$PRELOAD" = 1 ]; then
    "$MEMTIER" -s 127.0.0.1 -p "$SERVER_PORT" --hide-histogram "${PRELOAD_ARGS[@]}" >"$out.preload.out" 2>&1 || {
      echo "compare-memtier.sh: the preload (memtier ${PRELOAD_ARGS[*]}) failed:" >&2; tail -n5 "$out.preload.out" >&2; exit 1; }
  fi
  rcli config resetstat >/dev/null
  if [ "$tool" = memtier ]; then cmd=("$MEMTIER"); else cmd=("$RINGBENCH" memtier); fi
  timed "$out" "${cmd[@]}" "${ARGS[@]}" || rc=$?
  rcli info all >"$out.info"
  python3 "$WORK/stats.py" "$out.info" "$(rcli dbsize)" "$cs" "$tool" "$round" "$rc" "$out.time" "$out.wall" \
    "$out.err" >>"$WORK/results"
  if [ "$rc" != 0 ]; then
    echo "FAILED: $cs round $round $tool exited $rc; stderr: $(grep -m1 . "$out.err" || echo '(empty)')"
    echo "  command: ${cmd[*]} ${ARGS[*]}"
  elif [ "$tool" = ringbench ] && [ -s "$out.err" ]; then
    echo "!!!!!!!! WARNING: $cs round $round: ringbench exited 0 but wrote to stderr ($(wc -l <"$out.err") lines):"
    head -n5 "$out.err" | sed 's/^/!!!!!!!!   /'
  fi
  python3 - "$WORK/results" >&2 <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
calls = " ".join(f"{k}={v}" for k, v in sorted(r["calls"].items()))
print(f"  {r['case']} round {r['round']} {r['tool']}: rc {r['rc']}, {r['total']} calls {calls}, errors {r['errors']}, "
      f"dbsize {r['dbsize']}, hits {r['hits']} misses {r['misses']}, cpu {r['cpu']:.3f} s, wall {r['wall']:.2f} s")
PY
}

echo "uptime at start: $(uptime)"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on port $SERVER_PORT; $(nproc) CPUs;" \
  "$ROUNDS rounds; cases: $CASES; client CPU from $CPU_SOURCE"
echo "ringbench: $RINGBENCH"
echo "memtier:   $MEMTIER ($("$MEMTIER" --version 2>&1 | head -n1))"
for cs in $CASES; do
  case_args "$cs"
  pre=""
  [ "$PRELOAD" = 1 ] && pre=" (after memtier ${PRELOAD_ARGS[*]})"
  echo "case $cs: ${ARGS[*]:5}$pre"
done
echo

START=$(date +%s)
for cs in $CASES; do
  for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then order="memtier ringbench"; else order="ringbench memtier"; fi
    for tool in $order; do
      run_one "$cs" "$tool" "$round"
    done
  done
done
echo "all runs took $(($(date +%s) - START)) s"

python3 - "$WORK/results" "$ROUNDS" "$CASES" <<'PY'
import json, statistics, sys
path, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
runs = [json.loads(l) for l in open(path)]
CPU_CASES = {"p16", "p1", "rate"}
GET_CASES = {"p16", "p1", "ratio", "seq", "gauss", "zipf", "range", "rate", "reconnect"}
TOL = 0.10
nan = float("nan")

def med(v):
    v = [x for x in v if x == x]
    return statistics.median(v) if v else nan

def rel(a, b):
    return (a - b) / b if b else (0.0 if a == 0 else float("inf"))

def fmt(x, f):
    return "-" if x != x else format(x, f)

print()
print(f"medians over the rounds ({rounds} per tool; failed runs left out); share = the command's calls over all "
      "calls the server counted; errors = error replies (errorstats total) over all calls; CPU = client user+sys "
      "per call the server counted")
verdicts = []
for case in cases:
    ok = {t: [r for r in runs if r["case"] == case and r["tool"] == t and r["rc"] == 0] for t in ("memtier", "ringbench")}
    failed = [r for r in runs if r["case"] == case and r["rc"] != 0]
    print()
    print(f"== {case} ==  runs ok: memtier {len(ok['memtier'])}, ringbench {len(ok['ringbench'])}")
    for r in failed:
        print(f"   FAILED run: {r['tool']} round {r['round']} exit {r['rc']}: {r['err_first'] or '(stderr empty)'}")
    if not ok["memtier"] or not ok["ringbench"]:
        v = f"{case}: NO VERDICT (" + ", ".join(f"{t} has no successful run" for t in ok if not ok[t]) + ")"
        print("   " + v)
        verdicts.append(v)
        continue
    cmds = sorted({c for t in ok for r in ok[t] for c in r["calls"]})
    m = {}
    for t in ok:
        rs = ok[t]
        d = {f"share:{c}": med([r["calls"].get(c, 0) / r["total"] if r["total"] else nan for r in rs]) for c in cmds}
        d["calls_med"] = {c: med([r["calls"].get(c, 0) for r in rs]) for c in cmds}
        d["total"] = med([r["total"] for r in rs])
        d["errors"] = med([r["errors"] for r in rs])
        d["failed_rejected"] = med([r["failed_rejected"] for r in rs])
        d["err_share"] = med([r["errors"] / r["total"] if r["total"] else nan for r in rs])
        d["dbsize"] = med([r["dbsize"] for r in rs])
        d["hit"] = med([r["hits"] / (r["hits"] + r["misses"]) if r["hits"] + r["misses"] else nan for r in rs])
        d["mem"] = med([r["used_memory"] for r in rs])
        d["cpu"] = med([r["cpu"] * 1e6 / r["total"] if r["total"] else nan for r in rs])
        d["wall"] = med([r["wall"] for r in rs])
        d["conns"] = med([r["conns"] for r in rs])
        m[t] = d
    mt, rb = m["memtier"], m["ringbench"]
    w = 16
    print(f"   {'':<26} {'memtier':>{w}} {'ringbench':>{w}}   ringbench vs memtier")
    # The workload's commands (>= 0.5% of the calls for either tool) are judged on their share; the others
    # (e.g. a tool's own probes of the server) are listed apart with their counts.
    work = [c for c in cmds if max(rb[f"share:{c}"], mt[f"share:{c}"]) >= 0.005]
    minor = [c for c in cmds if c not in work]
    share_ok = True
    for c in cmds:
        a, b = rb[f"share:{c}"], mt[f"share:{c}"]
        d = rel(a, b)
        if c in work:
            share_ok &= abs(d) <= TOL
        print(f"   {'share ' + c:<26} {fmt(100 * b, '.3f') + '%':>{w}} {fmt(100 * a, '.3f') + '%':>{w}}   "
              f"{d * 100:+.2f}% relative   (calls {mt['calls_med'][c]:,.0f} vs {rb['calls_med'][c]:,.0f})")
    print(f"   {'requests (sum of calls)':<26} {mt['total']:>{w},.0f} {rb['total']:>{w},.0f}   "
          f"{rel(rb['total'], mt['total']) * 100:+.2f}%")
    print(f"   {'error replies':<26} {mt['errors']:>{w},.0f} {rb['errors']:>{w},.0f}   "
          f"(cmdstat failed+rejected: {mt['failed_rejected']:,.0f} vs {rb['failed_rejected']:,.0f})")
    print(f"   {'error share':<26} {fmt(100 * mt['err_share'], '.4f') + '%':>{w}} "
          f"{fmt(100 * rb['err_share'], '.4f') + '%':>{w}}")
    print(f"   {'DBSIZE':<26} {mt['dbsize']:>{w},.0f} {rb['dbsize']:>{w},.0f}   "
          f"ratio {fmt(rb['dbsize'] / mt['dbsize'] if mt['dbsize'] else nan, '.4f')}")
    print(f"   {'hit ratio':<26} {fmt(mt['hit'], '.4f'):>{w}} {fmt(rb['hit'], '.4f'):>{w}}   "
          f"difference {fmt(rb['hit'] - mt['hit'], '+.4f')}")
    print(f"   {'used_memory (bytes)':<26} {mt['mem']:>{w},.0f} {rb['mem']:>{w},.0f}   "
          f"ratio {rb['mem'] / mt['mem']:.3f}")
    print(f"   {'CPU us/request':<26} {mt['cpu']:>{w}.3f} {rb['cpu']:>{w}.3f}   ratio {rb['cpu'] / mt['cpu']:.3f}")
    print(f"   {'wall s':<26} {mt['wall']:>{w}.2f} {rb['wall']:>{w}.2f}")
    print(f"   {'connections accepted':<26} {mt['conns']:>{w},.0f} {rb['conns']:>{w},.0f}")
    # Verdicts.
    vs = [("shares", share_ok, "the share of every workload command (" + ", ".join(work) + ") within 10% relative")]
    if case == "multi":
        zero = all(r["errors"] == 0 and r["failed_rejected"] == 0 for t in ok for r in ok[t])
        vs.append(("errors", zero, "0 error replies in every run of both tools"))
    else:
        es_ok = (mt["err_share"] == 0 and rb["err_share"] == 0) or abs(rel(rb["err_share"], mt["err_share"])) <= TOL
        vs.append(("errors", es_ok, "same error share"))
    if case == "allkeys":
        exact = all(r["dbsize"] == 20000 for t in ok for r in ok[t])
        vs.append(("dbsize", exact, "DBSIZE exactly 20000 in every run of both tools: " + "; ".join(
            f"{t} {sorted({r['dbsize'] for r in ok[t]})}" for t in ok)))
    else:
        vs.append(("dbsize", abs(rel(rb["dbsize"], mt["dbsize"])) <= TOL, "DBSIZE within 10% relative"))
    if case in GET_CASES:
        vs.append(("hits", abs(rel(rb["hit"], mt["hit"])) <= TOL, "hit ratio within 10% relative"))
    if case == "reconnect":
        vs.append(("conns", abs(rb["conns"] - mt["conns"]) <= 2,
                   f"connections accepted {rb['conns']:,.0f} vs {mt['conns']:,.0f}, within 2"))
    if case in CPU_CASES:
        vs.append(("cpu", rb["cpu"] / mt["cpu"] <= 0.5, f"CPU ratio {rb['cpu'] / mt['cpu']:.3f} <= 0.5"))
    for name, good, why in vs:
        line = f"{case}: {name:<7} {'PASS' if good else 'FAIL'}  ({why})"
        print("   verdict " + line)
        verdicts.append(line)
    if minor:
        line = f"{case}: note    other commands (< 0.5% of the calls), median calls memtier vs ringbench: " + ", ".join(
            f"{c} {mt['calls_med'][c]:,.0f} vs {rb['calls_med'][c]:,.0f}" for c in minor)
        print("   " + line)
        verdicts.append(line)
    if case == "range":
        print(f"   note: used_memory ratio {rb['mem'] / mt['mem']:.3f} (rough check of the value sizes; not a verdict)")

print()
print("verdicts:")
for v in verdicts:
    print("  " + v)
PY
echo "uptime at end: $(uptime)"
