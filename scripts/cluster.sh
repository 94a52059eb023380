#!/usr/bin/env bash
# Starts or stops a local Redis Cluster of N masters (default 3) on free loopback ports, each with R
# replicas (default 0).
#   scripts/cluster.sh start [N [R]]  prints the cluster's directory, then one "127.0.0.1:PORT" per node
#                                     (masters and replicas; `CLUSTER NODES` tells which is which)
#   scripts/cluster.sh stop [DIR]  stops the cluster started in DIR (default: the last one started)
# The data lives in a temporary directory; $RINGBENCH_CLUSTER_DIR chooses it instead.
# $RINGBENCH_CLUSTER_NODE_TIMEOUT sets cluster-node-timeout in ms (default 5000).
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
  n=$(( n * (replicas + 1) ))
  local dir=${RINGBENCH_CLUSTER_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ringbench-cluster.XXXXXX")}
  mkdir -p "$dir"
  local addrs=() ports=()
  for _ in $(seq "$n"); do
    local port
    port=$(free_port)
    while [[ " ${ports[*]} " == *" $port "* ]]; do port=$(free_port); done
    mkdir -p "$dir/$port"
    redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$dir/$port/nodes.conf" --cluster-node-timeout "$timeout" \
      --save '' --appendonly no --dir "$dir/$port" --daemonize yes \
      --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" >/dev/null
    ports+=("$port")
    addrs+=("127.0.0.1:$port")
  done
  for port in "${ports[@]}"; do
    local up=""
    for _ in $(seq 200); do
      if [ "$(redis-cli -p "$port" ping 2>/dev/null || true)" = "PONG" ]; then up=1; break; fi
      sleep 0.05
    done
    if [ -z "$up" ]; then
      echo "cluster.sh: redis-server on port $port did not start:" >&2
      tail -n 3 "$dir/$port/redis.log" >&2 2>/dev/null || true
      stop_dir "$dir"
      exit 1
    fi
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

case "${1:-}" in
  start) start "${2:-3}" "${3:-0}" ;;
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
    echo "usage: scripts/cluster.sh start [N [R]] | stop [DIR]" >&2
    exit 2
    ;;
esac
