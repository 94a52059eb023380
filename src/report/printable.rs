//! Strings from result files (test titles, hosts, targets, error texts, and the files' own names) as the
//! file tools print them: each control character escaped, so none reaches a terminal raw (an escape
//! sequence, a carriage return over the line, a bell), nor an invisible character that reorders the text
//! after it (the bidirectional overrides) or breaks its line (U+2028, U+2029).

use std::borrow::Cow;
use std::fmt::Write;

/// True for a character never printed as it is.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
        )
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `s` with each such character written as an escape: `\n`, `\r`, `\t`, else `\u{1b}` (its code).
pub fn printable(s: &str) -> Cow<'_, str> {
    escaped(s, false)
}

/// `s` as [`printable`] writes it, its line breaks kept: for a whole report.
pub fn printable_lines(s: &str) -> Cow<'_, str> {
    escaped(s, true)
}

fn escaped(s: &str, lines: bool) -> Cow<'_, str> {
    let escape = |c: char| hidden(c) && !(lines && c == '\n');
    if !s.chars().any(escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            c if !escape(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("SET"), "SET");
        assert!(matches!(printable("GET ü"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[2J\u{7}\rb\nc\td\u{9b}e\u{202e}f\u{7f}"),
            "a\\u{1b}[2J\\u{7}\\rb\\nc\\td\\u{9b}e\\u{202e}f\\u{7f}"
        );
        assert_eq!(printable_lines("a\u{1b}\nb\r\n"), "a\\u{1b}\nb\\r\n");
    }
}
