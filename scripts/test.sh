#!/usr/bin/env bash
# Runs every test on a fresh Debian/Ubuntu machine: installs what the tests start or call when it is
# missing (redis-server and redis-cli, openssl for the TLS certificates, script for terminal tests,
# python3 for the layering check, ip and iptables for the network namespace tests, python3-seccomp for
# the fleet's seccomp profile, chromium for the HTML report's browser test, prometheus to scrape the
# live metrics, man-db for the man page test), checks clippy, the layering
# (scripts/deps.sh) and the docs with warnings as errors, then runs
# `cargo test --all-targets` with its output shown. Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v openssl >/dev/null || missing+=(openssl)
command -v script >/dev/null || missing+=(bsdutils)
command -v timeout >/dev/null || missing+=(coreutils)
command -v python3 >/dev/null || missing+=(python3-minimal)
# Network faults: tests make a network namespace of their own (ip, iproute2) and drop packets in it.
command -v ip >/dev/null || missing+=(iproute2)
command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || missing+=(iptables)
# tests/it/fleet.rs runs a pod under the shipped seccomp profile, loaded by libseccomp's Python binding.
/usr/bin/python3 -c 'import seccomp' 2>/dev/null || missing+=(python3-seccomp)
# The man page test renders the generated page with man-db's `man -l`.
command -v man >/dev/null || missing+=(man-db)
# The HTML report is checked in a real browser, headless.
command -v chromium >/dev/null || missing+=(chromium)
# --metrics-listen is scraped by a real Prometheus server.
command -v prometheus >/dev/null || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  echo "scripts/test.sh: installing ${missing[*]} (apt-get)" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y "${missing[@]}"
  # The tests start their own servers on free ports; the packaged one started by the install is not needed.
  # So are the Prometheus server (and its node exporter) the prometheus package starts.
  if command -v service >/dev/null; then
    for s in redis-server prometheus prometheus-node-exporter; do $sudo service "$s" stop >/dev/null 2>&1 || true; done
  fi
fi
cargo clippy --all-targets -- -D warnings
# The stages' layering and no import cycle between files (ARCHITECTURE.md, "Dependencies").
bash scripts/deps.sh >/dev/null || { bash scripts/deps.sh; exit 1; }
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps
# Four test threads on two cores: most end-to-end tests wait on servers, clusters and timers, and the
# ones that judge time run alone (tests/common/lock.rs). Eight took tests/it from 225 s to 199 s on a
# quiet 2-core machine, but a cluster test comparing two 1.5 s windows of traffic failed under the
# extra contention in a clean-clone run, so four it stays. RUST_TEST_THREADS set by the caller wins.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
exec cargo test --all-targets "$@"
