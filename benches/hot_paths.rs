//! Microbenchmarks of the per-request hot paths: filling a pipeline of requests from a compiled
//! template, and finding reply boundaries with the RESP scanner. Plain `harness = false` binary
//! (no benchmark framework to build): `cargo bench` measures, `cargo test --all-targets` runs each
//! case once as a smoke test. `RINGBENCH_BENCH_MS` sets the time per case (default 300 ms).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use ringbench::thread_cpu_seconds;
use ringbench::{PipelineBuffer, RequestTemplate};
use ringbench::{ReplyScanner, Scanned};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Runs `round` (which handles `items` requests or replies and `bytes` bytes) until `budget` has
/// passed, and prints the rates per second of this thread's CPU time (not wall time, so a busy
/// machine slows the run down but does not change the figures much). With `budget` zero it runs
/// once (smoke test).
fn measure(name: &str, items: u64, bytes: u64, budget: Duration, mut round: impl FnMut()) {
    // Warm up caches and branch predictors before timing.
    for _ in 0..3 {
        round();
    }
    if budget.is_zero() {
        return;
    }
    let mut rounds = 0u64;
    let start = Instant::now();
    let cpu = || {
        let (user, sys) = thread_cpu_seconds();
        user + sys
    };
    let cpu_start = cpu();
    while start.elapsed() < budget {
        for _ in 0..64 {
            round();
        }
        rounds += 64;
    }
    let secs = cpu() - cpu_start;
    let per_sec = (rounds * items) as f64 / secs;
    let bytes_sec = (rounds * bytes) as f64 / secs;
    println!(
        "{name:<28} {:>14.0} {:>11.1} {:>10.2}",
        per_sec,
        bytes_sec / 1e6,
        1e9 / per_sec
    );
}

/// Scans `buf` to the end as the engine does and returns the number of top-level replies.
fn scan_all(scanner: &mut ReplyScanner, buf: &[u8]) -> u64 {
    let mut start = 0;
    let mut replies = 0;
    while start < buf.len() {
        let (used, event) = scanner.scan(&buf[start..]).expect("valid RESP");
        start += used;
        if let Some(Scanned::Reply { .. }) = event {
            replies += 1;
        }
        if used == 0 {
            break;
        }
    }
    replies
}

fn repeat(unit: &[u8], n: usize) -> Vec<u8> {
    unit.iter().copied().cycle().take(unit.len() * n).collect()
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let budget = if benching {
        let ms = std::env::var("RINGBENCH_BENCH_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300);
        Duration::from_millis(ms)
    } else {
        Duration::ZERO
    };
    if benching {
        println!(
            "{:<28} {:>14} {:>11} {:>10}   (rates per second of CPU time)",
            "case", "items/s", "MB/s", "ns/item"
        );
    }

    // Request fill: SET key:__rand_int__ xxx with -r 1000000, as the engine fills a batch.
    let set = RequestTemplate::from_args(
        &[
            b"SET".to_vec(),
            b"key:__rand_int__".to_vec(),
            b"xxx".to_vec(),
        ],
        true,
    );
    let mset = RequestTemplate::from_args(
        &(0..10)
            .flat_map(|_| [b"key:__rand_int__".to_vec(), b"xxx".to_vec()])
            .fold(vec![b"MSET".to_vec()], |mut v, a| {
                v.push(a);
                v
            }),
        true,
    );
    for (label, template) in [("SET", &set), ("MSET (10 keys)", &mset)] {
        for depth in [1usize, 64] {
            let mut pipe = PipelineBuffer::new(template, depth);
            let mut rng = SmallRng::seed_from_u64(1);
            let bytes = (template.bytes().len() * depth) as u64;
            measure(
                &format!("fill {label} -P {depth}"),
                depth as u64,
                bytes,
                budget,
                || {
                    let out = pipe.fill(depth, |_| {
                        ((rng.next_u64() as u128 * 1_000_000u128) >> 64) as u64
                    });
                    black_box(out);
                },
            );
        }
    }

    // Reply scanning: 64 replies per read, as a -P 64 batch arrives.
    let lrange_600 = {
        let mut v = b"*600\r\n".to_vec();
        v.extend(repeat(b"$3\r\nxxx\r\n", 600));
        v
    };
    let cases: [(&str, Vec<u8>, u64); 5] = [
        ("scan +OK x64", repeat(b"+OK\r\n", 64), 64),
        ("scan bulk $3 x64", repeat(b"$3\r\nxxx\r\n", 64), 64),
        (
            "scan bulk $100 x64",
            {
                let mut unit = b"$100\r\n".to_vec();
                unit.extend([b'x'; 100]);
                unit.extend(b"\r\n");
                repeat(&unit, 64)
            },
            64,
        ),
        ("scan integer x64", repeat(b":123456\r\n", 64), 64),
        ("scan LRANGE_600 array x4", repeat(&lrange_600, 4), 4),
    ];
    for (name, buf, replies) in &cases {
        let mut scanner = ReplyScanner::new();
        measure(name, *replies, buf.len() as u64, budget, || {
            let got = scan_all(&mut scanner, black_box(buf));
            assert_eq!(got, *replies);
        });
    }
    if !benching {
        println!("hot_paths: every case ran once (use `cargo bench` to measure)");
    }
}
