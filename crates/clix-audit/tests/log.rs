//! The audit log for real: files in a temp folder, writers in threads and
//! in other processes (this test binary started again).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use clix_audit::{AuditLog, Entry, Record, now_ms};
use serde::{Deserialize, Serialize};

/// A kind of line for these tests only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Probe {
    writer: String,
    seq: u32,
    payload: String,
}

impl Record for Probe {
    const KIND: &'static str = "probe";
}

/// Another kind sharing the file.
#[derive(Debug, Serialize, Deserialize)]
struct Other {
    argv: Vec<String>,
}

impl Record for Other {
    const KIND: &'static str = "other";
}

fn log_in(dir: &Path) -> AuditLog {
    AuditLog::new(dir.join("state/audit.jsonl"))
}

#[test]
fn a_line_is_the_envelope_then_the_kinds_fields_flat() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let before = now_ms();
    log.append("s-1", &Probe { writer: "w".into(), seq: 7, payload: "p".into() }).unwrap();
    let after = now_ms();
    let text = std::fs::read_to_string(&log.path).unwrap();
    let line = text.strip_suffix('\n').expect("one line ending in a newline");
    assert!(!line.contains('\n'));
    let prefix = r#"{"ts_ms":"#;
    let rest = r#","kind":"probe","session":"s-1","writer":"w","seq":7,"payload":"p"}"#;
    assert!(line.starts_with(prefix) && line.ends_with(rest), "{line}");
    let ts: u64 = line[prefix.len()..line.len() - rest.len()].parse().unwrap();
    assert!((before..=after).contains(&ts), "{ts} not in {before}..={after}");
    assert_eq!(
        log.read::<Probe>().unwrap(),
        [Entry {
            ts_ms: ts,
            kind: "probe".into(),
            session: "s-1".into(),
            record: Probe { writer: "w".into(), seq: 7, payload: "p".into() },
        }]
    );
}

#[test]
fn read_keeps_one_kind_and_skips_what_does_not_parse() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    assert!(log.read::<Probe>().unwrap().is_empty(), "no log yet: no lines");
    log.append("a", &Other { argv: vec!["ls".into()] }).unwrap();
    log.append("a", &Probe { writer: "w".into(), seq: 1, payload: String::new() }).unwrap();
    // A torn line and a line of this kind missing its fields, as an
    // interrupted or older writer may leave them.
    let mut text = std::fs::read_to_string(&log.path).unwrap();
    text.push_str("{\"ts_ms\":1,\"kind\":\"probe\",\"sess\n");
    text.push_str("{\"ts_ms\":1,\"kind\":\"probe\",\"session\":\"b\"}\n");
    std::fs::write(&log.path, text).unwrap();
    log.append("c", &Probe { writer: "w".into(), seq: 2, payload: String::new() }).unwrap();

    let probes = log.read::<Probe>().unwrap();
    let seen: Vec<(&str, u32)> = probes.iter().map(|e| (e.session.as_str(), e.record.seq)).collect();
    assert_eq!(seen, [("a", 1), ("c", 2)]);
    let others = log.read::<Other>().unwrap();
    assert_eq!((others.len(), others[0].kind.as_str()), (1, "other"));
}

#[test]
fn the_file_is_private_even_when_an_older_clix_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = log_in(dir.path());
    fresh.append("s", &Other { argv: vec![] }).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fresh.path), 0o600);

    let old = AuditLog::new(dir.path().join("old.jsonl"));
    std::fs::write(&old.path, "{\"ts_ms\":1,\"kind\":\"os\",\"session\":\"s\"}\n").unwrap();
    std::fs::set_permissions(&old.path, std::fs::Permissions::from_mode(0o644)).unwrap();
    old.append("s", &Other { argv: vec![] }).unwrap();
    assert_eq!(mode(&old.path), 0o600);
    assert_eq!(std::fs::read_to_string(&old.path).unwrap().lines().count(), 2, "the old lines stay");
}

#[test]
fn a_failure_is_returned_naming_the_file_not_the_line() {
    let dir = tempfile::tempdir().unwrap();
    // The state "folder" is a file: nothing can be created beneath it.
    std::fs::write(dir.path().join("state"), "").unwrap();
    let log = log_in(dir.path());
    let err = log.append("s", &Other { argv: vec!["--token".into(), "hunter2".into()] }).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&log.path.display().to_string()), "{text}");
    assert!(!text.contains("hunter2") && !text.contains("--token"), "{text}");
}

/// Set in a child started by the test below: the child only writes.
const CHILD: &str = "CLIX_TEST_AUDIT_WRITER";
const LINES_PER_WRITER: u32 = 150;

/// Line `seq` of `writer`: sizes from a few bytes to 96 KiB, far past
/// PIPE_BUF and any stdio buffer, so a line written in pieces would show.
fn probe(writer: &str, seq: u32) -> Probe {
    let len = (seq as usize * 7919) % (96 * 1024);
    let fill = (b'a' + (seq % 26) as u8) as char;
    Probe { writer: writer.to_string(), seq, payload: std::iter::repeat_n(fill, len).collect() }
}

fn write_all_lines(log: &AuditLog, writer: &str) {
    for seq in 0..LINES_PER_WRITER {
        log.append("concurrent", &probe(writer, seq)).unwrap();
    }
}

#[test]
fn concurrent_writers_never_interleave_a_line() {
    if let Some(path) = std::env::var_os(CHILD) {
        let log = AuditLog::new(path);
        let name = format!("process-{}", std::process::id());
        write_all_lines(&log, &name);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(dir.path());
    let children: Vec<std::process::Child> = (0..3)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "concurrent_writers_never_interleave_a_line", "--test-threads=1"])
                .env(CHILD, &log.path)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::scope(|s| {
        for t in 0..3 {
            let log = &log;
            s.spawn(move || write_all_lines(log, &format!("thread-{t}")));
        }
    });
    for mut child in children {
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < Duration::from_secs(120), "a writer process did not finish");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(child.wait().unwrap().success());
    }

    let text = std::fs::read(&log.path).unwrap();
    let lines: Vec<&[u8]> = text.strip_suffix(b"\n").unwrap().split(|b| *b == b'\n').collect();
    assert_eq!(lines.len() as u32, 6 * LINES_PER_WRITER, "a line was lost or split");
    let mut per_writer: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    for line in lines {
        let entry: Entry<Probe> = serde_json::from_slice(line)
            .unwrap_or_else(|e| panic!("a torn line ({e}): {}", String::from_utf8_lossy(&line[..line.len().min(200)])));
        assert_eq!(entry.record, probe(&entry.record.writer, entry.record.seq), "a line's content was mixed");
        per_writer.entry(entry.record.writer).or_default().push(entry.record.seq);
    }
    assert_eq!(per_writer.len(), 6, "{:?}", per_writer.keys());
    for (writer, seqs) in per_writer {
        assert_eq!(seqs, (0..LINES_PER_WRITER).collect::<Vec<_>>(), "{writer}'s lines, in its order");
    }
}
