//! The search's flags: the latency objectives (`Objective`, `--slo`) and `SearchArgs`, read from the
//! command line as written (`SearchArgs::from_flags` and its `parse_*` readers), and `check_cli`, the flags
//! of a normal run that a search refuses.

use crate::app::capacity::numbers::trim_number;
use crate::cli::capacity::SearchFlags;
use crate::config::UsageError;
use std::time::Duration;

/// The highest rate a search may offer (as `--rps`).
pub(super) const MAX_RATE: f64 = 1e9;

/// One latency objective: the percentile (e.g. 99.9) may be at most `max_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    pub percentile: f64,
    pub max_ms: f64,
}

impl Objective {
    /// `p99`, `p99.9`, `p50`.
    pub(super) fn label(&self) -> String {
        format!("p{}", trim_number(self.percentile, 4))
    }
}

/// The search's own flags.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchArgs {
    pub objectives: Vec<Objective>,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub step: Duration,
    pub warmup: Duration,
    /// e.g. 0.05 for 5%.
    pub precision: f64,
    /// Whole searches to run (`--repeat`); the answer is their median.
    pub repeat: usize,
    /// A passing run whose worst objective is at least `1 - borderline` of its limit is confirmed
    /// (`--borderline`; 0 confirms failing runs only).
    pub borderline: f64,
    /// How many times a run spoiled by the client is run again before it counts (`--retries`).
    pub retries: usize,
}

impl Default for SearchArgs {
    fn default() -> Self {
        SearchArgs {
            objectives: vec![Objective {
                percentile: 99.0,
                max_ms: 1.0,
            }],
            from: None,
            to: None,
            step: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            precision: 0.05,
            repeat: 1,
            borderline: 0.10,
            retries: 2,
        }
    }
}

pub(super) fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// Parses `p99=1ms,p99.9=5ms` (units us, ms, s).
pub(super) fn parse_slo(spec: &str) -> Result<Vec<Objective>, UsageError> {
    let bad = |why: &str| usage(format!("invalid value '{spec}' for '--slo': {why}"));
    let mut out: Vec<Objective> = Vec::new();
    for part in spec.split(',').map(str::trim) {
        let (p, limit) = part
            .split_once('=')
            .ok_or_else(|| bad("write each objective as pNN=LATENCY, e.g. p99=1ms"))?;
        let pct: f64 = p
            .trim()
            .strip_prefix(['p', 'P'])
            .and_then(|n| n.parse().ok())
            .filter(|n: &f64| n.is_finite() && *n > 0.0 && *n <= 100.0)
            .ok_or_else(|| {
                bad(&format!(
                    "'{p}' is not a percentile such as p50, p99 or p99.9"
                ))
            })?;
        let limit = limit.trim();
        let (num, scale) = if let Some(n) = limit.strip_suffix("us") {
            (n, 1e-3)
        } else if let Some(n) = limit.strip_suffix("µs") {
            (n, 1e-3)
        } else if let Some(n) = limit.strip_suffix("ms") {
            (n, 1.0)
        } else if let Some(n) = limit.strip_suffix('s') {
            (n, 1e3)
        } else {
            return Err(bad(&format!(
                "'{limit}' needs a unit: us, ms or s (e.g. 1ms)"
            )));
        };
        let max_ms = num
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| v * scale)
            .ok_or_else(|| bad(&format!("'{limit}' is not a latency above 0")))?;
        if out.iter().any(|o| o.percentile == pct) {
            return Err(bad(&format!("{p} is given twice")));
        }
        out.push(Objective {
            percentile: pct,
            max_ms,
        });
    }
    Ok(out)
}

fn parse_rate(flag: &str, v: &str) -> Result<f64, UsageError> {
    v.trim()
        .replace('_', "")
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r >= 1.0 && *r <= MAX_RATE)
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '{flag}': must be a rate from 1 to {MAX_RATE} requests per second"
            ))
        })
}

fn parse_seconds(flag: &str, v: &str, zero_ok: bool) -> Result<Duration, UsageError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (*s > 0.0 || (zero_ok && *s == 0.0)) && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            let lowest = if zero_ok { "0 or more" } else { "above 0" };
            usage(format!(
                "invalid value '{v}' for '{flag}': must be a number of seconds, {lowest} and at most 86400"
            ))
        })
}

fn parse_precision(v: &str) -> Result<f64, UsageError> {
    let num = v.trim().trim_end_matches('%');
    num.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.1 && *p <= 100.0)
        .map(|p| p / 100.0)
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '--within': must be a percentage from 0.1% to 100% (e.g. 5%)"
            ))
        })
}

fn parse_count(flag: &str, v: &str, lowest: usize, highest: usize) -> Result<usize, UsageError> {
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (lowest..=highest).contains(n))
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '{flag}': must be a whole number from {lowest} to {highest}"
            ))
        })
}

fn parse_borderline(v: &str) -> Result<f64, UsageError> {
    let num = v.trim().trim_end_matches('%');
    num.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0 && *p <= 50.0)
        .map(|p| p / 100.0)
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '--borderline': must be a percentage from 0% to 50% (e.g. 10%)"
            ))
        })
}

impl SearchArgs {
    /// Checks the search's flags as written (`cli::capacity::SearchFlags`); `warmup` is the benchmark's
    /// `--warmup`, each step's warmup here.
    pub fn from_flags(flags: &SearchFlags, warmup: Option<f64>) -> Result<SearchArgs, UsageError> {
        let mut search = SearchArgs::default();
        let mut slos: Vec<Objective> = Vec::new();
        for value in &flags.slo {
            for o in parse_slo(value)? {
                if slos.iter().any(|s| s.percentile == o.percentile) {
                    return Err(usage(format!(
                        "invalid value '{value}' for '--slo': {} is given twice",
                        o.label()
                    )));
                }
                slos.push(o);
            }
        }
        if !slos.is_empty() {
            search.objectives = slos;
        }
        if let Some(v) = &flags.from {
            search.from = Some(parse_rate("--from", v)?);
        }
        if let Some(v) = &flags.to {
            search.to = Some(parse_rate("--to", v)?);
        }
        if let Some(v) = &flags.step_duration {
            search.step = parse_seconds("--step-duration", v, false)?;
        }
        if let Some(w) = warmup {
            search.warmup = parse_seconds("--warmup", &w.to_string(), true)?;
        }
        if let Some(v) = &flags.within {
            search.precision = parse_precision(v)?;
        }
        if let Some(v) = &flags.borderline {
            search.borderline = parse_borderline(v)?;
        }
        if let Some(v) = &flags.retries {
            search.retries = parse_count("--retries", v, 0, 10)?;
        }
        if let Some(v) = &flags.repeat {
            search.repeat = parse_count("--repeat", v, 1, 100)?;
        }
        if let (Some(f), Some(t)) = (search.from, search.to)
            && f > t
        {
            return Err(usage(format!(
                "invalid value '{f}' for '--from': it is above --to {t}"
            )));
        }
        Ok(search)
    }
}

/// Flags of a normal run that a search cannot take (pacing, counts, output kinds, value checks, live
/// metrics), checked on the parsed command line before anything is read or opened.
pub fn check_cli(cli: &crate::cli::Cli) -> Result<(), UsageError> {
    let refuse = |flag: &str, why: &str| {
        Err(usage(format!(
            "'{flag}' cannot be used with 'capacity': {why}"
        )))
    };
    if cli.rps.is_some() {
        return refuse(
            "--rps",
            "the search chooses each step's rate (see --from and --to)",
        );
    }
    if cli.duration.is_some() {
        return refuse("--duration", "each step runs for --step-duration");
    }
    if cli.requests_given {
        return refuse("-n", "each step runs for --step-duration");
    }
    if cli.loop_forever {
        return refuse("-l", "a search ends when it has its answer");
    }
    if cli.idle {
        return refuse("-I", "a search sends requests");
    }
    if cli.replay.is_some() {
        return refuse("--replay", "a search runs one test at the rates it chooses");
    }
    if cli.csv {
        return refuse("--csv", "use --json for machine-readable steps");
    }
    if cli.hdr_out.is_some() {
        return refuse("--hdr-out", "use --json: it keeps every step's histogram");
    }
    if cli.start_at.is_some() {
        return refuse("--start-at", "not supported by the search");
    }
    if cli.data_verify || cli.verify_only {
        return Err(usage(
            "'capacity' cannot be combined with --data-verify or --verify-only: they check values, not a rate",
        ));
    }
    if cli.metrics_listen.is_some() || cli.statsd.is_some() || cli.statsd_host.is_some() {
        return Err(usage(
            "'capacity' cannot be combined with --metrics-listen or --statsd: its steps are short runs at rates it chooses; watch its JSON or --plot instead",
        ));
    }
    Ok(())
}

/// Refuses a suite of more than one test, from the parsed flags (before anything is read or opened).
pub fn check_suite(settings: &crate::config::Settings) -> Result<(), UsageError> {
    one_test(crate::config::suite_size(&settings.suite)?)
}

/// A search runs one test: `tests` is how many the suite holds.
pub(super) fn one_test(tests: usize) -> Result<(), UsageError> {
    if tests != 1 {
        return Err(usage(format!(
            "'capacity' searches one test at a time, not {tests}: give one with -t, --mix or a command"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Objective, SearchArgs, parse_slo};
    use std::time::Duration;

    #[test]
    fn slo_parsing() {
        assert_eq!(
            parse_slo("p99=1ms").unwrap(),
            [Objective {
                percentile: 99.0,
                max_ms: 1.0
            }]
        );
        let v = parse_slo("p50=300us, p99.9=0.005s").unwrap();
        assert_eq!(v[0].max_ms, 0.3);
        assert_eq!(v[1].percentile, 99.9);
        assert!((v[1].max_ms - 5.0).abs() < 1e-9);
        assert_eq!(v[1].label(), "p99.9");
        for bad in [
            "p99",
            "p99=1",
            "q99=1ms",
            "p0=1ms",
            "p101=1ms",
            "p99=-1ms",
            "p99=1ms,p99=2ms",
        ] {
            let e = parse_slo(bad).unwrap_err().0;
            assert!(e.contains("'--slo'"), "{bad}: {e}");
        }
    }

    /// The search's flags of `ringbench capacity ARGS`, parsed with the command line's definition.
    fn search_of(args: &[&str]) -> Result<SearchArgs, String> {
        match crate::cli::command::parse_words(&[&["capacity"][..], args].concat()) {
            Ok(crate::cli::command::Parsed::Capacity(flags, cli)) => {
                SearchArgs::from_flags(&flags, cli.warmup).map_err(|e| e.0)
            }
            Ok(p) => panic!("{p:?}"),
            Err(e) => Err(e.line()),
        }
    }

    #[test]
    fn own_flags_are_read_beside_the_benchmark_flags() {
        let s = search_of(&[
            "-t",
            "get",
            "--slo",
            "p99=2ms",
            "--slo=p50=0.5ms",
            "--from",
            "1000",
            "--to=8000",
            "--step-duration",
            "0.5",
            "--warmup",
            "0",
            "--within",
            "10%",
            "-P",
            "4",
        ])
        .unwrap();
        assert_eq!(s.objectives.len(), 2);
        assert_eq!((s.from, s.to), (Some(1000.0), Some(8000.0)));
        assert_eq!(s.step, Duration::from_millis(500));
        assert!(s.warmup.is_zero());
        assert!((s.precision - 0.1).abs() < 1e-12);
        let err = |a: &[&str]| search_of(a).unwrap_err();
        assert!(err(&["--from"]).contains("'--from <rate>'"));
        assert!(err(&["--from", "0"]).contains("'--from'"));
        assert!(err(&["--within", "0%"]).contains("'--within'"));
        assert!(err(&["--step-duration", "0"]).contains("'--step-duration'"));
        assert!(err(&["--from", "10", "--to", "5"]).contains("'--from'"));
        assert!(err(&["--slo", "p99=1ms", "--slo", "p99=2ms"]).contains("given twice"));
    }

    #[test]
    fn confirmation_flags_parse() {
        let s = search_of(&["--repeat", "5", "--borderline=0", "--retries", "0"]).unwrap();
        assert_eq!((s.repeat, s.borderline, s.retries), (5, 0.0, 0));
        let d = SearchArgs::default();
        assert_eq!((d.repeat, d.borderline, d.retries), (1, 0.10, 2));
        for (a, flag) in [
            (["--repeat", "0"], "'--repeat'"),
            (["--retries", "x"], "'--retries'"),
            (["--borderline", "60%"], "'--borderline'"),
        ] {
            let e = search_of(&a).unwrap_err();
            assert!(e.contains(flag), "{e}");
        }
    }
}
