//! The XML documents of a `--dataset FILE.xml` with `--xml-root-element NAME`, read as
//! valkey-benchmark's dataset reader reads them (the version of it that reads XML): no XML parser, just
//! tags found by name. A leaf: it knows bytes, not datasets.
//!
//! - A document runs from `<NAME` (followed by `>`, a space or a tab) to the first `</NAME>` after it.
//! - The fields are the tags inside the first document, in order, each name once (its first place):
//!   every `<tag` but closing tags, `<!...>` and `<?...>`. A name ends at a space, a tab, `/` or `>`.
//! - A field's value in a document is what lies between the first `<tag ...>` of that name and the
//!   first `</tag>` after it, as written (nested tags and entities included); empty for `<tag/>` and
//!   for a tag the document lacks or does not close.

/// The longest field name kept (longer ones are skipped, as there).
pub const MAX_NAME: usize = 512;
/// The most fields a document may have.
pub const MAX_FIELDS: usize = 1000;

/// Whether `b` ends a tag's name.
fn ends_name(b: u8) -> bool {
    matches!(b, b'>' | b' ' | b'\t' | b'/' | b'\r' | b'\n')
}

/// The first `<name` of `hay` at or after `from` whose name ends there; returns where the `<` is.
fn find_open(hay: &[u8], name: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at < hay.len() {
        let i = at + memchr::memmem::find(&hay[at..], b"<")?;
        let after = i + 1 + name.len();
        if hay.get(i + 1..after) == Some(name) && hay.get(after).is_some_and(|&b| ends_name(b)) {
            return Some(i);
        }
        at = i + 1;
    }
    None
}

/// The next whole document of `root` in `buf` from `from`: its bytes' range. `None` when `buf` holds
/// no whole one (yet).
pub fn next_document(buf: &[u8], root: &[u8], from: usize) -> Option<std::ops::Range<usize>> {
    let start = find_open(buf, root, from)?;
    let open_end = start + memchr::memchr(b'>', &buf[start..])?;
    let mut close = Vec::with_capacity(root.len() + 3);
    close.extend_from_slice(b"</");
    close.extend_from_slice(root);
    close.push(b'>');
    let end = open_end + memchr::memmem::find(&buf[open_end..], &close)? + close.len();
    Some(start..end)
}

/// The field names of a document (`doc` from its `<root` to its `</root>`), or `Err` with how many there
/// were when they are more than [`MAX_FIELDS`].
pub fn field_names(doc: &[u8]) -> Result<Vec<Vec<u8>>, usize> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    // The root's own tag is not a field.
    let mut at = memchr::memchr(b'>', doc).map_or(doc.len(), |i| i + 1);
    while let Some(i) = memchr::memchr(b'<', &doc[at..]) {
        let start = at + i + 1;
        at = start;
        if matches!(doc.get(start), Some(b'/' | b'!' | b'?') | None) {
            continue;
        }
        let len = doc[start..]
            .iter()
            .position(|&b| ends_name(b))
            .unwrap_or(doc.len() - start);
        let name = &doc[start..start + len];
        if name.is_empty() || name.len() > MAX_NAME || names.iter().any(|n| n == name) {
            continue;
        }
        names.push(name.to_vec());
        if names.len() > MAX_FIELDS {
            return Err(names.len());
        }
    }
    Ok(names)
}

/// The value of field `name` in `doc` (see the module's doc).
pub fn field_value<'a>(doc: &'a [u8], name: &[u8]) -> &'a [u8] {
    // Past the root's own tag, so a field named as the root is found inside it.
    let from = memchr::memchr(b'>', doc).map_or(doc.len(), |i| i + 1);
    let Some(open) = find_open(doc, name, from) else {
        return b"";
    };
    let Some(gt) = memchr::memchr(b'>', &doc[open..]).map(|i| open + i) else {
        return b"";
    };
    if doc[gt - 1] == b'/' {
        return b"";
    }
    let mut close = Vec::with_capacity(name.len() + 3);
    close.extend_from_slice(b"</");
    close.extend_from_slice(name);
    close.push(b'>');
    match memchr::memmem::find(&doc[gt + 1..], &close) {
        Some(len) => &doc[gt + 1..gt + 1 + len],
        None => b"",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &[u8] = b"<page>\n  <title>Anarchism</title>\n  <id>12</id>\n  <br/>\n  <!-- c -->\n  \
        <revision>\n    <id>99</id>\n    <text bytes=\"5\">Some &amp; <b>text</b></text>\n  </revision>\n</page>";

    #[test]
    fn documents_fields_and_values() {
        let mut buf = b"<?xml version=\"1.0\"?><pages>".to_vec();
        buf.extend_from_slice(DOC);
        buf.extend_from_slice(
            b"<pagex>no</pagex><page><title>Second</title></page><page><title>cut",
        );
        let d1 = next_document(&buf, b"page", 0).unwrap();
        assert_eq!(&buf[d1.clone()], DOC);
        let d2 = next_document(&buf, b"page", d1.end).unwrap();
        assert_eq!(&buf[d2.clone()], b"<page><title>Second</title></page>");
        assert_eq!(next_document(&buf, b"page", d2.end), None);
        let names = field_names(DOC).unwrap();
        let names: Vec<&str> = names
            .iter()
            .map(|n| std::str::from_utf8(n).unwrap())
            .collect();
        assert_eq!(names, ["title", "id", "br", "revision", "text", "b"]);
        assert_eq!(field_value(DOC, b"title"), b"Anarchism");
        assert_eq!(field_value(DOC, b"id"), b"12");
        assert_eq!(field_value(DOC, b"br"), b"");
        assert_eq!(field_value(DOC, b"text"), b"Some &amp; <b>text</b>");
        assert!(field_value(DOC, b"revision").starts_with(b"\n    <id>99</id>"));
        assert_eq!(
            field_value(b"<page><title>Second</title></page>", b"id"),
            b""
        );
        assert_eq!(field_value(b"<page><t>open</page>", b"t"), b"");
    }

    #[test]
    fn too_many_fields_are_refused() {
        let mut doc = b"<d>".to_vec();
        for i in 0..=MAX_FIELDS {
            doc.extend_from_slice(format!("<f{i}>v</f{i}>").as_bytes());
        }
        doc.extend_from_slice(b"</d>");
        assert_eq!(field_names(&doc), Err(MAX_FIELDS + 1));
        let long = format!("<d><{0}>x</{0}><ok>y</ok></d>", "n".repeat(MAX_NAME + 1));
        assert_eq!(field_names(long.as_bytes()), Ok(vec![b"ok".to_vec()]));
    }
}
