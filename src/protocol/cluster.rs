//! Redis Cluster facts shared by the control path and the engine: key slots (CRC16, hash tags), the slot
//! map read from a `CLUSTER SLOTS` reply, and redirect replies. Reading the layout from a server is
//! `net::discovery`.

use crate::protocol::resp::Value;
use std::net::SocketAddr;
use std::ops::Range;

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: usize = 16384;
/// Slot owner value of a slot that no master serves.
pub const UNASSIGNED: u16 = u16::MAX;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum Redis Cluster hashes keys with.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// CRC16 (XMODEM) of `data`.
#[inline]
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ b) as usize]
    })
}

/// The inside of a key's hash tag: the bytes between the first `{` and the first `}` after it, when
/// that is not empty (the cluster's rule).
pub fn hash_tag(key: &[u8]) -> Option<Range<usize>> {
    let open = memchr::memchr(b'{', key)?;
    let close = open + 1 + memchr::memchr(b'}', &key[open + 1..])?;
    (close > open + 1).then_some(open + 1..close)
}

/// The slot of a whole key (hash tag rule applied).
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match hash_tag(key) {
        Some(r) => &key[r],
        None => key,
    };
    slot_of(hashed)
}

/// The slot of bytes already narrowed to what the cluster hashes (a tag's inside or a whole key).
#[inline]
pub fn slot_of(hashed: &[u8]) -> u16 {
    crc16(hashed) & (SLOTS as u16 - 1)
}

/// The slots of keys that differ only in 12 decimal digits at one place (a `__rand_int__` filled
/// in), computed from the number instead of the bytes. CRC16-XMODEM has no initial or final xor, so
/// it is linear: the CRC of a key is the CRC of the key with zero bytes for the digits, xor one table
/// entry per digit pair and its place. Six independent lookups instead of a serial pass over the key.
#[derive(Debug, Clone)]
pub struct DigitSlots {
    base: u16,
    /// Per digit pair (most significant first), the CRC of each of its 100 values in its place
    /// (padded to 128 entries, so a pair indexes it without a bounds check).
    pairs: Box<[[u16; 128]; 6]>,
}

impl DigitSlots {
    /// For keys (already narrowed to what the cluster hashes) shaped like `key`, whose 12 digits
    /// start at `at`; `None` when they do not fit inside it.
    pub fn new(key: &[u8], at: usize) -> Option<DigitSlots> {
        if at + 12 > key.len() {
            return None;
        }
        let mut zeros = key.to_vec();
        zeros[at..at + 12].fill(0);
        let base = crc16(&zeros);
        let mut pairs = Box::new([[0u16; 128]; 6]);
        let mut probe = vec![0u8; key.len()];
        for (k, table) in pairs.iter_mut().enumerate() {
            for (p, entry) in table.iter_mut().take(100).enumerate() {
                probe[at + 2 * k] = b'0' + (p / 10) as u8;
                probe[at + 2 * k + 1] = b'0' + (p % 10) as u8;
                *entry = crc16(&probe);
            }
            probe[at + 2 * k] = 0;
            probe[at + 2 * k + 1] = 0;
        }
        Some(DigitSlots { base, pairs })
    }

    /// The slot of the key whose digits are `v` written as 12 zero-padded digits (modulo 10^12).
    #[inline]
    pub fn slot(&self, v: u64) -> u16 {
        self.slot_of_pairs(&crate::protocol::digits::digit_pairs(v))
    }

    /// The slot of the key whose digits are `pairs` ([`crate::protocol::digits::digit_pairs`]).
    #[inline]
    pub fn slot_of_pairs(&self, pairs: &[u8; 6]) -> u16 {
        let mut crc = self.base;
        for (table, &p) in self.pairs.iter().zip(pairs) {
            crc ^= table[usize::from(p & 127)];
        }
        crc & (SLOTS as u16 - 1)
    }
}

/// valkey-benchmark's cluster placeholder: in `--cluster` mode each `{tag}` of a custom command becomes a
/// hash tag of three characters drawn per request (the same at each place in the request).
pub const SLOT_TAG: &[u8] = b"{tag}";

/// Writes one hash tag into every [`SLOT_TAG`] of `req`: three characters of `[A-Za-z0-9_-]` from the
/// low 18 bits of `random` (262144 tags, about 16 per slot, so requests spread over all slots), never
/// `tag` itself.
pub fn fill_slot_tags(req: &mut [u8], random: u64) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    let mut tag = [
        ALPHABET[(random & 63) as usize],
        ALPHABET[((random >> 6) & 63) as usize],
        ALPHABET[((random >> 12) & 63) as usize],
    ];
    // Never `{tag}` itself (1 in 262144): it would read as the placeholder left as written.
    if &tag == b"tag" {
        tag[2] = b'h';
    }
    let mut at = 0;
    while let Some(i) = memchr::memmem::find(&req[at..], SLOT_TAG) {
        let start = at + i + 1;
        req[start..start + 3].copy_from_slice(&tag);
        at = start + 4;
    }
}

/// What a RESP-encoded request (`*<n>\r\n$<len>\r\n<name>\r\n$<len>\r\n<key>\r\n...`) is routed by:
/// its first argument after the command name, narrowed to the inside of its `{hash tag}` when it has
/// one. `None` for a request without arguments or one that is not a RESP array (an inline command).
pub fn request_key(req: &[u8]) -> Option<&[u8]> {
    // The header line at `at` (`*<n>` or `$<len>`): its number and where the next line starts.
    let line = |at: usize, mark: u8| -> Option<(usize, usize)> {
        if req.get(at) != Some(&mark) {
            return None;
        }
        let end = at + memchr::memchr(b'\r', req.get(at..)?)?;
        let n = std::str::from_utf8(&req[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    };
    let (argc, at) = line(0, b'*')?;
    if argc < 2 {
        return None;
    }
    let (name_len, at) = line(at, b'$')?;
    let (key_len, at) = line(at + name_len + 2, b'$')?;
    let key = req.get(at..at + key_len)?;
    Some(match hash_tag(key) {
        Some(r) => &key[r],
        None => key,
    })
}

/// A master of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `ip:port` as the cluster names it in redirects.
    pub name: String,
    /// Where to connect.
    pub addr: SocketAddr,
}

/// The most nodes a map holds: a cluster has at most one master per slot, and a reply or a run's
/// redirects naming more is refused (node indices are 16-bit, [`UNASSIGNED`] among them).
pub const MAX_NODES: usize = SLOTS;

/// Which master owns each slot. Node indices never change once given, so connections indexed by them
/// stay valid across refreshes; a master that lost its slots simply owns none.
#[derive(Debug, Clone)]
pub struct SlotMap {
    /// Every node seen so far, in discovery order (at most [`MAX_NODES`]).
    pub nodes: Vec<Node>,
    /// Each node's index by name, so a reply naming many nodes is read in linear time.
    by_name: std::collections::HashMap<String, u16>,
    /// Per slot: the index of its owner in `nodes`, or [`UNASSIGNED`].
    pub owner: Vec<u16>,
    /// Per node (indexed like `nodes`): its replicas, when the map was read with them
    /// ([`SlotMap::with_replicas`]); empty otherwise.
    pub replicas: Vec<Vec<u16>>,
}

/// Why the cluster's layout could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The server answered CLUSTER SLOTS with an error (cluster support disabled, ...).
    #[error("--cluster: {addr} is not a cluster node ({message})")]
    NotCluster { addr: String, message: String },
    /// The reply did not have the documented shape.
    #[error("--cluster: unexpected CLUSTER SLOTS reply from {addr}: {why}")]
    BadReply { addr: String, why: String },
    /// No master serves any slot.
    #[error("--cluster: the cluster at {0} has no slot assigned to a master")]
    NoSlots(String),
}

/// How a node's announced `host:port` becomes an address: given by the caller, so this module does no
/// I/O (`net::discovery::resolve_node` looks names up; the tests use literal addresses).
pub type Resolve<'a> = &'a dyn Fn(&str, u16) -> Option<SocketAddr>;

/// `host:port`, bracketed for IPv6.
fn node_name(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl SlotMap {
    /// An empty map: no node, no slot assigned.
    pub fn empty() -> Self {
        SlotMap {
            nodes: Vec::new(),
            by_name: std::collections::HashMap::new(),
            owner: vec![UNASSIGNED; SLOTS],
            replicas: Vec::new(),
        }
    }

    /// Reads a `CLUSTER SLOTS` reply. `seed` is the node that answered: an empty host in the reply
    /// means "the address you reached me at". Replicas are left out.
    pub fn from_cluster_slots(
        v: &Value,
        seed: SocketAddr,
        addr: &str,
        resolve: Resolve<'_>,
    ) -> Result<Self, ClusterError> {
        Self::read(v, seed, addr, resolve, false)
    }

    /// As [`Self::from_cluster_slots`], with each master's replicas as nodes of the map too
    /// (`--rfr`), listed in [`Self::replicas`].
    pub fn with_replicas(
        v: &Value,
        seed: SocketAddr,
        addr: &str,
        resolve: Resolve<'_>,
    ) -> Result<Self, ClusterError> {
        Self::read(v, seed, addr, resolve, true)
    }

    fn read(
        v: &Value,
        seed: SocketAddr,
        addr: &str,
        resolve: Resolve<'_>,
        replicas: bool,
    ) -> Result<Self, ClusterError> {
        let bad = |why: &str| ClusterError::BadReply {
            addr: addr.to_string(),
            why: why.to_string(),
        };
        let ranges = match v {
            Value::Error(e) => {
                return Err(ClusterError::NotCluster {
                    addr: addr.to_string(),
                    message: e.clone(),
                });
            }
            Value::Array(a) => a,
            _ => return Err(bad("not an array")),
        };
        // A node entry of a range (`[host, port, id, ...]`) as a node.
        let node = |entry: &Value, what: &str| -> Result<Node, ClusterError> {
            let Value::Array(entry) = entry else {
                return Err(bad(&format!("a {what} is not an array")));
            };
            let host = entry.first().and_then(Value::as_str).unwrap_or("");
            let port = entry
                .get(1)
                .and_then(Value::as_int)
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| bad(&format!("a {what} has no port")))?;
            Ok(if host.is_empty() || host == "?" {
                Node {
                    name: node_name(&seed.ip().to_string(), port),
                    addr: SocketAddr::new(seed.ip(), port),
                }
            } else {
                let sock = resolve(host, port)
                    .ok_or_else(|| bad(&format!("cannot resolve the {what} {host}:{port}")))?;
                Node {
                    name: node_name(host, port),
                    addr: sock,
                }
            })
        };
        let mut map = SlotMap::empty();
        for r in ranges {
            let Value::Array(parts) = r else {
                return Err(bad("a slot range is not an array"));
            };
            let (Some(start), Some(end), Some(master)) = (
                parts.first().and_then(Value::as_int),
                parts.get(1).and_then(Value::as_int),
                parts.get(2).filter(|m| matches!(m, Value::Array(_))),
            ) else {
                return Err(bad("a slot range lacks its bounds or master"));
            };
            if !(0..SLOTS as i64).contains(&start) || !(start..SLOTS as i64).contains(&end) {
                return Err(bad("a slot range is out of bounds"));
            }
            let full = || bad(&format!("it names more than {MAX_NODES} nodes"));
            let idx = map.add_node(node(master, "master")?).ok_or_else(full)?;
            for s in start..=end {
                map.owner[s as usize] = idx;
            }
            if replicas {
                for entry in &parts[3..] {
                    let r = map.add_node(node(entry, "replica")?).ok_or_else(full)?;
                    if r != idx && !map.replicas[idx as usize].contains(&r) {
                        map.replicas[idx as usize].push(r);
                    }
                }
            }
        }
        if map.owner.iter().all(|&o| o == UNASSIGNED) {
            return Err(ClusterError::NoSlots(addr.to_string()));
        }
        Ok(map)
    }

    /// The index of `node`, adding it when it is new; `None` when the map already holds [`MAX_NODES`].
    pub fn add_node(&mut self, node: Node) -> Option<u16> {
        if let Some(&i) = self.by_name.get(&node.name) {
            return Some(i);
        }
        if self.nodes.len() >= MAX_NODES {
            return None;
        }
        let i = self.nodes.len() as u16;
        self.by_name.insert(node.name.clone(), i);
        self.nodes.push(node);
        self.replicas.push(Vec::new());
        Some(i)
    }

    /// The index of the node a redirect names (`ip:port` bytes), adding it when it is new.
    /// `None` when the name cannot be resolved, or the map is full.
    pub fn node_for(&mut self, name: &[u8], resolve: Resolve<'_>) -> Option<u16> {
        let text = std::str::from_utf8(name).ok()?;
        if let Some(&i) = self.by_name.get(text) {
            return Some(i);
        }
        // A node this client has not seen: rare (a master added during the run), so allocating is fine.
        let (host, port) = text.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let addr = resolve(host, port.parse().ok()?)?;
        self.add_node(Node {
            name: text.to_string(),
            addr,
        })
    }

    /// Takes a freshly read layout, keeping the indices of nodes already known; true when a slot's
    /// owner changed. A new node past [`MAX_NODES`] (nodes that came and went during a long run) is
    /// left out: its slots read as unassigned, so their requests wait for a later layout.
    pub fn update_from(&mut self, fresh: &SlotMap) -> bool {
        let remap: Vec<u16> = fresh
            .nodes
            .iter()
            .map(|n| self.add_node(n.clone()).unwrap_or(UNASSIGNED))
            .collect();
        let mut moved = false;
        for (mine, &theirs) in self.owner.iter_mut().zip(&fresh.owner) {
            let owner = if theirs == UNASSIGNED {
                UNASSIGNED
            } else {
                remap[theirs as usize]
            };
            moved |= *mine != owner;
            *mine = owner;
        }
        for r in self.replicas.iter_mut() {
            r.clear();
        }
        for (theirs, reps) in fresh.replicas.iter().enumerate() {
            if remap[theirs] != UNASSIGNED {
                self.replicas[remap[theirs] as usize] = reps
                    .iter()
                    .map(|&r| remap[r as usize])
                    .filter(|&r| r != UNASSIGNED)
                    .collect();
            }
        }
        moved
    }

    /// Indices of the nodes that own at least one slot, in node order.
    pub fn masters(&self) -> Vec<u16> {
        let mut owns = vec![false; self.nodes.len()];
        for &o in &self.owner {
            if o != UNASSIGNED {
                owns[o as usize] = true;
            }
        }
        (0..self.nodes.len() as u16)
            .filter(|&i| owns[i as usize])
            .collect()
    }
}

/// One node of a `CLUSTER NODES` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedNode {
    /// The node's ip (empty: the node that answered).
    pub host: String,
    pub port: u16,
    /// A master that owns at least one slot.
    pub serving: bool,
}

/// Reads a `CLUSTER NODES` reply: every node with an address, masters and replicas, skipping those
/// still in a handshake, without an address, or marked failed.
pub fn parse_cluster_nodes(text: &str) -> Vec<ListedNode> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let (addr, flags) = (f.get(1)?, f.get(2)?);
            let skip = flags
                .split(',')
                .any(|x| matches!(x, "handshake" | "noaddr" | "fail"));
            if skip {
                return None;
            }
            let hostport = addr.split(['@', ',']).next()?;
            let (host, port) = hostport.rsplit_once(':')?;
            Some(ListedNode {
                host: host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string(),
                port: port.parse().ok()?,
                serving: flags.split(',').any(|x| x == "master")
                    && f.iter().skip(8).any(|r| !r.starts_with('[')),
            })
        })
        .collect()
}

impl ListedNode {
    /// `host:port`, bracketed for IPv6, as the other cluster figures name a node.
    pub fn name(&self) -> String {
        node_name(&self.host, self.port)
    }
}

/// What a cluster error reply asks the client to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirect<'a> {
    /// The slot lives on another node for good: update the map, resend there.
    Moved { slot: u16, node: &'a [u8] },
    /// The slot is being migrated and this key is already on `node`: resend there once, after ASKING.
    Ask { slot: u16, node: &'a [u8] },
    /// A multi-key request met a slot in migration: retry later.
    TryAgain,
    /// The cluster cannot serve now: retry later.
    ClusterDown,
}

/// Reads a redirect from an error reply line (`-MOVED 3999 127.0.0.1:6381\r\n`); `None` for other errors.
pub fn parse_redirect(line: &[u8]) -> Option<Redirect<'_>> {
    let line = line.strip_prefix(b"-").unwrap_or(line);
    let line = line.strip_suffix(b"\r\n").unwrap_or(line);
    if let Some(rest) = line.strip_prefix(b"MOVED ") {
        let (slot, node) = slot_and_node(rest)?;
        return Some(Redirect::Moved { slot, node });
    }
    if let Some(rest) = line.strip_prefix(b"ASK ") {
        let (slot, node) = slot_and_node(rest)?;
        return Some(Redirect::Ask { slot, node });
    }
    if line.starts_with(b"TRYAGAIN") {
        return Some(Redirect::TryAgain);
    }
    if line.starts_with(b"CLUSTERDOWN") {
        return Some(Redirect::ClusterDown);
    }
    None
}

fn slot_and_node(rest: &[u8]) -> Option<(u16, &[u8])> {
    let space = memchr::memchr(b' ', rest)?;
    let mut slot: u32 = 0;
    for &b in &rest[..space] {
        if !b.is_ascii_digit() {
            return None;
        }
        slot = slot * 10 + u32::from(b - b'0');
        if slot >= SLOTS as u32 {
            return None;
        }
    }
    (space > 0).then_some((slot as u16, &rest[space + 1..]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn slot_tags_are_written_in_place_and_never_stay_tag() {
        let mut req = b"*3\r\n$3\r\nSET\r\n$12\r\nk:{tag}:{tag}\r\n$5\r\n{tag}\r\n".to_vec();
        super::fill_slot_tags(&mut req, 0b000011_000010_000001);
        assert_eq!(
            &req[..],
            b"*3\r\n$3\r\nSET\r\n$12\r\nk:{BCD}:{BCD}\r\n$5\r\n{BCD}\r\n"
        );
        // `t`, `a`, `g` are letters 45, 26 and 32 of the alphabet.
        let mut req = b"{tag}".to_vec();
        super::fill_slot_tags(&mut req, 45 | (26 << 6) | (32 << 12));
        assert_eq!(&req[..], b"{tah}");
    }

    #[test]
    fn cluster_nodes_lists_each_node_and_whether_it_serves_slots() {
        use super::*;
        let text = "a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n\
                    b2 127.0.0.1:7002@17002,host2 master - 0 0 2 connected 5461-10922\n\
                    c3 127.0.0.1:7003@17003 master - 0 0 3 connected [5461-<-b2]\n\
                    d4 127.0.0.1:7004@17004 slave a1 0 0 1 connected\n\
                    e5 :0@0 master,noaddr - 0 0 0 disconnected\n\
                    f6 127.0.0.1:7006@17006 master,fail - 0 0 4 disconnected 10923-16383\n\
                    g7 ::1:7007@17007 handshake - 0 0 0 connected\n\
                    h8 ::1:7008@17008 master - 0 0 5 connected 100\n";
        let got: Vec<(String, bool)> = parse_cluster_nodes(text)
            .iter()
            .map(|n| (n.name(), n.serving))
            .collect();
        let want = [
            ("127.0.0.1:7001", true),
            ("127.0.0.1:7002", true),
            ("127.0.0.1:7003", false),
            ("127.0.0.1:7004", false),
            ("[::1]:7008", true),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|&(n, s)| (n.to_string(), s)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn digit_slots_match_the_crc_of_the_bytes() {
        use super::*;
        for (key, at) in [
            (&b"key:__rand_int__"[..], 4),
            (b"__rand_int__", 0),
            (b"a__rand_int__bc", 1),
        ] {
            let d = DigitSlots::new(key, at).unwrap();
            let mut k = key.to_vec();
            for v in [
                0u64,
                7,
                99,
                100,
                12_345,
                99_999,
                123_456_789_012,
                999_999_999_999,
                1 << 50,
            ] {
                let digits = format!("{:012}", v % 1_000_000_000_000);
                k[at..at + 12].copy_from_slice(digits.as_bytes());
                assert_eq!(d.slot(v), slot_of(&k), "{v}");
            }
        }
        assert!(DigitSlots::new(b"short", 0).is_none());
    }

    use super::*;

    #[test]
    fn composed_requests_are_routed_by_their_first_argument() {
        let mut b = Vec::new();
        crate::protocol::resp::encode_command(&mut b, &[b"SET", b"key:000000000042", b"v"]);
        assert_eq!(request_key(&b), Some(&b"key:000000000042"[..]));
        b.clear();
        crate::protocol::resp::encode_command(&mut b, &[b"MSET", b"key:{000000000042}:0", b"v"]);
        assert_eq!(request_key(&b), Some(&b"000000000042"[..]));
        b.clear();
        crate::protocol::resp::encode_command(&mut b, &[b"PING"]);
        assert_eq!(request_key(&b), None);
        assert_eq!(request_key(b"PING\r\n"), None);
        assert_eq!(request_key(b"*2\r\n$3\r\nGET\r\n$9\r\nshort"), None);
    }

    #[test]
    fn crc16_matches_the_cluster_spec() {
        // The check value from the cluster specification.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        // Slots as `CLUSTER KEYSLOT` gives them.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"key:000000000001"), key_slot(b"key:000000000001"));
    }

    #[test]
    fn hash_tags_follow_the_first_braces() {
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), slot_of(b"foo{}{bar}"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), slot_of(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), slot_of(b"bar"));
        assert_eq!(hash_tag(b"no tag"), None);
        assert_eq!(hash_tag(b"open{only"), None);
    }

    #[test]
    fn redirects_are_parsed() {
        assert_eq!(
            parse_redirect(b"-MOVED 3999 127.0.0.1:6381\r\n"),
            Some(Redirect::Moved {
                slot: 3999,
                node: b"127.0.0.1:6381"
            })
        );
        assert_eq!(
            parse_redirect(b"-ASK 12 [::1]:7000\r\n"),
            Some(Redirect::Ask {
                slot: 12,
                node: b"[::1]:7000"
            })
        );
        assert_eq!(
            parse_redirect(b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n"),
            Some(Redirect::TryAgain)
        );
        assert_eq!(
            parse_redirect(b"-CLUSTERDOWN The cluster is down\r\n"),
            Some(Redirect::ClusterDown)
        );
        assert_eq!(parse_redirect(b"-ERR wrong type\r\n"), None);
        assert_eq!(parse_redirect(b"-MOVED 99999 h:1\r\n"), None);
    }

    fn range(start: i64, end: i64, host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::Int(start),
            Value::Int(end),
            Value::Array(vec![
                Value::Bulk(host.as_bytes().to_vec()),
                Value::Int(port),
                Value::Bulk(b"id".to_vec()),
            ]),
        ])
    }

    /// Addresses written as IP literals only: no lookup in unit tests.
    fn literal(host: &str, port: u16) -> Option<SocketAddr> {
        Some(SocketAddr::new(host.parse().ok()?, port))
    }

    #[test]
    fn slot_map_from_cluster_slots() {
        let seed: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let v = Value::Array(vec![
            range(0, 5460, "127.0.0.1", 7000),
            range(5461, 10922, "", 7001),
            range(10923, 16383, "127.0.0.1", 7002),
        ]);
        let mut m = SlotMap::from_cluster_slots(&v, seed, "x", &literal).unwrap();
        assert_eq!(m.masters(), [0, 1, 2]);
        assert_eq!(m.nodes[1].name, "127.0.0.1:7001");
        assert_eq!(m.owner[0], 0);
        assert_eq!(m.owner[5461], 1);
        assert_eq!(m.owner[16383], 2);
        // A refresh where node 2 took everything keeps the indices.
        let fresh = Value::Array(vec![range(0, 16383, "127.0.0.1", 7002)]);
        let fresh = SlotMap::from_cluster_slots(&fresh, seed, "x", &literal).unwrap();
        m.update_from(&fresh);
        assert_eq!(m.masters(), [2]);
        assert_eq!(m.node_for(b"127.0.0.1:7001", &literal), Some(1));
        assert_eq!(m.node_for(b"127.0.0.1:7009", &literal), Some(3));
        let err = SlotMap::from_cluster_slots(
            &Value::Error("ERR This instance has cluster support disabled".into()),
            seed,
            "x",
            &literal,
        )
        .unwrap_err();
        assert!(err.to_string().contains("not a cluster node"), "{err}");
    }

    #[test]
    fn a_reply_naming_more_nodes_than_slots_is_refused_in_linear_time() {
        let seed: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        // 81,920 masters (ranges may repeat slots): more than 16-bit indices can tell apart, and the
        // old linear search per node made reading them quadratic.
        let ranges: Vec<Value> = (0..81_920i64)
            .map(|i| {
                let slot = i % SLOTS as i64;
                let host = format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255);
                range(slot, slot, &host, 7000)
            })
            .collect();
        let started = std::time::Instant::now();
        let err = SlotMap::from_cluster_slots(&Value::Array(ranges), seed, "x", &literal)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 16384 nodes"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // As many nodes as slots still fit, each with its index.
        let ranges: Vec<Value> = (0..SLOTS as i64)
            .map(|i| range(i, i, &format!("10.0.{}.{}", i >> 8, i & 255), 7000))
            .collect();
        let mut m =
            SlotMap::from_cluster_slots(&Value::Array(ranges), seed, "x", &literal).unwrap();
        assert_eq!(m.masters().len(), SLOTS);
        assert_eq!(m.owner[16383], 16383);
        // A redirect to one more node finds the map full.
        assert_eq!(m.node_for(b"10.1.0.0:7000", &literal), None);
        assert_eq!(m.node_for(b"10.0.63.255:7000", &literal), Some(16383));
    }

    #[test]
    fn replicas_are_read_only_when_asked_for() {
        let seed: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let with = |mut r: Value, host: &str, port: i64| {
            if let Value::Array(parts) = &mut r {
                parts.push(Value::Array(vec![
                    Value::Bulk(host.as_bytes().to_vec()),
                    Value::Int(port),
                    Value::Bulk(b"rid".to_vec()),
                ]));
            }
            r
        };
        let v = Value::Array(vec![
            with(range(0, 8191, "127.0.0.1", 7000), "127.0.0.1", 7003),
            with(range(8192, 16383, "127.0.0.1", 7001), "", 7004),
        ]);
        let plain = SlotMap::from_cluster_slots(&v, seed, "x", &literal).unwrap();
        assert_eq!(plain.nodes.len(), 2);
        let mut m = SlotMap::with_replicas(&v, seed, "x", &literal).unwrap();
        assert_eq!(m.nodes.len(), 4);
        assert_eq!(m.masters(), [0, 2]);
        assert_eq!(m.replicas[0], [1]);
        assert_eq!(m.replicas[2], [3]);
        assert_eq!(m.nodes[1].name, "127.0.0.1:7003");
        assert_eq!(m.nodes[3].name, "127.0.0.1:7004");
        // A failover: 7003 is now the master of the first range, 7000 its replica.
        let fresh = Value::Array(vec![
            with(range(0, 8191, "127.0.0.1", 7003), "127.0.0.1", 7000),
            with(range(8192, 16383, "127.0.0.1", 7001), "", 7004),
        ]);
        m.update_from(&SlotMap::with_replicas(&fresh, seed, "x", &literal).unwrap());
        assert_eq!(m.masters(), [1, 2]);
        assert_eq!(m.replicas[1], [0]);
        assert!(m.replicas[0].is_empty());
        assert_eq!(m.replicas[2], [3]);
    }
}
