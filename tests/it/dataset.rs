//! `--dataset FILE` (valkey-benchmark's): each request takes the next row of a CSV or TSV file into its
//! `__field:name__` placeholders. Checked from the server's side: the keys written and their values.

use crate::common::bench::Bench;
use crate::common::cluster::Cluster;
use crate::common::scratch::Scratch;
use crate::common::*;
use std::collections::HashMap;

fn write(dir: &Scratch, name: &str, text: &str) -> String {
    let p = dir.path(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn each_request_takes_the_next_row_in_turn() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("dataset-turn");
    let csv = write(
        &dir,
        "books.csv",
        "id,title,author\n1,\"Book, Part 1\",Ann\n2,Second,Bo\n3,Third \"\"3\"\",Cy\n",
    );
    // One connection, sequential keys: request i writes key i with row i % 3, as valkey-benchmark's
    // one counter over the run gives them.
    Bench::on(&s)
        .args([
            "--dataset",
            &csv,
            "-n",
            "7",
            "-c",
            "1",
            "-r",
            "100",
            "--sequential",
            "-q",
            "--",
            "HSET",
            "book:__rand_int__",
            "title",
            "__field:title__",
            "by",
            "[__field:author__]",
        ])
        .ok();
    assert_eq!(s.calls("hset"), 7);
    assert_eq!(s.cli(&["dbsize"]), "7");
    let rows = [
        ("Book, Part 1", "[Ann]"),
        ("Second", "[Bo]"),
        ("Third \"\"3\"\"", "[Cy]"),
    ];
    for i in 0..7 {
        let key = format!("book:{i:012}");
        assert_eq!(s.cli(&["hget", &key, "title"]), rows[i % 3].0, "{key}");
        assert_eq!(s.cli(&["hget", &key, "by"]), rows[i % 3].1, "{key}");
    }
}

#[test]
fn executors_share_the_rows_as_one_counter_would() {
    let _turn = crate::common::lock::shared();
    // 4 executors, 12 connections, -P 5: the requests still take the rows as one counter over the whole
    // run would (the executors' shares are consecutive stretches of it), so with -n a multiple of the
    // rows each row is sent exactly -n / rows times.
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("dataset-share");
    let mut text = String::from("n\n");
    for i in 0..10 {
        text.push_str(&format!("v{i}\n"));
    }
    let csv = write(&dir, "values.csv", &text);
    Bench::on(&s)
        .args([
            "--dataset",
            &csv,
            "-n",
            "600",
            "-c",
            "12",
            "-P",
            "5",
            "--threads",
            "4",
            "-r",
            "600",
            "--sequential",
            "-q",
            "SET",
            "k:__rand_int__",
            "__field:n__",
        ])
        .ok();
    assert_eq!(s.calls("set"), 600);
    assert_eq!(s.cli(&["dbsize"]), "600");
    let mut counts: HashMap<String, u64> = HashMap::new();
    for key in s.cli(&["--scan", "--pattern", "k:*"]).lines() {
        *counts.entry(s.cli(&["get", key])).or_default() += 1;
    }
    let want: HashMap<String, u64> = (0..10).map(|i| (format!("v{i}"), 60)).collect();
    assert_eq!(counts, want);
}

#[test]
fn tsv_maxdocs_base64_and_shared_numbers() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("dataset-tsv");
    let tsv = write(
        &dir,
        "items.tsv",
        "name\tblob\tcount\r\nitem1\taGVsbG8=\t100\r\nitem2\td29ybGQ=\t200\r\nitem3\tZXhjbHVkZWQ=\t300\r\n",
    );
    Bench::on(&s)
        .args([
            "--dataset",
            &tsv,
            "--maxdocs",
            "2",
            "-n",
            "40",
            "-r",
            "1000000",
            "-q",
            "--",
            "HSET",
            "item:__rand_1st__",
            "name",
            "__field:name__",
            "blob",
            "__field:blob:base64__",
            "count",
            "__field:count__",
            "id",
            "__rand_1st__",
        ])
        .ok();
    assert_eq!(s.calls("hset"), 40);
    let keys = s.cli(&["--scan", "--pattern", "item:*"]);
    assert!(!keys.is_empty());
    let mut names = std::collections::HashSet::new();
    for key in keys.lines() {
        let h = s.cli(&["hgetall", key]);
        let f: Vec<&str> = h.lines().collect();
        let get = |name: &str| f[f.iter().position(|x| *x == name).unwrap() + 1];
        let row = match get("name") {
            "item1" => ("hello", "100"),
            "item2" => ("world", "200"),
            other => panic!("{key}: name {other} is not from the first two rows"),
        };
        names.insert(get("name").to_string());
        assert_eq!((get("blob"), get("count")), row, "{key}");
        // __rand_1st__ takes one number per request: the key's digits and the id field agree.
        assert_eq!(&key["item:".len()..], get("id"), "{key}");
    }
    assert_eq!(names.len(), 2, "{keys}");
}

#[test]
fn xml_documents_of_the_root_element_are_the_rows() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("dataset-xml");
    let mut text = String::from("<?xml version=\"1.0\"?>\n<mediawiki>\n");
    for i in 0..5 {
        text.push_str(&format!(
            "<page>\n  <title>Page {i}</title>\n  <id>{i}</id>\n  <revision>\n    <id>{}</id>\n    <text bytes=\"3\">t&amp;{i}</text>\n  </revision>\n</page>\n",
            100 + i
        ));
    }
    text.push_str("</mediawiki>\n");
    let xml = write(&dir, "wiki.xml", &text);
    Bench::on(&s)
        .args([
            "--dataset",
            &xml,
            "--xml-root-element",
            "page",
            "--maxdocs",
            "4",
            "-n",
            "8",
            "-q",
            "--",
            "HSET",
            "page:__field:id__",
            "title",
            "__field:title__",
            "body",
            "__field:text__",
        ])
        .ok();
    assert_eq!(s.calls("hset"), 8);
    assert_eq!(s.cli(&["dbsize"]), "4");
    for i in 0..4 {
        let key = format!("page:{i}");
        assert_eq!(s.cli(&["hget", &key, "title"]), format!("Page {i}"));
        assert_eq!(s.cli(&["hget", &key, "body"]), format!("t&amp;{i}"));
    }
    let out = Bench::port(1)
        .args(["--dataset", &xml, "SET", "k", "__field:title__"])
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("XML dataset requires --xml-root-element parameter"),
        "{err}"
    );
}

#[test]
fn mistakes_are_one_line_usage_errors() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("dataset-errors");
    let csv = write(&dir, "d.csv", "name,value\nitem1,value1\n");
    let empty = write(&dir, "empty.csv", "name,value\n");
    let missing = dir.path("missing.csv");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--dataset", &csv, "-t", "set"],
            "Dataset mode requires a command with field placeholders",
        ),
        (
            &["--dataset", &csv, "SET", "k", "v"],
            "Dataset mode requires at least one field placeholder",
        ),
        (
            &["--dataset", &csv, "SET", "k", "__field:nope__"],
            "invalid value '{csv}' for '--dataset': field placeholder '__field:nope__' not found in dataset fields (its fields: name, value)",
        ),
        (
            &["--dataset", &csv, "SET", "__field:name__", "__data__"],
            "__data__ placeholders cannot be used with --dataset",
        ),
        (
            &[
                "--dataset",
                &csv,
                "SET",
                "__field:name__",
                "v",
                ";",
                "GET",
                "k",
            ],
            "';' sequence",
        ),
        (
            &["--dataset", &empty, "SET", "k", "__field:name__"],
            "has no rows",
        ),
        (
            &["--dataset", &missing, "SET", "k", "__field:name__"],
            "cannot read it",
        ),
        (&["SET", "k", "__field:name__"], "give --dataset FILE"),
        (&["--maxdocs", "2", "SET", "k", "v"], "'--maxdocs'"),
        (
            &["--xml-root-element", "page", "SET", "k", "v"],
            "'--xml-root-element'",
        ),
        (
            &[
                "--dataset",
                &csv,
                "--xml-root-element",
                "a b",
                "SET",
                "k",
                "__field:name__",
            ],
            "'--xml-root-element'",
        ),
    ];
    for (args, want) in cases {
        let out = Bench::port(1).args(*args).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = want.replace("{csv}", &csv);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&want), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn cluster_requests_go_to_their_keys_masters() {
    let _turn = crate::common::lock::shared();
    let c = Cluster::start();
    let dir = Scratch::new("dataset-cluster");
    let csv = write(&dir, "d.csv", "id,name\n1,Item1\n2,Item2\n3,Item3\n");
    let out = Bench::cluster(c.ports[0])
        .args([
            "--dataset",
            &csv,
            "-n",
            "300",
            "-c",
            "6",
            "-P",
            "4",
            "-r",
            "300",
            "--sequential",
            "-q",
            "HSET",
            "doc:__rand_int__",
            "name",
            "__field:name__",
        ])
        .output();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{out:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every key is on its slot's master (a misrouted HSET would have been redirected and show in
    // the counts), and row i % 3 went with key i.
    assert_eq!(c.dbsizes().iter().sum::<u64>(), 300);
    assert_eq!(c.calls("hset"), 300);
    let masters: Vec<u16> = c.ports.clone();
    for i in [0u64, 1, 2, 3, 150, 299] {
        let key = format!("doc:{i:012}");
        let slot: u16 = c
            .cli(masters[0], &["cluster", "keyslot", &key])
            .parse()
            .unwrap();
        let owner = c.owner(slot);
        let names = ["Item1", "Item2", "Item3"];
        assert_eq!(
            c.cli(owner, &["hget", &key, "name"]),
            names[(i % 3) as usize]
        );
    }
}

#[test]
fn cluster_tag_becomes_a_hash_tag_per_request() {
    let _turn = crate::common::lock::shared();
    // valkey-benchmark's `{tag}` in --cluster mode: each request gets a hash tag of its own (the same at
    // each place in it), so the keys spread over every master, and each goes to its own slot's master.
    let c = Cluster::start();
    let dir = Scratch::new("dataset-cluster-tag");
    let csv = write(&dir, "d.csv", "id,name\n1,Item1\n2,Item2\n");
    let run = |args: &[&str]| {
        let out = Bench::cluster(c.ports[0])
            .args(["-n", "3000", "-c", "6", "-P", "4"])
            .args(args)
            .output();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{args:?}: {out:?}\n{stdout}"
        );
        assert!(!stdout.contains("redirects:"), "{stdout}");
    };
    run(&[
        "--dataset",
        &csv,
        "-r",
        "3000",
        "--sequential",
        "-q",
        "HSET",
        "doc:{tag}:__rand_int__",
        "name",
        "__field:name__",
        "again",
        "{tag}",
    ]);
    run(&["-q", "SET", "plain:{tag}", "v"]);
    assert_eq!(c.calls("hset"), 3000);
    assert_eq!(c.calls("set"), 3000);
    let masters = c.ports.clone();
    let mut total = 0;
    for &m in &masters {
        let keys = c.cli(m, &["--scan", "--pattern", "doc:*"]);
        let n = keys.lines().count();
        assert!(n > 600, "master {m} holds {n} of 3000 keys");
        total += n;
        for key in keys.lines().take(50) {
            let (tag, digits) = key["doc:{".len()..].split_once("}:").unwrap();
            assert_eq!(tag.len(), 3, "{key}");
            assert!(tag != "tag" && digits.len() == 12, "{key}");
            assert!(["Item1", "Item2"].contains(&c.cli(m, &["hget", key, "name"]).as_str()));
            assert_eq!(
                c.cli(m, &["hget", key, "again"]),
                format!("{{{tag}}}"),
                "{key}"
            );
        }
        let plain = c.cli(m, &["--scan", "--pattern", "plain:*"]);
        assert!(!plain.is_empty() && !plain.contains("{tag}"), "{plain}");
    }
    assert_eq!(total, 3000);
}

#[test]
fn shards_go_on_where_the_shard_before_them_stops() {
    let _turn = crate::common::lock::shared();
    // --shard 0/3 .. 2/3 of -n 31 over a 7-row file: each process starts at its share's place in the
    // run, so key i (sequential keys are sliced the same way) holds row i % 7, as from one process.
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("dataset-shards");
    let mut text = String::from("v\n");
    for i in 0..7 {
        text.push_str(&format!("row{i}\n"));
    }
    let csv = write(&dir, "rows.csv", &text);
    for k in 0..3 {
        let shard = format!("{k}/3");
        Bench::on(&s)
            .args([
                "--shard",
                &shard,
                "--dataset",
                &csv,
                "-n",
                "31",
                "-c",
                "3",
                "-r",
                "31",
                "--sequential",
                "-q",
                "SET",
                "k:__rand_int__",
                "__field:v__",
            ])
            .ok();
    }
    assert_eq!(s.calls("set"), 31);
    for i in 0..31 {
        let key = format!("k:{i:012}");
        assert_eq!(s.cli(&["get", &key]), format!("row{}", i % 7), "{key}");
    }
}

#[test]
fn dataset_sets_take_the_expiry_range() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("dataset-expiry");
    let csv = write(&dir, "d.csv", "v\na\nb\n");
    Bench::on(&s)
        .args([
            "--dataset",
            &csv,
            "--expiry-range",
            "100-200",
            "-n",
            "20",
            "-c",
            "2",
            "-r",
            "20",
            "--sequential",
            "-q",
            "SET",
            "e:__rand_int__",
            "__field:v__",
        ])
        .ok();
    assert_eq!(s.calls("set"), 20);
    for i in 0..20 {
        let key = format!("e:{i:012}");
        let ttl: u64 = s.cli(&["ttl", &key]).parse().unwrap();
        assert!((98..=200).contains(&ttl), "{key}: ttl {ttl}");
        assert!(
            ["a", "b"].contains(&s.cli(&["get", &key]).as_str()),
            "{key}"
        );
    }
}
