//! The cursor at the head of a SCAN reply: `*2\r\n$N\r\n<cursor>\r\n` then the keys' array.

/// The cursor a SCAN reply starts with, read from the reply's first bytes (`head`, at least up to the
/// cursor's line end), as RESP2 and RESP3 both write it. `None` when `head` does not start that way
/// (an error, a truncated head, another reply).
pub fn scan_cursor(head: &[u8]) -> Option<&[u8]> {
    let rest = head.strip_prefix(b"*2\r\n$")?;
    let end = memchr::memchr(b'\r', rest)?;
    let len: usize = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    let body = rest.get(end + 2..)?;
    if rest.get(end + 1) != Some(&b'\n') || body.len() < len + 2 || &body[len..len + 2] != b"\r\n" {
        return None;
    }
    let cursor = &body[..len];
    (!cursor.is_empty() && cursor.iter().all(u8::is_ascii_digit)).then_some(cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_is_the_first_bulk_of_a_two_element_array() {
        assert_eq!(
            scan_cursor(b"*2\r\n$4\r\n1536\r\n*10\r\n$7\r\nmemtier"),
            Some(&b"1536"[..])
        );
        assert_eq!(scan_cursor(b"*2\r\n$1\r\n0\r\n*0\r\n"), Some(&b"0"[..]));
        // Cut before the cursor's line end, an error, a nil, letters: no cursor.
        assert_eq!(scan_cursor(b"*2\r\n$4\r\n153"), None);
        assert_eq!(scan_cursor(b"-ERR invalid cursor\r\n"), None);
        assert_eq!(scan_cursor(b"*2\r\n$-1\r\n"), None);
        assert_eq!(scan_cursor(b"*2\r\n$2\r\nab\r\n"), None);
        assert_eq!(scan_cursor(b"*3\r\n$1\r\n0\r\n"), None);
    }
}
