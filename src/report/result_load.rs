//! A result file read back (`merge`, `compare`, `report`): parsed, its format checked, and nothing in it
//! taken on trust past what a run writes. Every count is at most [`MAX_COUNT`] (2^53; the flags the
//! configuration echoes at most i64::MAX, the seed any u64), so no count read from a file, nor a sum of a
//! few, overflows; every histogram passes
//! `histogram_check` before anything decodes it (so each tool refuses a bad one, naming it, before it
//! starts); the read pass's failed keys are no more than the keys it checked.

use crate::report::encoded_histogram::{EncodedHistogram, HistogramError, MAX_COUNT};
use crate::report::result_file::{FORMAT, FORMAT_VERSION, ResultFileError, RunFile};
use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// The most a number that echoes a flag may be (the configuration's, a test's `requested`): the range of
/// `-n` and `-r`, which take up to i64::MAX (a run of `-n 9223372036854775807` stopped by Ctrl+C writes
/// it). Two of them add up within a u64; a merge checks its sums against this too.
pub const FLAG_MAX: u64 = i64::MAX as u64;

/// The most the number at `at` (`config.seed`, `tests[0].requests`) may be, and how the limit is named:
/// the seed is any u64, flags are within [`FLAG_MAX`], and anything else a run counted (requests,
/// errors, bytes, seconds, rates) is at most [`MAX_COUNT`].
fn limit_of(at: &str) -> Option<(u64, &'static str)> {
    let requested = at
        .strip_prefix("tests[")
        .and_then(|rest| rest.split_once("]."))
        .is_some_and(|(i, field)| field == "requested" && i.bytes().all(|b| b.is_ascii_digit()));
    if at == "config.seed" {
        None
    } else if at.starts_with("config.") || requested {
        Some((FLAG_MAX, "i64::MAX, the range of the flags a run echoes"))
    } else {
        Some((MAX_COUNT, "2^53"))
    }
}

impl RunFile {
    /// Reads a result file, checked.
    pub fn load(path: &Path) -> Result<RunFile, ResultFileError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ResultFileError::Read {
            path: p.clone(),
            reason: crate::os_error::describe(e),
        })?;
        let f: RunFile = serde_json::from_str(&text).map_err(|e| ResultFileError::Parse {
            path: p.clone(),
            reason: e.to_string(),
        })?;
        check_document(&f, &text, &p)?;
        Ok(f)
    }

    /// Reads result documents written one after the other (as `kubectl logs` of several pods prints them),
    /// each checked as [`RunFile::load`] checks a file. `source` names the input in errors; a line that is
    /// not part of a document is an error quoting it.
    pub fn parse_stream(text: &str, source: &str) -> Result<Vec<RunFile>, ResultFileError> {
        let mut docs = Vec::new();
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<RunFile>();
        loop {
            let at = stream.byte_offset();
            match stream.next() {
                None => break,
                Some(Ok(f)) => {
                    let path = format!("{source}, document {}", docs.len() + 1);
                    check_document(&f, &text[at..stream.byte_offset()], &path)?;
                    docs.push(f);
                }
                Some(Err(e)) => {
                    // Name the line where the bad document starts, and quote it.
                    let start = at + text[at..].len() - text[at..].trim_start().len();
                    let line = text[..start].matches('\n').count() + 1;
                    let quote: String = text[start..]
                        .lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(80)
                        .collect();
                    return Err(ResultFileError::Parse {
                        path: format!("{source}, line {line}"),
                        reason: format!("{e} (the line reads '{quote}')"),
                    });
                }
            }
        }
        if docs.is_empty() {
            return Err(ResultFileError::Parse {
                path: source.to_string(),
                reason: "no result document in it".into(),
            });
        }
        Ok(docs)
    }
}

/// Checks one parsed document (`text` is its JSON): its format, its numbers, its histograms, its counts.
fn check_document(f: &RunFile, text: &str, path: &str) -> Result<(), ResultFileError> {
    if f.format != FORMAT || f.format_version != FORMAT_VERSION {
        return Err(ResultFileError::Parse {
            path: path.to_string(),
            reason: format!(
                "format '{}' version {} (expected '{FORMAT}' version {FORMAT_VERSION})",
                f.format, f.format_version
            ),
        });
    }
    let refused = |reason: String| ResultFileError::Refused {
        path: path.to_string(),
        reason,
    };
    // The document parsed as a RunFile: it parses as JSON.
    let doc: Value = serde_json::from_str(text).map_err(|e| refused(e.to_string()))?;
    check_numbers(&doc, &mut String::new()).map_err(refused)?;
    check_histograms(f).map_err(refused)?;
    check_verify(f).map_err(refused)
}

/// Refuses a number past its limit ([`limit_of`]; negative ones by their size), naming where it is (`at`,
/// as `tests[0].requests`): no run writes one, and sums of such counts would overflow.
fn check_numbers(v: &Value, at: &mut String) -> Result<(), String> {
    match v {
        Value::Number(n) => {
            let Some((limit, named)) = limit_of(at) else {
                return Ok(());
            };
            let past = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => u > limit,
                (None, Some(i), _) => i.unsigned_abs() > limit,
                (None, None, f) => f.is_some_and(|f| f.abs() > limit as f64),
            };
            if past {
                return Err(format!(
                    "{at} is {n}, past {limit} ({named}): no run writes such a figure"
                ));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                let _ = write!(at, "[{i}]");
                check_numbers(item, at)?;
                at.truncate(len);
            }
        }
        Value::Object(fields) => {
            for (name, item) in fields {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(name);
                check_numbers(item, at)?;
                at.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Checks every histogram of the file (each test's, each mixed command's, each second's) without decoding
/// one, naming the test (and command or second) of the first refused.
fn check_histograms(f: &RunFile) -> Result<(), String> {
    let named = |what: String, h: &EncodedHistogram| -> Result<(), String> {
        h.check()
            .map(|_| ())
            .map_err(|e: HistogramError| format!("{what}: {e}"))
    };
    for (i, t) in f.tests.iter().enumerate() {
        let test = format!("test {} '{}'", i + 1, t.title);
        named(test.clone(), &t.histogram)?;
        for c in &t.commands {
            named(format!("{test}, command '{}'", c.title), &c.histogram)?;
        }
        for s in &t.per_second {
            named(format!("{test}, second {}", s.second), &s.histogram)?;
        }
    }
    Ok(())
}

/// The read pass's failed keys (mismatched, missing, answered with an error) are among those it checked:
/// a report subtracts them.
fn check_verify(f: &RunFile) -> Result<(), String> {
    for (i, t) in f.tests.iter().enumerate() {
        if let Some(v) = &t.data_verify {
            // Each is at most 2^53 (checked above): their sum fits.
            let failed = v.mismatched + v.missing + v.errors;
            if failed > v.checked {
                return Err(format!(
                    "test {} '{}': data_verify counts {failed} keys mismatched, missing or in error, more than the {} checked",
                    i + 1,
                    t.title,
                    v.checked
                ));
            }
        }
    }
    Ok(())
}
