#!/usr/bin/env bash
# Runs deploy/ansible/ringbench.yml end to end with ansible-playbook against three "client hosts" that are
# this machine (ansible_connection=local, one working folder each) and a real local redis-server, then
# checks the merged result against the server: requests = SET calls in INFO commandstats, and with
# sequential keys split over the shards, DBSIZE = -r.
#   scripts/fleet-ansible.sh            (ansible-playbook from PATH, else ansible-core from PyPI in target/fleet-venv)
# RINGBENCH_BIN chooses the binary (default: a debug build, made here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/lib/server.sh
source scripts/lib/fleet-venv.sh
export LC_ALL=C.UTF-8 LANG=C.UTF-8

if command -v ansible-playbook >/dev/null 2>&1; then
  playbook=$(command -v ansible-playbook)
  python=$(command -v python3)
else
  fleet_venv ansible-core
  playbook=$VENV_BIN/ansible-playbook
  python=$VENV_BIN/python
fi
if [ -z "${RINGBENCH_BIN:-}" ]; then
  cargo build -q
  RINGBENCH_BIN=$root/target/debug/ringbench
fi

N=${N:-100001}
R=${R:-3000}
C=${C:-10}
work=$(mktemp -d "${TMPDIR:-/tmp}/ringbench-ansible.XXXXXX")
trap 'stop_server; rm -rf "$work"' EXIT
start_server
{
  echo "[clients]"
  for h in client1 client2 client3; do
    echo "$h ansible_connection=local ansible_python_interpreter=$python ringbench_workdir=$work/$h"
  done
} >"$work/inventory.ini"

extra=$(printf '{"ringbench_binary": "%s", "ringbench_results": "%s", "ringbench_lead": 10, "ringbench_args": ["-h", "127.0.0.1", "-p", "%s", "-t", "set", "-n", "%s", "-c", "%s", "-r", "%s", "--distribution", "sequential"]}' \
  "$RINGBENCH_BIN" "$work/results" "$SERVER_PORT" "$N" "$C" "$R")
"$playbook" --version | sed -n 1p
ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 "$playbook" -i "$work/inventory.ini" \
  deploy/ansible/ringbench.yml -e "$extra" >"$work/playbook.log" 2>&1 || {
  cat "$work/playbook.log"
  echo "fleet-ansible: ansible-playbook failed" >&2
  exit 1
}
grep -E "^(PLAY RECAP|client[0-9]|localhost) " "$work/playbook.log" || true
echo "--- merged report ($work/results/merged.txt)"
cat "$work/results/merged.txt"

calls=$(redis-cli -p "$SERVER_PORT" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_set:calls=\([0-9]*\),.*/\1/p')
dbsize=$(redis-cli -p "$SERVER_PORT" dbsize)
read -r merged shards spread < <("$python" - "$work/results" <<'PY'
import json, sys, glob, os
d = sys.argv[1]
m = json.load(open(os.path.join(d, "merged.json")))
parts = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(d, "client*.json")))]
starts = [p["tests"][0]["start_unix"] for p in parts]
print(m["tests"][0]["requests"],
      ",".join(f'{p["config"]["shard"]["index"]}/{p["config"]["shard"]["count"]}:{p["config"]["requests"]}' for p in parts),
      f"{(max(starts) - min(starts)) * 1000:.1f}")
PY
)
echo "shards (index/count:requests): $shards; first sends ${spread} ms apart"
echo "merged requests: $merged; server SET calls: $calls; DBSIZE: $dbsize (-r $R)"
fail=0
[ "$merged" = "$N" ] || { echo "FAIL: merged requests $merged != -n $N" >&2; fail=1; }
[ "$calls" = "$N" ] || { echo "FAIL: server SET calls $calls != -n $N" >&2; fail=1; }
[ "$dbsize" = "$R" ] || { echo "FAIL: DBSIZE $dbsize != -r $R" >&2; fail=1; }
[ "$fail" = 0 ] && echo "fleet-ansible: OK"
exit "$fail"
