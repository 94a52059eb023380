//! The tests to run: the default suite, custom commands, and their compiled request templates.

pub(crate) mod compose;
pub(crate) mod dataset;
pub(crate) mod expiry;
pub(crate) mod keys;
pub(crate) mod memtier_keys;
pub(crate) mod mix;
pub mod replay;
pub(crate) mod scan_cursor;
pub(crate) mod template;
pub(crate) mod verify;
pub(crate) mod words;
pub(crate) mod xml;

pub use template::{PipelineBuffer, RAND_INT, RequestTemplate};

/// One benchmark test: a title and the request it repeats.
#[derive(Debug, Clone)]
pub struct TestSpec {
    /// The title printed in every output format.
    pub title: String,
    /// The upper-case command name, as `INFO commandstats` names it (`cmdstat_<lower>`).
    pub command: String,
    /// The request, compiled once.
    pub template: RequestTemplate,
    /// Set when requests differ beyond `__rand_int__` digits (varying values, shared random numbers,
    /// a mix): each request is then composed on its own instead of patched in a fixed layout.
    pub compose: Option<std::sync::Arc<crate::workload::compose::Composer>>,
    /// `--replay`: the captured commands this test sends, each once, instead of its template.
    pub replay: Option<std::sync::Arc<crate::workload::replay::Replay>>,
}

/// A default-suite entry: its title, the `-t` names that select it, and how to build its command.
struct SuiteEntry {
    title: &'static str,
    names: &'static [&'static str],
    build: fn(&SuiteParams) -> Request,
}

enum Request {
    Inline(&'static str),
    Args(Vec<Vec<u8>>),
    /// Arguments whose placeholders all take the first one's number.
    SharedArgs(Vec<Vec<u8>>),
}

/// What the default suite's commands depend on.
pub struct SuiteParams {
    /// The value written by SET, LPUSH, ... (`-d` bytes of `x`).
    pub value: Vec<u8>,
    /// Whether `-r` was given (ZADD scores become random too).
    pub randomize: bool,
    /// A hash tag inserted into every key (cluster mode), e.g. `{tag}`; empty otherwise.
    pub tag: String,
    /// Cluster mode: MSET's ten keys share one hash tag (`key:{<random>}:0` .. `key:{<same>}:9`),
    /// so each MSET stays in one slot while successive MSETs spread over all slots.
    pub cluster: bool,
}

fn args(parts: &[&[u8]]) -> Request {
    Request::Args(parts.iter().map(|p| p.to_vec()).collect())
}

fn key(p: &SuiteParams, prefix: &str, suffix: &str) -> Vec<u8> {
    format!("{prefix}{}{suffix}", p.tag).into_bytes()
}

fn lrange(p: &SuiteParams, last: &str) -> Request {
    args(&[b"LRANGE", &key(p, "mylist", ""), b"0", last.as_bytes()])
}

const SUITE: &[SuiteEntry] = &[
    SuiteEntry {
        title: "PING_INLINE",
        names: &["ping_inline", "ping"],
        build: |_| Request::Inline("PING"),
    },
    SuiteEntry {
        title: "PING_MBULK",
        names: &["ping_mbulk", "ping"],
        build: |_| args(&[b"PING"]),
    },
    SuiteEntry {
        title: "SET",
        names: &["set"],
        build: |p| args(&[b"SET", &key(p, "key", ":__rand_int__"), &p.value]),
    },
    SuiteEntry {
        title: "GET",
        names: &["get"],
        build: |p| args(&[b"GET", &key(p, "key", ":__rand_int__")]),
    },
    SuiteEntry {
        title: "INCR",
        names: &["incr"],
        build: |p| args(&[b"INCR", &key(p, "counter", ":__rand_int__")]),
    },
    SuiteEntry {
        title: "LPUSH",
        names: &["lpush"],
        build: |p| args(&[b"LPUSH", &key(p, "mylist", ""), &p.value]),
    },
    SuiteEntry {
        title: "RPUSH",
        names: &["rpush"],
        build: |p| args(&[b"RPUSH", &key(p, "mylist", ""), &p.value]),
    },
    SuiteEntry {
        title: "LPOP",
        names: &["lpop"],
        build: |p| args(&[b"LPOP", &key(p, "mylist", "")]),
    },
    SuiteEntry {
        title: "RPOP",
        names: &["rpop"],
        build: |p| args(&[b"RPOP", &key(p, "mylist", "")]),
    },
    SuiteEntry {
        title: "SADD",
        names: &["sadd"],
        build: |p| args(&[b"SADD", &key(p, "myset", ""), b"element:__rand_int__"]),
    },
    SuiteEntry {
        title: "HSET",
        names: &["hset"],
        build: |p| {
            args(&[
                b"HSET",
                &key(p, "myhash", ""),
                b"element:__rand_int__",
                &p.value,
            ])
        },
    },
    SuiteEntry {
        title: "SPOP",
        names: &["spop"],
        build: |p| args(&[b"SPOP", &key(p, "myset", "")]),
    },
    SuiteEntry {
        title: "ZADD",
        names: &["zadd"],
        build: |p| {
            // As in valkey-benchmark, the member is `__rand_1st__`, a stream of its own: under
            // --sequential the members follow the key sequence instead of sharing it with the score.
            let score: &[u8] = if p.randomize { RAND_INT } else { b"0" };
            args(&[
                b"ZADD",
                &key(p, "myzset", ""),
                score,
                b"element:__rand_1st__",
            ])
        },
    },
    SuiteEntry {
        title: "ZPOPMIN",
        names: &["zpopmin"],
        build: |p| args(&[b"ZPOPMIN", &key(p, "myzset", "")]),
    },
    SuiteEntry {
        title: "LPUSH (needed to benchmark LRANGE)",
        names: &[
            "lrange",
            "lrange_100",
            "lrange_300",
            "lrange_500",
            "lrange_600",
        ],
        build: |p| args(&[b"LPUSH", &key(p, "mylist", ""), &p.value]),
    },
    SuiteEntry {
        title: "LRANGE_100 (first 100 elements)",
        names: &["lrange_100", "lrange"],
        build: |p| lrange(p, "99"),
    },
    SuiteEntry {
        title: "LRANGE_300 (first 300 elements)",
        names: &["lrange_300", "lrange"],
        build: |p| lrange(p, "299"),
    },
    SuiteEntry {
        title: "LRANGE_500 (first 500 elements)",
        names: &["lrange_500", "lrange"],
        build: |p| lrange(p, "499"),
    },
    SuiteEntry {
        title: "LRANGE_600 (first 600 elements)",
        names: &["lrange_600", "lrange"],
        build: |p| lrange(p, "599"),
    },
    SuiteEntry {
        title: "MSET (10 keys)",
        names: &["mset"],
        build: |p| {
            let mut a: Vec<Vec<u8>> = vec![b"MSET".to_vec()];
            if p.cluster {
                for i in 0..10 {
                    a.push(format!("key:{{__rand_int__}}:{i}").into_bytes());
                    a.push(p.value.clone());
                }
                return Request::SharedArgs(a);
            }
            for _ in 0..10 {
                a.push(key(p, "key", ":__rand_int__"));
                a.push(p.value.clone());
            }
            Request::Args(a)
        },
    },
    // XADD is in the default suite from redis-benchmark 7.2 on; the 7.0 suite (Debian's) has none,
    // so it runs only when asked for by name.
    SuiteEntry {
        title: "XADD",
        names: &["xadd!"],
        build: |p| args(&[b"XADD", &key(p, "mystream", ""), b"*", b"myfield", &p.value]),
    },
];

/// Every name `-t` accepts, in suite order.
pub fn test_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for e in SUITE {
        for n in e.names {
            let n = n.trim_end_matches('!');
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// A test name that the default suite does not have: the name as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown test '{0}'")]
pub struct UnknownTest(pub String);

/// The default-suite tests selected by `-t` (`None`: all), in suite order.
/// Returns the first unknown name as the error.
pub fn default_suite(
    selection: Option<&[String]>,
    params: &SuiteParams,
) -> Result<Vec<TestSpec>, UnknownTest> {
    let valid = test_names();
    if let Some(sel) = selection
        && let Some(bad) = sel.iter().find(|s| !valid.contains(&s.as_str()))
    {
        return Err(UnknownTest(bad.clone()));
    }
    let selected = |e: &SuiteEntry| match selection {
        None => e.names.iter().all(|n| !n.ends_with('!')),
        Some(sel) => e
            .names
            .iter()
            .any(|n| sel.iter().any(|s| s == n.trim_end_matches('!'))),
    };
    Ok(SUITE
        .iter()
        .filter(|e| selected(e))
        .map(|e| {
            let template = match (e.build)(params) {
                Request::Inline(line) => RequestTemplate::inline(line),
                Request::Args(a) => RequestTemplate::from_args(&a, params.randomize),
                Request::SharedArgs(a) => {
                    RequestTemplate::from_args(&a, params.randomize).share_first_placeholder()
                }
            };
            let command = e.title.split([' ', '_']).next().unwrap_or(e.title);
            TestSpec {
                title: e.title.to_string(),
                command: command.to_string(),
                template,
                compose: None,
                replay: None,
            }
        })
        .collect())
}

/// A custom command from the trailing arguments, titled by its command line.
pub fn custom_test(args: &[Vec<u8>], title: String, randomize: bool) -> TestSpec {
    TestSpec {
        title,
        command: String::from_utf8_lossy(&args[0]).to_uppercase(),
        template: RequestTemplate::from_args(args, randomize),
        compose: None,
        replay: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> SuiteParams {
        SuiteParams {
            value: b"xxx".to_vec(),
            randomize: true,
            tag: String::new(),
            cluster: false,
        }
    }

    #[test]
    fn suite_order_and_titles() {
        let all = default_suite(None, &params()).unwrap();
        let titles: Vec<&str> = all.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles.first(), Some(&"PING_INLINE"));
        assert_eq!(titles.last(), Some(&"MSET (10 keys)"));
        assert!(!titles.contains(&"XADD"));
        assert_eq!(all.len(), 20);
    }

    #[test]
    fn aliases_select_groups() {
        let sel = |s: &str| {
            let v: Vec<String> = s.split(',').map(String::from).collect();
            default_suite(Some(&v), &params())
                .unwrap()
                .into_iter()
                .map(|t| t.title)
                .collect::<Vec<_>>()
        };
        assert_eq!(sel("ping"), ["PING_INLINE", "PING_MBULK"]);
        assert_eq!(
            sel("lrange_300"),
            [
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_300 (first 300 elements)"
            ]
        );
        assert_eq!(sel("lrange").len(), 5);
        assert_eq!(sel("xadd"), ["XADD"]);
        assert_eq!(sel("get,set"), ["SET", "GET"]);
    }

    #[test]
    fn unknown_name_is_reported() {
        let v = vec!["set".to_string(), "sett".to_string()];
        assert_eq!(
            default_suite(Some(&v), &params()).unwrap_err(),
            UnknownTest("sett".into())
        );
    }

    #[test]
    fn key_range_is_the_first_argument_or_its_tag() {
        let t = RequestTemplate::from_args(
            &[
                b"SET".to_vec(),
                b"foo:__rand_int__".to_vec(),
                b"{v}".to_vec(),
            ],
            true,
        );
        assert_eq!(&t.bytes()[t.key_range().unwrap()], b"foo:__rand_int__");
        let t = RequestTemplate::from_args(&[b"GET".to_vec(), b"a{user1}b".to_vec()], true);
        assert_eq!(&t.bytes()[t.key_range().unwrap()], b"user1");
        let t = RequestTemplate::from_args(&[b"PING".to_vec()], false);
        assert!(t.key_range().is_none());
        let long: Vec<Vec<u8>> = std::iter::once(b"MSET".to_vec())
            .chain((0..12).map(|i| format!("k{i}").repeat(5).into_bytes()))
            .collect();
        let t = RequestTemplate::from_args(&long, false);
        assert_eq!(&t.bytes()[t.key_range().unwrap()], b"k0k0k0k0k0");
    }

    #[test]
    fn cluster_mset_keys_share_one_tag() {
        let p = SuiteParams {
            cluster: true,
            ..params()
        };
        let v = vec!["mset".to_string()];
        let t = &default_suite(Some(&v), &p).unwrap()[0].template;
        assert_eq!(t.rand_offsets().len(), 1);
        let mut buf = PipelineBuffer::new(t, 2);
        let mut n = 0;
        let out = buf
            .fill(2, |_| {
                n += 1;
                n
            })
            .to_vec();
        let text = String::from_utf8(out).unwrap();
        let first: Vec<&str> = text.split("*21").nth(1).unwrap().split("\r\n").collect();
        let keys: Vec<&str> = first
            .iter()
            .copied()
            .filter(|l| l.starts_with("key:"))
            .collect();
        assert_eq!(keys.len(), 10);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(*k, format!("key:{{000000000001}}:{i}"));
        }
        assert!(text.contains("key:{000000000002}:9"));
        let range = t.key_range().unwrap();
        assert_eq!(&t.bytes()[range], RAND_INT);
    }

    #[test]
    fn commands_for_commandstats() {
        let all = default_suite(None, &params()).unwrap();
        let cmd: Vec<&str> = all.iter().map(|t| t.command.as_str()).collect();
        assert!(cmd.contains(&"LRANGE") && cmd.contains(&"MSET") && cmd.contains(&"PING"));
    }
}
