//! The workspace jail and session state, against a real folder on disk.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::ffi::CString;
use std::time::{Duration, Instant};

use clix_shell::{CommandRegistry, Shell, ShellConfig, ShellLimits, Workspace};

struct Fixture {
    /// Holds the workspace and, beside it, a file that must stay out of reach.
    _root: tempfile::TempDir,
    outside: std::path::PathBuf,
    session: Shell,
}

async fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("inside.txt"), "inside\n").unwrap();
    let outside = root.path().join("secret.txt");
    std::fs::write(&outside, "TOP-SECRET\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("link-file")).unwrap();
    std::os::unix::fs::symlink(root.path(), ws.join("link-dir")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", ws.join("link-relative")).unwrap();
    let session = Shell::new(ShellConfig {
        workspace: Workspace::open(&ws).unwrap(),
        limits: ShellLimits::default(),
        commands: CommandRegistry::new(),
        resolver: None,
        gate: None,
        start_in: None,
    })
    .await
    .unwrap();
    Fixture { _root: root, outside, session }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn starts_in_the_workspace_at_its_real_path() {
    let mut f = fixture().await;
    let r = f.session.exec("pwd; cat inside.txt", None).await;
    let ws = f.session.workspace().display().to_string();
    assert_eq!(text(&r.stdout), format!("{ws}\ninside\n"));
    assert_eq!(r.exit_code, 0);
}

#[tokio::test]
async fn host_files_outside_the_workspace_are_unreachable() {
    let mut f = fixture().await;
    let outside = f.outside.display().to_string();
    let lines = [
        format!("cat {outside}"),
        "cat ../secret.txt".to_string(),
        "cd .. && cat secret.txt".to_string(),
        "cat ../../../../../../etc/passwd | grep root:x:0".to_string(),
        "cat link-file".to_string(),
        "cat link-relative".to_string(),
        "cat link-dir/secret.txt".to_string(),
        "ls link-dir/".to_string(),
        "cat /proc/self/environ".to_string(),
        "cat /proc/1/cmdline".to_string(),
    ];
    for line in &lines {
        let r = f.session.exec(line, None).await;
        let out = text(&r.stdout);
        assert!(!out.contains("TOP-SECRET") && !out.contains("secret.txt"), "{line} leaked: {out}");
        assert!(!out.contains("root:x:0:0:root:/root"), "{line} leaked host passwd: {out}");
    }
}

#[tokio::test]
async fn writes_outside_the_workspace_never_reach_the_host() {
    let mut f = fixture().await;
    let outside = f.outside.display().to_string();
    for line in [
        format!("echo pwned > {outside}"),
        "echo pwned > ../secret.txt".to_string(),
        "echo pwned > link-file".to_string(),
        "echo pwned > link-dir/secret.txt".to_string(),
    ] {
        f.session.exec(&line, None).await;
        assert_eq!(std::fs::read_to_string(&f.outside).unwrap(), "TOP-SECRET\n", "{line}");
    }
}

#[tokio::test]
async fn state_persists_across_calls_and_writes_land_on_disk() {
    let mut f = fixture().await;
    f.session.exec("mkdir -p sub && cd sub && X=42 && greet() { echo hi $1; }", None).await;
    let r = f.session.exec("pwd; echo $X; greet you; echo data > f.txt", None).await;
    let ws = f.session.workspace().to_path_buf();
    assert_eq!(text(&r.stdout), format!("{}/sub\n42\nhi you\n", ws.display()));
    assert_eq!(std::fs::read_to_string(ws.join("sub/f.txt")).unwrap(), "data\n");
    assert_eq!(f.session.cwd(), ws.join("sub"));
}

#[tokio::test]
async fn stdin_feeds_the_line() {
    let mut f = fixture().await;
    let r = f.session.exec("wc -l", Some(b"a\nb\nc\n")).await;
    assert_eq!(text(&r.stdout).trim(), "3");
}

#[tokio::test]
async fn time_limit_gives_124_and_keeps_partial_output() {
    let root = tempfile::tempdir().unwrap();
    let limits = ShellLimits { timeout_secs: 1, ..ShellLimits::default() };
    let mut session = Shell::new(ShellConfig {
        workspace: Workspace::open(root.path()).unwrap(),
        limits,
        commands: CommandRegistry::new(),
        resolver: None,
        gate: None,
        start_in: None,
    })
    .await
    .unwrap();
    let r = session.exec("echo before; sleep 5; echo after", None).await;
    assert_eq!(r.exit_code, 124);
    assert_eq!(r.timed_out, Some(std::time::Duration::from_secs(1)));
    assert_eq!(text(&r.stdout), "before\n");
}

#[tokio::test]
async fn syntax_errors_exit_2_with_a_message() {
    let mut f = fixture().await;
    let r = f.session.exec("if then fi (", None).await;
    assert_eq!(r.exit_code, 2);
    assert!(text(&r.stderr).contains("syntax error"), "{}", text(&r.stderr));
}

#[tokio::test]
async fn refuses_workspaces_that_expose_the_host() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    for (path, needle) in [
        (std::path::PathBuf::from("/"), "root"),
        (std::path::PathBuf::from("/etc"), "system folder"),
        (home.path().join(".ssh"), "secret store"),
        (home.path().join("missing"), "--workspace"),
    ] {
        let err = Workspace::open(&path).err().unwrap_or_else(|| panic!("{} was accepted", path.display()));
        assert!(err.to_string().contains(needle), "{}: {err}", path.display());
    } // A folder that holds a secret store is served, the store hidden.
    let served = Workspace::open(home.path()).unwrap();
    assert_eq!(served.hidden_at_top(), [".ssh"]);
}

#[tokio::test]
async fn a_long_session_outlives_bashkits_default_call_limit() {
    let mut f = fixture().await;
    for i in 0..1_100 {
        let r = f.session.exec("true", None).await;
        assert_eq!(r.exit_code, 0, "call {i}: {}", text(&r.stderr));
    }
}

#[tokio::test]
async fn a_shorter_limit_for_one_call_and_cancellation_from_outside() {
    let mut f = fixture().await;
    // 2 s: `echo a` must run before the limit on a busy machine too; far
    // below the session's own 30 s, which the timed_out value tells apart.
    let started = std::time::Instant::now();
    let r = f.session.exec_within("echo a; sleep 100; echo b", None, Some(std::time::Duration::from_secs(2))).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!((text(&r.stdout).as_str(), r.exit_code), ("a\n", 124));
    assert_eq!(r.timed_out, Some(std::time::Duration::from_secs(2)));
    // The next call is not affected by the earlier cancellation.
    let r = f.session.exec("echo next", None).await;
    assert_eq!((text(&r.stdout).as_str(), r.exit_code), ("next\n", 0));

    let handle = f.session.cancel_handle();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        handle.cancel();
    });
    let started = std::time::Instant::now();
    let r = f.session.exec("sleep 100", None).await;
    // Not cancelled, it would end at the 30 s limit with 124; a generous bound.
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(r.exit_code, 130);
    assert!(text(&r.stderr).contains("clix: cancelled"));
}

fn c_path(p: &std::path::Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

#[tokio::test]
async fn a_fifo_is_refused_at_once_and_never_hangs_the_line() {
    let mut f = fixture().await;
    let fifo = f.session.workspace().join("ff");
    assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o600) }, 0);
    for line in ["cat ff", "echo x > ff", "grep x ff", "wc -l < ff"] {
        let started = Instant::now();
        let r = f.session.exec(line, None).await;
        // A blocked line waits for the 30 s limit; a generous bound under it.
        assert!(started.elapsed() < Duration::from_secs(20), "{line} blocked");
        assert_ne!(r.exit_code, 0, "{line}");
        assert!(r.timed_out.is_none(), "{line} ran into the time limit instead of being refused");
    }
}

/// The race that broke bashkit's RealFs: a thread swaps a real folder `d`
/// and a symlink `x` to the canary folder with renameat2(RENAME_EXCHANGE)
/// while the shell reads, writes and deletes through `d`. (The same race
/// from a sandboxed program is in clix's attack tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_never_follows_a_symlink_swapped_in_mid_call() {
    let mut f = fixture().await;
    let ws = f.session.workspace().to_path_buf();
    let canary_dir = f.outside.parent().unwrap().join("canary");
    std::fs::create_dir(&canary_dir).unwrap();
    std::fs::write(canary_dir.join("FILE"), "CANARY-READ\n").unwrap();
    std::fs::write(canary_dir.join("victim"), "CANARY-VICTIM\n").unwrap();
    std::fs::create_dir(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/FILE"), "inside\n").unwrap();
    std::os::unix::fs::symlink(&canary_dir, ws.join("x")).unwrap();
    let swapper = clix_testkit::Swapper::start(&ws.join("d"), &ws.join("x"));
    let mut leaked = 0;
    let mut reads = 0;
    while swapper.keep_racing(reads, Duration::from_secs(60)) {
        reads += 1;
        let r = f.session.exec("cat d/FILE", None).await;
        if text(&r.stdout).contains("CANARY") {
            leaked += 1;
        }
    }
    for i in 0..100 {
        f.session.exec(&format!("echo pwned > d/pwned-{i}.txt"), None).await;
        f.session.exec("rm -f d/victim", None).await;
    }
    swapper.stop();
    assert_eq!(leaked, 0, "reads reached the canary");
    let mut names: Vec<_> = std::fs::read_dir(&canary_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["FILE", "victim"], "the canary folder was written to");
    assert_eq!(std::fs::read_to_string(canary_dir.join("victim")).unwrap(), "CANARY-VICTIM\n");
}

/// Builtins that resolve a path from `/` down (grep -r, realpath) pass
/// through the folders above the workspace: they exist in the shell (empty),
/// so those builtins work wherever the workspace is, however deep.
#[tokio::test]
async fn path_resolving_builtins_work_in_a_deep_workspace() {
    let mut f = fixture().await;
    let ws = f.session.workspace().to_path_buf();
    assert!(ws.ancestors().count() > 3, "the fixture's workspace is not deep: {}", ws.display());
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/a.txt"), "needle\n").unwrap();
    for (line, want) in [
        ("grep -r needle sub", "sub/a.txt:needle\n".to_string()),
        ("grep -rl needle .", "./sub/a.txt\n".to_string()),
        ("grep -rc needle $PWD/sub", format!("{}/sub/a.txt:1\n", ws.display())),
        ("realpath sub/a.txt", format!("{}/sub/a.txt\n", ws.display())),
    ] {
        let r = f.session.exec(line, None).await;
        assert_eq!((text(&r.stdout), r.exit_code), (want, 0), "{line}: {}", text(&r.stderr));
    }
    // Above the workspace, the shell shows empty folders, never the host's.
    let r = f.session.exec("ls ..", None).await;
    assert_eq!(text(&r.stdout), "ws\n", "{}", text(&r.stderr));
}
