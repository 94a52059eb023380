#!/usr/bin/env bash
# Starts or stops a local Redis Cluster of N masters (default 3) on free loopback ports, each with R
# replicas (default 0).
#   scripts/cluster.sh start [N [R]]  prints the cluster's directory, then one "127.0.0.1:PORT" per node
#                                     (masters and replicas; `CLUSTER NODES` tells which is which)
#   scripts/cluster.sh stop [DIR]  stops the cluster started in DIR (default: the last one started)
# The data lives in a temporary directory; $RINGBENCH_CLUSTER_DIR chooses it instead.
#   scripts/cluster.sh bench      starts a cluster of 3 masters, runs ringbench (release build) and
#                                 redis-benchmark --cluster alternately with the same flags, prints the
#                                 median rps and client CPU (user+sys) per request of each, and stops it.
#                                 ROUNDS=3, N=200000 (-n at -P 1; 5x at -P 16), CLIENTS=50, THREADS=1,
#                                 PIPELINES="1 16", RINGBENCH=path (a build to use instead of this tree's)
# $RINGBENCH_CLUSTER_NODE_TIMEOUT sets cluster-node-timeout in ms (default 5000).
# $RINGBENCH_CLUSTER_PORTS lists ports (space-separated) the nodes try first, in order; a port that
# another server holds is given up for a free one, as is every port picked when these run out.
set -euo pipefail
last_file="${TMPDIR:-/tmp}/ringbench-cluster.last"

free_port() {
  # A port nobody listens on, whose cluster bus port (port + 10000) is free too. Both stay below the
  # kernel's ephemeral range (32768 and up by default), so outgoing connections cannot hold them.
  local p
  while :; do
    p=$(( (RANDOM % 2700) + 20000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 10000))") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
}

# Starts a cluster node on PORT with its files in DIR/PORT and waits until it answers. The port was
# free when picked, but another process (a parallel test starting its own cluster) can take it
# before this server binds it: the node counts as up only when the server answering on the port is
# this one (its `dir` is ours). Returns 1 when the port went to someone else or the server died.
start_node() {
  local dir=$1 port=$2 timeout=$3
  rm -rf "${dir:?}/$port"
  mkdir -p "$dir/$port"
  redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
    --cluster-config-file "$dir/$port/nodes.conf" --cluster-node-timeout "$timeout" \
    --save '' --appendonly no --dir "$dir/$port" --daemonize yes \
    --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" >/dev/null || return 1
  local answer
  for _ in $(seq 200); do
    answer=$(redis-cli -p "$port" config get dir 2>/dev/null | sed -n 2p || true)
    if [ "$answer" = "$dir/$port" ]; then return 0; fi
    if [ -n "$answer" ] || grep -qE 'Address already in use|aborting' "$dir/$port/redis.log" 2>/dev/null; then
      # Someone else's server holds the port, or ours could not bind: stop ours if it runs.
      if [ -f "$dir/$port/redis.pid" ]; then kill "$(cat "$dir/$port/redis.pid")" 2>/dev/null || true; fi
      rm -rf "${dir:?}/$port"
      return 1
    fi
    sleep 0.05
  done
  echo "cluster.sh: redis-server on port $port did not start:" >&2
  tail -n 3 "$dir/$port/redis.log" >&2 2>/dev/null || true
  return 1
}

start() {
  local n=${1:-3} replicas=${2:-0} timeout=${RINGBENCH_CLUSTER_NODE_TIMEOUT:-5000}
  if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -lt 3 ]; then
    echo "cluster.sh: invalid value '$n' for N: a cluster needs at least 3 masters" >&2
    exit 2
  fi
  if ! [[ $replicas =~ ^[0-9]+$ ]]; then
    echo "cluster.sh: invalid value '$replicas' for R: not a count of replicas" >&2
    exit 2
  fi
  if ! [[ $timeout =~ ^[0-9]+$ ]]; then
    echo "cluster.sh: invalid value '$timeout' for RINGBENCH_CLUSTER_NODE_TIMEOUT: not milliseconds" >&2
    exit 2
  fi
  local wanted=() p
  read -r -a wanted <<<"${RINGBENCH_CLUSTER_PORTS:-}"
  for p in "${wanted[@]}"; do
    if ! [[ $p =~ ^[0-9]+$ ]] || [ "$p" -lt 1 ] || [ "$p" -gt 55535 ]; then
      echo "cluster.sh: invalid port '$p' in RINGBENCH_CLUSTER_PORTS: 1 to 55535 (its bus port is 10000 above)" >&2
      exit 2
    fi
  done
  n=$(( n * (replicas + 1) ))
  local dir=${RINGBENCH_CLUSTER_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ringbench-cluster.XXXXXX")}
  mkdir -p "$dir"
  # The servers report their dir resolved (start_node compares it), so resolve it here too.
  dir=$(cd "$dir" && pwd -P)
  local addrs=() ports=()
  for _ in $(seq "$n"); do
    local port="" tries
    for tries in $(seq 10); do
      if [ "${#wanted[@]}" -gt 0 ]; then
        port=${wanted[0]}
        wanted=("${wanted[@]:1}")
      else
        port=$(free_port)
      fi
      while [[ " ${ports[*]} " == *" $port "* ]]; do port=$(free_port); done
      if start_node "$dir" "$port" "$timeout"; then break; fi
      port=""
    done
    if [ -z "$port" ]; then
      echo "cluster.sh: no redis-server of this cluster started after $tries ports were tried" >&2
      stop_dir "$dir"
      exit 1
    fi
    ports+=("$port")
    addrs+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log" 2>&1 || {
    echo "cluster.sh: redis-cli --cluster create failed:" >&2
    tail -n 5 "$dir/create.log" >&2
    stop_dir "$dir"
    exit 1
  }
  for port in "${ports[@]}"; do
    local ok=""
    for _ in $(seq 400); do
      if redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then ok=1; break; fi
      sleep 0.05
    done
    if [ -z "$ok" ]; then
      echo "cluster.sh: node 127.0.0.1:$port did not reach cluster_state:ok" >&2
      stop_dir "$dir"
      exit 1
    fi
    # A replica takes part in a failover only once it is in sync with its master.
    if redis-cli -p "$port" info replication 2>/dev/null | grep -q '^role:slave'; then
      ok=""
      for _ in $(seq 400); do
        if redis-cli -p "$port" info replication 2>/dev/null | grep -q '^master_link_status:up'; then ok=1; break; fi
        sleep 0.05
      done
      if [ -z "$ok" ]; then
        echo "cluster.sh: replica 127.0.0.1:$port did not sync with its master" >&2
        stop_dir "$dir"
        exit 1
      fi
    fi
  done
  echo "$dir" >"$last_file"
  echo "$dir"
  printf '%s\n' "${addrs[@]}"
}

stop_dir() {
  local dir=$1
  for pidfile in "$dir"/*/redis.pid; do
    [ -f "$pidfile" ] || continue
    kill "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || true
  done
  for pidfile in "$dir"/*/redis.pid; do
    [ -f "$pidfile" ] || continue
    for _ in $(seq 100); do
      kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || break
      sleep 0.05
    done
  done
  rm -rf "$dir"
}

# bench: see the header.
bench() {
  command -v redis-benchmark >/dev/null || { echo "cluster.sh: redis-benchmark is not on PATH" >&2; exit 1; }
  [ -x /usr/bin/time ] || { echo "cluster.sh: /usr/bin/time is missing" >&2; exit 1; }
  local rounds=${ROUNDS:-3} n=${N:-200000} clients=${CLIENTS:-50} threads=${THREADS:-1}
  local bin=${RINGBENCH:-}
  if [ -z "$bin" ]; then
    (cd "$(dirname "$0")/.." && cargo build --release --quiet --bin ringbench)
    bin="$(cd "$(dirname "$0")/.." && pwd)/target/release/ringbench"
  fi
  local out port previous
  # The bench's own cluster is not "the last one started": `stop` keeps meaning the user's.
  previous=$(cat "$last_file" 2>/dev/null || true)
  out=$(start 3 0)
  if [ -n "$previous" ]; then echo "$previous" >"$last_file"; else rm -f "$last_file"; fi
  bench_dir=$(echo "$out" | head -n1)
  port=$(echo "$out" | sed -n 2p | cut -d: -f2)
  work=$(mktemp -d)
  trap 'stop_dir "$bench_dir"; rm -rf "$work"' EXIT
  echo "load: $(uptime | sed 's/.*load average: //')"
  for p in ${PIPELINES:-1 16}; do
    local reqs=$n
    [ "$p" -gt 1 ] && reqs=$((n * 5))
    for _ in $(seq "$rounds"); do
      for tool in ringbench redis-benchmark; do
        local cmd=("$bin")
        [ "$tool" = redis-benchmark ] && cmd=(redis-benchmark)
        /usr/bin/time -f '%U %S' -o "$work/time" "${cmd[@]}" -p "$port" --cluster -t set -n "$reqs" \
          -c "$clients" -P "$p" -r 100000 --threads "$threads" -q >"$work/out" 2>"$work/err" ||
          { cat "$work/err" >&2; exit 1; }
        local rps cpu
        rps=$(grep -o '[0-9.]* requests per second' "$work/out" | head -n1 | cut -d' ' -f1)
        cpu=$(tail -n1 "$work/time" | awk -v n="$reqs" '{ printf "%.0f", ($1 + $2) * 1e9 / n }')
        echo "$tool $p $rps $cpu" >>"$work/all"
      done
    done
  done
  echo "tool             -P   median rps   median CPU ns/request"
  sort -k1,1 -k2,2n "$work/all" | awk '
    { k = $1 " " $2; n[k]++; r[k, n[k]] = $3; c[k, n[k]] = $4; keys[k] = 1 }
    function med(a, k, m,   i, j, t, v) {
      for (i = 1; i <= m; i++) v[i] = a[k, i]
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
      return v[int((m + 1) / 2)]
    }
    END { for (k in keys) { split(k, f, " "); printf "%-16s %3s %12.0f %12.0f\n", f[1], f[2], med(r, k, n[k]), med(c, k, n[k]) } }' | sort -k2,2n -k1,1
  echo "load: $(uptime | sed 's/.*load average: //')"
}

case "${1:-}" in
  start) start "${2:-3}" "${3:-0}" ;;
  bench) bench ;;
  stop)
    dir=${2:-$(cat "$last_file" 2>/dev/null || true)}
    if [ -z "$dir" ] || [ ! -d "$dir" ]; then
      echo "cluster.sh: no cluster directory to stop" >&2
      exit 1
    fi
    stop_dir "$dir"
    [ "$(cat "$last_file" 2>/dev/null || true)" = "$dir" ] && rm -f "$last_file"
    ;;
  *)
    echo "usage: scripts/cluster.sh start [N [R]] | stop [DIR] | bench" >&2
    exit 2
    ;;
esac
