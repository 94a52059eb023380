//! `ringbench merge A.json B.json ...`: runs of one workload made on several client machines, combined
//! into one result.
//!
//! Requests and errors are summed, histograms added losslessly, and throughput is the summed requests over
//! the span from the earliest first send to the latest last reply (the window that holds all the work).
//! The server's view is not summed: every host watched the same server, so the merge keeps the view with
//! the widest window (most commands processed) and recomputes CPU per request over the summed requests.

use crate::result_file::{
    ErrorCounts, LatencySummary, MergedSource, RunFile, TestEntry, empty_histogram,
};
use crate::server_view::ServerView;

/// Why runs cannot be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("cannot merge {file}: its {what} differs from {first}'s ({theirs} vs {ours})")]
    Mismatch {
        file: String,
        first: String,
        what: String,
        ours: String,
        theirs: String,
    },
    #[error("{file}: test '{title}': {reason}")]
    Histogram {
        file: String,
        title: String,
        reason: String,
    },
}

/// A merged result and what the caller should know about it.
pub struct Merged {
    pub file: RunFile,
    /// Per test: how much of the span every run was active (1.0 = all started and ended together).
    pub overlap: Vec<(String, f64)>,
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
    check_same(files, "protocol (-3)", |f| f.config.resp3.to_string())?;

    let first = &files[0].1;
    let mut config = first.config.clone();
    config.clients = files.iter().map(|(_, f)| f.config.clients).sum();
    config.requests = files.iter().map(|(_, f)| f.config.requests).sum();
    config.threads = files.iter().map(|(_, f)| f.config.threads).sum();
    let mut tests = Vec::new();
    let mut overlap = Vec::new();
    for (i, t0) in first.tests.iter().enumerate() {
        let parts: Vec<(&String, &TestEntry)> =
            files.iter().map(|(n, f)| (n, &f.tests[i])).collect();
        let mut hist = empty_histogram(
            parts
                .iter()
                .map(|(_, t)| t.histogram.significant_figures)
                .max()
                .unwrap_or(3),
        );
        let mut errors = ErrorCounts::default();
        for (name, t) in &parts {
            let h = t
                .histogram
                .decode()
                .map_err(|reason| MergeError::Histogram {
                    file: (*name).clone(),
                    title: t.title.clone(),
                    reason,
                })?;
            hist.add(&h).map_err(|e| MergeError::Histogram {
                file: (*name).clone(),
                title: t.title.clone(),
                reason: format!("{e:?}"),
            })?;
            errors.replies += t.errors.replies;
            errors.failed += t.errors.failed;
            for (k, v) in &t.errors.by_kind {
                *errors.by_kind.entry(k.clone()).or_default() += v;
            }
            if errors.first.is_none() {
                errors.first = t.errors.first.clone();
            }
        }
        let requests: u64 = parts.iter().map(|(_, t)| t.requests).sum();
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
        overlap.push((
            t0.title.clone(),
            if duration > 0.0 {
                ((common_end - common_start) / duration).max(0.0)
            } else {
                1.0
            },
        ));
        let server = parts
            .iter()
            .filter_map(|(_, t)| t.server.as_ref())
            .max_by_key(|s| s.commands_processed)
            .map(|s| ServerView {
                cpu_us_per_request: (requests > 0).then(|| s.cpu_s() * 1e6 / requests as f64),
                ..s.clone()
            });
        tests.push(TestEntry {
            title: t0.title.clone(),
            command: t0.command.clone(),
            requested: parts.iter().map(|(_, t)| t.requested).sum(),
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
            histogram: crate::result_file::EncodedHistogram::encode(&hist),
            executors: parts
                .iter()
                .flat_map(|(_, t)| t.executors.iter().cloned())
                .collect(),
            server,
        });
    }
    let hosts: Vec<&str> = files.iter().map(|(_, f)| f.client_host.as_str()).collect();
    Ok(Merged {
        file: RunFile {
            format: first.format.clone(),
            format_version: first.format_version,
            ringbench_version: env!("CARGO_PKG_VERSION").into(),
            client_host: hosts.join(","),
            created_unix: crate::start_at::unix_now(),
            config,
            stopped: files.iter().any(|(_, f)| f.stopped),
            merged_from: files
                .iter()
                .map(|(n, f)| MergedSource {
                    file: n.clone(),
                    client_host: f.client_host.clone(),
                    clients: f.config.clients,
                })
                .collect(),
            tests,
            capacity: None,
        },
        overlap,
    })
}
