//! `--replay FILE`: captured traffic sent again. The file is the output of `redis-cli MONITOR` (one
//! command a line: `<unix time> [<db> <client>] "ARG" "ARG" ...`, each argument quoted as redis's
//! `sdscatrepr` writes it) or plain commands, one a line, quoted as redis-cli reads them. The whole
//! file is read and checked before anything is sent; every command is encoded into RESP once, in one
//! arena, and each connection's share is a list of indices into it, so nothing is built per request.

use crate::protocol::cluster;
use crate::protocol::resp::encode_command;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// Distinct command names that get figures of their own; further names share the last entry.
const MAX_NAMES: usize = 100;
/// The name the figures of commands beyond [`MAX_NAMES`] are kept under.
const OTHER: &str = "(other)";

/// How the capture's commands are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// As fast as the closed loop goes (`-P` in flight per connection).
    Max,
    /// At the capture's own pace, sped up by this factor (1: as recorded).
    Recorded(f64),
    /// At this many commands per second in total, in the file's order (`--rps`).
    Rate(f64),
}

/// What kind of file it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `redis-cli MONITOR` output: timestamps and clients.
    Monitor,
    /// One command a line, no timestamps.
    Plain,
}

/// A line of the file that cannot be replayed: its number (from 1) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct LineError {
    pub line: usize,
    pub why: String,
}

/// One command of the capture.
#[derive(Debug, Clone)]
struct Cmd {
    /// Its RESP bytes in the arena.
    bytes: Range<usize>,
    /// Its name's index in [`Replay::names`].
    name: u16,
    /// The slot of its key (`None`: the command has no key).
    slot: Option<u16>,
}

/// One connection's share: the commands it sends, in order, and when each is due (nanoseconds from the
/// start) when the replay is paced.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    cmds: Vec<u32>,
    due: Option<Arc<[u64]>>,
}

impl Stream {
    /// How many commands this connection sends.
    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// When each command is due, from the start (paced replays only).
    pub fn due(&self) -> Option<&Arc<[u64]>> {
        self.due.as_ref()
    }
}

/// A parsed, validated capture, encoded and shared out over the run's connections. Shared read-only
/// by every executor.
#[derive(Debug, Clone)]
pub struct Replay {
    arena: Vec<u8>,
    cmds: Vec<Cmd>,
    names: Vec<String>,
    streams: Vec<Stream>,
    max_len: usize,
    /// Which format the file was in.
    pub format: Format,
    /// Distinct clients the capture names (0 for a plain file).
    pub clients: usize,
    /// Lines not replayed.
    pub skipped: Skipped,
    /// The time from the first command to the last, in the capture (0 for a plain file).
    pub span_ns: u64,
    /// How it is paced.
    pub pace: Pace,
}

/// Lines of a capture that are commands but are not sent again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Issued by Lua scripts (`[0 lua]`): replaying the script issues them again.
    pub lua: u64,
    /// With arguments MONITOR redacted (`AUTH`): they cannot be sent as captured.
    pub redacted: u64,
    /// Commands that turn a connection into a stream of pushes (`SUBSCRIBE`, `MONITOR`, `SYNC`, ...),
    /// whose replies do not pair with requests, or close it (`QUIT`).
    pub streams: u64,
}

/// Whether `name` turns a connection into a stream whose replies do not pair with its requests, or
/// closes it.
fn takes_connection_over(name: &[u8]) -> bool {
    const STREAMS: [&[u8]; 10] = [
        b"SUBSCRIBE",
        b"PSUBSCRIBE",
        b"SSUBSCRIBE",
        b"UNSUBSCRIBE",
        b"PUNSUBSCRIBE",
        b"SUNSUBSCRIBE",
        b"MONITOR",
        b"SYNC",
        b"PSYNC",
        b"QUIT",
    ];
    STREAMS.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// A command as read from its line: when (microseconds, MONITOR only), which client, its arguments.
struct Parsed {
    at_us: u64,
    client: Option<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

/// The capture as it is read: each command encoded into the arena as soon as its line is parsed (so
/// no line's arguments are kept), with its name, slot, time and client.
#[derive(Default)]
struct Builder {
    arena: Vec<u8>,
    cmds: Vec<Cmd>,
    names: Vec<String>,
    name_index: HashMap<String, u16>,
    owners: HashMap<Vec<u8>, usize>,
    client_of: Vec<Option<usize>>,
    at_ns: Vec<u64>,
    first_us: Option<u64>,
    last_us: u64,
}

impl Builder {
    fn push(&mut self, p: Parsed) {
        let refs: Vec<&[u8]> = p.args.iter().map(|a| a.as_slice()).collect();
        let start = self.arena.len();
        encode_command(&mut self.arena, &refs);
        let name = String::from_utf8_lossy(&p.args[0]).to_ascii_uppercase();
        let name = match self.name_index.get(&name) {
            Some(&i) => i,
            None if self.names.len() < MAX_NAMES => {
                let i = self.names.len() as u16;
                self.names.push(name.clone());
                self.name_index.insert(name, i);
                i
            }
            None => {
                if self.names.len() == MAX_NAMES {
                    self.names.push(OTHER.to_string());
                }
                MAX_NAMES as u16
            }
        };
        self.cmds.push(Cmd {
            bytes: start..self.arena.len(),
            name,
            slot: key_of(&p.args).map(cluster::key_slot),
        });
        // Timestamps only go forward (a clock step back in the capture is taken as no gap).
        let first = *self.first_us.get_or_insert(p.at_us);
        self.last_us = self.last_us.max(p.at_us).max(first);
        self.at_ns.push((self.last_us - first).saturating_mul(1000));
        let next = self.owners.len();
        let client = p.client.map(|c| *self.owners.entry(c).or_insert(next));
        self.client_of.push(client);
    }

    fn finish(self, format: Format, connections: usize, pace: Pace, skipped: Skipped) -> Replay {
        let span_ns = self.at_ns.last().copied().unwrap_or(0);
        let due: Option<Vec<u64>> = match pace {
            Pace::Max => None,
            Pace::Recorded(speed) => Some(
                self.at_ns
                    .iter()
                    .map(|&t| (t as f64 / speed) as u64)
                    .collect(),
            ),
            Pace::Rate(rps) => Some(
                (0..self.cmds.len())
                    .map(|k| (k as f64 * 1e9 / rps) as u64)
                    .collect(),
            ),
        };
        let clients = self.owners.len();
        let streams = share_out(&self.client_of, clients, connections.max(1), due.as_deref());
        let max_len = self.cmds.iter().map(|c| c.bytes.len()).max().unwrap_or(0);
        Replay {
            arena: self.arena,
            cmds: self.cmds,
            names: self.names,
            streams,
            max_len,
            format,
            clients,
            skipped,
            span_ns,
            pace,
        }
    }
}

impl Replay {
    /// Reads `text` (a whole file), shares its commands out over `connections`, paced by `pace`.
    /// Errors name the first line that cannot be replayed; nothing is half-read.
    pub fn parse(text: &[u8], connections: usize, pace: Pace) -> Result<Replay, LineError> {
        let mut format = None;
        let mut built = Builder::default();
        let mut skipped = Skipped::default();
        let mut lines = 0;
        for (n, raw) in text.split(|&b| b == b'\n').enumerate() {
            lines = n + 1;
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            let err = |why: String| LineError { line: n + 1, why };
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() || trimmed.starts_with(b"#") {
                continue;
            }
            // redis-cli MONITOR's first line is the reply to MONITOR itself (and captures put one
            // after another have one each).
            if trimmed == b"OK" && format != Some(Format::Plain) {
                continue;
            }
            let fmt = *format.get_or_insert(if looks_like_monitor(line) {
                Format::Monitor
            } else {
                Format::Plain
            });
            let p = match fmt {
                Format::Monitor => monitor_line(line).map_err(err)?,
                Format::Plain => Parsed {
                    at_us: 0,
                    client: None,
                    args: split_args(line).map_err(err)?,
                },
            };
            if p.args.is_empty() {
                return Err(err("no command on the line".into()));
            }
            if p.client.as_deref() == Some(b"lua") {
                skipped.lua += 1;
                continue;
            }
            if p.args.iter().any(|a| a == b"(redacted)") {
                skipped.redacted += 1;
                continue;
            }
            if takes_connection_over(&p.args[0]) {
                skipped.streams += 1;
                continue;
            }
            built.push(p);
        }
        if built.cmds.is_empty() {
            return Err(LineError {
                line: lines,
                why: "the file has no command to replay".into(),
            });
        }
        let format = format.unwrap_or(Format::Plain);
        if format == Format::Plain && matches!(pace, Pace::Recorded(_)) {
            return Err(LineError {
                line: 1,
                why: "a plain command file has no timestamps to pace by: use --rps or --replay-pace max".into(),
            });
        }
        Ok(built.finish(format, connections, pace, skipped))
    }

    /// How many commands are replayed (each once).
    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// The command names, in the order their figures are kept (first seen first).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Connection `i`'s share (of all the run's connections, numbered across executors).
    pub fn stream(&self, i: usize) -> &Stream {
        static EMPTY: Stream = Stream {
            cmds: Vec::new(),
            due: None,
        };
        self.streams.get(i).unwrap_or(&EMPTY)
    }

    /// The connections the commands are shared out over (`-c`).
    pub fn connections(&self) -> usize {
        self.streams.len()
    }

    /// The connections that have commands to send (fewer than `-c` when the capture has fewer clients).
    pub fn connections_used(&self) -> usize {
        self.streams.iter().filter(|s| !s.is_empty()).count()
    }

    /// The commands connections `range` send in all.
    pub fn share(&self, range: Range<usize>) -> u64 {
        range.map(|i| self.stream(i).len() as u64).sum()
    }

    /// The longest command, in bytes: a buffer of `depth * max_request_len()` never grows.
    pub fn max_request_len(&self) -> usize {
        self.max_len
    }

    /// The longest command's bytes (what the request-buffer check sizes buffers by).
    pub fn longest(&self) -> &[u8] {
        self.cmds
            .iter()
            .max_by_key(|c| c.bytes.len())
            .map_or(&[][..], |c| &self.arena[c.bytes.clone()])
    }

    /// Appends command `pos` of connection `conn`'s share to `out`; returns its name's index.
    #[inline]
    pub fn write(&self, conn: usize, pos: usize, out: &mut Vec<u8>) -> usize {
        let c = &self.cmds[self.streams[conn].cmds[pos] as usize];
        out.extend_from_slice(&self.arena[c.bytes.clone()]);
        c.name as usize
    }

    /// The slot of command `pos` of connection `conn`'s share (`None`: it has no key).
    #[inline]
    pub fn slot(&self, conn: usize, pos: usize) -> Option<u16> {
        self.cmds[self.streams[conn].cmds[pos] as usize].slot
    }
}

/// Deals the commands out to `connections`: every command of one recorded client to one connection
/// (clients in the order they first appear, each to the connection with the fewest commands so far);
/// without clients (a plain file), command `k` to connection `k mod connections`.
fn share_out(
    client_of: &[Option<usize>],
    clients: usize,
    connections: usize,
    due: Option<&[u64]>,
) -> Vec<Stream> {
    let mut per_client = vec![0u64; clients];
    for c in client_of.iter().flatten() {
        per_client[*c] += 1;
    }
    let mut load = vec![0u64; connections];
    let conn_of_client: Vec<usize> = per_client
        .iter()
        .map(|&n| {
            let (best, _) = load
                .iter()
                .enumerate()
                .min_by_key(|&(i, &l)| (l, i))
                .unwrap_or((0, &0));
            load[best] += n;
            best
        })
        .collect();
    let mut cmds: Vec<Vec<u32>> = vec![Vec::new(); connections];
    for (k, c) in client_of.iter().enumerate() {
        let conn = match c {
            Some(c) => conn_of_client[*c],
            None => k % connections,
        };
        cmds[conn].push(k as u32);
    }
    cmds.into_iter()
        .map(|cmds| Stream {
            due: due.map(|d| cmds.iter().map(|&k| d[k as usize]).collect()),
            cmds,
        })
        .collect()
}

/// Whether `line` starts as a MONITOR line does: `<digits>.<digits> [`.
fn looks_like_monitor(line: &[u8]) -> bool {
    let Some(sp) = memchr::memchr(b' ', line) else {
        return false;
    };
    let (ts, rest) = (&line[..sp], &line[sp + 1..]);
    rest.starts_with(b"[")
        && ts.split(|&b| b == b'.').count() == 2
        && ts
            .split(|&b| b == b'.')
            .all(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit))
}

/// `<seconds>.<micros> [<db> <client>] "ARG" ...`.
fn monitor_line(line: &[u8]) -> Result<Parsed, String> {
    const SHAPE: &str = "not a MONITOR line (<unix time> [<db> <client>] \"COMMAND\" \"ARG\" ...), though the file's first command is one";
    if !looks_like_monitor(line) {
        return Err(SHAPE.into());
    }
    let sp = memchr::memchr(b' ', line).unwrap_or(0);
    let ts = std::str::from_utf8(&line[..sp]).map_err(|_| SHAPE.to_string())?;
    let (secs, frac) = ts.split_once('.').ok_or_else(|| SHAPE.to_string())?;
    let secs: u64 = secs
        .parse()
        .map_err(|_| format!("timestamp '{ts}' is out of range"))?;
    // MONITOR writes six digits of microseconds; fewer or more are read as a decimal fraction.
    let mut micros = 0u64;
    for (i, d) in frac.bytes().take(6).enumerate() {
        micros += u64::from(d - b'0') * 10u64.pow(5 - i as u32);
    }
    let at_us = secs
        .checked_mul(1_000_000)
        .and_then(|s| s.checked_add(micros))
        .ok_or_else(|| format!("timestamp '{ts}' is out of range"))?;
    let rest = &line[sp + 2..];
    let db_end = memchr::memchr(b' ', rest).ok_or_else(|| SHAPE.to_string())?;
    if db_end == 0 || !rest[..db_end].iter().all(u8::is_ascii_digit) {
        return Err(SHAPE.into());
    }
    let rest = &rest[db_end + 1..];
    // The client ends at the first `]` followed by a space or the line's end (an IPv6 address has
    // brackets of its own: `[::1]:6379`).
    let close = (0..rest.len())
        .find(|&i| rest[i] == b']' && rest.get(i + 1).is_none_or(|&b| b == b' '))
        .ok_or_else(|| "the [<db> <client>] part has no closing ']'".to_string())?;
    let client = rest[..close].to_vec();
    if client.is_empty() {
        return Err(SHAPE.into());
    }
    let args = split_args(rest.get(close + 1..).unwrap_or(&[]))?;
    Ok(Parsed {
        at_us,
        client: Some(client),
        args,
    })
}

/// Splits a line into arguments as redis-cli does (see [`crate::workload::words`]).
pub fn split_args(line: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    crate::workload::words::split(line)
        .map(|(args, _)| args)
        .map_err(|e| e.located())
}

/// The key a command is routed by under `--cluster`: its first argument, except for commands that
/// take none (`PING`, `INFO`, ...), scripts and functions (the first of their keys, if any),
/// `XREAD`/`XREADGROUP` (the first stream) and container commands (`OBJECT ENCODING key`, ...). A
/// command routed to the wrong master is redirected there (`MOVED`), so this only saves a round trip.
fn key_of(args: &[Vec<u8>]) -> Option<&[u8]> {
    let name = args.first()?.to_ascii_uppercase();
    let arg = |i: usize| args.get(i).map(|a| a.as_slice());
    match name.as_slice() {
        b"PING" | b"ECHO" | b"INFO" | b"DBSIZE" | b"FLUSHDB" | b"FLUSHALL" | b"SELECT"
        | b"AUTH" | b"HELLO" | b"TIME" | b"COMMAND" | b"CONFIG" | b"CLIENT" | b"MULTI"
        | b"EXEC" | b"DISCARD" | b"QUIT" | b"RESET" | b"SCRIPT" | b"FUNCTION" | b"CLUSTER"
        | b"RANDOMKEY" | b"SCAN" | b"KEYS" | b"WAIT" | b"WAITAOF" | b"SAVE" | b"BGSAVE"
        | b"BGREWRITEAOF" | b"LASTSAVE" | b"SLOWLOG" | b"LATENCY" | b"PUBLISH" | b"SPUBLISH"
        | b"SUBSCRIBE" | b"PSUBSCRIBE" | b"UNSUBSCRIBE" | b"PUNSUBSCRIBE" | b"PUBSUB"
        | b"MONITOR" | b"ACL" | b"SWAPDB" | b"READONLY" | b"READWRITE" | b"ASKING" | b"LOLWUT"
        | b"DEBUG" | b"MODULE" | b"ROLE" | b"REPLICAOF" | b"SLAVEOF" => None,
        b"EVAL" | b"EVALSHA" | b"EVAL_RO" | b"EVALSHA_RO" | b"FCALL" | b"FCALL_RO" => {
            let keys: u64 = std::str::from_utf8(arg(2)?).ok()?.parse().ok()?;
            if keys > 0 { arg(3) } else { None }
        }
        b"XREAD" | b"XREADGROUP" => {
            let at = args
                .iter()
                .position(|a| a.eq_ignore_ascii_case(b"STREAMS"))?;
            arg(at + 1)
        }
        b"OBJECT" | b"MEMORY" | b"XINFO" | b"XGROUP" | b"BITOP" => arg(2),
        _ => arg(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Vec<u8>> {
        split_args(line.as_bytes()).unwrap()
    }

    #[test]
    fn quoting_follows_redis_cli() {
        assert_eq!(
            args(r#"set "a b" 'c d' e"#),
            [
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c d".to_vec(),
                b"e".to_vec()
            ]
        );
        assert_eq!(
            args(r#""\x00\xfF\n\r\t\"\\\q""#),
            [vec![0, 0xff, b'\n', b'\r', b'\t', b'"', b'\\', b'q']]
        );
        assert_eq!(args(r#"'it\'s'"#), [b"it's".to_vec()]);
        assert_eq!(args(r#""\xZZ""#), [b"xZZ".to_vec()]);
        assert!(
            split_args(br#""open"#)
                .unwrap_err()
                .contains("unterminated")
        );
        assert!(
            split_args(br#""a"b"#)
                .unwrap_err()
                .contains("followed by a space")
        );
        assert!(split_args(b"   ").unwrap().is_empty());
    }

    #[test]
    fn monitor_lines_parse() {
        let p = monitor_line(br#"1733100000.123456 [0 127.0.0.1:53422] "SET" "key" "a \"b\"""#)
            .unwrap();
        assert_eq!(p.at_us, 1_733_100_000_123_456);
        assert_eq!(p.client.as_deref(), Some(&b"127.0.0.1:53422"[..]));
        assert_eq!(
            p.args,
            [b"SET".to_vec(), b"key".to_vec(), b"a \"b\"".to_vec()]
        );
        let p = monitor_line(br#"1.5 [3 [::1]:6000] "GET" "k""#).unwrap();
        assert_eq!(
            (p.at_us, p.client.unwrap()),
            (1_500_000, b"[::1]:6000".to_vec())
        );
        let p = monitor_line(br#"1.000001 [0 unix:/tmp/r.sock] "PING""#).unwrap();
        assert_eq!(p.client.unwrap(), b"unix:/tmp/r.sock");
        assert!(monitor_line(br#"1.0 [0 x "GET""#).is_err());
        assert!(monitor_line(br#"1.0 [a x] "GET""#).is_err());
    }

    const CAPTURE: &str = r#"OK
1000.000000 [0 127.0.0.1:1] "SET" "a" "1"
1000.500000 [0 127.0.0.1:2] "GET" "a"
1000.600000 [0 lua] "GET" "a"
1000.700000 [0 127.0.0.1:1] "INCR" "a"
1001.000000 [0 127.0.0.1:3] "AUTH" "(redacted)"
1001.500000 [0 127.0.0.1:4] "subscribe" "news"
1002.000000 [0 127.0.0.1:1] "get" "b"
"#;

    #[test]
    fn a_capture_keeps_each_client_on_one_connection() {
        let r = Replay::parse(CAPTURE.as_bytes(), 2, Pace::Recorded(1.0)).unwrap();
        assert_eq!(r.format, Format::Monitor);
        assert_eq!((r.len(), r.clients), (4, 2));
        assert_eq!(
            r.skipped,
            Skipped {
                lua: 1,
                redacted: 1,
                streams: 1
            }
        );
        assert_eq!(r.names(), ["SET", "GET", "INCR"]);
        assert_eq!(r.span_ns, 2_000_000_000);
        // Client 1 (three commands) on connection 0, client 2 on connection 1.
        assert_eq!((r.stream(0).len(), r.stream(1).len()), (3, 1));
        assert_eq!(r.share(0..2), 4);
        let mut out = Vec::new();
        let kinds: Vec<usize> = (0..3).map(|p| r.write(0, p, &mut out)).collect();
        assert_eq!(kinds, [0, 2, 1]);
        assert_eq!(
            out,
            b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n*2\r\n$3\r\nget\r\n$1\r\nb\r\n"
        );
        assert_eq!(
            &r.stream(0).due().unwrap()[..],
            [0, 700_000_000, 2_000_000_000]
        );
        assert_eq!(&r.stream(1).due().unwrap()[..], [500_000_000]);
        assert_eq!(r.slot(1, 0), Some(cluster::key_slot(b"a")));
        let fast = Replay::parse(CAPTURE.as_bytes(), 2, Pace::Recorded(2.0)).unwrap();
        assert_eq!(
            &fast.stream(0).due().unwrap()[..],
            [0, 350_000_000, 1_000_000_000]
        );
        assert!(
            Replay::parse(CAPTURE.as_bytes(), 2, Pace::Max)
                .unwrap()
                .stream(0)
                .due()
                .is_none()
        );
    }

    #[test]
    fn a_plain_file_deals_commands_round_robin() {
        let text = "# setup\nset a 1\n\nget a\nping\n";
        let r = Replay::parse(text.as_bytes(), 2, Pace::Rate(10.0)).unwrap();
        assert_eq!(r.format, Format::Plain);
        assert_eq!((r.stream(0).len(), r.stream(1).len()), (2, 1));
        assert_eq!(&r.stream(0).due().unwrap()[..], [0, 200_000_000]);
        assert_eq!(r.slot(1, 0), Some(cluster::key_slot(b"a")));
        assert_eq!(r.slot(0, 1), None);
        let e = Replay::parse(text.as_bytes(), 1, Pace::Recorded(1.0)).unwrap_err();
        assert!(e.why.contains("no timestamps"), "{e}");
    }

    #[test]
    fn malformed_lines_are_named() {
        let bad = "OK\n1.0 [0 a:1] \"SET\" \"k\" \"v\"\nset k v\n";
        assert_eq!(
            Replay::parse(bad.as_bytes(), 1, Pace::Max)
                .unwrap_err()
                .line,
            3
        );
        let bad = "set k v\nset \"k v\n";
        let e = Replay::parse(bad.as_bytes(), 1, Pace::Max).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("line 2: unterminated"), "{e}");
        assert!(Replay::parse(b"OK\n\n", 1, Pace::Max).is_err());
    }

    #[test]
    fn keys_for_routing() {
        let k = |s: &str| key_of(&args(s)).map(|k| k.to_vec());
        assert_eq!(k("GET a"), Some(b"a".to_vec()));
        assert_eq!(k("PING"), None);
        assert_eq!(k("EVAL s 1 k1 x"), Some(b"k1".to_vec()));
        assert_eq!(k("EVAL s 0"), None);
        assert_eq!(k("XREAD COUNT 2 STREAMS s1 s2 0 0"), Some(b"s1".to_vec()));
        assert_eq!(k("OBJECT ENCODING k"), Some(b"k".to_vec()));
    }
}
