//! The `clix-<pid>-*` cgroups of clix processes that are gone (and whose
//! warden went too) are removed by `clix doctor`, never by a start: a
//! sandbox that lays itself out and runs a program leaves them alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::PathBuf;

use std::time::Duration;

use clix_sandbox::{Request, Sandbox, SandboxSettings, remove_leftover_cgroups};

use clix_testkit::cgroup_v1_dir as controller_dir;

#[test]
fn leftover_cgroups_are_removed_by_the_doctor_never_by_a_start() {
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
            "leftover_cgroups_are_removed_by_the_doctor_never_by_a_start",
            "cgroups are not writable here (no cgroup-v1 pids or memory controller we may create in); \
             the pid-liveness rule is tested against a temp folder by cgroup.rs's unit tests",
        );
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let sb = Sandbox::new(SandboxSettings::default(), ws.path(), None, None, "stale-test".into());
    // A program's lookup lays the sandbox out; a run sets one up.
    let _ = sb.has_program("true");
    let argv = vec!["true".to_string()];
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ran = runtime.block_on(sb.run(Request::new(&argv, ws.path(), None, Duration::from_secs(30))));
    let after_start: Vec<bool> = planted.iter().map(|(stale, _)| stale.exists()).collect();
    let removed = remove_leftover_cgroups();
    let found: Vec<(PathBuf, bool, PathBuf, bool)> =
        planted.into_iter().map(|(stale, live)| (stale.clone(), stale.exists(), live.clone(), live.exists())).collect();
    for (stale, _, live, _) in &found {
        let _ = std::fs::remove_dir(stale);
        let _ = std::fs::remove_dir(live);
    }
    // Without bubblewrap the start is refused, which sweeps nothing either; CI has it.
    if std::env::var_os("CI").is_some() {
        assert_eq!(ran.expect("the sandbox runs `true`").exit_code, 0);
    }
    assert!(after_start.iter().all(|left| *left), "a start removed earlier runs' cgroups");
    for (stale, stale_left, live, live_left) in found {
        assert!(!stale_left, "{} (pid {dead} is gone) was not removed", stale.display());
        assert!(removed.contains(&stale), "{} not reported as removed: {removed:?}", stale.display());
        assert!(live_left, "{} (this live process's) was removed", live.display());
    }
}
