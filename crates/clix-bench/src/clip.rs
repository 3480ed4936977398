//! Issue 17: `clip <ssh env> 'echo hi'` against plain `ssh host echo hi`
//! with the same options, over a real sshd on 127.0.0.1 (keys generated in
//! a temp folder). Warm: both over the shared connection, call by call in
//! turn. Cold: a session's first call (it starts the shared connection)
//! against a plain ssh that connects by itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clix_clip::ClipEntry;
use clix_engine::{Engine, SandboxMode};
use clix_session::Parts;
use clix_testkit::{Sshd, whoami};

use crate::{fmt, stats};

fn entry(sshd: &Sshd) -> ClipEntry {
    ClipEntry {
        name: "box".into(),
        kind: "ssh".into(),
        host: Some("127.0.0.1".into()),
        port: Some(sshd.port()),
        user: Some(whoami()),
        identity_file: Some(sshd.identity()),
        options: sshd.client_options(),
        ..ClipEntry::default()
    }
}

/// An engine with `clip` (and the policy that admits its lines, no OS
/// tier: the environment is reached by ssh), `home` its CLIX_HOME.
async fn engine(ws: &Path, home: &Path, sshd: &Sshd) -> Engine {
    let mut session = crate::session(ws, home, Parts { clip: true, policy: true, ..Parts::SHELL });
    session.settings.sandbox.mode = SandboxMode::Off;
    session.settings.clip = vec![entry(sshd)];
    session.engine().await.expect("engine")
}

/// `ssh` with the person's options, BatchMode, and `extra`, to `echo hi`.
fn plain_ssh(sshd: &Sshd, extra: &[String]) -> Duration {
    let mut cmd = Command::new("ssh");
    cmd.args(["-o", "BatchMode=yes"]);
    for o in sshd.client_options().iter().chain(extra) {
        cmd.args(["-o", o]);
    }
    cmd.arg("-i").arg(sshd.identity());
    cmd.args(["-p", &sshd.port().to_string(), "-l", &whoami(), "--", "127.0.0.1", "echo hi"]);
    let t = Instant::now();
    let out = cmd.stdin(Stdio::null()).output().expect("ssh");
    let elapsed = t.elapsed();
    assert_eq!(out.stdout, b"hi\n", "{}", String::from_utf8_lossy(&out.stderr));
    elapsed
}

/// The master sockets of the session whose CLIX_HOME is `home`.
fn sockets(home: &Path) -> Vec<PathBuf> {
    let dir = home.join("state/clip/ssh");
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| std::os::unix::fs::FileTypeExt::is_socket(&e.file_type().expect("type")))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn stop_master(socket: &Path) {
    let _ = Command::new("ssh")
        .args(["-o", &format!("ControlPath={}", socket.display()), "-O", "exit", "x"])
        .stderr(Stdio::null())
        .status();
}

pub(crate) fn clip_vs_ssh(n: usize) {
    let sshd = Sshd::start();
    let ws = tempfile::tempdir().expect("ws");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let line = "clip box 'echo hi'";

    // Cold: each session's first call starts its shared connection.
    let (mut cold_clip, mut cold_ssh) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        let state = tempfile::tempdir().expect("state");
        let mut e = runtime.block_on(engine(ws.path(), state.path(), &sshd));
        let t = Instant::now();
        let raw = runtime.block_on(e.run_raw(line, None));
        cold_clip.push(t.elapsed());
        assert_eq!(raw.stdout, b"hi\n", "{}", String::from_utf8_lossy(&raw.stderr));
        for socket in sockets(state.path()) {
            stop_master(&socket);
        }
        cold_ssh.push(plain_ssh(&sshd, &[]));
    }

    // Warm: one session, its connection up; plain ssh over the same socket.
    let state = tempfile::tempdir().expect("state");
    let mut e = runtime.block_on(engine(ws.path(), state.path(), &sshd));
    let raw = runtime.block_on(e.run_raw(line, None));
    assert_eq!(raw.stdout, b"hi\n");
    let socket = sockets(state.path()).pop().expect("a master socket");
    let shared = [format!("ControlPath={}", socket.display()), "ControlMaster=no".to_string()];
    let (mut warm_clip, mut warm_ssh, mut layer2) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        let raw = runtime.block_on(e.run_raw(line, None));
        warm_clip.push(t.elapsed());
        assert_eq!(raw.stdout, b"hi\n");
        warm_ssh.push(plain_ssh(&sshd, &shared));
        let t = Instant::now();
        let shown = runtime.block_on(e.run(line, None));
        layer2.push(t.elapsed());
        assert!(shown.text.starts_with("hi\n"), "{}", shown.text);
    }
    stop_master(&socket);
    let audit = std::fs::read_to_string(state.path().join("state/audit.jsonl")).expect("audit");
    let audit_bytes = audit.len() / audit.lines().count().max(1);

    // `clip list`: a fresh session probes (and starts the connection); the next answer is cached.
    let state = tempfile::tempdir().expect("state");
    let mut e = runtime.block_on(engine(ws.path(), state.path(), &sshd));
    let t = Instant::now();
    let listed = runtime.block_on(e.run_raw("clip list", None));
    let list_cold = t.elapsed();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("yes"), "{}", String::from_utf8_lossy(&listed.stdout));
    let t = Instant::now();
    runtime.block_on(e.run_raw("clip list", None));
    let list_cached = t.elapsed();
    for socket in sockets(state.path()) {
        stop_master(&socket);
    }
    let (wc, ws_, l2, cc, cs) = (stats(warm_clip), stats(warm_ssh), stats(layer2), stats(cold_clip), stats(cold_ssh));
    println!("\nclip over ssh: `{line}` vs `ssh … 127.0.0.1 'echo hi'` (sshd on 127.0.0.1, ed25519 keys)\n");
    println!("| contender | p50 | p95 |\n|---|---|---|");
    println!("| warm `clip` (Engine::run_raw, shared connection, {n} calls) | {} | {} |", fmt(wc.p50), fmt(wc.p95));
    println!("| warm `clip` with Layer 2 (Engine::run) | {} | {} |", fmt(l2.p50), fmt(l2.p95));
    println!("| plain `ssh` over the same shared connection | {} | {} |", fmt(ws_.p50), fmt(ws_.p95));
    println!(
        "| cold `clip`: a session's first call (starts the connection, 10 sessions) | {} | {} |",
        fmt(cc.p50),
        fmt(cc.p95)
    );
    println!("| plain `ssh` connecting by itself (no sharing) | {} | {} |", fmt(cs.p50), fmt(cs.p95));
    println!("| `clip list` probing (fresh session) | {} | - |", fmt(list_cold));
    println!("| `clip list` answered from the probe cache | {} | - |", fmt(list_cached));
    println!("\naudit: {audit_bytes} bytes per `clip` call on average");
    println!(
        "\nwarm ratio clip / plain ssh (p50): {:.2}; warm clip vs a fresh connection: {:.2}x faster",
        wc.p50.as_secs_f64() / ws_.p50.as_secs_f64(),
        cs.p50.as_secs_f64() / wc.p50.as_secs_f64()
    );
}
