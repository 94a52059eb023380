#!/usr/bin/env bash
# ringbench against `redis-benchmark --tls` on one TLS-only redis-server started here with certificates made
# here (openssl tool): the two run alternately, ROUNDS times each, with the same flags. Prints, per tool,
# the median requests per second of each test and the median client CPU (user+sys, from /usr/bin/time)
# per request, then ringbench's figures divided by redis-benchmark's.
# Environment: ROUNDS (3), N (200000), C (50), P (16), TESTS (set,get). Extra arguments go to both tools.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
N=${N:-200000}
C=${C:-50}
P=${P:-16}
TESTS=${TESTS:-set,get}

for tool in redis-server redis-benchmark redis-cli openssl /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "compare-tls: $tool is not installed" >&2; exit 1; }
done
if ! redis-benchmark --help 2>&1 | grep -q -- '--tls'; then
  echo "compare-tls: this redis-benchmark was built without TLS (no --tls flag)" >&2
  exit 1
fi
cargo build --release --quiet

dir=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

# A CA and a server certificate for 127.0.0.1 (P-256 keys: quick to make, common in managed services).
(
  cd "$dir"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
  openssl req -x509 -nodes -days 2 "${ec[@]}" -keyout ca.key -out ca.crt -subj "/CN=compare-tls CA" 2>/dev/null
  openssl req -nodes "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=localhost" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt 2>/dev/null
)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
  --tls-cert-file "$dir/server.crt" --tls-key-file "$dir/server.key" --tls-ca-cert-file "$dir/ca.crt" \
  --tls-auth-clients no --daemonize no >"$dir/server.log" 2>&1 &
server=$!
cli=(redis-cli -p "$port" --tls --cacert "$dir/ca.crt")
for _ in $(seq 100); do
  [ "$("${cli[@]}" ping 2>/dev/null || true)" = "PONG" ] && break
  sleep 0.05
done
[ "$("${cli[@]}" ping 2>/dev/null || true)" = "PONG" ] || { echo "compare-tls: redis-server did not start" >&2; cat "$dir/server.log" >&2; exit 1; }

flags=(-h 127.0.0.1 -p "$port" --tls --cacert "$dir/ca.crt" -t "$TESTS" -n "$N" -c "$C" -P "$P" --csv "$@")
ntests=$(tr ',' '\n' <<<"$TESTS" | grep -c .)
echo "TLS server: redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$port"
echo "flags: ${flags[*]:4}   rounds: $ROUNDS (alternating)"

# Runs one tool once: appends "test rps" lines to $dir/<tool>.rps and "cpu_ns_per_request" to $dir/<tool>.cpu.
run_once() {
  local name=$1; shift
  "${cli[@]}" flushall >/dev/null
  /usr/bin/time -f '%U %S' -o "$dir/time" "$@" "${flags[@]}" >"$dir/out" 2>"$dir/err" || {
    echo "compare-tls: $name failed:" >&2; cat "$dir/err" "$dir/out" >&2; exit 1; }
  # Both print CSV rows "TEST","rps",...; the header line starts with "test".
  awk -F'"' 'NF > 3 && $2 != "test" { print $2, $4 }' "$dir/out" >>"$dir/$name.rps"
  awk -v n="$N" -v t="$ntests" '{ printf "%.1f\n", ($1 + $2) * 1e9 / (n * t) }' "$dir/time" >>"$dir/$name.cpu"
}

for round in $(seq "$ROUNDS"); do
  run_once ringbench ./target/release/ringbench
  run_once redis-benchmark redis-benchmark
  echo "round $round done" >&2
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '\n%-16s' tool
for t in $(tr ',' ' ' <<<"${TESTS^^}"); do printf '%14s' "$t rps"; done
printf '%18s\n' "CPU ns/request"
declare -A med
for name in ringbench redis-benchmark; do
  printf '%-16s' "$name"
  for t in $(tr ',' ' ' <<<"${TESTS^^}"); do
    med[$name,$t]=$(awk -v t="$t" '$1 == t { print $2 }' "$dir/$name.rps" | median)
    printf '%14.0f' "${med[$name,$t]}"
  done
  med[$name,cpu]=$(median <"$dir/$name.cpu")
  printf '%18.0f\n' "${med[$name,cpu]}"
done
printf '%-16s' "ratio rb/rbench"
for t in $(tr ',' ' ' <<<"${TESTS^^}"); do
  awk -v a="${med[ringbench,$t]}" -v b="${med[redis-benchmark,$t]}" 'BEGIN { printf "%14.2f", a / b }'
done
awk -v a="${med[ringbench,cpu]}" -v b="${med[redis-benchmark,cpu]}" 'BEGIN { printf "%18.2f\n", a / b }'
echo "(rps: higher is better; CPU per request: lower is better. CPU is the whole client process, user+sys,"
echo " over all requests of all tests, connection setup and TLS handshakes included.)"
