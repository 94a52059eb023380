//! The files a run writes (`--json`, `--plot`, `--hdr-out`): their names, and whether they can be written.

use crate::config::error::{PathError, PathProblem, UsageError};
use std::path::Path;

/// Checks a chart's file name: `.svg` (or no extension) gives SVG, `.png` PNG; another extension would
/// hold something else than it claims.
pub fn check_extension(flag: &str, path: &Path) -> Result<(), UsageError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if !ext.eq_ignore_ascii_case("svg") && !ext.eq_ignore_ascii_case("png") => {
            Err(UsageError(format!(
                "invalid value '{}' for '{flag}': the chart is written as SVG or PNG; name the file .svg or .png",
                path.display()
            )))
        }
        _ => Ok(()),
    }
}

/// The file name part for a test title: lower case, runs of other characters as one `_`.
pub fn slug(title: &str) -> String {
    let mut s = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('_') {
            s.push('_');
        }
    }
    let s = s.trim_matches('_').to_string();
    if s.is_empty() { "test".into() } else { s }
}

/// The `--hdr-out` log's path for a test.
pub fn log_path(prefix: &str, title: &str) -> String {
    format!("{prefix}{}.hlog", slug(title))
}

/// The title that names the `--hdr-out` log of command `index` (0-based) of a mix titled `test`.
pub fn part_log_title(test: &str, index: usize, command: &str) -> String {
    format!("{test} cmd{} {command}", index + 1)
}

/// Checks before the run that `path` (the file `value` of `flag` leads to) can be written, as far as
/// that can be known without writing it: not empty, not a folder, its folder exists and takes a new file
/// (probed by creating and removing one), and an existing file opens for writing (not truncated).
pub fn check_writable(flag: &'static str, value: &str, path: &str) -> Result<(), PathError> {
    let bad = |problem: PathProblem| PathError {
        flag,
        value: value.to_string(),
        problem,
    };
    if value.is_empty() {
        return Err(bad(PathProblem::Empty));
    }
    let file = Path::new(path);
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(PathProblem::NoFolder(dir.display().to_string())));
    }
    if file.is_dir() {
        return Err(bad(PathProblem::IsFolder(path.to_string())));
    }
    if file.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(file)
            .map_err(|source| {
                bad(PathProblem::CannotWrite {
                    path: path.to_string(),
                    source,
                })
            })?;
    } else {
        let probe = dir.join(format!(".ringbench-probe-{}", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map_err(|source| {
                bad(PathProblem::CannotCreate {
                    dir: dir.display().to_string(),
                    source,
                })
            })?;
        let _ = std::fs::remove_file(&probe);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("SET"), "set");
        assert_eq!(
            slug("LRANGE_100 (first 100 elements)"),
            "lrange_100_first_100_elements"
        );
        assert_eq!(
            slug("lpush mylist ele:__rand_int__"),
            "lpush_mylist_ele_rand_int"
        );
        assert_eq!(slug("***"), "test");
        assert_eq!(log_path("out/run1-", "GET"), "out/run1-get.hlog");
    }

    #[test]
    fn a_missing_folder_keeps_its_message() {
        let e = check_writable("--json", "/no/such/dir/r.json", "/no/such/dir/r.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value '/no/such/dir/r.json' for '--json': folder '/no/such/dir' does not exist"
        );
        let e = check_writable("--plot", "", "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value '' for '--plot': give a file name"
        );
    }
}
