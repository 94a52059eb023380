//! `--dataset FILE` and `--maxdocs N` (valkey-benchmark's spellings): which command lines may use them
//! (checked without I/O by [`check`]), and the test they make once the file is read ([`test`]).

use crate::config::error::{ConfigError, UsageError, usage};
use crate::workload::compose::{self, RowsBuilder, ValueSpec};
use crate::workload::dataset::{self, FIELD_PREFIX};
use crate::workload::expiry::Expiry;
use crate::workload::{self, TestSpec};
use std::path::Path;
use std::sync::Arc;

/// What a dataset run needs from the flags.
pub struct DatasetFlags<'a> {
    pub dataset: Option<&'a Path>,
    pub maxdocs: Option<u64>,
    pub xml_root: Option<&'a str>,
    /// The custom command (empty: none).
    pub command: &'a [Vec<u8>],
    pub mix: bool,
    pub stdin_last_arg: bool,
}

/// Refuses the command lines a dataset cannot serve, and placeholders or `--maxdocs` without one.
pub fn check(f: &DatasetFlags) -> Result<(), UsageError> {
    let fields = dataset::has_fields(f.command);
    let Some(path) = f.dataset else {
        if f.maxdocs.is_some() {
            return Err(usage(
                "'--maxdocs' limits the rows of '--dataset': give --dataset FILE",
            ));
        }
        if f.xml_root.is_some() {
            return Err(usage(
                "'--xml-root-element' names the documents of an XML '--dataset': give --dataset FILE",
            ));
        }
        if fields {
            return Err(usage(format!(
                "the command's {}NAME__ placeholders are filled from a dataset: give --dataset FILE",
                String::from_utf8_lossy(FIELD_PREFIX)
            )));
        }
        return Ok(());
    };
    if f.mix {
        return Err(usage(
            "'--dataset' fills the placeholders of a command: it cannot be combined with --mix",
        ));
    }
    if dataset::needs_xml_root(path) && f.xml_root.is_none() {
        return Err(usage(format!(
            "invalid value '{}' for '--dataset': {}",
            path.display(),
            dataset::DatasetError::XmlRoot
        )));
    }
    if let Some(root) = f.xml_root
        && (root.is_empty() || root.bytes().any(|b| b"<>/ \t\r\n".contains(&b)))
    {
        return Err(usage(format!(
            "invalid value '{root}' for '--xml-root-element': give an element's name (no <, >, / or spaces)"
        )));
    }
    if f.command.is_empty() {
        return Err(usage(
            "'--dataset': Dataset mode requires a command with field placeholders, e.g. SET doc:__rand_int__ __field:content__",
        ));
    }
    if f.command.iter().any(|a| a == b";") {
        return Err(usage(
            "'--dataset' fills one command: it cannot be used with a ';' sequence",
        ));
    }
    if f.stdin_last_arg {
        return Err(usage(
            "'-x' cannot be used with '--dataset': the command's values come from the dataset's rows",
        ));
    }
    if f.command
        .iter()
        .any(|a| memchr::memmem::find(a, compose::DATA).is_some())
    {
        return Err(usage(
            "__data__ placeholders cannot be used with --dataset (take values from the dataset's fields)",
        ));
    }
    if !fields {
        return Err(usage(
            "'--dataset': Dataset mode requires at least one field placeholder (__field:name__) in the command",
        ));
    }
    Ok(())
}

/// The test of a dataset run: the command `raw` (checked by [`check`]) with each row of the file at
/// `path` in its placeholders, compiled once per row. `randomize`: `-r` was given.
pub fn test(
    path: &Path,
    maxdocs: Option<u64>,
    xml_root: Option<&str>,
    raw: &[Vec<u8>],
    title: String,
    randomize: bool,
    expiry: Option<Expiry>,
) -> Result<TestSpec, ConfigError> {
    let wrong = |why: String| {
        ConfigError::from(usage(format!(
            "invalid value '{}' for '--dataset': {why}",
            path.display()
        )))
    };
    // `__key__` is `__rand_int__` here too; `__data__` was refused.
    let fixed = ValueSpec {
        min: 1,
        max: 1,
        random: false,
    };
    let args = compose::expand_args(raw, &fixed);
    let mut rows = RowsBuilder::new(randomize, expiry);
    let mut first: Option<TestSpec> = None;
    let mut too_large = None;
    let root = xml_root.map(str::as_bytes);
    dataset::load(path, &args, maxdocs.filter(|&m| m > 0), root, |row| {
        if first.is_none() {
            first = Some(workload::custom_test(row, title.clone(), randomize));
        }
        if too_large.is_none() {
            too_large = rows.push(row).err();
        }
    })
    .map_err(|e| wrong(e.to_string()))?;
    if let Some(e) = too_large {
        return Err(wrong(e.to_string()));
    }
    let mut test = first.ok_or_else(|| wrong("it has no rows after its header".into()))?;
    let composer = rows
        .finish(test.title.clone(), test.command.clone())
        .ok_or_else(|| wrong("it has no rows after its header".into()))?;
    test.compose = Some(Arc::new(composer));
    Ok(test)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags<'a>(dataset: bool, command: &'a [Vec<u8>]) -> DatasetFlags<'a> {
        DatasetFlags {
            dataset: dataset.then(|| Path::new("d.csv")),
            maxdocs: None,
            xml_root: None,
            command,
            mix: false,
            stdin_last_arg: false,
        }
    }

    fn args(a: &[&str]) -> Vec<Vec<u8>> {
        a.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn request_t_of_an_executor_is_row_t_modulo_the_rows() {
        use crate::workload::keys::{Distribution, KeyGen};
        use rand::SeedableRng;
        use std::cell::Cell;
        let dir = std::env::temp_dir().join(format!("ringbench-ds-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rows.tsv");
        std::fs::write(&path, "a\tb\nx\t1\nyy\t22\nzzz\t333\n").unwrap();
        let raw = args(&["HSET", "h:__key__", "__field:b__", "<__field:a__>"]);
        let t = test(&path, Some(0), None, &raw, "T".into(), true, None).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let c = t.compose.as_deref().unwrap();
        assert_eq!((t.command.as_str(), c.variants().len()), ("HSET", 1));
        let cursors = crate::workload::keys::Cursors::new(1);
        let mut keys = KeyGen::new(Distribution::Uniform, 10, 0, 1, &cursors, &[]);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        // An executor whose share starts at request 4 of the run sends rows 1, 2, 0, 1.
        let turn = Cell::new(4);
        let mut out = Vec::with_capacity(4 * c.max_request_len());
        for _ in 0..4 {
            c.write_request(&mut out, &mut keys, &mut rng, &turn);
        }
        assert!(out.len() <= 4 * c.max_request_len());
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text
            .split("*4\r\n")
            .skip(1)
            .map(|r| r.split("\r\n").nth(7).unwrap())
            .collect();
        assert_eq!(rows, ["<yy>", "<zzz>", "<x>", "<yy>"], "{text}");
        assert!(text.contains("$3\r\n333\r\n$5\r\n<zzz>\r\n"), "{text}");
        assert!(!text.contains("__rand_int__") && !text.contains("__key__"));
    }

    #[test]
    fn command_lines_a_dataset_cannot_serve_are_refused() {
        let e = |f: DatasetFlags| check(&f).unwrap_err().0;
        assert!(
            e(flags(true, &[])).contains("Dataset mode requires a command with field placeholders")
        );
        assert!(
            e(flags(true, &args(&["SET", "k", "v"]))).contains("at least one field placeholder")
        );
        assert!(e(flags(true, &args(&["SET", "__field:a__", ";", "GET", "k"]))).contains("';'"));
        assert!(e(flags(true, &args(&["SET", "__field:a__", "__data__"]))).contains("__data__"));
        assert!(e(flags(false, &args(&["SET", "k", "__field:a__"]))).contains("--dataset FILE"));
        let mut f = flags(true, &[]);
        f.mix = true;
        assert!(e(f).contains("--mix"));
        let a = args(&["SET", "k", "__field:a__"]);
        let mut f = flags(true, &a);
        f.stdin_last_arg = true;
        assert!(e(f).contains("'-x'"));
        let mut f = flags(false, &[]);
        f.maxdocs = Some(3);
        assert!(e(f).contains("'--maxdocs'"));
        assert!(check(&flags(true, &a)).is_ok());
        assert!(check(&flags(false, &args(&["SET", "k", "v"]))).is_ok());
    }
}
