//! At start (the first sandbox of a process), the `clix-<pid>-*` cgroups of
//! clix processes that are gone are removed. Alone in its file: the sweep
//! runs once per process, so no other test may make a sandbox first.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::{Path, PathBuf};

use clix_sandbox::{Sandbox, SandboxSettings};

fn controller_dir(controller: &str) -> Option<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    table.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| Path::new("/sys/fs/cgroup").join(controller).join(path.trim_start_matches('/')))
    })
}

#[test]
fn the_first_sandbox_that_runs_removes_cgroups_of_gone_clix_processes() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let mut planted: Vec<(PathBuf, PathBuf)> = Vec::new();
    for controller in ["pids", "memory"] {
        let Some(dir) = controller_dir(controller).filter(|d| d.is_dir()) else { continue };
        let (stale, live) = (dir.join(format!("clix-{dead}-x")), dir.join(format!("clix-{me}-keep")));
        if std::fs::create_dir(&stale).is_ok() {
            std::fs::create_dir(&live).unwrap();
            planted.push((stale, live));
        }
    }
    if planted.is_empty() {
        clix_testkit::skip_host_limit(
            "the_first_sandbox_that_runs_removes_cgroups_of_gone_clix_processes",
            "cgroups are not writable here (no cgroup-v1 pids or memory controller we may create in); \
             the pid-liveness sweep is tested against a temp folder by cgroup.rs's unit tests",
        );
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let sb = Sandbox::new(SandboxSettings::default(), ws.path(), None, None, "stale-test".into());
    // Nothing is swept by a sandbox that runs nothing (a `clix run` of in-process commands).
    let untouched = planted.iter().all(|(stale, _)| stale.exists());
    // The first program's lookup lays the sandbox out, and sweeps.
    let _ = sb.has_program("true");
    let found: Vec<(PathBuf, bool, PathBuf, bool)> =
        planted.into_iter().map(|(stale, live)| (stale.clone(), stale.exists(), live.clone(), live.exists())).collect();
    for (stale, _, live, _) in &found {
        let _ = std::fs::remove_dir(stale);
        let _ = std::fs::remove_dir(live);
    }
    assert!(untouched, "a sandbox that ran nothing swept already");
    for (stale, stale_left, live, live_left) in found {
        assert!(!stale_left, "{} (pid {dead} is gone) was not removed", stale.display());
        assert!(live_left, "{} (this live process's) was removed", live.display());
    }
}
