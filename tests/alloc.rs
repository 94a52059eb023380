//! Allocation counts of whole runs, taken with a counting global allocator, in-process.

mod common;
use common::alloc::{ALLOCS, Counting, THREAD_ALLOCS};
use common::*;
use ringbench::RunControl;
use ringbench::{Cli, Config, Env, Settings};
use std::sync::atomic::Ordering;

/// The counter is process-wide: tests that read it take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[global_allocator]
static A: Counting = Counting;

fn allocations_of_run(s: &RedisServer, args: &[&str]) -> u64 {
    let mut argv = vec![
        "ringbench".to_string(),
        "-p".into(),
        s.port.to_string(),
        "-q".into(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    let settings = Settings::parse(&Cli::parse_args(argv).unwrap(), &Env::of_process()).unwrap();
    let cfg = Config::resolve(settings, &mut std::io::empty(), &mut std::io::sink()).unwrap();
    let mut out = Vec::with_capacity(1 << 16);
    let before = ALLOCS.load(Ordering::Relaxed);
    ringbench::run(
        cfg,
        &RunControl::default(),
        &mut out,
        &mut std::io::sink(),
        None,
    )
    .unwrap();
    ALLOCS.load(Ordering::Relaxed) - before
}

// On plain TCP every request goes through the executor's own ring: requests are patched in place,
// replies are scanned in the ring's receive buffers, and nothing is allocated per batch. So a run 20
// times longer makes the same allocations (set-up, report), give or take a handful.

#[test]
fn allocations_do_not_grow_with_the_number_of_requests() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = RedisServer::start();
    let base = ["-t", "set,get", "-c", "8", "-P", "16", "-r", "1000"];
    let small = allocations_of_run(&s, &[&base[..], &["-n", "10000"]].concat());
    let large = allocations_of_run(&s, &[&base[..], &["-n", "200000"]].concat());
    let batches = 2 * (200_000 - 10_000) / 16;
    eprintln!("allocations: -n 10000: {small}, -n 200000: {large} ({batches} more batches)");
    assert!(
        large <= small + 50,
        "allocations grew with -n: {small} -> {large} over {batches} more batches"
    );
}

#[test]
fn a_replay_allocates_nothing_per_command() {
    // The file is read and encoded by Config::resolve; the run copies each command from the arena.
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = RedisServer::start();
    let file = |n: usize| {
        let path =
            std::env::temp_dir().join(format!("ringbench-alloc-replay-{}-{n}", std::process::id()));
        let mut text = String::from("OK\n");
        for i in 0..n {
            text.push_str(&format!(
                "1.{:06} [0 10.0.0.{}:1] \"SET\" \"k{}\" \"v\"\n",
                i % 1_000_000,
                i % 8,
                i % 100
            ));
        }
        std::fs::write(&path, text).unwrap();
        path
    };
    let (a, b) = (file(10_000), file(200_000));
    let base = ["-c", "8", "-P", "16", "--replay"];
    let small = allocations_of_run(&s, &[&base[..], &[a.to_str().unwrap()]].concat());
    let large = allocations_of_run(&s, &[&base[..], &[b.to_str().unwrap()]].concat());
    let _ = (std::fs::remove_file(a), std::fs::remove_file(b));
    eprintln!("allocations of a replay: 10000 commands: {small}, 200000: {large}");
    assert!(
        large <= small + 50,
        "allocations grew with the capture: {small} -> {large}"
    );
}

#[test]
fn hdr_out_intervals_keep_the_per_batch_bound() {
    // With --hdr-out every executor also checks for a second boundary per read event; it allocates only
    // when a second ends (one encoded interval), so the per-batch bound above still holds.
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = RedisServer::start();
    let prefix = std::env::temp_dir().join(format!("ringbench-alloc-{}-", std::process::id()));
    let prefix = prefix.to_str().unwrap();
    let base = ["-t", "set", "-c", "8", "-P", "16", "--hdr-out", prefix];
    let small = allocations_of_run(&s, &[&base[..], &["-n", "10000"]].concat());
    let large = allocations_of_run(&s, &[&base[..], &["-n", "200000"]].concat());
    let per_batch = (large.saturating_sub(small)) as f64 / ((200_000.0 - 10_000.0) / 16.0);
    let _ = std::fs::remove_file(format!("{prefix}set.hlog"));
    eprintln!("allocations with --hdr-out: {small} -> {large}, per extra batch: {per_batch:.2}");
    assert!(per_batch < 3.0, "allocations per batch: {per_batch:.2}");
}

#[test]
fn a_mix_of_commands_with_ttls_keeps_the_per_batch_bound() {
    // Composed requests (memtier's --command with its own key patterns, values of varying length, TTLs
    // from --expiry-range) are written into each connection's buffer; the per-command figures are
    // recorded into histograms made before the run.
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = RedisServer::start();
    let base = [
        "--command",
        "SET __key__ __data__",
        "--command-ratio",
        "2",
        "--command",
        "GET __key__",
        "--command-key-pattern",
        "Z",
        "--command",
        "HSET h:__rand_1st__ f __rand_int__",
        "--command-key-pattern",
        "S",
        "-c",
        "8",
        "-P",
        "16",
        "-r",
        "1000",
        "-d",
        "4-40",
        "--expiry-range",
        "100-200",
    ];
    let small = allocations_of_run(&s, &[&base[..], &["-n", "10000"]].concat());
    let large = allocations_of_run(&s, &[&base[..], &["-n", "200000"]].concat());
    let batches = (200_000 - 10_000) / 16;
    eprintln!(
        "allocations of a mix: -n 10000: {small}, -n 200000: {large} ({batches} more batches)"
    );
    assert!(
        large <= small + 50,
        "allocations grew with -n: {small} -> {large} over {batches} more batches"
    );
}

#[test]
fn request_fill_and_reply_scan_allocate_nothing() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    use ringbench::{PipelineBuffer, RequestTemplate};
    use ringbench::{ReplyScanner, Scanned};
    let t = RequestTemplate::from_args(
        &[
            b"SET".to_vec(),
            b"key:__rand_int__".to_vec(),
            b"xxx".to_vec(),
        ],
        true,
    );
    let mut pipe = PipelineBuffer::new(&t, 64);
    let mut replies = Vec::new();
    for i in 0..64 {
        replies.extend_from_slice(match i % 4 {
            0 => b"+OK\r\n".as_slice(),
            1 => b"$3\r\nxxx\r\n",
            2 => b":42\r\n",
            _ => b"*2\r\n$1\r\na\r\n%1\r\n+k\r\n_\r\n",
        });
    }
    let mut scanner = ReplyScanner::new();
    let mut x = 0u64;
    let before = THREAD_ALLOCS.with(|c| c.get());
    let mut counted = 0;
    for _ in 0..1000 {
        let bytes = pipe.fill(64, |_| {
            x = x.wrapping_add(7919);
            x
        });
        assert!(!bytes.is_empty());
        // Feed the replies in uneven chunks, as reads deliver them.
        let mut start = 0;
        for end in [7usize, 100, 333, replies.len()] {
            let end = end.min(replies.len());
            while start < end {
                let (used, ev) = scanner.scan(&replies[start..end]).unwrap();
                start += used;
                if matches!(ev, Some(Scanned::Reply { .. })) {
                    counted += 1;
                }
                if used == 0 {
                    break;
                }
            }
        }
    }
    let after = THREAD_ALLOCS.with(|c| c.get());
    assert_eq!(counted, 64_000);
    assert_eq!(after - before, 0, "the hot path allocated");
}

#[test]
fn dataset_rows_are_compiled_before_the_run() {
    // --dataset: each row's command is compiled when the config is built; the run copies a row's
    // pieces into the connection's buffer, so a longer run allocates no more than a short one.
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = RedisServer::start();
    let dir = common::scratch::Scratch::new("alloc-dataset");
    let csv = dir.path("rows.csv");
    let mut text = String::from("title,body\n");
    for i in 0..500 {
        text.push_str(&format!("title {i},\"body, {}\"\n", "x".repeat(i % 40)));
    }
    std::fs::write(&csv, text).unwrap();
    let base = [
        "--dataset",
        &csv,
        "-c",
        "8",
        "-P",
        "16",
        "-r",
        "1000",
        "--",
        "HSET",
        "doc:__rand_int__",
        "title",
        "__field:title__",
        "body",
        "__field:body__",
        "n",
        "__rand_1st__",
    ];
    let small = allocations_of_run(&s, &[&["-n", "10000"], &base[..]].concat());
    let large = allocations_of_run(&s, &[&["-n", "200000"], &base[..]].concat());
    assert_eq!(s.calls("hset"), 210_000);
    eprintln!("allocations with --dataset: -n 10000: {small}, -n 200000: {large}");
    assert!(
        large <= small + 50,
        "allocations grew with -n: {small} -> {large}"
    );
}

#[test]
fn data_verify_passes_allocate_nothing_per_batch() {
    // The write pass composes each value from its key; the read pass's comparator checks each reply in
    // the receive buffers: neither allocates per request, so 20 times the keyspace costs the same.
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let s = RedisServer::start();
    let base = [
        "--data-verify",
        "-d",
        "5-100",
        "--random-data",
        "-c",
        "8",
        "-P",
        "16",
    ];
    let small = allocations_of_run(&s, &[&base[..], &["-r", "10000"]].concat());
    let large = allocations_of_run(&s, &[&base[..], &["-r", "200000"]].concat());
    eprintln!("allocations with --data-verify: -r 10000: {small}, -r 200000: {large}");
    assert!(
        large <= small + 50,
        "allocations grew with -r: {small} -> {large}"
    );
    assert_eq!((s.calls("set"), s.calls("get")), (210_000, 210_000));
}
