//! `clip` over real SSH: an sshd started on 127.0.0.1 on a free port with
//! keys generated in a temp folder (the real `~/.ssh` is never touched),
//! reached through the engine exactly as a model's line would be.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clix_clip::{ClipConfig, ClipEntry};
use clix_engine::{Engine, EngineConfig, PolicyConfig, ShellLimits};
use clix_testkit::{Sshd, free_port, which, whoami};

/// A private sshd, or `None` (with a visible skip) where sshd is missing.
fn start_sshd(test: &str) -> Option<Sshd> {
    if !Sshd::installed() {
        clix_testkit::skip_missing(test, "openssh-server / openssh-client are not installed (.ci/run installs them)");
        return None;
    }
    Some(Sshd::start())
}

/// The `[[clip]]` entry that reaches `sshd`.
fn entry(sshd: &Sshd, name: &str) -> ClipEntry {
    ClipEntry {
        name: name.into(),
        description: "a test host over real ssh".into(),
        kind: "ssh".into(),
        host: Some("127.0.0.1".into()),
        port: Some(sshd.port()),
        user: Some(whoami()),
        identity_file: Some(sshd.identity()),
        options: sshd.client_options(),
        ..ClipEntry::default()
    }
}

struct Session {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
    engine: Engine,
}

/// The shared connections a session started outlive it by design
/// (`ControlPersist`); a test's are ended with it.
impl Drop for Session {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(self.home.path().join("state/clip/ssh")) else { return };
        for entry in entries.filter_map(Result::ok) {
            if std::os::unix::fs::FileTypeExt::is_socket(&entry.file_type().unwrap()) {
                let control = format!("ControlPath={}", entry.path().display());
                // Only PATH: this runs in the secrets test's child too, whose ssh records its environment.
                let path = std::env::var_os("PATH").unwrap_or_default();
                let mut stop = Command::new("ssh");
                stop.args(["-o", &control, "-O", "exit", "x"]).env_clear().env("PATH", path);
                let _ = stop.stderr(Stdio::null()).status();
            }
        }
    }
}

async fn session(entries: Vec<ClipEntry>, timeout_secs: u64, policy: Option<PolicyConfig>) -> Session {
    let ws = tempfile::tempdir().unwrap();
    // Stands for CLIX_HOME: the state folder (sockets, audit) lives here.
    let home = tempfile::tempdir().unwrap();
    // 1 MiB a line, so that one call's output can pass it.
    let limits = ShellLimits { timeout_secs, max_memory_bytes: 1 << 20, ..ShellLimits::default() };
    let engine = Engine::new(EngineConfig {
        limits,
        policy,
        capabilities: vec![std::sync::Arc::new(ClipConfig {
            environments: entries,
            state_dir: home.path().join("state"),
            audit_log: Some(clix_audit::AuditLog::new(home.path().join("state/audit.jsonl"))),
            session_id: "clip-test".into(),
            sandbox: None,
            clix_config_dir: None,
            output_cap_bytes: 1 << 20,
        })],
        ..EngineConfig::new(ws.path())
    })
    .await
    .unwrap();
    Session { ws, home, engine }
}

async fn raw(s: &mut Session, line: &str, stdin: Option<&[u8]>) -> (String, String, i32) {
    let r = s.engine.run_raw(line, stdin).await;
    (String::from_utf8_lossy(&r.stdout).into_owned(), String::from_utf8_lossy(&r.stderr).into_owned(), r.exit_code)
}

fn audit_lines(s: &Session) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(s.home.path().join("state/audit.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_pipelines_failures_and_long_output_over_real_ssh() {
    let Some(sshd) = start_sshd("lines_pipelines_failures_and_long_output_over_real_ssh") else { return };
    let mut s = session(vec![entry(&sshd, "box")], 30, None).await;

    // A line, run by bash on the other side: its pipes run there.
    let (out, err, code) =
        raw(&mut s, "clip box 'echo hi from $(hostname) | tr a-z A-Z; echo $BASH_VERSION | cut -c1'", None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("HI FROM "), "{out}");
    assert!(out.ends_with("\n5\n") || out.ends_with("\n4\n"), "bash ran it: {out}");

    // A pipeline with stdin: the stage's stdin goes there.
    let (out, err, code) = raw(&mut s, "seq 1 1000 | clip box 'wc -l' | tr -d ' '", None).await;
    assert_eq!((out.as_str(), code), ("1000\n", 0), "{err}");
    let (out, _, code) = raw(&mut s, "clip box 'sort -r | head -2'", Some(b"a\nc\nb\n")).await;
    assert_eq!((out.as_str(), code), ("c\nb\n", 0));

    // A failing command: its exit code and stderr, apart from stdout.
    let (out, err, code) = raw(&mut s, "clip box 'echo partial; ls /no/such/place; exit 3'", None).await;
    assert_eq!((out.as_str(), code), ("partial\n", 3));
    assert!(err.contains("No such file or directory"), "{err}");
    let (_, _, code) = raw(&mut s, "clip box false || echo handled", None).await;
    assert_eq!(code, 0);

    // A long output: counted exactly, previewed, spilled to a workspace file.
    let shown = s.engine.run("clip box 'seq 1 100000'", None).await;
    assert_eq!(shown.raw.exit_code, 0);
    assert!(shown.truncated);
    assert!(shown.text.contains("--- output truncated: 100000 lines"), "{}", shown.text);
    let spill = shown.spill_path.clone().expect("spilled");
    let spilled = std::fs::read_to_string(s.ws.path().join(&spill)).unwrap();
    assert_eq!(spilled.lines().count(), 100_000);
    assert_eq!(spilled.lines().last(), Some("100000"));
    // Past the line's memory (1 MiB here) the line stops: a cut output
    // would reach `wc` as whole.
    let (out, err, code) = raw(&mut s, "clip box 'yes 123456789 | head -n 300000' | wc -c; echo after", None).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(
            "[error] stopped: clip box's output passed the memory one line may hold (1 MiB, [limits] max_memory_bytes)"
        ),
        "{err}"
    );
    assert!(!out.contains("after") && !out.contains("1048576"), "{out}");

    // Every call was one audit line: environment, command, exit code, bytes, duration.
    let audit = audit_lines(&s);
    let failing = audit.iter().find(|l| l["command"].as_str().unwrap_or("").contains("exit 3")).unwrap();
    assert_eq!(failing["kind"], "clip");
    assert_eq!(failing["environment"], "box");
    assert_eq!(failing["exit_code"], 3);
    assert_eq!(failing["stdout_bytes"], 8);
    assert!(failing["duration_ms"].is_u64());
    assert!(audit.len() >= 6, "{audit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_out_ends_the_local_client_and_the_remote_command() {
    let Some(sshd) = start_sshd("a_time_out_ends_the_local_client_and_the_remote_command") else { return };
    let mut s = session(vec![entry(&sshd, "box")], 2, None).await;
    // A marker no other process has, to find the remote command by.
    let marker = format!("{}", 100_000 + u32::from(sshd.port()));
    let started = Instant::now();
    let shown = s.engine.run(&format!("clip box 'sleep {marker}; echo never'"), None).await;
    assert_eq!(shown.raw.exit_code, 124, "{}", shown.text);
    assert!(shown.text.contains("timed out after 2s"), "{}", shown.text);
    assert!(!shown.text.contains("never"), "{}", shown.text);
    // Cut at the limit, not run to its end (the marker's 100,000+ s).
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    // The local client was killed; the remote `timeout` ends the remote
    // command too, within its grace (both name the marker in their argv).
    // A safety net: the loop ends as soon as it is gone.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let alive = Command::new("pgrep").args(["-f", &format!("sleep {marker}")]).output().unwrap();
        if !alive.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the remote sleep outlived the time limit");
        std::thread::sleep(Duration::from_millis(100));
    }
    let audit = audit_lines(&s);
    assert_eq!(audit.last().unwrap()["ended"], "timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_and_push_files_and_folders_inside_the_workspace_only() {
    let Some(sshd) = start_sshd("pull_and_push_files_and_folders_inside_the_workspace_only") else { return };
    let mut s = session(vec![entry(&sshd, "box")], 30, None).await;
    let remote = tempfile::tempdir().unwrap();
    let r = remote.path();
    std::fs::create_dir_all(r.join("logs/old")).unwrap();
    std::fs::write(r.join("logs/app.log"), "one\ntwo\n").unwrap();
    std::fs::write(r.join("logs/old/app.1.log"), "zero\n").unwrap();
    std::fs::write(r.join("single.txt"), "just me\n").unwrap();

    // A file, to a named place, with its parents made.
    let (out, err, code) = raw(&mut s, &format!("clip box pull {}/single.txt in/one.txt", r.display()), None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pulled box:") && out.contains("1 file, 8 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(s.ws.path().join("in/one.txt")).unwrap(), "just me\n");
    // A folder, into the current folder under its own name.
    let (out, err, code) =
        raw(&mut s, &format!("mkdir -p sub && cd sub && clip box pull {}/logs", r.display()), None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 files, 13 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(s.ws.path().join("sub/logs/old/app.1.log")).unwrap(), "zero\n");
    raw(&mut s, "cd ..", None).await;

    // Push a file and a folder back.
    std::fs::create_dir_all(s.ws.path().join("out/deep")).unwrap();
    std::fs::write(s.ws.path().join("out/report.md"), "# done\n").unwrap();
    std::fs::write(s.ws.path().join("out/deep/data.csv"), "a,b\n1,2\n").unwrap();
    let (out, err, code) = raw(&mut s, &format!("clip box push out/report.md {}/report.md", r.display()), None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pushed out/report.md → box:") && out.contains("1 file, 7 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(r.join("report.md")).unwrap(), "# done\n");
    let (out, err, code) = raw(&mut s, &format!("clip box push out {}/uploaded", r.display()), None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 files, 15 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(r.join("uploaded/deep/data.csv")).unwrap(), "a,b\n1,2\n");
    let (out, _, _) = raw(&mut s, &format!("clip box 'cat {}/uploaded/report.md'", r.display()), None).await;
    assert_eq!(out, "# done\n");

    // A path outside the workspace is refused, both ways, and nothing moves.
    for line in [
        format!("clip box push /etc/hostname {}/stolen", r.display()),
        format!("clip box push ../../etc/hostname {}/stolen", r.display()),
        format!("clip box pull {}/single.txt /tmp/outside.txt", r.display()),
    ] {
        let (_, err, code) = raw(&mut s, &line, None).await;
        assert_eq!(code, 1, "{line}: {err}");
        assert!(err.contains("is outside the workspace"), "{line}: {err}");
    }
    assert!(!r.join("stolen").exists());
    // A symlink planted in the workspace is not followed out of it.
    std::os::unix::fs::symlink("/etc/hostname", s.ws.path().join("link")).unwrap();
    let (_, err, code) = raw(&mut s, &format!("clip box push link {}/stolen", r.display()), None).await;
    assert_ne!(code, 0, "{err}");
    assert!(!r.join("stolen").exists());

    let pulls: Vec<_> = audit_lines(&s).into_iter().filter(|l| l["action"] == "pull").collect();
    assert_eq!(pulls[0]["bytes_moved"], 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_hosts_say_what_failed_and_what_to_check() {
    let Some(sshd) = start_sshd("unreachable_hosts_say_what_failed_and_what_to_check") else { return };
    let mut closed = entry(&sshd, "closed");
    closed.port = Some(free_port());
    let mut nowhere = entry(&sshd, "nowhere");
    nowhere.host = Some("no-such-host.invalid".into());
    // A key the host does not know.
    let mut stranger = entry(&sshd, "stranger");
    stranger.identity_file = Some(sshd.stranger_identity());
    let mut s = session(vec![entry(&sshd, "box"), closed, nowhere, stranger], 30, None).await;

    let (_, err, code) = raw(&mut s, "clip closed 'echo hi'", None).await;
    assert_eq!(code, 255, "{err}");
    assert!(err.contains("cannot reach closed") && err.contains("connection refused"), "{err}");
    assert!(err.contains("hint: is sshd running on 127.0.0.1 and listening on port"), "{err}");
    let (_, err, _) = raw(&mut s, "clip nowhere 'echo hi'", None).await;
    assert!(err.contains("DNS: the host name does not resolve"), "{err}");
    let (_, err, _) = raw(&mut s, "clip stranger 'echo hi'", None).await;
    assert!(err.contains("authentication refused") && err.contains("BatchMode"), "{err}");

    let (out, err, code) = raw(&mut s, "clip list", None).await;
    assert_eq!(code, 0, "{err}");
    let row = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap().to_string();
    assert!(row("box ").contains("ssh") && row("box ").contains("yes"), "{out}");
    assert!(row("closed").contains("NO"), "{out}");
    assert!(out.contains("connection refused"), "{out}");
    let (out, _, _) = raw(&mut s, "clip list --json", None).await;
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["environments"][0]["reachable"], true);
    assert_eq!(v["environments"][0]["cached"], true, "the list above probed it a moment ago");
    assert_eq!(v["environments"][1]["reachable"], false);

    // What it is, where, and an example.
    let (out, _, code) = raw(&mut s, "clip box", None).await;
    assert_eq!(code, 0);
    assert!(out.contains("kind:    ssh") && out.contains(&format!("127.0.0.1:{}", sshd.port())), "{out}");
    assert!(out.contains("status:  reachable") && out.contains("clip box 'uname -a"), "{out}");
    // An unknown name navigates.
    let (_, err, code) = raw(&mut s, "clip bx 'ls'", None).await;
    assert_eq!(code, 127);
    assert!(err.contains("no environment named bx. Did you mean box?"), "{err}");
    assert!(err.contains("Available: box, closed, nowhere, stranger"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_call_shares_the_first_ones_connection() {
    let Some(sshd) = start_sshd("the_second_call_shares_the_first_ones_connection") else { return };
    let mut s = session(vec![entry(&sshd, "box")], 30, None).await;
    let (out, err, _) = raw(&mut s, "clip box 'echo hi; echo first >&2'", None).await;
    assert_eq!(out, "hi\n", "{err}");
    // The first call's stderr is its own: the shared connection, started
    // for it, does not hold its pipes.
    assert_eq!(err, "first\n");
    // That warm calls are faster than the cold one is a figure, measured
    // by the `clip` benchmark (clix-bench); here, that they share the one
    // connection (the master socket below).
    for _ in 0..3 {
        let (out, _, _) = raw(&mut s, "clip box 'echo hi'", None).await;
        assert_eq!(out, "hi\n");
    }
    // The shared connection's socket is in clix's private state folder.
    let sockets = s.home.path().join("state/clip/ssh");
    assert!(sockets.as_os_str().len() <= 60, "short enough for a socket path: {}", sockets.display());
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&sockets).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    let is_socket = |e: &std::fs::DirEntry| std::os::unix::fs::FileTypeExt::is_socket(&e.file_type().unwrap());
    let masters = std::fs::read_dir(&sockets).unwrap().filter_map(Result::ok).filter(is_socket).count();
    assert_eq!(masters, 1, "one master connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_checks_the_line_sent_there_like_a_local_line() {
    let Some(sshd) = start_sshd("the_policy_checks_the_line_sent_there_like_a_local_line") else { return };
    let mut s = session(vec![entry(&sshd, "prod")], 30, Some(PolicyConfig::default())).await;
    let marker = tempfile::tempdir().unwrap();
    let (_, err, code) = raw(&mut s, "clip prod 'rm -rf /'", None).await;
    assert_eq!(code, 126, "{err}");
    assert!(err.contains("refused by the policy"), "{err}");
    let (_, err, code) =
        raw(&mut s, &format!("clip prod 'ls / && rm -rf / ; touch {}/ran'", marker.path().display()), None).await;
    assert_eq!(code, 126, "{err}");
    assert!(!marker.path().join("ran").exists(), "nothing of a refused line runs");
    let (out, err, code) = raw(&mut s, "clip prod 'echo allowed'", None).await;
    assert_eq!((out.as_str(), code), ("allowed\n", 0), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_stay_out_of_the_ssh_child() {
    let Some(sshd) = start_sshd("secrets_stay_out_of_the_ssh_child") else { return };
    // The ssh client is pointed at a wrapper that records its own environment.
    let bin = tempfile::tempdir().unwrap();
    let record = bin.path().join("env.txt");
    let real = which("ssh").unwrap();
    // Every call appends its environment, one record per call.
    let wrapper = format!("#!/bin/sh\n{{ env; echo ----; }} >> {}\nexec {} \"$@\"\n", record.display(), real.display());
    std::fs::write(bin.path().join("ssh"), wrapper).unwrap();
    std::fs::set_permissions(bin.path().join("ssh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = format!(
        "set -e; export PATH={}:$PATH AGENT_API_KEY=sk-agent-secret OPENAI_API_KEY=sk-openai-secret; \
         exec \"$0\" --exact secrets_probe --nocapture",
        bin.path().display()
    );
    // Environment changes are made in a child process of this test binary,
    // so no other test's threads see them.
    let probe = Command::new("sh")
        .args(["-c", &script, std::env::current_exe().unwrap().to_str().unwrap()])
        .env("CLIX_TEST_SSH_PORT", sshd.port().to_string())
        .env("CLIX_TEST_SSH_DIR", sshd.dir())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&probe.stdout);
    assert!(probe.status.success() && report.contains("1 passed"), "the probe did not run:\n{report}");
    let seen = std::fs::read_to_string(&record).unwrap();
    let calls: Vec<&str> = seen.split("----\n").filter(|c| !c.trim().is_empty()).collect();
    // clix's own ssh children carry the person's environment (HOME among
    // it); the test's clean-up ssh gets only PATH, so it cannot stand in for them.
    assert!(calls.iter().any(|c| c.contains("HOME=")), "clix's ssh calls were not recorded:\n{seen}");
    for secret in ["AGENT_API_KEY", "OPENAI_API_KEY", "sk-agent-secret", "sk-openai-secret"] {
        assert!(!seen.contains(secret), "{secret} reached an ssh child:\n{seen}");
    }
}

/// Run by `secrets_stay_out_of_the_ssh_child` in a child process whose
/// environment holds the secrets; does nothing when run on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_probe() {
    let (Ok(port), Ok(dir)) = (std::env::var("CLIX_TEST_SSH_PORT"), std::env::var("CLIX_TEST_SSH_DIR")) else { return };
    assert!(std::env::var("OPENAI_API_KEY").is_ok());
    let dir = PathBuf::from(dir);
    let entry = ClipEntry {
        name: "box".into(),
        kind: "ssh".into(),
        host: Some("127.0.0.1".into()),
        port: Some(port.parse().unwrap()),
        user: Some(whoami()),
        identity_file: Some(dir.join("id")),
        options: vec![
            format!("UserKnownHostsFile={}", dir.join("known_hosts").display()),
            "StrictHostKeyChecking=accept-new".into(),
            "IdentitiesOnly=yes".into(),
        ],
        ..ClipEntry::default()
    };
    let mut s = session(vec![entry], 30, None).await;
    let (out, err, code) = raw(&mut s, "clip box 'echo ${OPENAI_API_KEY:-unset}'", None).await;
    assert_eq!((out.as_str(), code), ("unset\n", 0), "{err}");
}
