# Shared by compare.sh and io-threads.sh: run a client under /usr/bin/time and read the server's CPU.
# Needs scripts/lib/server.sh sourced first (SERVER_PORT).

need_time() {
  if [ ! -x /usr/bin/time ]; then
    echo "/usr/bin/time is missing: install it (Debian: apt-get install time)" >&2
    exit 1
  fi
}

# Server CPU seconds so far (used_cpu_user + used_cpu_sys of INFO cpu).
server_cpu() {
  redis-cli -p "$SERVER_PORT" info cpu | tr -d '\r' |
    awk -F: '$1=="used_cpu_user"||$1=="used_cpu_sys"{s+=$2} END{printf "%.6f\n", s}'
}

# timed_run OUT_PREFIX cmd args...: runs the command with stdout in OUT_PREFIX.out and prints
# "wall_s user_s sys_s server_cpu_s" (the server's CPU used while the command ran).
timed_run() {
  local out=$1; shift
  local before after t0 t1
  before=$(server_cpu)
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$out.time" "$@" >"$out.out" 2>"$out.err" || {
    echo "failed: $* (see below)" >&2; cat "$out.err" >&2; return 1; }
  t1=$(date +%s.%N)
  after=$(server_cpu)
  awk -v t0="$t0" -v t1="$t1" -v b="$before" -v a="$after" -v ut="$(tail -n1 "$out.time")" \
    'BEGIN { printf "%.6f %s %.6f\n", t1 - t0, ut, a - b }'
}
