#!/usr/bin/env bash
# Builds ringbench's container image with podman, offline, and smoke-tests it against a local redis-server.
#   scripts/image.sh [IMAGE]   (default: ringbench:VERSION, the image `ringbench fleet kubernetes` names)
#
# The path taken, and why: this machine cannot pull images, so neither the Containerfile's Rust build
# stage (RUST_IMAGE) nor its Debian base (BASE_IMAGE) can be had from a registry. The script therefore
#   1. makes the slim Debian base itself: a minbase rootfs of the host's release (bookworm) with
#      ca-certificates, made by mmdebstrap from the apt mirror, documentation left out as in
#      debian:bookworm-slim, and imported with `podman import` (kept: later runs reuse it;
#      REBUILD_BASE=1 makes it again);
#   2. compiles ringbench on the host (cargo build --release --locked): the same glibc as the base;
#   3. builds the Containerfile's `prebuilt` target on that base, which copies the host's binary (the
#      `build` stage, skipped, is what a machine with registry access uses: plain `podman build .`);
#   4. smoke-tests the image. This sandbox refuses `podman run` (its rlimits), so the image is mounted
#      (`podman image mount`) and its entrypoint run in a chroot of it, as the image's user, with /proc
#      and /sys mounted in a private mount namespace, against a redis-server on a free loopback port.
#      The run must succeed with nothing on stderr, and INFO commandstats must count its requests.
# Needs: podman, mmdebstrap, cargo, redis-server, redis-cli, python3, unshare and chroot (util-linux,
# coreutils), and root (podman's storage, the mounts).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/lib/server.sh

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
image=${1:-ringbench:$version}
suite=bookworm
base=localhost/ringbench-base:$suite-slim
requests=20000

for tool in podman mmdebstrap cargo redis-server redis-cli python3 unshare chroot; do
  command -v "$tool" >/dev/null || {
    echo "image.sh: '$tool' is missing (Debian: apt-get install podman mmdebstrap redis-server)" >&2
    exit 1
  }
done

# 1. The base.
if [ "${REBUILD_BASE:-0}" = 1 ] || ! podman image exists "$base"; then
  echo "== base: mmdebstrap $suite (minbase + ca-certificates) -> $base"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$suite" - | podman import --quiet - "$base" >/dev/null
else
  echo "== base: $base (exists; REBUILD_BASE=1 makes it again)"
fi

# 2. The binary.
echo "== binary: cargo build --release --locked"
nice -n 10 cargo build --release --locked --quiet

# 3. The image.
echo "== image: podman build --target prebuilt -> $image"
podman build --quiet --target prebuilt --build-arg "BASE_IMAGE=$base" -t "$image" -f Containerfile . >/dev/null
podman image inspect --format 'size: {{.Size}} bytes, entrypoint: {{json .Config.Entrypoint}}, user: {{.Config.User}}' "$image"

# 4. The smoke test.
echo "== smoke test: the image's entrypoint, in a chroot of the mounted image, against a local redis-server"
mnt=
cleanup() {
  stop_server || true
  [ -n "$mnt" ] && podman image unmount "$image" >/dev/null 2>&1 || true
  rm -f "${out:-}" "${err:-}"
}
trap cleanup EXIT
start_server
mnt=$(podman image mount "$image")
user=$(podman image inspect --format '{{.Config.User}}' "$image")
mapfile -t entrypoint < <(podman image inspect --format '{{range .Config.Entrypoint}}{{println .}}{{end}}' "$image" | sed '/^$/d')
out=$(mktemp)
err=$(mktemp)
redis-cli -p "$SERVER_PORT" config resetstat >/dev/null
# The run's arguments are the Job's (fleet kubernetes renders --json - and a shard of its own).
unshare --mount --fork sh -c '
  mnt=$1; user=$2; shift 2
  mount -t proc proc "$mnt/proc" && mount --rbind /sys "$mnt/sys" && mount --rbind /dev "$mnt/dev"
  exec chroot --userspec="$user" "$mnt" env -i PATH=/usr/local/bin:/usr/bin:/bin "$@"
' smoke "$mnt" "$user" "${entrypoint[@]}" -h 127.0.0.1 -p "$SERVER_PORT" -n "$requests" -t set,get \
  -c 8 -P 4 --json - >"$out" 2>"$err" || {
  echo "FAIL: the entrypoint exited with $?: $(cat "$err")" >&2
  exit 1
}
if [ -s "$err" ]; then
  echo "FAIL: the entrypoint wrote to stderr: $(cat "$err")" >&2
  exit 1
fi
python3 - "$out" "$requests" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
tests = {t["title"]: t for t in doc["tests"]}
for name in ("SET", "GET"):
    t = tests[name]
    print(f"   {name}: {t['requests']} requests, {t['rps']:.0f} requests per second")
    assert t["requests"] == int(sys.argv[2]), t["requests"]
PY
stats=$(redis-cli -p "$SERVER_PORT" info commandstats | tr -d '\r')
for cmd in set get; do
  calls=$(echo "$stats" | sed -n "s/^cmdstat_$cmd:calls=\([0-9]*\),.*/\1/p")
  echo "   server: cmdstat_$cmd calls=$calls"
  if [ "$calls" != "$requests" ]; then
    echo "FAIL: the server counted ${calls:-no} $cmd calls, not $requests" >&2
    exit 1
  fi
done
echo "image.sh: OK: $image (push it, then: ringbench fleet kubernetes --image REGISTRY/$image ...)"
