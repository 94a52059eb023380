# Shared by the scripts: start and stop a throwaway redis-server on a free port.
# Usage: source scripts/lib/server.sh; start_server [extra redis-server args...]; ...; stop_server
# Sets SERVER_PORT, SERVER_PID, SERVER_DIR.

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start_server() {
  SERVER_PORT=$(free_port)
  SERVER_DIR=$(mktemp -d)
  redis-server --port "$SERVER_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$SERVER_DIR" --daemonize no "$@" >"$SERVER_DIR/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 200); do
    [ "$(redis-cli -p "$SERVER_PORT" ping 2>/dev/null || true)" = "PONG" ] && return 0
    sleep 0.05
  done
  echo "redis-server did not start: $(cat "$SERVER_DIR/server.log")" >&2
  return 1
}

stop_server() {
  [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  [ -n "${SERVER_DIR:-}" ] && rm -rf "$SERVER_DIR"
  SERVER_PID=""
}
