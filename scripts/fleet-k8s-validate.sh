#!/usr/bin/env bash
# Validates manifests rendered by `ringbench fleet kubernetes` against the Kubernetes API schema, with
# kubernetes-validate from PyPI (the JSON schemas of the Kubernetes OpenAPI definitions that it ships, in
# strict mode: unknown fields are errors). Several flag sets are rendered and must pass; broken copies of
# one (a required field misspelt, a wrong type, an unknown field) must fail, so the check is known to bite.
#   scripts/fleet-k8s-validate.sh [KUBERNETES_VERSION]   (default: the newest the package ships)
# No cluster is contacted. RINGBENCH_BIN chooses the binary (default: a debug build, made here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/lib/fleet-venv.sh
fleet_venv kubernetes-validate
validate=$VENV_BIN/kubernetes-validate
version_flag=()
[ -n "${1:-}" ] && version_flag=(-k "$1")
if [ -z "${RINGBENCH_BIN:-}" ]; then
  cargo build -q
  RINGBENCH_BIN=$root/target/debug/ringbench
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ringbench-k8s.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "validator: kubernetes-validate $("$VENV_BIN/pip" show kubernetes-validate | sed -n 's/^Version: //p')"

fail=0
render() { # NAME ARGS...
  local name=$1
  shift
  "$RINGBENCH_BIN" fleet kubernetes "$@" >"$work/$name.yaml"
}
render basic -h redis.bench.svc -n 1000001 -t set,get --pods 3
render threads -h redis -p 6380 -c 300 --threads 4 --rps 150000.5 --duration 60 -r 1000000 \
  --distribution sequential --pods 12 --image registry.example/ringbench:0.1.0 --namespace bench \
  --name capacity-run --memory 2Gi --lead 120
render uri -u 'redis://redis:6379/0' --user bench --auth-secret redis-auth:password --tls --insecure \
  -t get -n 50000 -d 64-512 --pods 2
render command -h redis --pods 4 -n 400000 -r 100000 -- lpush 'my list' 'ele:__rand_int__' '-q'
render unconfined -h redis --pods 2 --seccomp unconfined
render runtime-default -h redis --pods 2 --seccomp runtime-default
render own-profile -h redis --pods 2 --seccomp localhost:lab/ringbench.json
for f in "$work"/*.yaml; do
  if "$validate" --strict "${version_flag[@]}" "$f"; then :; else
    echo "FAIL: $(basename "$f") does not validate" >&2
    fail=1
  fi
done

# The pods' seccomp profile is the shipped Localhost one, unless --seccomp says otherwise.
grep -q '"localhostProfile": "profiles/ringbench-io-uring.json"' "$work/basic.yaml" ||
  { echo "FAIL: basic.yaml does not name the shipped seccomp profile" >&2; fail=1; }
grep -q '"type": "Unconfined"' "$work/unconfined.yaml" ||
  { echo "FAIL: --seccomp unconfined is not in unconfined.yaml" >&2; fail=1; }

# Broken copies must be refused.
b=$work/basic.yaml
sed 's/"topologyKey":/"topologyKeys":/' "$b" >"$work/broken-field.bad"
sed 's/"parallelism": 3/"parallelism": "three"/' "$b" >"$work/broken-type.bad"
sed 's/"completionMode": "Indexed"/"completionMod": "Indexed"/' "$b" >"$work/broken-unknown.bad"
sed 's/"localhostProfile":/"localhostProfil":/' "$b" >"$work/broken-seccomp.bad"
for f in "$work"/*.bad; do
  if cmp -s "$b" "$f"; then
    echo "FAIL: $(basename "$f") is not broken: its sed found nothing to change" >&2
    fail=1
  fi
done
for f in "$work"/*.bad; do
  if "$validate" --strict --quiet "${version_flag[@]}" "$f" >"$f.out" 2>&1; then
    echo "FAIL: the validator accepted $(basename "$f")" >&2
    fail=1
  else
    echo "refused as it should: $(basename "$f"): $(grep -o 'did not validate.*' "$f.out" | head -1)"
  fi
done
[ "$fail" = 0 ] && echo "fleet-k8s-validate: OK"
exit "$fail"
