//! Runs the `compare` and `merge` subcommands (their flags are `cli::subcommands`): they read result
//! files, print a report and draw charts, and never touch a server.

use crate::cli::subcommands::{CompareArgs, MergeArgs, ReportArgs};
use crate::report::compare::{self, Loaded};
use crate::report::plot::{self, Series};
use crate::report::printable::{printable, printable_lines};
use crate::report::result_file::{ResultFileError, RunFile};
use crate::report::{self, Header};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a subcommand failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    File(#[from] ResultFileError),
    #[error(transparent)]
    Merge(#[from] crate::report::merge::MergeError),
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
    #[error(transparent)]
    Usage(#[from] crate::config::UsageError),
    /// An output file that cannot be written (its folder missing, say): found before any input is read.
    #[error(transparent)]
    Output(#[from] crate::config::error::PathError),
    #[error(transparent)]
    Histogram(#[from] crate::report::result_file::HistogramError),
    #[error("{0}")]
    Other(String),
}

impl ToolError {
    /// Exit code: bad input files are the user's mistake (2); failing to write output is 1.
    pub fn code(&self) -> u8 {
        match self {
            ToolError::File(ResultFileError::Write { .. }) | ToolError::Plot(_) => 1,
            _ => 2,
        }
    }
}

/// Checks the output files a tool was given, before it reads anything: a chart's name (`--plot`), and
/// that each can be written (its folder exists and takes a new file), as a benchmark checks its own.
fn check_outputs(plot: Option<&Path>, files: &[(&'static str, &Path)]) -> Result<(), ToolError> {
    if let Some(p) = plot {
        crate::config::paths::check_extension("--plot", p)?;
    }
    for (flag, path) in plot.map(|p| ("--plot", p)).iter().chain(files) {
        let shown = path.display().to_string();
        crate::config::paths::check_writable(flag, &shown, &shown)?;
    }
    Ok(())
}

/// Refuses a file given twice (the same file by its canonical path, however it is written): merged, its
/// requests would count twice; compared, it would weigh twice in its side. `-` (stdin) is left out.
fn refuse_repeats(files: &[PathBuf]) -> Result<(), ToolError> {
    let mut seen: Vec<(PathBuf, &PathBuf)> = Vec::new();
    for f in files.iter().filter(|f| f.as_os_str() != "-") {
        // A file that cannot be resolved is refused when it is loaded, with the reason.
        let Ok(canonical) = std::fs::canonicalize(f) else {
            continue;
        };
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == canonical) {
            return Err(ToolError::Usage(crate::config::UsageError(format!(
                "'{}' is the same file as '{}': give each result file once",
                f.display(),
                first.display()
            ))));
        }
        seen.push((canonical, f));
    }
    Ok(())
}

/// Warns on `err` when a file's -P, -c or target differs from the first file's: its figures are then not
/// of the same setup. `clients` is false for the shards of one run, whose -c is each one's share.
/// (`merge` calls it once its own checks, which refuse a different -P or target, have passed.)
fn warn_differences(name: &str, files: &[(String, RunFile)], clients: bool, err: &mut dyn Write) {
    let Some((first_name, first)) = files.first() else {
        return;
    };
    for (file, f) in &files[1..] {
        let (a, b) = (&first.config, &f.config);
        let mut differ = Vec::new();
        if a.pipeline != b.pipeline {
            differ.push(format!("-P {} (not {})", b.pipeline, a.pipeline));
        }
        if clients && a.clients != b.clients {
            differ.push(format!("-c {} (not {})", b.clients, a.clients));
        }
        if a.target != b.target {
            differ.push(format!("target {} (not {})", b.target, a.target));
        }
        if !differ.is_empty() {
            let line = format!("{file} differs from {first_name} in {}", differ.join(", "));
            let _ = writeln!(err, "ringbench: {name}: warning: {}", printable(&line));
        }
    }
}

fn load_all(files: &[PathBuf]) -> Result<Vec<(String, RunFile)>, ToolError> {
    files
        .iter()
        .map(|p| Ok((p.display().to_string(), RunFile::load(p)?)))
        .collect()
}

/// Loads the files to merge: `-` stands for every result document on stdin, in order.
fn load_for_merge(files: &[PathBuf]) -> Result<Vec<(String, RunFile)>, ToolError> {
    let mut all = Vec::new();
    let mut stdin_read = false;
    for p in files {
        if p.as_os_str() == "-" {
            if stdin_read {
                return Err(ToolError::Other("'-' (stdin) can be given once".into()));
            }
            stdin_read = true;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text).map_err(
                |e| {
                    ToolError::Other(format!(
                        "could not read stdin: {}",
                        crate::os_error::describe(e)
                    ))
                },
            )?;
            let docs = RunFile::parse_stream(&text, "stdin")?;
            let n = docs.len();
            all.extend(
                docs.into_iter()
                    .enumerate()
                    .map(|(i, f)| (format!("stdin document {} of {n}", i + 1), f)),
            );
        } else {
            all.push((p.display().to_string(), RunFile::load(p)?));
        }
    }
    if all.len() < 2 && !all.iter().any(|(_, f)| f.config.shard.is_some()) {
        return Err(ToolError::Other(format!(
            "needs at least two result documents to merge (got {})",
            all.len()
        )));
    }
    Ok(all)
}

/// `ringbench report`: the files as one HTML page.
pub fn run_report(a: &ReportArgs) -> Result<(), ToolError> {
    check_outputs(None, &[("--output", &a.output)])?;
    let loaded: Vec<Loaded> = load_all(&a.files)?
        .into_iter()
        .map(|(label, file)| Loaded { label, file })
        .collect();
    std::fs::write(&a.output, crate::report::html::page(&loaded)).map_err(|e| {
        ToolError::File(ResultFileError::Write {
            path: a.output.display().to_string(),
            reason: crate::os_error::describe(e),
        })
    })
}

/// `compare`: prints the table, and draws the chart when asked. The same file may stand on both sides of
/// `vs` (an A/A check), not twice on one.
pub fn run_compare(
    a: &CompareArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), ToolError> {
    check_outputs(a.plot.as_deref(), &[])?;
    // `A1 A2 vs B1 B2`: two sides of several runs each.
    let split = a.files.iter().position(|f| f.as_os_str() == "vs");
    if let Some(at) = split
        && (at == 0
            || at + 1 == a.files.len()
            || a.files[at + 1..].iter().any(|f| f.as_os_str() == "vs"))
    {
        return Err(ToolError::Usage(crate::config::UsageError(
            "'vs' stands between the two sides' files: A.json... vs B.json...".into(),
        )));
    }
    let files: Vec<PathBuf> = a
        .files
        .iter()
        .filter(|f| f.as_os_str() != "vs")
        .cloned()
        .collect();
    match split {
        Some(at) => {
            refuse_repeats(&files[..at])?;
            refuse_repeats(&files[at..])?;
        }
        None => refuse_repeats(&files)?,
    }
    let all = load_all(&files)?;
    warn_differences("compare", &all, true, err);
    let loaded: Vec<Loaded> = all
        .into_iter()
        .map(|(label, file)| Loaded { label, file })
        .collect();
    let text = match split {
        Some(at) => compare::sides(&loaded[..at], &loaded[at..]),
        None => compare::table(&loaded),
    };
    out.write_all(printable_lines(&text).as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| ToolError::Other(format!("could not write the output: {e}")))?;
    if let Some(path) = &a.plot {
        let titles = compare::test_titles(&loaded);
        let mut series = Vec::new();
        for f in &loaded {
            for t in &f.file.tests {
                // One histogram decoded at a time: only its line's points are kept.
                let h = t.histogram.decode().map_err(|reason| {
                    ToolError::Other(format!("{}: test '{}': {reason}", f.label, t.title))
                })?;
                // One line per file; the test is named too when the files hold several.
                let label = if titles.len() == 1 {
                    f.label.clone()
                } else {
                    format!("{}: {}", f.label, t.title)
                };
                series.push(Series::of(printable(&label).into_owned(), &h));
            }
        }
        // The subtitle: each distinct target and flags among the files.
        let mut runs: Vec<String> = Vec::new();
        for f in &loaded {
            let r = f.file.config.summary(f.file.capacity.is_none());
            if !runs.contains(&r) {
                runs.push(r);
            }
        }
        let title = format!(
            "ringbench compare: latency by percentile\n{}",
            printable(&runs.join("  vs  "))
        );
        plot::write(path, &title, &series)?;
    }
    Ok(())
}

/// `merge`: prints the merged report, and writes JSON and the chart when asked.
pub fn run_merge(a: &MergeArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), ToolError> {
    let json: Vec<(&'static str, &Path)> = match a.json.as_deref() {
        Some(j) if j != "-" => vec![("--json", Path::new(j))],
        _ => Vec::new(),
    };
    check_outputs(a.plot.as_deref(), &json)?;
    refuse_repeats(&a.files)?;
    let files = load_for_merge(&a.files)?;
    let shards = if a.ignore_shards {
        None
    } else {
        crate::report::merge::check_shards(&files)?
    };
    let merged = crate::report::merge::merge(&files)?;
    // Merge refuses a different target or -P; a different -c is only worth a word, unless the files
    // are shards of one run (each has its share of -c).
    let sharded = files.iter().any(|(_, f)| f.config.shard.is_some());
    warn_differences("merge", &files, !sharded, err);
    for (title, share) in &merged.overlap {
        if *share < 0.9 {
            let _ = writeln!(
                err,
                "ringbench: merge: warning: in '{}' the runs overlap for only {:.0}% of their span; \
                 start them together (--start-at) for a meaningful merged throughput",
                printable(title),
                share * 100.0
            );
        }
    }
    let f = &merged.file;
    let text = a.json.as_deref() != Some("-");
    let series = if text || a.plot.is_some() {
        merged_report(&merged, files.len(), shards, text.then_some(a.quiet), out)?
    } else {
        Vec::new()
    };
    if let Some(dest) = &a.json {
        f.write_to(dest, out)?;
    }
    if let Some(path) = &a.plot {
        let title = format!(
            "ringbench merge: latency by percentile\n{}",
            printable(&f.config.summary(f.capacity.is_none()))
        );
        plot::write(path, &title, &series)?;
    }
    Ok(())
}

/// The merged report, test by test (one test's histograms decoded at a time, within `HELD_AT_ONCE`,
/// checked for every test before anything is printed), and each test's line of the chart. `quiet`:
/// `None` prints nothing (the JSON goes to stdout), `Some(q)` the report (`-q`'s lines when `q`).
fn merged_report(
    merged: &crate::report::merge::Merged,
    runs: usize,
    shards: Option<u64>,
    quiet: Option<bool>,
    out: &mut dyn Write,
) -> Result<Vec<Series>, ToolError> {
    let f = &merged.file;
    let refused = |t: &crate::report::result_file::TestEntry, e| {
        ToolError::Other(format!("merged test '{}': {e}", t.title))
    };
    for t in &f.tests {
        t.check_held().map_err(|e| refused(t, e))?;
    }
    let write_err =
        |e: std::io::Error| ToolError::Other(format!("could not write the output: {e}"));
    let header = Header {
        clients: f.config.clients as usize,
        data_size: f.config.data_size as usize,
        data_min: None,
        keepalive: f.config.keepalive,
        save: None,
        appendonly: None,
        multi_thread: f.config.threads > 1,
        threads: f.config.threads as usize,
        threads_note: None,
        tls: None,
        cluster_nodes: None,
        expiry: None,
        replay: None,
    };
    if quiet.is_some() {
        let hosts = printable(&f.client_host);
        let mut text = format!("Merged {runs} runs (client hosts: {hosts})\n");
        if let Some(n) = shards {
            text.push_str(&format!(
                "All {n} shards of one run; first sends {:.1} ms apart\n",
                merged.start_spread * 1e3
            ));
        }
        text.push('\n');
        out.write_all(text.as_bytes()).map_err(write_err)?;
    }
    let mut series = Vec::new();
    for t in &f.tests {
        let mut r = t.to_result().map_err(|e| refused(t, e))?;
        printable_result(&mut r);
        let text = match quiet {
            None => String::new(),
            Some(true) => report::quiet_line(&r) + &crate::report::rate_report::quiet_parts(&r),
            Some(false) => crate::report::results::normal_text(&r, &header),
        };
        // Whatever else of the file the report quotes, no control character goes out raw.
        out.write_all(printable_lines(&text).as_bytes())
            .map_err(write_err)?;
        series.push(Series::of(r.title.clone(), &r.stats.hist));
    }
    out.flush().map_err(write_err)?;
    Ok(series)
}

/// The strings of a merged test a report prints on lines of their own (its title, its commands', its first
/// error, its error kinds, its server's nodes) with their line breaks escaped too.
fn printable_result(r: &mut crate::stats::TestResult) {
    let fix = |s: &mut String| {
        if let std::borrow::Cow::Owned(p) = printable(s) {
            *s = p;
        }
    };
    fix(&mut r.title);
    for p in &mut r.stats.parts {
        fix(&mut p.title);
    }
    if let Some(e) = &mut r.stats.first_error {
        fix(e);
    }
    r.stats.error_kinds = std::mem::take(&mut r.stats.error_kinds)
        .into_iter()
        .map(|(k, n)| (printable(&k).into_owned(), n))
        .collect();
    for n in r.server.iter_mut().flat_map(|v| v.nodes.iter_mut()) {
        fix(&mut n.node);
    }
}
