//! The memtier outputs' tests: tables, distributions, JSON keys and figures, several runs, HDR files.

use crate::report::memtier::hdr::gmt_date;
use crate::report::memtier::json::percentile_key;
use crate::report::memtier::table::{percentile_label, write_all_stats, write_histogram};
use crate::report::memtier::view::{MemtierView, Options, RunInfo, sections};
use crate::report::memtier::{Breakdown, json_text, share, write_hdr_files, write_report};
use crate::stats::{PartStats, ShardStats, TestResult};
use serde_json::Value;
use std::io;
use std::time::{Duration, Instant};

/// The key names of a real memtier_benchmark `--json-out-file` (`--ratio`, one run), written
/// down from memtier's output.
const TOP: &str = "configuration|run information|ALL STATS";
const RUN_INFORMATION: &str = "Threads|Connections per thread|Requests per client|Format version";
const SECTION: &str = "Runtime|Sets|Gets|Waits|Totals|SET|GET|WAIT";
const RUNTIME: &str = "Start time|Finish time|Total duration|Time unit|Interrupted";
const ROW: &str = "Count|Ops/sec|Hits/sec|Misses/sec|Connection Errors/sec|Connection Errors|\
    Latency|Average Latency|Accumulated Latency|Min Latency|Max Latency|KB/sec|KB/sec RX/TX|\
    KB/sec RX|KB/sec TX|Time-Serie|Percentile Latencies";
const SECOND: &str = "Bytes RX|Bytes TX|Count|Average Latency|Accumulated Latency|Min Latency|\
    Max Latency|p50.00|p99.00|p99.90";
const PERCENTILES: &str = "p50.00|p99.00|p99.90|Histogram log format";

fn part(title: &str, command: &str, lat_us: &[u64], out_in: (u64, u64)) -> PartStats {
    let mut p = PartStats::new(title.into(), command.into(), 3);
    for &us in lat_us {
        p.hist.record(us * 1000).unwrap();
    }
    p.completed = lat_us.len() as u64;
    (p.bytes_out, p.bytes_in) = out_in;
    p
}

fn result(parts: Vec<PartStats>, millis: u64) -> TestResult {
    let mut st = ShardStats::new(3);
    for p in &parts {
        st.hist.add(&p.hist).unwrap();
        st.completed += p.completed;
        st.hits += p.hits;
        st.misses += p.misses;
        st.bytes_out += p.bytes_out;
        st.bytes_in += p.bytes_in;
    }
    st.parts = parts;
    let t = Instant::now();
    st.start = Some(t);
    st.end = Some(t + Duration::from_millis(millis));
    TestResult::new("memtier".into(), st.completed, st)
}

/// A `--ratio` test of 0.5 s: 4 SETs (55, 55, 63, 247 µs), 2 GETs (40, 100 µs), one a hit.
fn ratio(millis: u64) -> TestResult {
    let set = part("SET", "SET", &[55, 55, 63, 247], (160, 20));
    let mut get = part("GET", "GET", &[40, 100], (60, 14));
    (get.hits, get.misses) = (1, 1);
    result(vec![set, get], millis)
}

fn commands() -> TestResult {
    let parts = vec![
        part("SET __key__ __data__", "SET", &[55, 63], (80, 10)),
        part("GET __key__", "GET", &[40], (30, 7)),
        part("set __key__ x", "SET", &[247], (40, 5)),
    ];
    result(parts, 500)
}

fn opts(hide_histogram: bool) -> Options {
    Options {
        percentiles: vec![50.0, 99.0, 99.9],
        hide_histogram,
        print_all_runs: false,
    }
}

const INFO: RunInfo = RunInfo {
    threads: 1,
    clients: 2,
    requests: Some(500),
    test_time: 0,
};

fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
    let mut out = Vec::new();
    f(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The document as a value (a repeated key keeps its last value).
fn json(
    configuration: &[(String, String)],
    info: &RunInfo,
    runs: &[MemtierView],
    opts: &Options,
) -> Value {
    serde_json::from_str(&json_text(configuration, info, runs, opts)).expect("the document is JSON")
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn sorted(names: &str) -> Vec<String> {
    let mut k: Vec<String> = names.split('|').map(str::to_string).collect();
    k.sort();
    k
}

#[test]
fn ratio_table_is_memtiers() {
    let view = MemtierView::of(&ratio(500), Breakdown::Command);
    let out = text(|o| write_report(o, &INFO, &[view], &opts(true)));
    let want = [
        "1         Threads",
        "2         Connections per thread",
        "500       Requests per client",
        "",
        "",
        "ALL STATS",
        &"=".repeat(124),
        "Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency     p99 Latency   p99.9 Latency       KB/sec ",
        &"-".repeat(124),
        "Sets            8.00          ---          ---         0.10200         0.05500         0.24700         0.24700         0.35 ",
        "Gets            4.00         2.00         2.00         0.07200         0.04700         0.10300         0.10300         0.14 ",
        "Waits           0.00          ---          ---             ---             ---             ---             ---          --- ",
        "Totals         12.00         2.00         2.00         0.09200         0.05500         0.24700         0.24700         0.50 ",
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");
}

#[test]
fn distribution_steps_as_c_hdrhistogram() {
    let view = MemtierView::of(&ratio(500), Breakdown::Command);
    let out = text(|o| write_histogram(o, &view));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        &lines[..5],
        [
            "",
            "",
            "Request Latency Distribution",
            "Type     <= msec         Percent",
            &"-".repeat(72)
        ]
    );
    let gets: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("GET"))
        .collect();
    // 40 µs is the bucket 40..47: percentiles 0 to 50 in steps of 5, then 52.5 and 100 at 103.
    assert_eq!(gets.len(), 13);
    assert_eq!(gets[0], "GET       0.047        0.000");
    assert_eq!(gets[10], "GET       0.047       50.000");
    assert_eq!(gets[11], "GET       0.103       52.500");
    assert_eq!(gets[12], "GET       0.103      100.000");
    assert_eq!(lines.iter().filter(|l| **l == "---").count(), 2);
    assert_eq!(lines.last(), Some(&"WAIT      0.000      100.000"));
}

#[test]
fn command_rows_by_command_and_by_line() {
    let r = commands();
    let by_command = MemtierView::of(&r, Breakdown::Command);
    let names: Vec<&str> = by_command.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["Sets", "Gets"]);
    assert_eq!(by_command.rows[0].ops, 3);
    let out = text(|o| write_all_stats(o, "ALL STATS", &by_command, &[50.0, 99.99, 100.0]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[4],
        "Type         Ops/sec    Avg. Latency     p50 Latency p99.990 Latency    p100 Latency       KB/sec "
    );
    assert_eq!(lines[5].len(), 8 + 13 + 16 * 4 + 13);
    // Totals counts each byte once (memtier counts every byte of a --command test twice): 150 bytes
    // sent and 22 received in 0.5 s.
    assert!(lines[8].starts_with("Totals          8.00 "), "{out}");
    assert!(
        lines[8].ends_with(&format!("{:12.2} ", 172.0 / 1024.0 / 0.5)),
        "{out}"
    );
    let doc = json(&[], &INFO, std::slice::from_ref(&by_command), &opts(true));
    let totals = &doc["ALL STATS"]["Totals"];
    assert_eq!(totals["KB/sec"], 0.34);
    assert_eq!(totals["KB/sec RX"], 0.04);
    assert_eq!(totals["KB/sec TX"], 0.29);
    assert_eq!(totals["Time-Serie"]["0"]["Bytes TX"], 150);
    let by_line = MemtierView::of(&r, Breakdown::Line);
    let names: Vec<&str> = by_line.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["Sets", "Gets", "Sets"]);
    let doc = json_text(&[], &INFO, &[by_line], &opts(false));
    assert_eq!(doc.matches("\"Sets\":{").count(), 2);
    assert_eq!(doc.matches("\"SET\":[").count(), 2);
}

#[test]
fn json_has_memtiers_keys_and_figures() {
    let view = MemtierView::of(&ratio(500), Breakdown::Command);
    let config = [
        ("server".to_string(), "\"127.0.0.1\"".to_string()),
        ("port".to_string(), "6379".to_string()),
    ];
    let doc = json(&config, &INFO, &[view], &opts(false));
    assert_eq!(keys(&doc), sorted(TOP));
    assert_eq!(keys(&doc["run information"]), sorted(RUN_INFORMATION));
    let all = &doc["ALL STATS"];
    assert_eq!(keys(all), sorted(SECTION));
    assert_eq!(keys(&all["Runtime"]), sorted(RUNTIME));
    assert_eq!(all["Runtime"]["Total duration"], 500);
    for row in ["Sets", "Gets", "Waits", "Totals"] {
        assert_eq!(keys(&all[row]), sorted(ROW), "{row}");
        assert_eq!(keys(&all[row]["Percentile Latencies"]), sorted(PERCENTILES));
    }
    assert_eq!(keys(&all["Sets"]["Time-Serie"]["0"]), sorted(SECOND));
    assert_eq!(
        keys(&all["Waits"]["Time-Serie"]["0"]),
        sorted("Bytes RX|Bytes TX|Count")
    );
    let sets = &all["Sets"];
    assert_eq!(sets["Count"], 4);
    assert_eq!(sets["Ops/sec"], 8.0);
    assert_eq!(sets["Latency"], 0.104);
    assert_eq!(sets["Min Latency"], 0.048);
    assert_eq!(sets["Max Latency"], 0.247);
    assert_eq!(sets["KB/sec"], 0.35);
    assert_eq!(sets["Percentile Latencies"]["p50.00"], 0.055);
    assert_eq!(all["Gets"]["Hits/sec"], 2.0);
    assert_eq!(all["Gets"]["KB/sec RX"], 0.03);
    assert_eq!(all["Waits"]["Percentile Latencies"]["p99.90"], 0.007);
    // The six latencies' sum over six requests, not memtier's whole milliseconds (0).
    assert_eq!(all["Totals"]["Latency"], 0.092);
    assert_eq!(all["Totals"]["Average Latency"], 0.092);
    assert_eq!(all["Totals"]["Min Latency"], 0.04);
    assert_eq!(all["Totals"]["KB/sec RX"], 0.07);
    assert_eq!(all["Totals"]["KB/sec TX"], 0.43);
    assert_eq!(all["Totals"]["Time-Serie"]["0"]["Bytes TX"], 220);
    assert_eq!(
        all["GET"][0],
        serde_json::json!({"<=msec": 0.047, "percent": 0.0})
    );
    let text = json_text(
        &config,
        &INFO,
        &[MemtierView::of(&ratio(500), Breakdown::Command)],
        &opts(false),
    );
    assert!(text.starts_with("{\n\t\"configuration\":{\n\t\t\"server\": \"127.0.0.1\"\n\t\t,\"port\": 6379\n\t\t}\n\t,\"run information\":{"), "{text}");
    assert!(text.contains("\t\t\t,\"Ops/sec\": 8.00\n"), "{text}");
    let reread: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reread["ALL STATS"]["Sets"], doc["ALL STATS"]["Sets"]);
}

#[test]
fn several_runs_best_worst_and_average() {
    let runs = [
        MemtierView::of(&ratio(1000), Breakdown::Command),
        MemtierView::of(&ratio(500), Breakdown::Command),
    ];
    let titles: Vec<String> = sections(&runs, true).into_iter().map(|s| s.0).collect();
    assert_eq!(
        titles,
        [
            "RUN #1 RESULTS",
            "RUN #2 RESULTS",
            "BEST RUN RESULTS",
            "WORST RUN RESULTS",
            "AGGREGATED AVERAGE RESULTS (2 runs)"
        ]
    );
    let s = sections(&runs, false);
    assert_eq!(s[0].1.totals.ops_sec, 12.0);
    assert_eq!(s[1].1.totals.ops_sec, 6.0);
    let avg = &s[2].1;
    assert_eq!((avg.rows[0].ops, avg.rows[0].ops_sec), (8, 6.0));
    let doc = json(&[], &INFO, &runs, &opts(true));
    let agg = &doc["AGGREGATED AVERAGE RESULTS (2 runs)"];
    // The average's JSON Totals is filled (memtier zeroes it): the runs' histograms added up, their
    // rates averaged, their seconds added up, from the first run's start to the last one's end.
    let ms = |us: u64| serde_json::json!(us / 1000);
    assert_eq!(agg["Runtime"]["Start time"], ms(runs[0].start_us));
    let end = runs.iter().map(|v| v.end_us).max().unwrap();
    assert_eq!(agg["Runtime"]["Finish time"], ms(end));
    assert_eq!(agg["Sets"]["Time-Serie"]["0"]["Count"], 8);
    assert_eq!(agg["Sets"]["Time-Serie"]["0"]["Max Latency"], 0.247);
    let totals = &agg["Totals"];
    assert_eq!(totals["Count"], 12);
    assert_eq!(totals["Latency"], 0.092);
    assert_eq!(totals["Accumulated Latency"], 1);
    assert_eq!(totals["Min Latency"], 0.04);
    assert_eq!(totals["Max Latency"], 0.247);
    assert_eq!(totals["Percentile Latencies"]["p50.00"], 0.055);
    assert_eq!(totals["KB/sec RX"], 0.05);
    assert_eq!(totals["KB/sec TX"], 0.32);
    assert_eq!(totals["Time-Serie"]["0"]["Count"], 12);
    assert_eq!(totals["Time-Serie"]["0"]["Bytes RX"], 68);
    assert_eq!(agg["Sets"]["Percentile Latencies"]["p50.00"], 0.055);
    assert!(doc.get("ALL STATS").is_none());
}

#[test]
fn labels_and_keys_as_memtier_cuts_them() {
    assert_eq!(percentile_label(50.0), "p50 Latency");
    assert_eq!(percentile_label(99.9), "p99.9 Latency");
    assert_eq!(percentile_label(99.99), "p99.990 Latency");
    assert_eq!(percentile_key(f64::from(99.99f32), 3), "p99.99");
    assert_eq!(percentile_key(100.0, 3), "p100.0");
    assert_eq!(percentile_key(50.0, 2), "p50.00");
    assert_eq!(gmt_date(1_796_611_428), "Mon Dec 02:43:48 GMT 2026");
    assert_eq!(share(10, &[1, 1, 1]), [3, 3, 4]);
}

#[test]
fn hdr_files_have_memtiers_names_and_formats() {
    let dir = std::env::temp_dir().join(format!("ringbench-memtier-hdr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("h").to_string_lossy().into_owned();
    let view = MemtierView::of(&ratio(500), Breakdown::Command);
    let files = write_hdr_files(&prefix, 1, &view).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "h_FULL_RUN_1.txt",
            "h_FULL_RUN_1.hgrm",
            "h_GET_command_run_1.txt",
            "h_GET_command_run_1.hgrm",
            "h_SET_command_run_1.txt",
            "h_SET_command_run_1.hgrm"
        ]
    );
    let txt = std::fs::read_to_string(&files[2]).unwrap();
    let lines: Vec<&str> = txt.lines().collect();
    assert_eq!(
        lines[0],
        "       Value   Percentile   TotalCount 1/(1-Percentile)"
    );
    assert_eq!(
        lines[2],
        "        0.05     0.000000            1         1.00"
    );
    assert_eq!(
        lines[lines.len() - 4],
        "        0.10     1.000000            2          inf"
    );
    assert_eq!(
        lines[lines.len() - 2],
        "#[Max     =        0.103, Total count    =            2]"
    );
    assert_eq!(
        lines[lines.len() - 1],
        "#[Buckets =           20, SubBuckets     =          256]"
    );
    let log = std::fs::read_to_string(&files[1]).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines[0],
        "#[Full Run command HDR latency histogram results]"
    );
    assert_eq!(lines[1], "#[Histogram log format version 1.2]");
    assert_eq!(
        lines[3],
        "\"StartTimestamp\",\"EndTimestamp\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    );
    assert!(lines[4].contains(",247.0,HISTF"), "{log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn time_serie_from_the_executors_seconds() {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    let encode = |us: &[u64]| {
        let mut h = crate::stats::new_histogram(3);
        us.iter().for_each(|v| h.record(v * 1000).unwrap());
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        bytes
    };
    let mut r = ratio(1500);
    r.stats.interval_logs = vec![vec![encode(&[55, 55, 63, 40, 100]), encode(&[247])]];
    let sets = vec![encode(&[55, 55, 63]), encode(&[247])];
    let gets = vec![encode(&[40, 100]), encode(&[])];
    r.stats.part_interval_logs = vec![vec![sets, gets]];
    let view = MemtierView::of(&r, Breakdown::Command);
    assert_eq!(view.timestamps, [0, 1]);
    let doc = json(&[], &INFO, &[view], &opts(true));
    let serie = |row: &str| doc["ALL STATS"][row]["Time-Serie"].clone();
    assert_eq!(keys(&serie("Sets")), ["0", "1"]);
    assert_eq!(serie("Sets")["1"]["Count"], 1);
    assert_eq!(serie("Sets")["1"]["Max Latency"], 0.247);
    assert_eq!(serie("Sets")["1"]["p50.00"], 0.247);
    assert_eq!(
        (
            serie("Sets")["0"]["Bytes TX"].clone(),
            serie("Sets")["1"]["Bytes TX"].clone()
        ),
        (120.into(), 40.into())
    );
    assert_eq!(keys(&serie("Gets")["1"]), sorted("Bytes RX|Bytes TX|Count"));
    assert_eq!(serie("Totals")["0"]["Count"], 5);
    assert_eq!(serie("Totals")["0"]["Accumulated Latency"], 0);
}
