#!/usr/bin/env bash
# Runs valkey's own valkey-benchmark Tcl tests with ringbench in valkey-benchmark's place, plain and
# with --tls, and prints each case's result.
#
#   scripts/valkey-tcl.sh VALKEY_DIR [FILE.tcl ...]
#
# VALKEY_DIR is a valkey source tree that is already built: src/valkey-server and src/valkey-cli must
# exist (this script builds nothing of valkey's; build the tree as its README says, with BUILD_TLS=yes
# for the --tls run). The tests run from a scratch folder that links to the tree's test harness, so
# nothing is written into VALKEY_DIR: src/valkey-benchmark there is ringbench. Without FILE arguments
# the tree's own tests/integration/valkey-benchmark.tcl runs; each FILE given (another version of that
# test file) runs instead.
#
# Environment:
#   RINGBENCH_BIN        the ringbench binary (default: target/release/ringbench, else target/debug/ringbench)
#   VALKEY_TCL_MODES     "plain tls" (default), "plain" or "tls"
#   VALKEY_TCL_BASEPORT  first port of the servers the harness starts (default 23111)
#   VALKEY_TCL_KEEP=1    keep the scratch folder (the harness's logs are in it)
#
# Output: one line per case and mode, `PASS plain  <file>: <case>` or `FAIL tls  <file>: <case>`, each
# failure followed by the harness's lines about it; then the counts. Exit code 0 when every case passed.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
valkey=${1:?usage: scripts/valkey-tcl.sh VALKEY_DIR [FILE.tcl ...]}
shift
valkey=$(cd "$valkey" && pwd)
for f in src/valkey-server src/valkey-cli runtest tests/test_helper.tcl; do
    if [ ! -e "$valkey/$f" ]; then
        echo "valkey-tcl: $valkey/$f is missing: give a built valkey source tree" >&2
        exit 2
    fi
done
bin=${RINGBENCH_BIN:-}
if [ -z "$bin" ]; then
    for b in "$here/target/release/ringbench" "$here/target/debug/ringbench"; do
        if [ -x "$b" ]; then bin=$b; break; fi
    done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "valkey-tcl: no ringbench binary: run cargo build --release, or set RINGBENCH_BIN" >&2
    exit 2
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
modes=${VALKEY_TCL_MODES:-plain tls}
baseport=${VALKEY_TCL_BASEPORT:-23111}
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=("$valkey/tests/integration/valkey-benchmark.tcl")
fi
for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "valkey-tcl: no file $f" >&2; exit 2; }
done
command -v tclsh >/dev/null || { echo "valkey-tcl: tclsh is missing (apt-get install tcl)" >&2; exit 2; }

work=$(mktemp -d /tmp/ringbench-valkey-tcl.XXXXXX)
cleanup() { if [ "${VALKEY_TCL_KEEP:-0}" = 1 ]; then echo "valkey-tcl: kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

# The scratch tree: the harness and valkey's binaries linked, ringbench as src/valkey-benchmark.
cp "$valkey/runtest" "$work/runtest"
mkdir -p "$work/src" "$work/tests/integration" "$work/tests/tmp"
for b in valkey-server valkey-cli valkey-sentinel valkey-check-aof valkey-check-rdb valkey-tls.so; do
    [ -e "$valkey/src/$b" ] && ln -s "$valkey/src/$b" "$work/src/$b"
done
ln -s "$bin" "$work/src/valkey-benchmark"
for e in "$valkey"/tests/*; do
    name=$(basename "$e")
    case $name in integration | tmp | tls) ;; *) ln -s "$e" "$work/tests/$name" ;; esac
done
for e in "$valkey"/tests/integration/*; do
    ln -s "$e" "$work/tests/integration/$(basename "$e")"
done
[ -d "$valkey/utils" ] && ln -s "$valkey/utils" "$work/utils"
units=()
i=0
for f in "${files[@]}"; do
    i=$((i + 1))
    unit="ringbench-$i-$(basename "$f" .tcl)"
    cp "$f" "$work/tests/integration/$unit.tcl"
    units+=("$unit")
done

tls_ok=0
if [[ " $modes " == *" tls "* ]]; then
    # ldd's whole output first: `grep -q` may end the pipe early, which pipefail reads as no match.
    libs=$(ldd "$valkey/src/valkey-server" 2>/dev/null || true)
    if [[ $libs != *libssl* ]]; then
        echo "valkey-tcl: $valkey/src/valkey-server was built without TLS (BUILD_TLS=yes): the tls mode is skipped"
    elif ! tclsh <<<'package require tls' >/dev/null 2>&1; then
        echo "valkey-tcl: Tcl's tls package is missing (apt-get install tcl-tls): the tls mode is skipped"
    elif ! (cd "$work" && mkdir -p tests/tls && bash "$valkey/utils/gen-test-certs.sh" >"$work/certs.log" 2>&1); then
        echo "valkey-tcl: making the test certificates failed (see $work/certs.log): the tls mode is skipped"
    else
        tls_ok=1
    fi
fi

pass=0
fail=0
for mode in $modes; do
    flags=()
    if [ "$mode" = tls ]; then
        [ $tls_ok = 1 ] || continue
        flags=(--tls)
    fi
    for idx in "${!units[@]}"; do
        unit=${units[$idx]}
        label=$(basename "${files[$idx]}")
        [ ${#units[@]} -gt 1 ] && label="${files[$idx]}"
        log="$work/$unit.$mode.log"
        (cd "$work" && ./runtest --single "integration/$unit" "${flags[@]}" --clients 1 \
            --baseport "$baseport" --timeout 600 >"$log" 2>&1) || true
        sed 's/\x1b\[[0-9;]*m//g' "$log" >"$log.txt"
        # The harness prints `[ok]: NAME (N ms)`, `[err]: NAME in FILE` (then the reason) and
        # `[exception]: ...`.
        ran=0
        while IFS= read -r line; do
            case $line in
                "[ok]: "*)
                    name=${line#"[ok]: "}
                    name=${name% (*ms)}
                    printf 'PASS %-5s %s: %s\n' "$mode" "$label" "$name"
                    pass=$((pass + 1))
                    ran=1
                    ;;
                "[err]: "* | "[exception]: "*)
                    name=${line#*]: }
                    name=${name% in tests/integration/*}
                    printf 'FAIL %-5s %s: %s\n' "$mode" "$label" "$name"
                    fail=$((fail + 1))
                    ran=1
                    ;;
            esac
        done <"$log.txt"
        if grep -q '^\[err\]\|^\[exception\]' "$log.txt"; then
            echo "---- $mode $label: the harness on its failures"
            grep -A6 '^\[err\]\|^\[exception\]' "$log.txt" | grep -v '^\[ok\]' | head -150
            echo "----"
        fi
        if [ $ran = 0 ]; then
            echo "valkey-tcl: $mode $label ran no case; the harness said:"
            tail -20 "$log.txt"
            fail=$((fail + 1))
        fi
    done
done
echo "valkey-tcl: $pass passed, $fail failed (ringbench: $bin)"
[ "$fail" -eq 0 ]
