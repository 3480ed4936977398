//! Each run's cgroups are removed when the run ends: a normal end, a
//! time-out, or a run whose caller gave up on it; a stub kept ready has
//! its cgroups removed when its sandbox goes. One test in this file, so
//! no other run of this process makes cgroups while it looks.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clix_sandbox::{Request, Sandbox, SandboxSettings};

use clix_testkit::cgroup_v1_dir as controller_dir;

/// The controller folders where this host lets us make cgroups, or why none.
fn writable_controllers() -> Result<Vec<PathBuf>, String> {
    let mut dirs = Vec::new();
    for controller in ["pids", "memory"] {
        let Some(dir) = controller_dir(controller).filter(|d| d.is_dir()) else { continue };
        let trial = dir.join(format!("clix-test-{}", std::process::id()));
        if std::fs::create_dir(&trial).is_ok() {
            std::fs::remove_dir(&trial).unwrap();
            dirs.push(dir);
        }
    }
    if dirs.is_empty() { Err("no writable cgroup-v1 pids or memory controller here".into()) } else { Ok(dirs) }
}

/// This process's `clix-<pid>-*` cgroups.
fn ours(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let prefix = format!("clix-{}-", std::process::id());
    dirs.iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

async fn wait_until_none(dirs: &[PathBuf], within: Duration) -> Vec<PathBuf> {
    let started = Instant::now();
    loop {
        let left = ours(dirs);
        if left.is_empty() || started.elapsed() > within {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn every_run_removes_its_cgroups_however_it_ends() {
    let dirs = match writable_controllers() {
        Ok(dirs) => dirs,
        Err(why) => {
            clix_testkit::skip_host_limit(
                "every_run_removes_its_cgroups_however_it_ends",
                &format!("{why}; the pid-liveness sweep is still tested by cgroup.rs's unit tests"),
            );
            return;
        }
    };
    let ws = tempfile::tempdir().unwrap();
    // Without a stub set up ahead, whose cgroups would be there too.
    let settings = SandboxSettings { keep_ready: false, ..SandboxSettings::default() };
    let sb = Sandbox::new(settings, ws.path(), None, None, "cgroup-test".into());
    assert!(sb.process_limit_enforced());
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();

    // A normal end: the run's cgroups exist while it runs, and are gone after.
    // The program ends once the test has seen them (it makes `go`).
    let waiter = argv(&["bash", "-c", "until [ -e go ]; do sleep 0.05; done"]);
    let run = sb.run(Request::new(&waiter, ws.path(), None, Duration::from_secs(120)));
    let look = async {
        let started = Instant::now();
        let mut during = ours(&dirs);
        while during.len() < dirs.len() && started.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            during = ours(&dirs);
        }
        std::fs::write(ws.path().join("go"), "").unwrap();
        during
    };
    let (outcome, during) = tokio::join!(run, look);
    assert_eq!(outcome.unwrap().exit_code, 0);
    assert_eq!(during.len(), dirs.len(), "one cgroup per controller during the run: {during:?}");
    assert_eq!(ours(&dirs), Vec::<PathBuf>::new(), "left after a normal end");

    // A time-out (the program ignores SIGTERM, so it is SIGKILLed). It
    // makes `started` once it runs (for the next case).
    let stubborn = argv(&["bash", "-c", "trap '' TERM; touch started; sleep 100"]);
    let o = sb.run(Request::new(&stubborn, ws.path(), None, Duration::from_secs(1))).await.unwrap();
    assert_eq!(o.exit_code, 124);
    // The waits below are safety nets: each ends as soon as the cgroups go.
    assert_eq!(wait_until_none(&dirs, Duration::from_secs(60)).await, Vec::<PathBuf>::new(), "left after a time-out");

    // A caller that gives up once the program runs: the run's future is
    // dropped mid-run; its processes get SIGTERM, then SIGKILL after the
    // grace period, and then the cgroups go.
    let _ = std::fs::remove_file(ws.path().join("started"));
    let runs = async {
        let started = Instant::now();
        while !ws.path().join("started").exists() && started.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let gave_up = tokio::select! {
        _ = sb.run(Request::new(&stubborn, ws.path(), None, Duration::from_secs(120))) => false,
        () = runs => true,
    };
    assert!(gave_up, "the run ended before the caller gave up");
    assert!(!ours(&dirs).is_empty(), "the killed run's cgroups wait for its processes to die");
    assert_eq!(wait_until_none(&dirs, Duration::from_secs(60)).await, Vec::<PathBuf>::new(), "left after a kill");
    drop(sb);

    // A sandbox that keeps the next run's stub ready holds that stub's
    // cgroups between runs, and they go with the sandbox.
    let sb = Sandbox::new(SandboxSettings::default(), ws.path(), None, None, "cgroup-test".into());
    let o = sb.run(Request::new(&argv(&["true"]), ws.path(), None, Duration::from_secs(60))).await.unwrap();
    assert_eq!(o.exit_code, 0);
    let started = Instant::now();
    while ours(&dirs).len() != dirs.len() && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ours(&dirs).len(), dirs.len(), "the ready stub's cgroups, one per controller");
    drop(sb);
    assert_eq!(
        wait_until_none(&dirs, Duration::from_secs(60)).await,
        Vec::<PathBuf>::new(),
        "left after the sandbox went"
    );
}
