//! `ringbench merge A.json B.json ...`: runs of one workload made on several client machines, combined
//! into one result.
//!
//! Requests and errors are summed, histograms added losslessly, and throughput is the summed requests over
//! the span from the earliest first send to the latest last reply (the window that holds all the work).
//! The server's view is not summed: every host watched the same server, so the merge keeps the view with
//! the widest window (most commands processed) and recomputes CPU per request over the summed requests.

use crate::report::encoded_histogram::{MAX_COUNT, add_checked};
use crate::report::result_file::{
    CommandEntry, ErrorCounts, GetCounts, HistogramError, LatencySummary, MergedSource, RunConfig,
    RunFile, TestEntry, empty_histogram,
};
use crate::report::result_load::FLAG_MAX;
use crate::stats::server_view::ServerView;
use hdrhistogram::Histogram;

/// Why runs cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("cannot merge {file}: its {what} differs from {first}'s ({theirs} vs {ours})")]
    Mismatch {
        file: String,
        first: String,
        what: String,
        ours: String,
        theirs: String,
    },
    #[error("{0} (--ignore-shards merges anyway)")]
    Shards(String),
    #[error("cannot merge: the files' {what} add up past {limit} ({named})")]
    Count {
        what: String,
        limit: u64,
        named: &'static str,
    },
    #[error("{file}: test '{title}': {source}")]
    Histogram {
        file: String,
        title: String,
        #[source]
        source: HistogramError,
    },
}

/// The sum of `values` (each at most [`MAX_COUNT`]: checked when its file was loaded), refused past
/// [`MAX_COUNT`] naming them (`what`): the sum of a file's count and another's is still one count.
fn total(
    what: impl FnOnce() -> String,
    values: impl IntoIterator<Item = u64>,
) -> Result<u64, MergeError> {
    total_within(MAX_COUNT, "2^53", what, values)
}

/// The sum of flags a run echoes (`-c`, `-n`, a test's `requested`), refused past [`FLAG_MAX`], the most
/// a file may hold.
fn total_flags(
    what: impl FnOnce() -> String,
    values: impl IntoIterator<Item = u64>,
) -> Result<u64, MergeError> {
    total_within(FLAG_MAX, "i64::MAX", what, values)
}

fn total_within(
    limit: u64,
    named: &'static str,
    what: impl FnOnce() -> String,
    values: impl IntoIterator<Item = u64>,
) -> Result<u64, MergeError> {
    values
        .into_iter()
        .try_fold(0u64, |sum, v| sum.checked_add(v).filter(|s| *s <= limit))
        .ok_or_else(|| MergeError::Count {
            what: what(),
            limit,
            named,
        })
}

/// GET hits and misses over every file, with `of` taking a file's (each client counted its own: they
/// add up).
fn merge_gets(
    parts: &[(&String, &TestEntry)],
    of: impl Fn(&TestEntry) -> Option<GetCounts>,
    name: &dyn Fn(&str) -> String,
) -> Result<Option<GetCounts>, MergeError> {
    let gets: Vec<GetCounts> = parts.iter().filter_map(|(_, t)| of(t)).collect();
    Ok(GetCounts::of(
        total(|| name("GET hits"), gets.iter().map(|g| g.hits))?,
        total(|| name("GET misses"), gets.iter().map(|g| g.misses))?,
    ))
}

/// The mixed commands of one test over every file: summed by position when every file has the same
/// commands, else none (their figures do not line up).
fn merge_commands(parts: &[(&String, &TestEntry)]) -> Result<Vec<CommandEntry>, MergeError> {
    let Some((_, first)) = parts.first() else {
        return Ok(Vec::new());
    };
    let same = |t: &TestEntry| {
        t.commands.len() == first.commands.len()
            && t.commands
                .iter()
                .zip(&first.commands)
                .all(|(a, b)| a.title == b.title)
    };
    if first.commands.is_empty() || !parts.iter().all(|(_, t)| same(t)) {
        return Ok(Vec::new());
    }
    let start = parts
        .iter()
        .map(|(_, t)| t.start_unix)
        .fold(f64::MAX, f64::min);
    let end = parts.iter().map(|(_, t)| t.end_unix).fold(0.0, f64::max);
    let duration = (end - start).max(0.0);
    let mut out = Vec::with_capacity(first.commands.len());
    for (i, c0) in first.commands.iter().enumerate() {
        let mut hist = empty_histogram(c0.histogram.significant_figures);
        for (name, t) in parts {
            let c = &t.commands[i];
            c.histogram
                .decode()
                .and_then(|h| add_checked(&mut hist, &h))
                .map_err(|source| MergeError::Histogram {
                    file: (*name).clone(),
                    title: format!("{} / {}", t.title, c.title),
                    source,
                })?;
        }
        let name = |what: &str| format!("{what} of test '{}' command '{}'", first.title, c0.title);
        let requests = total(
            || name("requests"),
            parts.iter().map(|(_, t)| t.commands[i].requests),
        )?;
        let errors = total(
            || name("error replies"),
            parts.iter().map(|(_, t)| t.commands[i].errors),
        )?;
        out.push(CommandEntry {
            title: c0.title.clone(),
            command: c0.command.clone(),
            requests,
            errors,
            rps: if duration > 0.0 {
                requests as f64 / duration
            } else {
                0.0
            },
            latency_ms: LatencySummary::of(&hist),
            histogram: crate::report::result_file::EncodedHistogram::encode(&hist),
            gets: merge_gets(parts, |t| t.commands[i].gets, &name)?,
        });
    }
    Ok(out)
}

/// A merged result and what the caller should know about it.
pub struct Merged {
    pub file: RunFile,
    /// Per test: how much of the span every run was active (1.0 = all started and ended together).
    pub overlap: Vec<(String, f64)>,
    /// Seconds between the earliest and the latest first send of the first test (0 with no tests).
    pub start_spread: f64,
}

/// How far apart (seconds) the shards of one run may start their first test: `--start-at` lets a host
/// start up to `start_at::MAX_LATE` late, and clocks synchronised by NTP agree far better than that.
pub const MAX_START_SPREAD: f64 = crate::config::start_at::MAX_LATE;

/// Checks that sharded files are exactly the shards of one run: each index of one count once, the same
/// `--start-at`, first tests started within [`MAX_START_SPREAD`]. Returns the shard count (None when the
/// files are not shards).
pub fn check_shards(files: &[(String, RunFile)]) -> Result<Option<u64>, MergeError> {
    let bad = |m: String| Err(MergeError::Shards(m));
    let Some((first_name, first)) = files.iter().find(|(_, f)| f.config.shard.is_some()) else {
        return Ok(None);
    };
    let want = first.config.shard.expect("found by its shard");
    if want.index >= want.count || want.count > crate::config::shard::MAX_SHARDS {
        return bad(format!(
            "cannot merge {first_name}: its shard {want} is not valid"
        ));
    }
    let mut seen: Vec<Option<&str>> = vec![None; want.count as usize];
    for (name, f) in files {
        let Some(sh) = f.config.shard else {
            return bad(format!(
                "cannot merge {name}: it is not a shard, and {first_name} is shard {want} of a run"
            ));
        };
        if sh.index >= sh.count || sh.count > crate::config::shard::MAX_SHARDS {
            return bad(format!("cannot merge {name}: its shard {sh} is not valid"));
        }
        if sh.count != want.count {
            return bad(format!(
                "cannot merge {name}: it is shard {sh}, and {first_name} is shard {want}: not one run"
            ));
        }
        if f.config.start_at != first.config.start_at {
            let show = |t: Option<f64>| t.map_or("none".to_string(), |t| format!("{t}"));
            return bad(format!(
                "cannot merge {name}: its --start-at ({}) differs from {first_name}'s ({}): not one run",
                show(f.config.start_at),
                show(first.config.start_at)
            ));
        }
        if let Some(other) = seen[sh.index as usize].replace(name) {
            return bad(format!("shard {sh} appears twice: {other} and {name}"));
        }
    }
    let missing: Vec<String> = (0..want.count)
        .filter(|i| seen[*i as usize].is_none())
        .map(|i| format!("{i}/{}", want.count))
        .collect();
    if !missing.is_empty() {
        return bad(format!(
            "{} of {} shards missing: {}",
            missing.len(),
            want.count,
            missing.join(", ")
        ));
    }
    let spread = start_spread(files);
    if spread > MAX_START_SPREAD {
        return bad(format!(
            "the shards started their first test {spread:.3} s apart (at most {MAX_START_SPREAD} s): are the hosts' clocks synchronised?"
        ));
    }
    Ok(Some(want.count))
}

/// Seconds between the earliest and the latest first send of the files' first test.
pub fn start_spread(files: &[(String, RunFile)]) -> f64 {
    let starts = files
        .iter()
        .filter_map(|(_, f)| f.tests.first().map(|t| t.start_unix));
    let (lo, hi) = starts.fold((f64::MAX, f64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if hi >= lo { hi - lo } else { 0.0 }
}

fn check_same(
    files: &[(String, RunFile)],
    what: &str,
    get: impl Fn(&RunFile) -> String,
) -> Result<(), MergeError> {
    let ours = get(&files[0].1);
    for (name, f) in &files[1..] {
        let theirs = get(f);
        if theirs != ours {
            return Err(MergeError::Mismatch {
                file: name.clone(),
                first: files[0].0.clone(),
                what: what.into(),
                ours,
                theirs,
            });
        }
    }
    Ok(())
}

/// Merges runs (each with the name it was loaded from) into one result.
pub fn merge(files: &[(String, RunFile)]) -> Result<Merged, MergeError> {
    check_same_workload(files)?;
    let first = &files[0].1;
    let config = merged_config(files)?;
    let mut tests = Vec::new();
    let mut overlap = Vec::new();
    for (i, t0) in first.tests.iter().enumerate() {
        let parts: Vec<(&String, &TestEntry)> =
            files.iter().map(|(n, f)| (n, &f.tests[i])).collect();
        let (test, shared) = merge_test(t0, &parts)?;
        overlap.push((t0.title.clone(), shared));
        tests.push(test);
    }
    let hosts: Vec<&str> = files.iter().map(|(_, f)| f.client_host.as_str()).collect();
    Ok(Merged {
        file: RunFile {
            format: first.format.clone(),
            format_version: first.format_version,
            ringbench_version: env!("CARGO_PKG_VERSION").into(),
            client_host: hosts.join(","),
            created_unix: crate::config::start_at::unix_now(),
            config,
            stopped: files.iter().any(|(_, f)| f.stopped),
            merged_from: files
                .iter()
                .map(|(n, f)| MergedSource {
                    file: n.clone(),
                    client_host: f.client_host.clone(),
                    clients: f.config.clients,
                    shard: f.config.shard,
                })
                .collect(),
            tests,
            capacity: None,
            repeats: None,
        },
        overlap,
        start_spread: start_spread(files),
    })
}

/// Fails unless every file ran the same workload against the same target (tests, value size,
/// pipeline, keyspace, database, protocol).
fn check_same_workload(files: &[(String, RunFile)]) -> Result<(), MergeError> {
    check_same(files, "target", |f| f.config.target.clone())?;
    check_same(files, "test list", |f| {
        f.tests
            .iter()
            .map(|t| t.title.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    })?;
    check_same(files, "value size (-d)", |f| f.config.data_size.to_string())?;
    check_same(files, "pipeline (-P)", |f| f.config.pipeline.to_string())?;
    check_same(files, "keyspace (-r)", |f| {
        format!("{:?}", f.config.keyspace)
    })?;
    check_same(files, "database (--dbnum)", |f| f.config.dbnum.to_string())?;
    check_same(files, "protocol (-3)", |f| f.config.resp3.to_string())
}

/// The first file's configuration with the load figures (rate, clients, requests, threads) summed over
/// every file, and no shard.
fn merged_config(files: &[(String, RunFile)]) -> Result<RunConfig, MergeError> {
    let mut config = files[0].1.config.clone();
    let sum = |what: &str, of: fn(&RunConfig) -> u64| {
        total_flags(
            || format!("config.{what}"),
            files.iter().map(|(_, f)| of(&f.config)),
        )
    };
    config.shard = None;
    config.rps = files.iter().map(|(_, f)| f.config.rps).sum::<Option<f64>>();
    config.clients = sum("clients", |c| c.clients)?;
    config.requests = sum("requests", |c| c.requests)?;
    config.threads = sum("threads", |c| c.threads)?;
    Ok(config)
}

/// One test's latency over every file: the histograms added and the errors summed.
fn merge_latency(
    parts: &[(&String, &TestEntry)],
) -> Result<(Histogram<u64>, ErrorCounts), MergeError> {
    let mut hist = empty_histogram(
        parts
            .iter()
            .map(|(_, t)| t.histogram.significant_figures)
            .max()
            .unwrap_or(3),
    );
    for (name, t) in parts {
        t.histogram
            .decode()
            .and_then(|h| add_checked(&mut hist, &h))
            .map_err(|source| MergeError::Histogram {
                file: (*name).clone(),
                title: t.title.clone(),
                source,
            })?;
    }
    Ok((hist, merge_errors(parts)?))
}

/// One test's errors over every file: each count summed, each kind's too.
fn merge_errors(parts: &[(&String, &TestEntry)]) -> Result<ErrorCounts, MergeError> {
    let title = &parts[0].1.title;
    let sum = |what: &str, of: fn(&ErrorCounts) -> u64| {
        total(
            || format!("{what} of test '{title}'"),
            parts.iter().map(|(_, t)| of(&t.errors)),
        )
    };
    let mut errors = ErrorCounts {
        replies: sum("error replies", |e| e.replies)?,
        failed: sum("failed requests", |e| e.failed)?,
        timed_out: sum("timed out requests", |e| e.timed_out)?,
        not_sent: sum("requests not sent", |e| e.not_sent)?,
        in_flight: sum("requests in flight", |e| e.in_flight)?,
        late_unsent: sum("late requests", |e| e.late_unsent)?,
        ..ErrorCounts::default()
    };
    for (_, t) in parts {
        errors.timeout_ms = errors.timeout_ms.or(t.errors.timeout_ms);
        for (k, v) in &t.errors.by_kind {
            let slot = errors.by_kind.entry(k.clone()).or_default();
            *slot = total(
                || format!("'{k}' error replies of test '{title}'"),
                [*slot, *v],
            )?;
        }
        if errors.first.is_none() {
            errors.first = t.errors.first.clone();
        }
    }
    Ok(errors)
}

/// One test merged over every file (`t0` is the first file's), with the share of its span that every
/// file was active.
fn merge_test(
    t0: &TestEntry,
    parts: &[(&String, &TestEntry)],
) -> Result<(TestEntry, f64), MergeError> {
    let (hist, errors) = merge_latency(parts)?;
    let commands = merge_commands(parts)?;
    let seconds: Vec<&[crate::report::per_second::SecondEntry]> =
        parts.iter().map(|(_, t)| t.per_second.as_slice()).collect();
    let per_second =
        crate::report::per_second::merge(&seconds).map_err(|source| MergeError::Histogram {
            file: parts[0].0.clone(),
            title: format!("{} (per second)", t0.title),
            source,
        })?;
    let name = |what: &str| format!("{what} of test '{}'", t0.title);
    let requests = total(|| name("requests"), parts.iter().map(|(_, t)| t.requests))?;
    let requested = total_flags(|| name("requested"), parts.iter().map(|(_, t)| t.requested))?;
    let start = parts
        .iter()
        .map(|(_, t)| t.start_unix)
        .fold(f64::MAX, f64::min);
    let end = parts.iter().map(|(_, t)| t.end_unix).fold(0.0, f64::max);
    let duration = (end - start).max(0.0);
    let common_start = parts.iter().map(|(_, t)| t.start_unix).fold(0.0, f64::max);
    let common_end = parts
        .iter()
        .map(|(_, t)| t.end_unix)
        .fold(f64::MAX, f64::min);
    let shared = if duration > 0.0 {
        ((common_end - common_start) / duration).max(0.0)
    } else {
        1.0
    };
    let server = parts
        .iter()
        .filter_map(|(_, t)| t.server.as_ref())
        .max_by_key(|s| s.commands_processed)
        .map(|s| ServerView {
            cpu_us_per_request: (requests > 0).then(|| s.cpu_s() * 1e6 / requests as f64),
            ..s.clone()
        });
    let test = TestEntry {
        title: t0.title.clone(),
        command: t0.command.clone(),
        requested,
        requests,
        errors,
        start_unix: start,
        end_unix: end,
        duration_s: duration,
        rps: if duration > 0.0 {
            requests as f64 / duration
        } else {
            0.0
        },
        latency_ms: LatencySummary::of(&hist),
        histogram: crate::report::result_file::EncodedHistogram::encode(&hist),
        executors: parts
            .iter()
            .flat_map(|(_, t)| t.executors.iter().cloned())
            .collect(),
        server,
        // Per-node figures of separate clients do not add up to one cluster view.
        cluster: None,
        // Each client machine's memory is its own.
        client_memory: None,
        gets: merge_gets(parts, |t| t.gets, &name)?,
        data_verify: merge_verify(parts, &name)?,
        commands,
        per_second,
    };
    Ok((test, shared))
}

/// The read pass's figures over every file (each shard checked its own slice: the checks add up), their
/// sums checked first.
fn merge_verify(
    parts: &[(&String, &TestEntry)],
    name: &dyn Fn(&str) -> String,
) -> Result<Option<crate::report::verify::VerifyEntry>, MergeError> {
    use crate::report::verify::VerifyEntry;
    let entries: Vec<&VerifyEntry> = parts
        .iter()
        .filter_map(|(_, t)| t.data_verify.as_ref())
        .collect();
    let sum = |what: &str, of: fn(&VerifyEntry) -> u64| {
        total(|| name(what), entries.iter().map(|v| of(v)))
    };
    sum("keys checked", |v| v.checked)?;
    sum("keys mismatched", |v| v.mismatched)?;
    sum("keys missing", |v| v.missing)?;
    sum("keys in error", |v| v.errors)?;
    Ok(crate::report::verify::merge_entries(entries.into_iter()))
}
