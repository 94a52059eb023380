#!/usr/bin/env bash
# What a sleep and a wake-up cost on this machine, with no ringbench and no server: the figures that
# decide what an evenly paced open loop (--rps) costs per request, because at a low rate every request
# finds the server asleep and the client sleeps between requests.
#
#   timer sleep    one thread sleeps on a timer of T us (clock_nanosleep), N times: CPU per sleep, and
#                  how long one took (the wake-up's lateness is the rest)
#   wake, other    two processes on different CPUs pass a byte back and forth through pipes, each
#   CPU            blocking in read(): the waker's write() time (it wakes a task whose CPU is idle) and
#                  each side's CPU per round trip
#   wake, peer     the same, but the peer reads without blocking (it never sleeps, so a write wakes
#   spinning       nobody): the write's own cost, for comparison
#   same CPU       both processes on one CPU: a wake-up is a local context switch
#
# Needs python3 and 2 CPUs. Environment: N=20000 (round trips / sleeps), SLEEP_US=20, CPUS="0 1".
# On a bare-metal machine a wake-up costs a few microseconds of the waker's time; on a virtual machine
# that halts idle vCPUs it can cost ten times that (an interrupt to a halted vCPU goes through the
# host), and that is what an open-loop client pays per request at a rate where the server idles.
set -euo pipefail
N=${N:-20000}
SLEEP_US=${SLEEP_US:-20}
read -r CPU_A CPU_B <<<"${CPUS:-0 1}"
command -v python3 >/dev/null || { echo "wake-cost.sh: python3 is missing" >&2; exit 1; }
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "wake-cost.sh: N must be a positive integer, got '$N'" >&2; exit 2; }
[[ $SLEEP_US =~ ^[1-9][0-9]*$ ]] || { echo "wake-cost.sh: SLEEP_US must be a positive integer, got '$SLEEP_US'" >&2; exit 2; }
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo '?')"
exec python3 - "$N" "$SLEEP_US" "$CPU_A" "$CPU_B" <<'EOF'
import os, resource, sys, time

n, sleep_us, cpu_a, cpu_b = (int(a) for a in sys.argv[1:5])

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def timer_sleep():
    os.sched_setaffinity(0, {cpu_b})
    # A loop of the same length without the sleep, to take the interpreter's own cost out.
    c0, t0 = cpu(), time.perf_counter()
    for _ in range(n):
        pass
    idle_cpu = cpu() - c0
    c0, t0 = cpu(), time.perf_counter()
    for _ in range(n):
        time.sleep(sleep_us / 1e6)
    wall, used = time.perf_counter() - t0, cpu() - c0 - idle_cpu
    print(f"{'timer sleep of ' + str(sleep_us) + ' us':<28} {used / n * 1e6:10.2f} us CPU per sleep; one sleep took {wall / n * 1e6:.1f} us")

def ping_pong(label, peer_cpu, peer_spins):
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {peer_cpu})
        if peer_spins:
            os.set_blocking(r1, False)
        for _ in range(n):
            while True:
                try:
                    os.read(r1, 1)
                    break
                except BlockingIOError:
                    pass
            os.write(w2, b"x")
        os._exit(0)
    os.sched_setaffinity(0, {cpu_b})
    in_write = 0
    c0, t0 = cpu(), time.perf_counter()
    for _ in range(n):
        a = time.perf_counter_ns()
        os.write(w1, b"x")
        in_write += time.perf_counter_ns() - a
        os.read(r2, 1)
    wall, used = time.perf_counter() - t0, cpu() - c0
    c1 = child_cpu()
    os.waitpid(pid, 0)
    peer = child_cpu() - c1
    peer_text = "peer spins" if peer_spins else f"peer {peer / n * 1e6:.2f} us CPU"
    print(f"{label:<28} {in_write / n / 1e3:10.2f} us in the waker's write(); round trip {wall / n * 1e6:.1f} us; "
          f"this side {used / n * 1e6:.2f} us CPU, {peer_text}")
    for fd in (r1, w1, r2, w2):
        os.close(fd)

print(f"{'case':<28} {'figure':>10}")
timer_sleep()
ping_pong(f"wake, other CPU ({cpu_a})", cpu_a, False)
ping_pong("wake, peer spinning", cpu_a, True)
ping_pong(f"same CPU ({cpu_b})", cpu_b, False)
EOF
