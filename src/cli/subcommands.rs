//! The `compare` and `merge` subcommands: they read result files and never touch a server.
//!
//! They are recognised by the first argument only (no Redis command is named `compare` or `merge`), before
//! the benchmark's own flags are parsed.

use crate::report::compare::{self, Loaded};
use crate::report::plot::{self, Series};
use crate::report::result_file::{ResultFileError, RunFile};
use crate::report::{self, Header};
use clap::Parser;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ringbench compare`.
#[derive(Parser, Debug)]
#[command(
    name = "ringbench compare",
    about = "Compare result files (--json) side by side; changes are against the first file"
)]
pub struct CompareArgs {
    /// Result files; the first is the base
    #[arg(value_name = "FILE.json", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Also draw latency by percentile, one line per file (and test): SVG, or PNG for a .png name
    #[arg(long = "plot", value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
}

/// `ringbench merge`.
#[derive(Parser, Debug)]
#[command(
    name = "ringbench merge",
    about = "Merge result files of one workload run on several client machines"
)]
pub struct MergeArgs {
    /// Result files to merge; '-' reads result documents one after the other from stdin
    /// (e.g. `kubectl logs -l job-name=NAME --tail=-1 | ringbench merge -`)
    #[arg(value_name = "FILE.json", num_args = 1.., required = true)]
    pub files: Vec<PathBuf>,
    /// Merge shards of a run even when some are missing, repeated or started apart
    #[arg(long = "ignore-shards")]
    pub ignore_shards: bool,
    /// Write the merged result as JSON to FILE ('-' for stdout, then no text report)
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// Draw latency by percentile of the merged result, one line per test: SVG, or PNG for a .png name
    #[arg(long = "plot", value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
    /// Quiet: one line per test
    #[arg(short = 'q')]
    pub quiet: bool,
}

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
    #[error(transparent)]
    Histogram(#[from] crate::report::result_file::HistogramError),
    #[error("{0}")]
    Other(String),
}

impl ToolError {
    /// Exit code: bad input files are the user's mistake (2); failing to write output is 1.
    fn code(&self) -> u8 {
        match self {
            ToolError::File(ResultFileError::Write { .. }) | ToolError::Plot(_) => 1,
            _ => 2,
        }
    }
}

/// Runs a subcommand when `args[1]` names one; `None` means "a benchmark run". Errors and warnings go
/// to `err`.
pub fn dispatch(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> Option<ExitCode> {
    let name = args.get(1)?.to_str()?;
    let rest = || args[2..].iter().cloned();
    let outcome = match name {
        "compare" => parse::<CompareArgs>("compare", rest(), err).map(|a| run_compare(&a, out)),
        "merge" => parse::<MergeArgs>("merge", rest(), err).map(|a| run_merge(&a, out, err)),
        "fleet" => {
            return Some(crate::fleet::dispatch(
                &args[2..],
                out,
                err,
                crate::config::start_at::unix_now(),
            ));
        }
        _ => return None,
    };
    Some(match outcome {
        Err(code) => code,
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            let _ = writeln!(err, "ringbench: {name}: {e}");
            ExitCode::from(e.code())
        }
    })
}

fn parse<T: Parser>(
    name: &str,
    rest: impl Iterator<Item = OsString>,
    err: &mut dyn Write,
) -> Result<T, ExitCode> {
    let argv = std::iter::once(OsString::from(format!("ringbench {name}"))).chain(rest);
    T::try_parse_from(argv).map_err(|e| {
        use clap::error::ErrorKind;
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or("invalid arguments");
        let _ = writeln!(
            err,
            "ringbench: {name}: {}",
            first.trim_start_matches("error: ")
        );
        ExitCode::from(2)
    })
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
                        crate::net::io_reason(e)
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

/// `compare`: prints the table, and draws the chart when asked.
pub fn run_compare(a: &CompareArgs, out: &mut dyn Write) -> Result<(), ToolError> {
    if let Some(p) = &a.plot {
        crate::config::paths::check_extension("--plot", p)?;
    }
    let loaded: Vec<Loaded> = load_all(&a.files)?
        .into_iter()
        .map(|(label, file)| Loaded { label, file })
        .collect();
    let text = compare::table(&loaded);
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| ToolError::Other(format!("could not write the output: {e}")))?;
    if let Some(path) = &a.plot {
        let titles = compare::test_titles(&loaded);
        let mut hists = Vec::new();
        for f in &loaded {
            for t in &f.file.tests {
                let h = t.histogram.decode().map_err(|reason| {
                    ToolError::Other(format!("{}: test '{}': {reason}", f.label, t.title))
                })?;
                // One line per file; the test is named too when the files hold several.
                let label = if titles.len() == 1 {
                    f.label.clone()
                } else {
                    format!("{}: {}", f.label, t.title)
                };
                hists.push((label, h));
            }
        }
        let series: Vec<Series<'_>> = hists
            .iter()
            .map(|(label, hist)| Series {
                label: label.clone(),
                hist,
            })
            .collect();
        plot::write(path, "ringbench compare: latency by percentile", &series)?;
    }
    Ok(())
}

/// `merge`: prints the merged report, and writes JSON and the chart when asked; warnings go to `err`.
pub fn run_merge(a: &MergeArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), ToolError> {
    if let Some(p) = &a.plot {
        crate::config::paths::check_extension("--plot", p)?;
    }
    let files = load_for_merge(&a.files)?;
    let shards = if a.ignore_shards {
        None
    } else {
        crate::report::merge::check_shards(&files)?
    };
    let merged = crate::report::merge::merge(&files)?;
    for (title, share) in &merged.overlap {
        if *share < 0.9 {
            let _ = writeln!(
                err,
                "ringbench: merge: warning: in '{title}' the runs overlap for only {:.0}% of their span; \
                 start them together (--start-at) for a meaningful merged throughput",
                share * 100.0
            );
        }
    }
    let f = &merged.file;
    let results = f
        .tests
        .iter()
        .map(|t| t.to_result())
        .collect::<Result<Vec<_>, _>>()?;
    let write_err =
        |e: std::io::Error| ToolError::Other(format!("could not write the output: {e}"));
    if a.json.as_deref() != Some("-") {
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
        };
        let mut text = format!(
            "Merged {} runs (client hosts: {})\n",
            files.len(),
            f.client_host
        );
        if let Some(n) = shards {
            text.push_str(&format!(
                "All {n} shards of one run; first sends {:.1} ms apart\n",
                merged.start_spread * 1e3
            ));
        }
        text.push('\n');
        for r in &results {
            if a.quiet {
                text.push_str(&report::quiet_line(r));
            } else {
                text.push_str(&crate::report::results::normal_text(r, &header));
            }
        }
        out.write_all(text.as_bytes()).map_err(write_err)?;
        out.flush().map_err(write_err)?;
    }
    if let Some(dest) = &a.json {
        f.write_to(dest, out)?;
    }
    if let Some(path) = &a.plot {
        let series: Vec<Series<'_>> = results
            .iter()
            .map(|r| Series {
                label: r.title.clone(),
                hist: &r.stats.hist,
            })
            .collect();
        plot::write(path, "ringbench merge: latency by percentile", &series)?;
    }
    Ok(())
}
