//! A sandbox that keeps the next run's stub set up ahead (`keep_ready`)
//! must be indistinguishable, to the program and to the caller, from one
//! that sets each run up when asked. Each case runs in both, and the
//! outcomes must be equal byte for byte. Needs real bubblewrap.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::{Path, PathBuf};
use std::time::Duration;

use clix_sandbox::{Request, Sandbox, SandboxSettings};

fn sandbox(ws: &Path, keep_ready: bool) -> Sandbox {
    Sandbox::new(SandboxSettings { keep_ready, ..SandboxSettings::default() }, ws, None, None, "ready-test".into())
}

/// (stdout, stderr, exit code) of `argv` run in `cwd` with `stdin`.
async fn outcome(sb: &Sandbox, cwd: &Path, argv: &[&str], stdin: Option<&[u8]>) -> (String, String, i32) {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let o = sb.run(Request::new(&argv, cwd, stdin, Duration::from_secs(30))).await.expect("sandbox runs");
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned(), o.exit_code)
}

#[tokio::test]
async fn a_run_started_in_a_ready_stub_is_the_same_as_a_cold_one() {
    let ws = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    std::fs::create_dir(root.join("sub dir")).unwrap();
    std::fs::write(root.join("sub dir/it's.txt"), "a\nb\n").unwrap();
    // An fd clix inherited without close-on-exec, as a careless parent hands one on.
    let leaked = std::fs::File::open(root.join("sub dir/it's.txt")).unwrap();
    // SAFETY: clears the flags of an fd this test owns.
    assert_eq!(unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&leaked), libc::F_SETFD, 0) }, 0);
    let (ready, cold) = (sandbox(&root, true), sandbox(&root, false));
    let sub = root.join("sub dir");
    let missing = root.join("gone");
    /// argv, current folder, stdin.
    type Case<'a> = (Vec<&'a str>, &'a PathBuf, Option<&'a [u8]>);
    let cases: Vec<Case> = vec![
        (vec!["printf", "<%s>", "it's", "$HOME `id`", "two\nlines", "", "*"], &root, None),
        // Exactly the allowed variables: nothing of the stub's shell (PWD, OLDPWD, SHLVL).
        (vec!["env"], &sub, None),
        (vec!["pwd"], &sub, None),
        (vec!["cat", "it's.txt"], &sub, None),
        // Only fds 0-2 reach the program (3 is `ls`'s own listing).
        (vec!["ls", "/proc/self/fd"], &root, None),
        (vec!["readlink", "/proc/self/fd/0"], &root, None),
        (vec!["wc", "-c"], &root, Some(b"from stdin\n")),
        (vec!["cat"], &root, None),
        (vec!["sh", "-c", "echo out; echo err >&2; exit 7"], &root, None),
        (vec!["sh", "-c", "kill -TERM $$"], &root, None),
        (vec!["no-such-program", "x"], &root, None),
        (vec!["true"], &missing, None),
        // Limits set before the stub started still hold for the program.
        (vec!["sh", "-c", "ulimit -n; ulimit -c"], &root, None),
    ];
    for (argv, cwd, stdin) in &cases {
        // Twice: a session's first run and one started in a stub set up after it.
        for round in 0..2 {
            let warm = outcome(&ready, cwd, argv, *stdin).await;
            let cold = outcome(&cold, cwd, argv, *stdin).await;
            assert_eq!(warm, cold, "{argv:?} in {} (round {round})", cwd.display());
        }
    }
    let env = outcome(&ready, &root, &["env"], None).await.0;
    assert!(!env.contains("PWD=") && !env.contains("SHLVL="), "{env}");
    let fds = outcome(&ready, &root, &["ls", "/proc/self/fd"], None).await.0;
    assert_eq!(fds, "0\n1\n2\n3\n", "no fd of clix's own reaches the program");
    drop(leaked);
    let missing = outcome(&ready, &root, &["no-such-program"], None).await;
    assert_eq!(missing.2, 127, "{missing:?}");
}

/// The pids of this process's descendants in `cwd` whose command line
/// holds `needle` (the other test of this file runs stubs too).
fn descendants_running(needle: &str, cwd: &Path) -> Vec<i32> {
    let me = std::process::id() as i32;
    let parent = |pid: i32| -> Option<i32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let descends = |mut pid: i32| {
        while let Some(p) = parent(pid).filter(|p| *p > 1) {
            if p == me {
                return true;
            }
            pid = p;
        }
        false
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle)
                && std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|d| d == cwd)
                && descends(*pid)
        })
        .collect()
}

#[tokio::test]
async fn a_ready_stub_that_died_is_replaced_and_the_last_goes_with_the_sandbox() {
    let ws = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    let sb = sandbox(&root, true);
    assert_eq!(outcome(&sb, &root, &["echo", "one"], None).await, ("one\n".into(), String::new(), 0));
    let stub = ". /proc/self/fd/3 sandbox";
    let mut waiting = Vec::new();
    for _ in 0..600 {
        waiting = descendants_running(stub, &root);
        if !waiting.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!waiting.is_empty(), "a stub is set up for the next run");
    for pid in &waiting {
        // SAFETY: SIGKILL to a process this test started.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    // Dead, not just signalled: gone, or a zombie its parent has not reaped.
    let dead = |pid: &i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
    };
    for _ in 0..600 {
        if waiting.iter().all(dead) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(outcome(&sb, &root, &["echo", "two"], None).await, ("two\n".into(), String::new(), 0));
    drop(sb);
    let mut left = descendants_running(stub, &root);
    for _ in 0..600 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = descendants_running(stub, &root);
    }
    assert_eq!(left, Vec::<i32>::new(), "the stub kept ready ends with its sandbox");
}
