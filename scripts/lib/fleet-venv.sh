# Shared by the fleet scripts: a Python virtual environment (target/fleet-venv) with the packages given,
# installed from PyPI with pip when they are missing. Usage: source scripts/lib/fleet-venv.sh; fleet_venv PKG...
# Sets VENV_BIN.

fleet_venv() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  local venv=${RINGBENCH_FLEET_VENV:-$root/target/fleet-venv}
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  local missing=()
  for p in "$@"; do
    "$venv/bin/pip" show -q "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    "$venv/bin/pip" install -q "${missing[@]}"
  fi
  VENV_BIN=$venv/bin
}
