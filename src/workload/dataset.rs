//! `--dataset FILE`: the rows of a CSV or TSV file fill a command's `__field:name__` placeholders, one
//! row per request, as valkey-benchmark's `--dataset` does. The file is read once, before the run; each
//! row's command is handed to the caller (which compiles it), so nothing of the file is read or parsed
//! per request.
//!
//! What is read, after valkey-benchmark (`src/valkey-benchmark-dataset.c`):
//! - The format follows the name: a path containing `.csv` is comma-separated, else one containing
//!   `.tsv` is tab-separated, else comma-separated.
//! - The first line is the header: the field names, split at every delimiter as they are (no quotes
//!   are removed from names; only a UTF-8 byte order mark before the first is dropped, which
//!   valkey-benchmark keeps).
//! - Every other line is a row (a trailing `\n` and `\r` are dropped; empty lines are skipped). A `"`
//!   toggles quoting and a delimiter inside quotes belongs to the value; a value that starts and ends
//!   with `"` loses those two quotes (nothing else is unescaped: `""` stays `""`). A row shorter than the
//!   header gives its missing fields as empty values; extra values are ignored.
//! - `--maxdocs N` keeps the first N rows.
//! - A name containing `.xml` (checked after `.csv` and `.tsv`) is read as XML documents of
//!   `--xml-root-element`, which it needs (`workload::xml` says how; the fields are the tags of the
//!   first document), as the version of valkey-benchmark's reader that reads XML does.
//! - In the command, `__field:NAME__` is replaced by the row's value of field NAME (the name ends at the
//!   first `__` after `__field:`); `__field:NAME:base64__` by that value decoded from base64. A name
//!   the header does not have is an error that lists the names it has. A `__field:` without a closing
//!   `__` stays as written.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Where a field placeholder starts.
pub const FIELD_PREFIX: &[u8] = b"__field:";
const FIELD_SUFFIX: &[u8] = b"__";
const BASE64_SUFFIX: &[u8] = b":base64";

/// Why a dataset cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read it: {}", crate::os_error::wording(.0))]
    Read(#[source] std::io::Error),
    #[error("it has no header line (the first line names the fields)")]
    NoHeader,
    #[error(
        "field placeholder '__field:{name}__' not found in dataset fields (its fields: {})",
        .available.join(", ")
    )]
    UnknownField {
        name: String,
        available: Vec<String>,
    },
    #[error("it has no rows after its header")]
    NoRows,
    #[error("line {line}: the value of field '{name}' is not base64 (for __field:{name}:base64__)")]
    Base64 { line: u64, name: String },
    #[error(
        "XML dataset requires --xml-root-element parameter (the name of each document's element)"
    )]
    XmlRoot,
    #[error("it has no <{0}> documents")]
    NoDocuments(String),
    #[error("its first document has {0} fields, more than the 1000 a dataset may have")]
    TooManyFields(usize),
}

/// What was read: for the report and the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Rows used (after `--maxdocs`).
    pub rows: u64,
    /// The names of the fields the command uses, in the header's order.
    pub fields: Vec<String>,
    /// How many fields the dataset has (the header's names, or the first XML document's tags).
    pub columns: usize,
}

/// One argument of the command, cut where its placeholders are.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(Vec<u8>),
    /// The value of the used field with this index; `true` when it is decoded from base64.
    Field(usize, bool),
}

/// Whether any argument holds a `__field:` placeholder.
pub fn has_fields(args: &[Vec<u8>]) -> bool {
    args.iter()
        .any(|a| memchr::memmem::find(a, FIELD_PREFIX).is_some())
}

/// How a dataset's file is read, from its name (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Lines of values split at this byte (`,` or a tab).
    Delimited(u8),
    /// Documents of `--xml-root-element` (`workload::xml`).
    Xml,
}

/// The format a dataset's name selects: `.csv` in it, else `.tsv`, else `.xml`, else CSV.
pub fn format_of(path: &Path) -> Format {
    let name = path.to_string_lossy();
    if name.contains(".csv") {
        Format::Delimited(b',')
    } else if name.contains(".tsv") {
        Format::Delimited(b'\t')
    } else if name.contains(".xml") {
        Format::Xml
    } else {
        Format::Delimited(b',')
    }
}

/// Whether a dataset of this name needs `--xml-root-element` (its name contains `.xml`, as there).
pub fn needs_xml_root(path: &Path) -> bool {
    path.to_string_lossy().contains(".xml")
}

/// The command's placeholders against the dataset's field names, and the buffers each record is
/// filled through.
struct Filler {
    names: Vec<Vec<u8>>,
    template: Vec<Vec<Part>>,
    /// The fields used: (index in `names`, decoded from base64), indexed by [`Part::Field`].
    used: Vec<(usize, bool)>,
    decoded: Vec<Vec<u8>>,
    out: Vec<Vec<u8>>,
    rows: u64,
}

impl Filler {
    fn new(args: &[Vec<u8>], names: Vec<Vec<u8>>) -> Result<Filler, DatasetError> {
        let (template, used) = compile(args, &names)?;
        Ok(Filler {
            decoded: vec![Vec::new(); used.len()],
            out: vec![Vec::new(); template.len()],
            names,
            template,
            used,
            rows: 0,
        })
    }

    /// Fills one record, whose field `i` (an index in `names`, with that name) is `value(i, name)`, into
    /// the command and hands it to `row`. `line`: where the record starts, for errors.
    fn emit<'v>(
        &mut self,
        value: impl Fn(usize, &[u8]) -> &'v [u8],
        line: u64,
        row: &mut impl FnMut(&[Vec<u8>]),
    ) -> Result<(), DatasetError> {
        let Filler {
            names,
            template,
            used,
            decoded,
            out,
            rows,
        } = self;
        for (i, &(column, base64)) in used.iter().enumerate() {
            let v = value(column, &names[column]);
            let d = &mut decoded[i];
            d.clear();
            if base64 {
                decode_base64(v, d).ok_or_else(|| DatasetError::Base64 {
                    line,
                    name: String::from_utf8_lossy(&names[column]).into_owned(),
                })?;
            } else {
                d.extend_from_slice(v);
            }
        }
        for (arg, parts) in out.iter_mut().zip(template.iter()) {
            arg.clear();
            for p in parts {
                match p {
                    Part::Lit(b) => arg.extend_from_slice(b),
                    Part::Field(i, _) => arg.extend_from_slice(&decoded[*i]),
                }
            }
        }
        row(out);
        *rows += 1;
        Ok(())
    }

    fn summary(self) -> Result<Summary, DatasetError> {
        if self.rows == 0 {
            return Err(DatasetError::NoRows);
        }
        let mut fields: Vec<(usize, String)> = Vec::new();
        for &(c, _) in &self.used {
            let name = String::from_utf8_lossy(&self.names[c]).into_owned();
            if !fields.iter().any(|(_, n)| *n == name) {
                fields.push((c, name));
            }
        }
        fields.sort();
        Ok(Summary {
            rows: self.rows,
            fields: fields.into_iter().map(|(_, n)| n).collect(),
            columns: self.names.len(),
        })
    }
}

/// Reads the dataset at `path` and calls `row` with the command `args` of each row, its placeholders
/// filled in (the slice is reused from row to row). `max_rows`: `--maxdocs` (`None`: every row);
/// `xml_root`: `--xml-root-element`, which a name containing `.xml` needs.
pub fn load(
    path: &Path,
    args: &[Vec<u8>],
    max_rows: Option<u64>,
    xml_root: Option<&[u8]>,
    mut row: impl FnMut(&[Vec<u8>]),
) -> Result<Summary, DatasetError> {
    if needs_xml_root(path) && xml_root.is_none() {
        return Err(DatasetError::XmlRoot);
    }
    let file = File::open(path).map_err(DatasetError::Read)?;
    match (format_of(path), xml_root) {
        (Format::Xml, Some(root)) => load_xml(file, root, args, max_rows, &mut row),
        (Format::Delimited(d), _) => load_delimited(file, d, args, max_rows, &mut row),
        (Format::Xml, None) => Err(DatasetError::XmlRoot),
    }
}

fn load_delimited(
    file: File,
    delimiter: u8,
    args: &[Vec<u8>],
    max_rows: Option<u64>,
    row: &mut impl FnMut(&[Vec<u8>]),
) -> Result<Summary, DatasetError> {
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    if reader
        .read_until(b'\n', &mut line)
        .map_err(DatasetError::Read)?
        == 0
    {
        return Err(DatasetError::NoHeader);
    }
    // A UTF-8 byte order mark (spreadsheets write one) is not part of the first name.
    let header = trim_line(&line);
    let header = header.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(header);
    let names: Vec<Vec<u8>> = header
        .split(|&b| b == delimiter)
        .map(<[u8]>::to_vec)
        .collect();
    let mut filler = Filler::new(args, names)?;
    let mut values: Vec<(usize, usize)> = Vec::with_capacity(filler.names.len());
    let mut number = 1u64;
    while max_rows.is_none_or(|m| filler.rows < m) {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(DatasetError::Read)?
            == 0
        {
            break;
        }
        number += 1;
        let text = trim_line(&line);
        if text.is_empty() {
            continue;
        }
        split_row(text, delimiter, &mut values);
        let value = |c: usize, _: &[u8]| values.get(c).map_or(&b""[..], |&(a, b)| &text[a..b]);
        filler.emit(value, number, row)?;
    }
    filler.summary()
}

/// Bytes read from an XML dataset at a time.
const XML_CHUNK: usize = 1 << 20;

fn load_xml(
    mut file: File,
    root: &[u8],
    args: &[Vec<u8>],
    max_rows: Option<u64>,
    row: &mut impl FnMut(&[Vec<u8>]),
) -> Result<Summary, DatasetError> {
    use std::io::Read;
    let mut buf: Vec<u8> = Vec::new();
    // Where the unread part of `buf` starts; `line` is the line that `counted` of `buf` is on.
    let (mut at, mut counted, mut line) = (0usize, 0usize, 1u64);
    let mut eof = false;
    let mut filler: Option<Filler> = None;
    let lines = |b: &[u8]| memchr::memchr_iter(b'\n', b).count() as u64;
    while max_rows.is_none_or(|m| filler.as_ref().map_or(0, |f| f.rows) < m) {
        let Some(doc) = crate::workload::xml::next_document(&buf, root, at) else {
            if eof {
                break;
            }
            if at > buf.len() / 2 {
                line += lines(&buf[counted..at]);
                buf.drain(..at);
                (at, counted) = (0, 0);
            }
            let len = buf.len();
            buf.resize(len + XML_CHUNK, 0);
            let n = file.read(&mut buf[len..]).map_err(DatasetError::Read)?;
            buf.truncate(len + n);
            eof = n == 0;
            continue;
        };
        line += lines(&buf[counted..doc.start]);
        counted = doc.start;
        let text = &buf[doc.clone()];
        let f = match &mut filler {
            Some(f) => f,
            None => {
                let names =
                    crate::workload::xml::field_names(text).map_err(DatasetError::TooManyFields)?;
                filler.insert(Filler::new(args, names)?)
            }
        };
        f.emit(
            |_, name| crate::workload::xml::field_value(text, name),
            line,
            row,
        )?;
        at = doc.end;
    }
    match filler {
        Some(f) => f.summary(),
        None => Err(DatasetError::NoDocuments(
            String::from_utf8_lossy(root).into_owned(),
        )),
    }
}

/// A line without its `\n` and then its `\r`.
fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Cuts `args` at their placeholders. Returns each argument's parts and the fields used: (column,
/// base64), one entry per distinct pair, indexed by [`Part::Field`].
#[allow(clippy::type_complexity)]
fn compile(
    args: &[Vec<u8>],
    names: &[Vec<u8>],
) -> Result<(Vec<Vec<Part>>, Vec<(usize, bool)>), DatasetError> {
    let mut used: Vec<(usize, bool)> = Vec::new();
    let mut template = Vec::with_capacity(args.len());
    for arg in args {
        let mut parts = Vec::new();
        let mut lit = Vec::new();
        let mut at = 0;
        while let Some(found) = memchr::memmem::find(&arg[at..], FIELD_PREFIX) {
            let start = at + found;
            let name_at = start + FIELD_PREFIX.len();
            let Some(len) = memchr::memmem::find(&arg[name_at..], FIELD_SUFFIX) else {
                break;
            };
            let mut name = &arg[name_at..name_at + len];
            let base64 = name.len() > BASE64_SUFFIX.len() && name.ends_with(BASE64_SUFFIX);
            if base64 {
                name = &name[..name.len() - BASE64_SUFFIX.len()];
            }
            let column =
                names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| DatasetError::UnknownField {
                        name: String::from_utf8_lossy(name).into_owned(),
                        available: names
                            .iter()
                            .map(|n| String::from_utf8_lossy(n).into_owned())
                            .collect(),
                    })?;
            let index = match used.iter().position(|&u| u == (column, base64)) {
                Some(i) => i,
                None => {
                    used.push((column, base64));
                    used.len() - 1
                }
            };
            lit.extend_from_slice(&arg[at..start]);
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            parts.push(Part::Field(index, base64));
            at = name_at + len + FIELD_SUFFIX.len();
        }
        lit.extend_from_slice(&arg[at..]);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        template.push(parts);
    }
    Ok((template, used))
}

/// Splits a row into its values, as `start..end` ranges of `row` (see the module's doc for the quoting
/// rules).
fn split_row(row: &[u8], delimiter: u8, values: &mut Vec<(usize, usize)>) {
    values.clear();
    let unquote = |a: usize, b: usize| -> (usize, usize) {
        if b - a >= 2 && row[a] == b'"' && row[b - 1] == b'"' {
            (a + 1, b - 1)
        } else {
            (a, b)
        }
    };
    let (mut start, mut quoted) = (0, false);
    for (i, &b) in row.iter().enumerate() {
        if b == b'"' {
            quoted = !quoted;
        } else if b == delimiter && !quoted {
            values.push(unquote(start, i));
            start = i + 1;
        }
    }
    values.push(unquote(start, row.len()));
}

/// Decodes standard base64 (with or without `=` padding) into `out`; `None` for anything else.
fn decode_base64(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    if body.len() % 4 == 1 || (body.len() != text.len() && !text.len().is_multiple_of(4)) {
        return None;
    }
    for chunk in body.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= sextet(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file in a folder of its own, removed when dropped.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
        }
    }

    fn file(name: &str, text: &[u8]) -> TempFile {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("ringbench-dataset-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::File::create(&p).unwrap().write_all(text).unwrap();
        TempFile(p)
    }

    fn args(a: &[&str]) -> Vec<Vec<u8>> {
        a.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    fn rows(path: &Path, a: &[&str], max: Option<u64>) -> Result<Vec<Vec<String>>, DatasetError> {
        let mut got = Vec::new();
        load(path, &args(a), max, None, |r| {
            got.push(
                r.iter()
                    .map(|x| String::from_utf8_lossy(x).into_owned())
                    .collect(),
            )
        })?;
        Ok(got)
    }

    #[test]
    fn csv_rows_fill_fields_in_order() {
        let f = file(
            "d.csv",
            b"\xEF\xBB\xBFtitle,content,author\nTitle 1,Content 1,A1\r\n\nTitle 2,\"Part, 2\",A2\n",
        );
        let got = rows(
            f.path(),
            &[
                "HSET",
                "doc:__rand_int__",
                "t",
                "__field:title__",
                "c",
                "[__field:content__]",
            ],
            None,
        )
        .unwrap();
        assert_eq!(
            got,
            [
                [
                    "HSET",
                    "doc:__rand_int__",
                    "t",
                    "Title 1",
                    "c",
                    "[Content 1]"
                ],
                ["HSET", "doc:__rand_int__", "t", "Title 2", "c", "[Part, 2]"],
            ]
        );
        let s = load(
            f.path(),
            &args(&["SET", "__field:content__", "__field:title__"]),
            Some(1),
            None,
            |_| {},
        )
        .unwrap();
        assert_eq!(
            s,
            Summary {
                rows: 1,
                fields: vec!["title".into(), "content".into()],
                columns: 3
            }
        );
    }

    #[test]
    fn tsv_quotes_short_rows_and_base64() {
        let f = file(
            "d.tsv",
            b"name\tvalue\tb\nitem1\t\"v\t1\"\taGVsbG8=\nitem2\n\"\"x\"\"\t\"\"\"\"\n",
        );
        let got = rows(
            f.path(),
            &[
                "SET",
                "__field:name__",
                "__field:value__|__field:b:base64__",
            ],
            None,
        )
        .unwrap();
        assert_eq!(got[0], ["SET", "item1", "v\t1|hello"]);
        assert_eq!(got[1], ["SET", "item2", "|"]);
        // Only a value's outer quotes go; doubled quotes stay as written.
        assert_eq!(got[2], ["SET", "\"x\"", "\"\"|"]);
    }

    #[test]
    fn maxdocs_and_placeholders_without_an_end() {
        let f = file("x.txt", b"a,b\n1,2\n3,4\n5,6\n");
        let got = rows(f.path(), &["SET", "__field:a__", "__field:b"], Some(2)).unwrap();
        assert_eq!(got, [["SET", "1", "__field:b"], ["SET", "3", "__field:b"]]);
    }

    #[test]
    fn mistakes_are_named() {
        let f = file("d.csv", b"name,value\nitem1,value1\n");
        let e = rows(f.path(), &["SET", "__field:nope__"], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "field placeholder '__field:nope__' not found in dataset fields (its fields: name, value)"
        );
        let empty = file("e.csv", b"");
        assert!(matches!(
            rows(empty.path(), &["SET", "__field:a__"], None),
            Err(DatasetError::NoHeader)
        ));
        let header_only = file("h.csv", b"a,b\n\n");
        assert!(matches!(
            rows(header_only.path(), &["SET", "__field:a__"], None),
            Err(DatasetError::NoRows)
        ));
        let bad = file("b.csv", b"a\n!!!!\n");
        assert_eq!(
            rows(bad.path(), &["SET", "__field:a:base64__"], None)
                .unwrap_err()
                .to_string(),
            "line 2: the value of field 'a' is not base64 (for __field:a:base64__)"
        );
        assert!(matches!(
            rows(
                Path::new("/nonexistent/x.csv"),
                &["SET", "__field:a__"],
                None
            ),
            Err(DatasetError::Read(_))
        ));
    }

    #[test]
    fn base64_decodes_with_and_without_padding() {
        let d = |s: &str| {
            let mut o = Vec::new();
            decode_base64(s.as_bytes(), &mut o).map(|_| o)
        };
        assert_eq!(d("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(d("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(d("aGk="), Some(b"hi".to_vec()));
        assert_eq!(d(""), Some(Vec::new()));
        assert_eq!(d("a"), None);
        assert_eq!(d("a*=="), None);
    }

    #[test]
    fn xml_documents_are_rows() {
        let f = file(
            "wiki.xml",
            b"<mediawiki>\n<page>\n <title>A</title>\n <id>1</id>\n <revision><id>7</id><text>x &amp; y</text></revision>\n</page>\n\
              <page><title>B</title><id>2</id></page>\n<page><title>C</title></page>\n</mediawiki>\n",
        );
        let got = rows_xml(
            f.path(),
            "page",
            &[
                "HSET",
                "p:__field:id__",
                "t",
                "__field:title__",
                "x",
                "__field:text__",
            ],
            None,
        )
        .unwrap();
        assert_eq!(
            got,
            [
                ["HSET", "p:1", "t", "A", "x", "x &amp; y"],
                ["HSET", "p:2", "t", "B", "x", ""],
                ["HSET", "p:", "t", "C", "x", ""],
            ]
        );
        let got = rows_xml(f.path(), "page", &["SET", "__field:title__"], Some(2)).unwrap();
        assert_eq!(got.len(), 2);
        // The fields are the first document's tags.
        let e = rows_xml(f.path(), "page", &["SET", "__field:nope__"], None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "field placeholder '__field:nope__' not found in dataset fields (its fields: title, id, revision, text)"
        );
        assert!(matches!(
            rows_xml(f.path(), "doc", &["SET", "__field:a__"], None),
            Err(DatasetError::NoDocuments(_))
        ));
        assert!(matches!(
            rows(f.path(), &["SET", "__field:title__"], None),
            Err(DatasetError::XmlRoot)
        ));
    }

    fn rows_xml(
        path: &Path,
        root: &str,
        a: &[&str],
        max: Option<u64>,
    ) -> Result<Vec<Vec<String>>, DatasetError> {
        let mut got = Vec::new();
        load(path, &args(a), max, Some(root.as_bytes()), |r| {
            got.push(
                r.iter()
                    .map(|x| String::from_utf8_lossy(x).into_owned())
                    .collect(),
            )
        })?;
        Ok(got)
    }

    #[test]
    fn formats_follow_the_name() {
        assert_eq!(format_of(Path::new("/a/b.tsv")), Format::Delimited(b'\t'));
        assert_eq!(
            format_of(Path::new("/a/b.csv.tsv")),
            Format::Delimited(b',')
        );
        assert_eq!(format_of(Path::new("/a/b.xml")), Format::Xml);
        assert_eq!(
            format_of(Path::new("/a/b.csv.xml")),
            Format::Delimited(b',')
        );
        assert_eq!(format_of(Path::new("/a/b")), Format::Delimited(b','));
        assert!(needs_xml_root(Path::new("/a/b.csv.xml")));
        assert!(has_fields(&args(&["SET", "k", "x__field:a__"])));
        assert!(!has_fields(&args(&["SET", "k", "v"])));
    }
}
