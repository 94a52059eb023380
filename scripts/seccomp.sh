#!/usr/bin/env bash
# The seccomp profile that `ringbench fleet kubernetes` pods run under (deploy/seccomp/ringbench-io-uring.json):
# the container runtime's default list (RuntimeDefault) plus io_uring_setup, io_uring_enter and
# io_uring_register, which recent runtimes' defaults leave out.
#   scripts/seccomp.sh generate   writes the profile from the runtime default profile installed here
#                                 (Debian's containers-common: /usr/share/containers/seccomp.json, the
#                                 list CRI-O and podman use), in the OCI format kubelet's Localhost
#                                 profiles take (containerd and CRI-O read it)
#   scripts/seccomp.sh check      runs ringbench (a release build) under the shipped profile, and under the
#                                 same profile without the io_uring calls, against a local redis-server:
#                                 the first must complete its requests, the second must fail with
#                                 ringbench's "io_uring is not available" line (libseccomp's Python binding,
#                                 Debian's python3-seccomp, loads the profile)
# RINGBENCH_BIN chooses the binary for check (default: target/release/ringbench, built here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
profile=deploy/seccomp/ringbench-io-uring.json

generate() {
  python3 - /usr/share/containers/seccomp.json "$profile" <<'PY'
import json, sys
src = json.load(open(sys.argv[1]))
arches = {"amd64": "SCMP_ARCH_X86_64", "x32": "SCMP_ARCH_X32", "x86": "SCMP_ARCH_X86",
          "arm64": "SCMP_ARCH_AARCH64", "arm": "SCMP_ARCH_ARM"}
allowed, conditional = set(), []
for rule in src["syscalls"]:
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if rule["action"] != "SCMP_ACT_ALLOW" or inc.get("caps"):
        continue  # the pods drop every capability: rules granted by one never apply
    if inc.get("arches") and not set(inc["arches"]) & set(arches):
        continue  # arm, x86 and their 64-bit forms only
    if rule.get("args"):
        conditional.append({"names": rule["names"], "action": "SCMP_ACT_ALLOW",
                            "args": [{k: a[k] for k in ("index", "value", "valueTwo", "op")}
                                     for a in rule["args"]]})
    else:
        allowed.update(rule["names"])
io_uring = ["io_uring_enter", "io_uring_register", "io_uring_setup"]
allowed.update(io_uring)
profile = {
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 1,
    "architectures": sorted(set(arches.values())),
    "syscalls": [{"names": sorted(allowed), "action": "SCMP_ACT_ALLOW"}] + conditional,
}
with open(sys.argv[2], "w") as f:
    json.dump(profile, f, indent=2)
    f.write("\n")
print(f"{sys.argv[2]}: {len(allowed)} system calls allowed ({', '.join(io_uring)} among them), "
      f"{len(conditional)} allowed on their arguments")
PY
}

check() {
  # Debian's python3 (the binding is a Debian package), not another on PATH.
  py=/usr/bin/python3
  "$py" -c 'import seccomp' 2>/dev/null || {
    echo "seccomp.sh: libseccomp's Python binding is missing (Debian: apt-get install python3-seccomp)" >&2
    exit 1
  }
  if [ -z "${RINGBENCH_BIN:-}" ]; then
    nice -n 10 cargo build --release --locked --quiet
    RINGBENCH_BIN=$root/target/release/ringbench
  fi
  source scripts/lib/server.sh
  trap 'stop_server' EXIT
  start_server
  work=$(mktemp -d)
  local fail=0
  redis-cli -p "$SERVER_PORT" config resetstat >/dev/null
  if "$py" scripts/lib/under-seccomp.py "$profile" "" "$RINGBENCH_BIN" -p "$SERVER_PORT" -n 10000 -t set,get -q \
    >"$work/ok.out" 2>"$work/ok.err" && [ ! -s "$work/ok.err" ]; then
    calls=$(redis-cli -p "$SERVER_PORT" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_set:calls=\([0-9]*\),.*/\1/p')
    echo "under the profile: $(tr '\n' ' ' <"$work/ok.out")(server: $calls SET calls)"
    [ "$calls" = 10000 ] || { echo "FAIL: the server counted ${calls:-no} SET calls, not 10000" >&2; fail=1; }
  else
    echo "FAIL: ringbench under $profile: $(cat "$work/ok.err")" >&2
    fail=1
  fi
  if "$py" scripts/lib/under-seccomp.py "$profile" io_uring_setup,io_uring_enter,io_uring_register "$RINGBENCH_BIN" \
    -p "$SERVER_PORT" -n 10000 -t set -q >"$work/no.out" 2>"$work/no.err"; then
    echo "FAIL: ringbench ran without the io_uring calls: the check does not bite" >&2
    fail=1
  elif grep -q "io_uring is not available: io_uring_setup was refused" "$work/no.err"; then
    echo "without the io_uring calls, refused as it should: $(head -1 "$work/no.err")"
  else
    echo "FAIL: without the io_uring calls, not ringbench's io_uring line: $(cat "$work/no.err")" >&2
    fail=1
  fi
  rm -rf "$work"
  [ "$fail" = 0 ] && echo "seccomp.sh check: OK"
  return "$fail"
}

case "${1:-}" in
  generate) generate ;;
  check) check ;;
  *)
    echo "usage: scripts/seccomp.sh generate|check" >&2
    exit 2
    ;;
esac
