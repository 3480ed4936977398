//! The reachability probe: a failure classified with what to check, and
//! its answer reused by another clix process (another `Clip` on the same
//! state folder) within the cache's lifetime.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_clip::{Clip, ClipConfig, ClipEntry};

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn a_probe_is_classified_and_its_answer_shared_across_processes() {
    if !std::path::Path::new("/usr/bin/ssh").exists() {
        clix_testkit::skip_missing("a_probe_is_classified_and_its_answer_shared_across_processes", "no ssh client");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let known = state.path().join("known_hosts");
    let entry = ClipEntry {
        name: "closed".into(),
        kind: "ssh".into(),
        host: Some("127.0.0.1".into()),
        port: Some(closed_port()),
        options: vec![format!("UserKnownHostsFile={}", known.display())],
        ..ClipEntry::default()
    };
    let config =
        ClipConfig { environments: vec![entry], state_dir: state.path().to_path_buf(), ..ClipConfig::default() };
    let first = Clip::new(config.clone()).unwrap();
    let env = first.get("closed").unwrap().clone();
    let probed = first.probe(&env).await;
    assert!(!probed.reachable && !probed.cached);
    let reason = probed.reason.clone().unwrap();
    assert!(reason.contains("connection refused") && reason.contains("hint: is sshd running on 127.0.0.1"), "{reason}");

    // Another process (another Clip on the same state folder) reuses it.
    let second = Clip::new(config.clone()).unwrap();
    let again = second.probe(&env).await;
    assert!(again.cached, "{again:?}");
    assert_eq!(again.reason.as_deref(), Some(reason.as_str()));

    // A changed entry under the same name is probed afresh.
    let mut changed = config;
    changed.environments[0].port = Some(closed_port());
    let third = Clip::new(changed).unwrap();
    let env = third.get("closed").unwrap().clone();
    assert!(!third.probe(&env).await.cached);
}

#[test]
fn bad_entries_are_all_reported_at_once() {
    let bad = |name: &str, kind: &str| ClipEntry { name: name.into(), kind: kind.into(), ..ClipEntry::default() };
    let err = Clip::new(ClipConfig { environments: vec![bad("a", "ssh"), bad("b", "vm")], ..ClipConfig::default() })
        .unwrap_err();
    let entries: Vec<&str> = err.0.iter().map(|p| p.entry.as_str()).collect();
    assert_eq!(entries, ["a", "b"], "{err}");
    let shown = err.to_string();
    assert_eq!(shown.lines().count(), 2, "{shown}");
    assert!(shown.contains("[[clip]] a: kind ssh needs `host`"), "{shown}");
    assert!(shown.contains("[[clip]] b: kind = \"vm\" is not a kind"), "{shown}");
}
