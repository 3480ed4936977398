//! `clip` with the `local` kind: a second folder on this machine, run
//! through the real bubblewrap sandbox, with the cases of the ssh tests
//! that apply.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::Path;
use std::time::{Duration, Instant};

use clix_clip::{ClipConfig, ClipEntry};
use clix_engine::{Engine, EngineConfig, SandboxSettings, ShellLimits};

struct Session {
    ws: tempfile::TempDir,
    tree: tempfile::TempDir,
    home: tempfile::TempDir,
    engine: Engine,
}

/// `None` (a visible skip) where bubblewrap cannot make a sandbox.
async fn session(test: &str, timeout_secs: u64) -> Option<Session> {
    if let clix_sandbox::Availability::Unavailable(why) = clix_sandbox::probe() {
        clix_testkit::skip_missing(test, &why);
        return None;
    }
    let (ws, tree, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let entry = ClipEntry {
        name: "tree".into(),
        description: "a second sandboxed tree".into(),
        kind: "local".into(),
        path: Some(tree.path().to_path_buf()),
        ..ClipEntry::default()
    };
    let engine = Engine::new(EngineConfig {
        limits: ShellLimits { timeout_secs, max_memory_bytes: 1 << 20, ..ShellLimits::default() },
        capabilities: vec![std::sync::Arc::new(ClipConfig {
            environments: vec![entry],
            state_dir: home.path().join("state"),
            audit_log: Some(clix_audit::AuditLog::new(home.path().join("state/audit.jsonl"))),
            session_id: "local".into(),
            sandbox: Some(SandboxSettings { output_cap_mb: 1, ..SandboxSettings::default() }),
            clix_config_dir: None,
            output_cap_bytes: 1 << 20,
        })],
        ..EngineConfig::new(ws.path())
    })
    .await
    .unwrap();
    Some(Session { ws, tree, home, engine })
}

async fn raw(s: &mut Session, line: &str) -> (String, String, i32) {
    let r = s.engine.run_raw(line, None).await;
    (String::from_utf8_lossy(&r.stdout).into_owned(), String::from_utf8_lossy(&r.stderr).into_owned(), r.exit_code)
}

#[tokio::test]
async fn lines_stdin_failures_and_long_output_in_the_sandboxed_tree() {
    let Some(mut s) = session("lines_stdin_failures_and_long_output_in_the_sandboxed_tree", 30).await else { return };
    std::fs::write(s.tree.path().join("data.txt"), "b\na\nc\n").unwrap();
    // The line runs in the tree's folder, in bash.
    let (out, err, code) = raw(&mut s, "clip tree 'sort data.txt | head -2; pwd'").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("a\nb\n{}\n", s.tree.path().canonicalize().unwrap().display()));
    // stdin from the pipeline.
    let (out, _, code) = raw(&mut s, "seq 1 10 | clip tree 'wc -l > count.txt; cat count.txt'").await;
    assert_eq!((out.trim(), code), ("10", 0));
    assert_eq!(std::fs::read_to_string(s.tree.path().join("count.txt")).unwrap().trim(), "10");
    // A failure: exit code and stderr.
    let (out, err, code) = raw(&mut s, "clip tree 'echo partial; cat /no/such; exit 5'").await;
    assert_eq!((out.as_str(), code), ("partial\n", 5));
    assert!(err.contains("No such file or directory"), "{err}");
    // The sandbox: the session's workspace is not there, nor the network.
    let line = format!("clip tree 'ls {}'", s.ws.path().display());
    let (_, _, code) = raw(&mut s, &line).await;
    assert_ne!(code, 0, "the workspace is not mounted in the tree's sandbox");
    // Long output: spilled by Layer 2 with exact totals.
    let shown = s.engine.run("clip tree 'seq 1 50000'", None).await;
    assert!(shown.text.contains("--- output truncated: 50000 lines"), "{}", shown.text);
    // Past the line's memory (1 MiB here) the line stops, nothing cut passes on.
    let (out, err, code) = raw(&mut s, "clip tree 'yes 123456789 | head -n 300000' | wc -c").await;
    assert_eq!((out.as_str(), code), ("", 1), "{err}");
    assert!(err.contains("[error] stopped: clip tree's output passed the memory one line may hold (1 MiB"), "{err}");
    // The audit line is clip's, with the environment.
    let audit = std::fs::read_to_string(s.home.path().join("state/audit.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!((last["kind"].as_str(), last["environment"].as_str()), (Some("clip"), Some("tree")));
    assert_eq!(last["stdout_bytes"], 3_000_000);
}

#[tokio::test]
async fn a_time_out_stops_the_sandboxed_line() {
    let Some(mut s) = session("a_time_out_stops_the_sandboxed_line", 2).await else { return };
    let started = Instant::now();
    let shown = s.engine.run("clip tree 'sleep 120; echo never'", None).await;
    assert_eq!(shown.raw.exit_code, 124, "{}", shown.text);
    assert!(shown.text.contains("timed out after 2s"), "{}", shown.text);
    // Cut at the limit, not run to its end: a generous bound, far below 120 s.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn pull_and_push_between_the_tree_and_the_workspace() {
    let Some(mut s) = session("pull_and_push_between_the_tree_and_the_workspace", 30).await else { return };
    let t = s.tree.path().to_path_buf();
    std::fs::create_dir_all(t.join("out/logs")).unwrap();
    std::fs::write(t.join("out/result.txt"), "42\n").unwrap();
    std::fs::write(t.join("out/logs/run.log"), "ok\n").unwrap();
    let (out, err, code) = raw(&mut s, "clip tree pull out/result.txt").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pulled tree:out/result.txt → result.txt: 1 file, 3 bytes"), "{out}");
    let line = format!("clip tree pull {}/out got", t.display());
    let (out, err, code) = raw(&mut s, &line).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 files, 6 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(s.ws.path().join("got/logs/run.log")).unwrap(), "ok\n");
    // A local path ending in / is a folder, made when missing.
    let (_, err, code) = raw(&mut s, "clip tree pull out/result.txt saved/").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(s.ws.path().join("saved/result.txt")).unwrap(), "42\n");

    std::fs::create_dir_all(s.ws.path().join("src/lib")).unwrap();
    std::fs::write(s.ws.path().join("src/main.py"), "print(1)\n").unwrap();
    std::fs::write(s.ws.path().join("src/lib/util.py"), "X = 2\n").unwrap();
    let (out, err, code) = raw(&mut s, "clip tree push src/main.py main.py").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 file, 9 bytes"), "{out}");
    let (out, err, code) = raw(&mut s, "clip tree push src .").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 files, 15 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(t.join("src/lib/util.py")).unwrap(), "X = 2\n");
    let (out, _, _) = raw(&mut s, "clip tree 'cat main.py src/lib/util.py'").await;
    assert_eq!(out, "print(1)\nX = 2\n");

    // Outside the workspace, or outside the tree: refused, nothing moves.
    let (_, err, code) = raw(&mut s, "clip tree push /etc/passwd stolen").await;
    assert_eq!(code, 1);
    assert!(err.contains("/etc/passwd is outside the workspace"), "{err}");
    let (_, err, code) = raw(&mut s, "clip tree pull /etc/passwd").await;
    assert_eq!(code, 1);
    assert!(err.contains("is outside the environment's folder"), "{err}");
    let (_, err, code) = raw(&mut s, "clip tree push src/main.py ../../escaped.py").await;
    assert_eq!(code, 1, "{err}");
    assert!(!t.join("stolen").exists() && !Path::new("/escaped.py").exists());
    assert!(!s.ws.path().join("passwd").exists());
}
