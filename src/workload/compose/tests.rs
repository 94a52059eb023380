//! The composer's requests, byte for byte.
use super::*;

fn tpl(args: &[&str]) -> RequestTemplate {
    let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
    RequestTemplate::from_args(&a, true)
}

fn keys() -> KeyGen {
    let cursors = crate::workload::keys::Cursors::new(3);
    KeyGen::new(Distribution::Uniform, 1000, 0, 1, &cursors, &[])
}

#[test]
fn cluster_mset_keys_share_one_tag_when_composed() {
    let v = ValueSpec {
        min: 2,
        max: 5,
        random: true,
    };
    let params = crate::workload::SuiteParams {
        value: DATA.to_vec(),
        randomize: true,
        tag: String::new(),
        cluster: true,
    };
    let names = vec!["mset".to_string()];
    let t = &crate::workload::default_suite(Some(&names), &params).unwrap()[0];
    let c = Composer::new(
        &[Entry::one(&t.title, &t.command, &t.template)],
        true,
        v,
        None,
        7,
    );
    let mut k = keys();
    let mut rng = SmallRng::seed_from_u64(1);
    let turn = Cell::new(0);
    for _ in 0..20 {
        let mut out = Vec::new();
        let kind = c.write_request(&mut out, &mut k, &mut rng, &turn);
        let tag = crate::protocol::cluster::request_key(&out)
            .unwrap()
            .to_vec();
        // The composer knows where it wrote the key: the same bytes, without reading the request.
        let KeyAt::Fixed(at) = c.key(kind) else {
            panic!("the key's place is fixed: {:?}", c.key(kind));
        };
        assert_eq!(&out[at.clone()], tag.as_slice());
        let text = String::from_utf8(out).unwrap();
        let tags: Vec<&str> = text
            .split("\r\n")
            .filter(|l| l.starts_with("key:{"))
            .map(|l| &l[5..17])
            .collect();
        assert_eq!(tags.len(), 10, "{text}");
        assert!(tags.iter().all(|t| t.as_bytes() == tag), "{text}");
    }
}

#[test]
fn data_sizes_and_mixes_parse() {
    assert_eq!(parse_data_size("50", 100), Ok((50, 50)));
    assert_eq!(parse_data_size("10-20", 100), Ok((10, 20)));
    assert!(parse_data_size("20-10", 100).is_err());
    assert!(parse_data_size("0", 100).is_err());
    assert!(parse_data_size("x", 100).is_err());
}

#[test]
fn sets_get_a_ttl_from_the_range() {
    let spec = ValueSpec {
        min: 3,
        max: 3,
        random: false,
    };
    let set = tpl(&["SET", "k:__rand_int__", "v"]);
    let own = tpl(&["SET", "k", "v", "px", "100"]);
    let get = tpl(&["GET", "k"]);
    let expiry = Some(Expiry { min: 5, max: 12 });
    let entries = [
        Entry::one("SET", "SET", &set),
        Entry::one("SET", "SET", &own),
        Entry::one("GET", "GET", &get),
    ];
    let c = Composer::new(&entries, true, spec, expiry, 1);
    let (mut rng, turn, mut k) = (SmallRng::seed_from_u64(2), Cell::new(0), keys());
    let mut ttls = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(c.max_request_len());
    let cap = out.capacity();
    for _ in 0..300 {
        out.clear();
        let kind = c.write_request(&mut out, &mut k, &mut rng, &turn);
        let args = split_resp_args(&out).unwrap();
        match kind {
            0 => {
                assert_eq!((args.len(), args[3]), (5, &b"EX"[..]));
                let ttl: u64 = std::str::from_utf8(args[4]).unwrap().parse().unwrap();
                assert!((5..=12).contains(&ttl), "{ttl}");
                ttls.insert(ttl);
                let KeyAt::Fixed(at) = c.key(0) else {
                    panic!("the key comes before the TTL")
                };
                assert_eq!(&out[at.clone()], args[1]);
            }
            1 => assert_eq!(args.len(), 5, "a SET with its own PX is left alone"),
            _ => assert_eq!(args.len(), 2),
        }
        assert_eq!(out.capacity(), cap);
    }
    assert_eq!(ttls.len(), 8, "every TTL of 5..=12 drawn");
}

#[test]
fn each_command_walks_its_own_keys() {
    let seq = Distribution::Sequential { part: 0, parts: 1 };
    let spec = ValueSpec {
        min: 1,
        max: 1,
        random: false,
    };
    let a = tpl(&["SET", "a:__rand_int__", "__rand_1st__"]);
    let b = tpl(&["SET", "b:__rand_int__", "v"]);
    let mut eb = Entry::one("b", "SET", &b);
    eb.pattern = Some(seq);
    let c = Composer::new(&[Entry::one("a", "SET", &a), eb], true, spec, None, 1);
    let cursors = crate::workload::keys::Cursors::new(2);
    let mut k = KeyGen::new(seq, 100, 0, 1, &cursors, &c.patterns());
    let (mut rng, turn) = (SmallRng::seed_from_u64(2), Cell::new(0));
    let mut seen = Vec::new();
    for _ in 0..6 {
        let mut out = Vec::new();
        c.write_request(&mut out, &mut k, &mut rng, &turn);
        let args = split_resp_args(&out).unwrap();
        seen.push(format!(
            "{} {}",
            String::from_utf8_lossy(args[1]),
            String::from_utf8_lossy(args[2])
        ));
    }
    assert_eq!(
        seen,
        [
            "a:000000000000 000000000000",
            "b:000000000000 v",
            "a:000000000001 000000000001",
            "b:000000000001 v",
            "a:000000000002 000000000002",
            "b:000000000002 v",
        ]
    );
}

#[test]
fn expand_rewrites_key_and_fixed_data() {
    let fixed = ValueSpec {
        min: 3,
        max: 3,
        random: false,
    };
    let a = expand_args(&[b"set".to_vec(), KEY.to_vec(), DATA.to_vec()], &fixed);
    assert_eq!(a, [b"set".to_vec(), RAND_INT.to_vec(), b"xxx".to_vec()]);
    let varying = ValueSpec {
        min: 3,
        max: 9,
        random: false,
    };
    let a = expand_args(&[b"v:__data__".to_vec(), DATA.to_vec()], &varying);
    assert_eq!(a, [b"v:xxx".to_vec(), DATA.to_vec()]);
}

#[test]
fn shared_numbers_repeat_within_one_command() {
    let t = tpl(&[
        "MSET",
        "a:__rand_1st__",
        "__rand_1st__",
        "b:__rand_int__",
        "__rand_2nd__",
    ]);
    assert!(!needs_composer(&t, true), "patched in place");
    let c = Composer::new(
        &[Entry::one("MSET", "MSET", &t)],
        true,
        ValueSpec {
            min: 3,
            max: 3,
            random: false,
        },
        None,
        1,
    );
    let mut out = Vec::with_capacity(c.max_request_len());
    let mut rng = SmallRng::seed_from_u64(9);
    c.write_request(&mut out, &mut keys(), &mut rng, &Cell::new(0));
    let args = split_resp_args(&out).unwrap();
    assert_eq!(args[0], b"MSET");
    assert_eq!(&args[1][2..], args[2]);
    assert!(args[2].iter().all(u8::is_ascii_digit) && args[2].len() == 12);
    assert!(out.len() <= c.max_request_len());
}

#[test]
fn values_vary_in_length_and_content() {
    let t = tpl(&["SET", "key:__rand_int__", "__data__"]);
    let spec = ValueSpec {
        min: 5,
        max: 40,
        random: true,
    };
    let c = Composer::new(&[Entry::one("SET", "SET", &t)], true, spec, None, 2);
    let mut out = Vec::with_capacity(8 * c.max_request_len());
    let cap = out.capacity();
    let mut rng = SmallRng::seed_from_u64(3);
    let mut k = keys();
    let mut lens = std::collections::HashSet::new();
    let mut vals = std::collections::HashSet::new();
    for _ in 0..8 {
        out.clear();
        c.write_request(&mut out, &mut k, &mut rng, &Cell::new(0));
        let args = split_resp_args(&out).unwrap();
        let KeyAt::Fixed(at) = c.key(0) else {
            panic!("the key comes before the value: {:?}", c.key(0));
        };
        assert_eq!(&out[at.clone()], args[1]);
        assert!((5..=40).contains(&args[2].len()));
        assert!(args[2].iter().all(u8::is_ascii_alphanumeric));
        lens.insert(args[2].len());
        vals.insert(args[2].to_vec());
    }
    assert!(lens.len() > 1 && vals.len() > 1);
    assert_eq!(out.capacity(), cap);
}

#[test]
fn a_key_after_a_varying_value_is_read_from_the_request() {
    let spec = ValueSpec {
        min: 1,
        max: 9,
        random: false,
    };
    let t = tpl(&["SET", "__data__", "v"]);
    let c = Composer::new(&[Entry::one("SET", "SET", &t)], true, spec, None, 2);
    assert_eq!(c.key(0), &KeyAt::Varies);
    let t = tpl(&["PING"]);
    let c = Composer::new(&[Entry::one("PING", "PING", &t)], true, spec, None, 2);
    assert_eq!(c.key(0), &KeyAt::Absent);
}

#[test]
fn weights_pick_variants() {
    let get = tpl(&["GET", "k"]);
    let set = tpl(&["SET", "k", "v"]);
    let mut eg = Entry::one("GET", "GET", &get);
    eg.weight = 3;
    let c = Composer::new(
        &[eg, Entry::one("SET", "SET", &set)],
        false,
        ValueSpec {
            min: 1,
            max: 1,
            random: false,
        },
        None,
        0,
    );
    let mut rng = SmallRng::seed_from_u64(4);
    let mut n = [0u32; 2];
    let mut out = Vec::new();
    let turn = Cell::new(0);
    let mut first = Vec::new();
    for _ in 0..40_000 {
        out.clear();
        let k = c.write_request(&mut out, &mut keys(), &mut rng, &turn);
        n[k] += 1;
        if first.len() < 8 {
            first.push(k);
        }
    }
    assert_eq!(n, [30_000, 10_000]);
    assert_eq!(first, [0, 0, 1, 0, 0, 0, 1, 0], "interleaved, not in runs");
    assert_eq!(weighted_order(&[80, 20]).len(), 5);
    assert!(weighted_order(&[1_000_000, 999_999]).is_empty());
    let inline = RequestTemplate::inline("PING");
    let c = Composer::new(
        &[Entry::one("P", "PING", &inline)],
        true,
        ValueSpec {
            min: 1,
            max: 1,
            random: false,
        },
        None,
        0,
    );
    out.clear();
    c.write_request(&mut out, &mut keys(), &mut rng, &Cell::new(0));
    assert_eq!(out, b"PING\r\n");
}
