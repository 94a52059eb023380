//! A result file read back (`merge`, `compare`, `report`): parsed, its format checked, and nothing in it
//! taken on trust past what a run writes: every histogram passes `histogram_check` before anything decodes
//! it (so each tool refuses a bad one, naming it, before it starts).

use crate::report::encoded_histogram::{EncodedHistogram, HistogramError};
use crate::report::result_file::{FORMAT, FORMAT_VERSION, ResultFileError, RunFile};
use std::path::Path;

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
    let _ = text;
    check_histograms(f).map_err(refused)
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
