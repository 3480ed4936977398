//! Issue 55: nothing outlives the clix that started it. Each front-end
//! (`run`, `ask`, `mcp`, `eval`) is killed with SIGKILL while a real
//! program runs in its sandbox. Within seconds, none of the processes it
//! had started is left (the program, bwrap, the warden), no bwrap of its
//! is left waiting with init as its parent, and no cgroup of its remains.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use clix_testkit::model_server::{openai_calls, run_call, start};
use serde_json::json;

/// A process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    parent: i32,
    /// Start time in clock ticks since boot: with the pid, names one process.
    started: u64,
    state: char,
    name: String,
    args: String,
}

fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_string();
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            Some(Proc {
                pid,
                state: fields.first()?.chars().next()?,
                parent: fields.get(1)?.parse().ok()?,
                started: fields.get(19)?.parse().ok()?,
                name,
                args: String::from_utf8_lossy(&args).replace('\0', " "),
            })
        })
        .collect()
}

fn running(p: &Proc) -> bool {
    !matches!(p.state, 'Z' | 'X')
}

/// Every process under `root` (not `root` itself).
fn descendants(root: i32) -> Vec<Proc> {
    let all = processes();
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in &all {
        children.entry(p.parent).or_default().push(p);
    }
    let (mut found, mut queue) = (Vec::new(), vec![root]);
    while let Some(pid) = queue.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            queue.push(child.pid);
            found.push((*child).clone());
        }
    }
    found
}

/// This test process's folder for the cgroup-v1 pids controller, if any.
fn pids_cgroup() -> Option<PathBuf> {
    clix_testkit::cgroup_v1_dir("pids")
}

fn cgroups_of(pid: u32) -> Vec<String> {
    let Some(dir) = pids_cgroup() else { return Vec::new() };
    let prefix = format!("clix-{pid}-");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Waits for a running process whose command line holds `marker`; panics
/// with what `clix` said if it ends first.
async fn wait_for_program(clix: &mut Child, marker: &str, case: &str) {
    let started = Instant::now();
    loop {
        if processes().iter().any(|p| running(p) && p.name.starts_with("python") && p.args.contains(marker)) {
            return;
        }
        if let Ok(Some(status)) = clix.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = clix.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("{case}: clix ended ({status}) before its program started: {err}");
        }
        assert!(started.elapsed() < Duration::from_secs(90), "{case}: the program never started");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Kills `clix` with SIGKILL and checks that all it had started ends: the
/// processes under it at the kill, and any whose command line holds one of
/// `markers` (the program's, the workspace bwrap binds: a sandbox being set
/// up at the kill).
async fn kill_and_check(mut clix: Child, markers: &[&str], case: &str) {
    let pid = clix.id();
    let before: Vec<Proc> = descendants(pid as i32);
    assert!(before.iter().any(|p| p.name == "bwrap"), "{case}: no bwrap under clix: {before:#?}");
    assert!(before.iter().any(|p| p.name == "clix-warden"), "{case}: no warden under clix: {before:#?}");
    clix.kill().unwrap();
    clix.wait().unwrap();
    let killed = Instant::now();
    let ours: HashSet<(i32, u64)> = before.iter().map(|p| (p.pid, p.started)).collect();
    loop {
        let now = processes();
        let left: Vec<&Proc> = now
            .iter()
            .filter(|p| running(p))
            .filter(|p| ours.contains(&(p.pid, p.started)) || markers.iter().any(|m| p.args.contains(m)))
            .collect();
        let cgroups = cgroups_of(pid);
        if left.is_empty() && cgroups.is_empty() {
            return;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(15),
            "{case}: 15 s after clix's SIGKILL, still there: {left:#?}, cgroups {cgroups:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The line every case has the sandbox run: a real program that would
/// run for two minutes, found by `marker` in its arguments.
fn long_line(marker: &str) -> String {
    format!("python3 -c 'import time; time.sleep(120)' {marker}")
}

fn spawn(mut cmd: std::process::Command) -> Child {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_killed_leaves_nothing() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let marker = format!("clix-outlive-run-{}", std::process::id());
    let mut clix = spawn(common::clix(home.path(), ws.path(), &["run", &long_line(&marker)]));
    wait_for_program(&mut clix, &marker, "run").await;
    kill_and_check(clix, &[&marker, &ws.path().display().to_string()], "run").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_killed_leaves_nothing() {
    let marker = format!("clix-outlive-ask-{}", std::process::id());
    let server = start(vec![openai_calls(&[("run", &run_call(&long_line(&marker)))], 1, 1)]).await;
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut cmd = common::clix(home.path(), ws.path(), &["ask", "wait a while"]);
    cmd.env("AGENT_BASE_URL", format!("{}/v1", server.url))
        .env("AGENT_MODEL", "scripted")
        .env("CLIX_MEMORY_SUMMARIES", "false");
    let mut clix = spawn(cmd);
    wait_for_program(&mut clix, &marker, "ask").await;
    kill_and_check(clix, &[&marker, &ws.path().display().to_string()], "ask").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_killed_while_serving_leaves_nothing() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let marker = format!("clix-outlive-mcp-{}", std::process::id());
    let mut cmd = common::clix(home.path(), ws.path(), &["mcp"]);
    cmd.stdin(Stdio::piped());
    let mut clix = spawn(cmd);
    let mut stdin = clix.stdin.take().unwrap();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"command": long_line(&marker)}}}),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    wait_for_program(&mut clix, &marker, "mcp").await;
    kill_and_check(clix, &[&marker, &ws.path().display().to_string()], "mcp").await;
    drop(stdin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_killed_mid_task_leaves_nothing() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let marker = format!("clix-outlive-eval-{}", std::process::id());
    let task = json!({
        "id": "waits", "category": "text", "description": "a task whose solution takes its time",
        "prompt": "Wait.", "files": {"a.txt": "a\n"},
        "expectations": [{"check": "exit_code:0"}],
        "solution": [long_line(&marker)],
    });
    std::fs::write(ws.path().join("suite.jsonl"), format!("{task}\n")).unwrap();
    let mut clix =
        spawn(common::clix(home.path(), ws.path(), &["eval", "suite.jsonl", "--solution", "--tools", "run"]));
    wait_for_program(&mut clix, &marker, "eval").await;
    kill_and_check(clix, &[&marker], "eval").await;
}

/// `clix doctor` removes the cgroups a clix left when its warden died with
/// it (planted here for a pid that is gone), keeps a live one's, and says
/// whether the sandbox can run.
#[test]
fn doctor_removes_what_a_dead_clix_left_and_says_whether_the_sandbox_runs() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let planted =
        pids_cgroup().map(|dir| dir.join(format!("clix-{dead}-7"))).filter(|d| std::fs::create_dir(d).is_ok());
    let live = pids_cgroup().map(|dir| dir.join(format!("clix-{}-7", std::process::id())));
    if let Some(live) = &live {
        let _ = std::fs::create_dir(live);
    }
    let o = common::clix(home.path(), ws.path(), &["doctor"]).output().unwrap();
    let out = common::text(&o.stdout);
    let live_kept = live.as_ref().is_some_and(|l| l.exists());
    if let Some(live) = &live {
        let _ = std::fs::remove_dir(live);
    }
    assert_eq!(o.status.code(), Some(0), "{out}{}", common::text(&o.stderr));
    assert!(out.contains("sandbox: ready (bubblewrap at "), "{out}");
    match planted {
        Some(stale) => {
            assert!(!stale.exists(), "{} is still there: {out}", stale.display());
            assert!(out.contains(&stale.display().to_string()), "{out}");
            assert!(live_kept, "a live process's cgroup was removed: {out}");
        }
        None => clix_testkit::skip_host_limit(
            "doctor_removes_what_a_dead_clix_left_and_says_whether_the_sandbox_runs",
            "no cgroup-v1 pids controller we may create in: only the sandbox line was checked",
        ),
    }
    let o = common::clix(home.path(), ws.path(), &["doctor"]).env("CLIX_SANDBOX_MODE", "host").output().unwrap();
    assert!(common::text(&o.stdout).contains("programs run unsandboxed"), "{}", common::text(&o.stdout));
    let o = common::clix(home.path(), ws.path(), &["doctor"]).env("CLIX_SANDBOX_MODE", "off").output().unwrap();
    assert!(common::text(&o.stdout).contains("mode = off: no OS tier"), "{}", common::text(&o.stdout));
}
