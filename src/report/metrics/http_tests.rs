//! Tests of `report/metrics/http.rs`: each limit where it lies (fed whole and a byte at a time), the
//! request head's parse, the date, and a server on loopback (keep-alive, pipelining, `HEAD`, refusals,
//! the busy reply, a prompt stop).

use super::*;
use std::net::TcpListener;

/// Scans `data` fed `piece` bytes at a time, as reads would hand it over.
fn scan(data: &[u8], piece: usize) -> Step {
    let mut s = Scan::default();
    let mut upto = 0;
    loop {
        upto = (upto + piece).min(data.len());
        let step = s.step(&data[..upto]);
        if step != Step::More || upto == data.len() {
            return step;
        }
    }
}

/// A request line of exactly `len` bytes, its `\r\n` included.
fn line_of(len: usize) -> Vec<u8> {
    let mut l = b"GET /".to_vec();
    l.resize(len - b" HTTP/1.1\r\n".len(), b'a');
    l.extend_from_slice(b" HTTP/1.1\r\n");
    assert_eq!(l.len(), len);
    l
}

#[test]
fn the_request_line_may_be_line_max_bytes_and_no_more() {
    for piece in [1, 7, 100_000] {
        let mut ok = line_of(LINE_MAX);
        ok.extend_from_slice(b"\r\n");
        assert_eq!(scan(&ok, piece), Step::Whole(LINE_MAX + 2), "{piece}");
        let mut long = line_of(LINE_MAX + 1);
        long.extend_from_slice(b"\r\n");
        assert_eq!(scan(&long, piece), Step::Refuse(414), "{piece}");
        // A line that never ends is refused once LINE_MAX bytes are in.
        assert_eq!(scan(&vec![b'a'; LINE_MAX - 1], piece), Step::More);
        assert_eq!(scan(&vec![b'a'; LINE_MAX], piece), Step::Refuse(414));
    }
}

#[test]
fn headers_may_be_so_many_lines_and_bytes_and_no_more() {
    let head = |lines: usize, each: usize| {
        let mut h = b"GET /metrics HTTP/1.1\r\n".to_vec();
        for _ in 0..lines {
            let mut l = b"X: ".to_vec();
            l.resize(each - 2, b'v');
            l.extend_from_slice(b"\r\n");
            h.extend_from_slice(&l);
        }
        h.extend_from_slice(b"\r\n");
        h
    };
    for piece in [1, 13, 100_000] {
        let ok = head(HEADER_LINES_MAX, 10);
        assert_eq!(scan(&ok, piece), Step::Whole(ok.len()));
        assert_eq!(
            scan(&head(HEADER_LINES_MAX + 1, 10), piece),
            Step::Refuse(431)
        );
        // The blank line counts: 2 lines of (HEADERS_MAX - 2) / 2 bytes fill the allowance.
        let full = head(2, (HEADERS_MAX - 2) / 2);
        assert_eq!(scan(&full, piece), Step::Whole(full.len()));
        assert_eq!(
            scan(&head(2, (HEADERS_MAX - 2) / 2 + 1), piece),
            Step::Refuse(431)
        );
        // Headers that never end are refused with the buffer, whose size is the two limits.
        let mut endless = b"GET / HTTP/1.1\r\n".to_vec();
        endless.resize(endless.len() + HEADERS_MAX, b'x');
        assert_eq!(scan(&endless, piece), Step::Refuse(431));
        assert!(endless.len() <= LINE_MAX + HEADERS_MAX);
    }
}

#[test]
fn a_pipelined_head_ends_at_its_own_blank_line() {
    let two = b"GET /a HTTP/1.1\nHost: x\n\nGET /b HTTP/1.1\r\n\r\n";
    assert_eq!(scan(two, 1), Step::Whole(25));
    assert_eq!(scan(two, 100), Step::Whole(25));
}

#[test]
fn a_head_parses_into_method_path_and_keep_alive() {
    fn p(h: &str) -> Result<Request<'_>, u16> {
        parse(h.as_bytes())
    }
    let req = |method, path, keep| Ok(Request { method, path, keep });
    assert_eq!(
        p("GET /metrics HTTP/1.1\r\n\r\n"),
        req("GET", "/metrics", true)
    );
    assert_eq!(
        p("GET /metrics?x=1 HTTP/1.1\r\nConnection: Close\r\n\r\n"),
        req("GET", "/metrics", false)
    );
    assert_eq!(
        p("HEAD /metrics HTTP/1.0\r\n\r\n"),
        req("HEAD", "/metrics", false)
    );
    assert_eq!(
        p("GET /metrics HTTP/1.0\r\nconnection: foo, Keep-Alive\r\n\r\n"),
        req("GET", "/metrics", true)
    );
    assert_eq!(
        p("GET http://h:9464/metrics HTTP/1.1\r\n\r\n"),
        req("GET", "/metrics", true)
    );
    assert_eq!(
        p("GET http://h:9464 HTTP/1.1\r\n\r\n"),
        req("GET", "/", true)
    );
    // A body is never read: the connection cannot be kept.
    assert_eq!(
        p("GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\n"),
        req("GET", "/", false)
    );
    assert_eq!(
        p("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
        req("POST", "/", false)
    );
    assert_eq!(
        p("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
        req("GET", "/", true)
    );
    for bad in [
        "GET /metrics\r\n\r\n",
        "GET  /metrics HTTP/1.1\r\n\r\n",
        "get / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
        "GET / HTTP/1.1\r\nBad name: x\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        "GET / FTP/1.1\r\n\r\n",
        "\r\n",
    ] {
        assert_eq!(p(bad), Err(400), "{bad:?}");
    }
    assert_eq!(p("GET / HTTP/2.0\r\n\r\n"), Err(505));
    assert_eq!(parse(b"GET /\xff HTTP/1.1\r\n\r\n"), Err(400));
}

#[test]
fn dates_are_imf_fixdates() {
    let at = |s| http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
    assert_eq!(at(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(at(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(at(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_eq!(at(4_102_444_799), "Thu, 31 Dec 2099 23:59:59 GMT");
}

/// A server on loopback answering `/page` with "page" and other paths with 404.
fn server() -> Server {
    let handler = |path: &str| match path {
        "/page" => Reply {
            status: 200,
            content_type: "text/plain",
            body: "page".to_string(),
        },
        _ => Reply::text(404, "not here"),
    };
    Server::start("127.0.0.1:0".parse().unwrap(), Box::new(handler)).unwrap()
}

fn connect(s: &Server) -> TcpStream {
    let c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

/// Reads one reply: (status, head, body), the body read by its Content-Length unless `is_head`.
fn reply(c: &mut TcpStream, is_head: bool) -> (u16, String, String) {
    let mut raw = Vec::new();
    let mut byte = [0u8];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(c.read(&mut byte).unwrap(), 1, "{raw:?}");
        raw.push(byte[0]);
    }
    let head = String::from_utf8(raw).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let mut body = vec![0u8; if is_head { 0 } else { len }];
    c.read_exact(&mut body).unwrap();
    let status = head[9..12].parse().unwrap();
    (status, head, String::from_utf8(body).unwrap())
}

/// True when the server closed `c` (after anything it still had to say).
fn closed(c: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).is_ok() && rest.is_empty()
}

#[test]
fn a_connection_is_kept_for_its_requests_pipelined_or_not() {
    let s = server();
    let mut c = connect(&s);
    c.write_all(b"GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (status, head, body) = reply(&mut c, false);
    assert_eq!((status, body.as_str()), (200, "page"));
    assert!(head.contains("Connection: keep-alive\r\n") && head.contains("Date: "));
    c.write_all(b"HEAD /page HTTP/1.1\r\n\r\nGET /else HTTP/1.1\r\n\r\nGET /page HTTP/1.1\r\n")
        .unwrap();
    let (status, head, _) = reply(&mut c, true);
    assert_eq!(status, 200);
    assert!(head.contains("Content-Length: 4\r\n"), "{head}");
    let (status, _, body) = reply(&mut c, false);
    assert_eq!((status, body.as_str()), (404, "not here\n"));
    c.write_all(b"Connection: close\r\n\r\n").unwrap();
    let (status, head, body) = reply(&mut c, false);
    assert_eq!((status, body.as_str()), (200, "page"));
    assert!(head.contains("Connection: close\r\n"));
    assert!(closed(&mut c));
}

#[test]
fn refusals_name_their_limit_and_close() {
    let s = server();
    let cases: [(Vec<u8>, u16, &str); 4] = [
        (
            b"POST /page HTTP/1.1\r\n\r\n".to_vec(),
            405,
            "only GET and HEAD",
        ),
        (line_of(LINE_MAX + 1), 414, "longer than 8192 bytes"),
        (
            [
                b"GET / HTTP/1.1\r\n".as_slice(),
                &b"X: y\r\n".repeat(HEADER_LINES_MAX + 1),
            ]
            .concat(),
            431,
            "over 64 lines or 16384 bytes",
        ),
        (b"GET / HTTP/3\r\n\r\n".to_vec(), 505, "HTTP/1.1"),
    ];
    for (sent, status, says) in cases {
        let mut c = connect(&s);
        c.write_all(&sent).unwrap();
        let (got, head, body) = reply(&mut c, false);
        assert_eq!(got, status, "{body}");
        assert!(body.contains(says) && body.lines().count() == 1, "{body}");
        assert!(head.contains("Connection: close\r\n"));
        assert!(closed(&mut c));
    }
}

#[test]
fn a_head_not_whole_by_its_deadline_is_refused_with_408_and_a_silent_one_closed() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut server_side, _) = l.accept().unwrap();
    let mut buf = vec![0u8; LINE_MAX + HEADERS_MAX];
    let stop = AtomicBool::new(false);
    let soon = || Instant::now() + Duration::from_millis(100);
    let mut have = 0;
    assert_eq!(
        read_head(&mut server_side, &mut buf, &mut have, soon(), &stop),
        Head::Gone
    );
    client.write_all(b"GET /page HTTP/1.1\r\n").unwrap();
    assert_eq!(
        read_head(&mut server_side, &mut buf, &mut have, soon(), &stop),
        Head::Refused(408)
    );
    stop.store(true, Ordering::Relaxed);
    let start = Instant::now();
    let far = Instant::now() + Duration::from_secs(60);
    assert_eq!(
        read_head(&mut server_side, &mut buf, &mut have, far, &stop),
        Head::Gone
    );
    assert!(start.elapsed() < POLL * 2);
}

#[test]
fn past_the_workers_and_the_queue_a_connection_gets_503_at_once() {
    let mut s = server();
    // One for each worker, each given time to be taken from the queue (the listener looks every
    // 20 ms), then as many as the queue holds.
    let mut held = Vec::new();
    for _ in 0..WORKERS {
        held.push(connect(&s));
        std::thread::sleep(Duration::from_millis(60));
    }
    held.extend((0..QUEUE).map(|_| connect(&s)));
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(s.shared.waiting.load(Ordering::Relaxed), QUEUE);
    let start = Instant::now();
    let mut c = connect(&s);
    let (status, head, body) = reply(&mut c, false);
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("busy: 4 connections served and 16 waiting"),
        "{body}"
    );
    assert!(head.contains("Retry-After: 1\r\n"));
    assert!(closed(&mut c));
    assert!(start.elapsed() < Duration::from_secs(1));
    // Stopped with every worker in a read of a silent connection: all end within a poll or two.
    let start = Instant::now();
    s.shut();
    assert!(start.elapsed() < POLL * 4, "{:?}", start.elapsed());
    drop(held);
}
