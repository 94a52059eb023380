//! The commands of a mix as users write them: `--mix` entries (`get:80`, `SET __key__ __data__:20`) and
//! memtier_benchmark's `--command "SET __key__ __data__"` line, split into arguments, with the key pattern
//! letters of its `--command-key-pattern`.

use crate::workload::keys::Distribution;

/// The largest weight (`--mix`, `--command-ratio`).
pub const MAX_WEIGHT: u64 = 1_000_000;

/// Why a command line cannot be split into arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("a quote is not closed")]
    Unclosed,
    #[error("a closing quote must be followed by a space")]
    AfterQuote,
    #[error("it has no command")]
    Empty,
}

/// Splits a command line into arguments as redis-cli and memtier_benchmark do (see
/// [`crate::workload::words`]). Returns the arguments and whether any was quoted.
pub fn split_words(line: &str) -> Result<(Vec<Vec<u8>>, bool), SplitError> {
    use crate::workload::words;
    let (out, quoted) = words::split(line.as_bytes()).map_err(|e| match e {
        words::SplitError::Unclosed { .. } => SplitError::Unclosed,
        words::SplitError::AfterQuote { .. } => SplitError::AfterQuote,
    })?;
    if out.is_empty() {
        return Err(SplitError::Empty);
    }
    Ok((out, quoted))
}

/// What one `--mix` entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MixItem {
    /// One unquoted word: a default-suite test name (lower-cased).
    Word(String),
    /// A command with its arguments.
    Command(Vec<Vec<u8>>),
}

/// One `--mix` entry: what it names and its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixPart {
    pub item: MixItem,
    /// The entry's text before its weight, as written (trimmed).
    pub text: String,
    pub weight: u64,
}

/// Why a `--mix` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MixError {
    #[error("'{0}' must be name:weight or 'COMMAND ARGS:weight'")]
    NotNameWeight(String),
    #[error("the weight in '{0}' must be a whole number from 1 to {MAX_WEIGHT}")]
    Weight(String),
    #[error("give at least one name:weight")]
    Empty,
    #[error("'{0}': {1}")]
    Split(String, SplitError),
}

/// Parses a weight from 1 to [`MAX_WEIGHT`].
pub fn parse_weight(s: &str) -> Option<u64> {
    s.trim()
        .parse()
        .ok()
        .filter(|w| (1..=MAX_WEIGHT).contains(w))
}

/// Splits `s` at the commas that are not inside quotes.
fn split_entries(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut quote, mut escaped, mut from) = (None, false, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, ',') => {
                out.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
        escaped = false;
    }
    out.push(&s[from..]);
    out
}

/// Parses `--mix`: `entry:weight,...`, each entry a default-suite test name (`get:80`) or a command with
/// its arguments (`SET key:__rand_int__ __data__:20`); the weight follows the entry's last `:`, and a
/// comma inside quotes does not end an entry.
pub fn parse_mix(s: &str) -> Result<Vec<MixPart>, MixError> {
    let mut out = Vec::new();
    for part in split_entries(s).into_iter().map(str::trim) {
        if part.is_empty() {
            continue;
        }
        let (text, w) = part
            .rsplit_once(':')
            .filter(|(t, _)| !t.trim().is_empty())
            .ok_or_else(|| MixError::NotNameWeight(part.to_string()))?;
        let weight = parse_weight(w).ok_or_else(|| MixError::Weight(part.to_string()))?;
        let text = text.trim();
        let (words, quoted) =
            split_words(text).map_err(|e| MixError::Split(text.to_string(), e))?;
        let item = match words.as_slice() {
            [one] if !quoted => MixItem::Word(String::from_utf8_lossy(one).to_ascii_lowercase()),
            _ => MixItem::Command(words),
        };
        out.push(MixPart {
            item,
            text: text.to_string(),
            weight,
        });
    }
    if out.is_empty() {
        return Err(MixError::Empty);
    }
    Ok(out)
}

/// Why a `--command-key-pattern` letter cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be R (random), S (sequential), P (parallel), G (gaussian) or Z (zipf)")]
pub struct PatternError;

/// memtier_benchmark's key pattern letter as a distribution: `R` uniform, `S` and `P` sequential (each
/// executor walks its own slice of the range, memtier's "parallel"; memtier's `S` lets every client walk
/// the whole range), `G` gaussian, `Z` zipf (with the exponent of `--distribution zipf:E` when given,
/// else 1, memtier's default). `run` is the run's `--distribution`.
pub fn key_pattern(letter: &str, run: Distribution) -> Result<Distribution, PatternError> {
    match letter.trim() {
        "R" | "r" => Ok(Distribution::Uniform),
        "S" | "s" | "P" | "p" => Ok(match run {
            seq @ Distribution::Sequential { .. } => seq,
            _ => Distribution::Sequential { part: 0, parts: 1 },
        }),
        "G" | "g" => Ok(Distribution::Gaussian),
        "Z" | "z" => Ok(match run {
            z @ Distribution::Zipf(_) => z,
            _ => Distribution::Zipf(1.0),
        }),
        _ => Err(PatternError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        split_words(s)
            .unwrap()
            .0
            .into_iter()
            .map(|w| String::from_utf8(w).unwrap())
            .collect()
    }

    #[test]
    fn lines_split_like_redis_cli() {
        assert_eq!(
            words("SET __key__ __data__"),
            ["SET", "__key__", "__data__"]
        );
        assert_eq!(
            words("  hset h \"a b\" 'c d' "),
            ["hset", "h", "a b", "c d"]
        );
        assert_eq!(words(r#"set k "x\ty\x41\"""#), ["set", "k", "x\tyA\""]);
        assert_eq!(words(r"set k 'it\'s'"), ["set", "k", "it's"]);
        assert_eq!(split_words("set \"k"), Err(SplitError::Unclosed));
        assert_eq!(split_words("set \"k\"v"), Err(SplitError::AfterQuote));
        assert_eq!(split_words("   "), Err(SplitError::Empty));
        assert!(!split_words("get k").unwrap().1);
        assert!(split_words("'ping'").unwrap().1);
    }

    #[test]
    fn mix_entries_are_names_or_commands() {
        let m = parse_mix("get:80, SET user:__key__ __data__:20,\"DBSIZE\":1").unwrap();
        assert_eq!(m[0].item, MixItem::Word("get".into()));
        assert_eq!(m[0].weight, 80);
        assert_eq!(
            m[1].item,
            MixItem::Command(vec![
                b"SET".to_vec(),
                b"user:__key__".to_vec(),
                b"__data__".to_vec()
            ])
        );
        assert_eq!(
            (m[1].text.as_str(), m[1].weight),
            ("SET user:__key__ __data__", 20)
        );
        assert_eq!(m[2].item, MixItem::Command(vec![b"DBSIZE".to_vec()]));
        let m = parse_mix("HSET h f \"a,b\":3").unwrap();
        assert_eq!(m.len(), 1);
        assert!(matches!(parse_mix("get"), Err(MixError::NotNameWeight(_))));
        assert!(matches!(parse_mix(":3"), Err(MixError::NotNameWeight(_))));
        assert!(matches!(parse_mix("get:0"), Err(MixError::Weight(_))));
        assert!(matches!(parse_mix("get:1000001"), Err(MixError::Weight(_))));
        assert!(matches!(parse_mix(" , "), Err(MixError::Empty)));
        assert!(matches!(parse_mix("set \"k:1"), Err(MixError::Split(..))));
    }

    #[test]
    fn memtier_letters() {
        let u = Distribution::Uniform;
        assert_eq!(key_pattern("R", u), Ok(Distribution::Uniform));
        assert_eq!(key_pattern("G", u), Ok(Distribution::Gaussian));
        assert_eq!(key_pattern("Z", u), Ok(Distribution::Zipf(1.0)));
        assert_eq!(
            key_pattern("Z", Distribution::Zipf(0.7)),
            Ok(Distribution::Zipf(0.7))
        );
        let seq = Distribution::Sequential { part: 0, parts: 1 };
        assert_eq!(key_pattern("S", u), Ok(seq));
        assert_eq!(key_pattern("P", u), Ok(seq));
        assert_eq!(key_pattern("X", u), Err(PatternError));
        assert_eq!(key_pattern("RS", u), Err(PatternError));
    }
}
