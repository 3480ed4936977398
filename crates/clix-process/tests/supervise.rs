//! The supervisor with real processes: what it keeps, what it counts, and
//! how it ends a child (time limit, a child that ignores SIGTERM, a
//! grandchild holding the pipe, a caller that gives up).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use clix_process::{DRAIN, Groups, Outcome, supervise};

/// A grace long enough that "killed after the grace" is told apart from
/// "ended by SIGTERM", short enough to keep the tests quick.
const GRACE: Duration = Duration::from_millis(700);

/// `argv` in a process group of its own, every stream piped (stdin too, as
/// a caller that may have some does); with `deaf`, SIGTERM is ignored from
/// its first instruction on (the disposition survives exec and is inherited
/// by what it starts), so no test races a shell's `trap`.
fn spawn(argv: &[&str], deaf: bool) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new(argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    if deaf {
        // SAFETY: signal() is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    cmd.spawn().unwrap()
}

async fn run_with(argv: &[&str], deaf: bool, stdin: Option<&[u8]>, timeout: Duration, cap: usize) -> Outcome {
    let child = spawn(argv, deaf);
    let groups = Groups::of(&child, GRACE);
    supervise(child, groups, stdin, timeout, cap, Instant::now()).await
}

async fn run(argv: &[&str], stdin: Option<&[u8]>, timeout: Duration, cap: usize) -> Outcome {
    run_with(argv, false, stdin, timeout, cap).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether `pid` is a live process (not gone, not a zombie waiting to be reaped).
fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    matches!(state, Some(s) if s != "Z" && s != "X")
}

/// Waits (at most 30 s, a safety net) until `pid` is no longer alive.
async fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// What a row expects; `None` leaves that part unchecked.
struct Want {
    exit_code: i32,
    timed_out: bool,
    stdout: Option<&'static str>,
    stderr: &'static str,
    /// (kept, total, lines) of stdout.
    counts: Option<(usize, u64, u64)>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_of_real_children() {
    const MIB: usize = 1 << 20;
    let big: Vec<u8> = (0..4 * MIB).map(|i| b"abcdefghijklmnopqrstuvwxy\n"[i % 26]).collect();
    let big_lines = big.iter().filter(|&&b| b == b'\n').count() as u64;
    /// name, argv, stdin, time limit (s), cap, what it gives.
    type Row<'a> = (&'a str, &'a [&'a str], Option<&'a [u8]>, u64, usize, Want);
    let rows: Vec<Row> = vec![
        (
            "both streams apart, the exit code",
            &["sh", "-c", "echo out; echo err >&2; exit 3"],
            None,
            30,
            MIB,
            Want { exit_code: 3, timed_out: false, stdout: Some("out\n"), stderr: "err\n", counts: Some((4, 4, 1)) },
        ),
        (
            "a signal is 128+N",
            &["sh", "-c", "kill -9 $$"],
            None,
            30,
            MIB,
            Want { exit_code: 137, timed_out: false, stdout: Some(""), stderr: "", counts: Some((0, 0, 0)) },
        ),
        (
            "stdin far bigger than a pipe's buffer comes back whole",
            &["cat"],
            Some(&big),
            60,
            8 * MIB,
            Want {
                exit_code: 0,
                timed_out: false,
                stdout: None,
                stderr: "",
                counts: Some((4 * MIB, 4 * MIB as u64, big_lines)),
            },
        ),
        (
            "stdin a child never reads is no error and no hang",
            &["true"],
            Some(&big),
            60,
            MIB,
            Want { exit_code: 0, timed_out: false, stdout: Some(""), stderr: "", counts: Some((0, 0, 0)) },
        ),
        (
            "a child that stops reading early",
            &["head", "-c", "5"],
            Some(&big),
            60,
            MIB,
            Want { exit_code: 0, timed_out: false, stdout: Some("abcde"), stderr: "", counts: Some((5, 5, 0)) },
        ),
        (
            "no stdin given: end of file at once",
            &["wc", "-c"],
            None,
            30,
            MIB,
            Want { exit_code: 0, timed_out: false, stdout: Some("0\n"), stderr: "", counts: Some((2, 2, 1)) },
        ),
        (
            "output past the cap: kept up to it, counted exactly",
            &["sh", "-c", "yes | head -n 300000"],
            None,
            60,
            1000,
            Want { exit_code: 0, timed_out: false, stdout: None, stderr: "", counts: Some((1000, 600_000, 300_000)) },
        ),
        (
            "a cap of nothing still counts",
            &["sh", "-c", "printf 'a\\nb\\nc'; printf xy >&2"],
            None,
            30,
            0,
            Want { exit_code: 0, timed_out: false, stdout: Some(""), stderr: "", counts: Some((0, 5, 2)) },
        ),
        (
            "the time limit keeps what was read before it",
            &["sh", "-c", "echo partial; echo warn >&2; sleep 100; echo never"],
            None,
            1,
            MIB,
            Want {
                exit_code: 124,
                timed_out: true,
                stdout: Some("partial\n"),
                stderr: "warn\n",
                counts: Some((8, 8, 1)),
            },
        ),
    ];
    for (name, argv, stdin, secs, cap, want) in rows {
        let o = run(argv, stdin, Duration::from_secs(secs), cap).await;
        assert_eq!(o.exit_code, want.exit_code, "{name}: {o:?}");
        assert_eq!(o.timed_out, want.timed_out.then(|| Duration::from_secs(secs)), "{name}");
        if let Some(stdout) = want.stdout {
            assert_eq!(text(&o.stdout), stdout, "{name}");
        }
        assert_eq!(text(&o.stderr), want.stderr, "{name}");
        if let Some((kept, total, lines)) = want.counts {
            assert_eq!((o.stdout.len(), o.stdout_total, o.stdout_lines_total), (kept, total, lines), "{name}");
        }
        assert_eq!(o.was_capped(), o.stdout_total > o.stdout.len() as u64 || o.stderr_total > o.stderr.len() as u64);
    }
    // The stdin row's bytes came back unchanged, not only counted.
    let o = run(&["cat"], Some(&big), Duration::from_secs(60), 8 * MIB).await;
    assert!(o.stdout == big, "cat gave back {} bytes that differ", o.stdout.len());
    // The cap row kept the first bytes.
    let o = run(&["sh", "-c", "yes | head -n 300000"], None, Duration::from_secs(60), 1000).await;
    assert_eq!(o.stdout, b"y\n".repeat(500));
    assert_eq!(o.stdout_dropped(), 599_000);
    assert_eq!(o.stderr_total, 0);
    let o = run(&["sh", "-c", "printf xy >&2"], None, Duration::from_secs(30), 0).await;
    assert_eq!((o.stderr.len(), o.stderr_total, o.was_capped()), (0, 2, true));
}

/// Endless output under the time limit: the cap holds and every byte is
/// counted (`yes` writes "y\n" only, so bytes are exactly twice the lines).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_output_is_capped_and_counted_to_the_end() {
    let o = run(&["yes"], None, Duration::from_secs(1), 4096).await;
    assert_eq!(o.exit_code, 124);
    assert_eq!(o.stdout, b"y\n".repeat(2048));
    assert!(o.stdout_total > 4096, "{}", o.stdout_total);
    assert_eq!(o.stdout_total, 2 * o.stdout_lines_total);
    assert!(o.was_capped());
}

/// SIGTERM ends a child that heeds it at once; one that ignores it is
/// killed after the grace. Both answer 124 and leave nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_limit_terminates_then_kills_after_one_grace() {
    let limit = Duration::from_millis(500);
    // Each script prints the pid of the sleep it leaves in its group.
    // name, script, SIGTERM ignored by all (so killed only after the grace).
    let rows: &[(&str, &str, bool)] = &[
        ("heeds SIGTERM", "sleep 100 & echo $!; wait", false),
        ("ignores SIGTERM", "sleep 100 & echo $!; wait", true),
        // The shell ends at SIGTERM; the final SIGKILL to its group takes the sleep.
        ("leaves a deaf process in its group", "(trap '' TERM; exec sleep 100) & echo $!; wait", false),
    ];
    for (name, script, after_grace) in rows {
        let started = Instant::now();
        let o = run_with(&["sh", "-c", script], *after_grace, None, limit, 1024).await;
        let took = started.elapsed();
        assert_eq!(o.exit_code, 124, "{name}: {o:?}");
        assert_eq!(o.timed_out, Some(limit), "{name}");
        if *after_grace {
            assert!(took >= limit + GRACE, "{name}: ended after {took:?}, before the grace was over");
        }
        // Generous: far below the sleep's 100 s.
        assert!(took < Duration::from_secs(30), "{name}: {took:?}");
        // The background sleep was in the child's group: it went too.
        let pid: i32 = text(&o.stdout).trim().parse().unwrap();
        assert!(gone(pid).await, "{name}: the grandchild {pid} outlived the time limit");
    }
}

/// A grandchild that keeps the pipe open after the child exits: the
/// child's output is returned after a bounded drain, not at the
/// grandchild's end; after a normal exit it is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_holding_the_pipe_does_not_hang_the_caller() {
    let started = Instant::now();
    let o = run(&["sh", "-c", "sleep 100 & echo $!; echo done"], None, Duration::from_secs(60), 1024).await;
    let took = started.elapsed();
    let lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    assert_eq!(lines.get(1).map(String::as_str), Some("done"), "{o:?}");
    assert_eq!(o.exit_code, 0);
    assert_eq!(o.timed_out, None);
    assert!(took >= DRAIN, "the drain waited {took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    let pid: i32 = lines[0].parse().unwrap();
    assert!(alive(pid), "a child that ended by itself keeps what it started in the background");
    // SAFETY: kill of the test's own stray process.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// A caller that gives up (drops the future) ends the child: at once when
/// it heeds SIGTERM, after the grace when it does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_supervisor_ends_the_child() {
    for (name, deaf) in [("heeds SIGTERM", false), ("ignores SIGTERM", true)] {
        let child = spawn(&["sleep", "100"], deaf);
        let pid = child.id().unwrap() as i32;
        let groups = Groups::of(&child, GRACE);
        let patience = Duration::from_millis(300);
        let started = Instant::now();
        let given_up =
            tokio::time::timeout(patience, supervise(child, groups, None, Duration::from_secs(100), 1024, started))
                .await;
        assert!(given_up.is_err(), "{name}: the child ended by itself");
        assert!(gone(pid).await, "{name}: the child {pid} outlived its supervisor");
        if deaf {
            let took = started.elapsed();
            assert!(took >= patience + GRACE, "{name}: killed {took:?} after the start, before the grace was over");
        }
    }
}

/// A child that wraps the real program in a group of its own: SIGTERM
/// goes to the inner group only, and SIGKILL to both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inner_group_gets_sigterm_and_the_outer_one_only_sigkill() {
    let outer = spawn(&["sleep", "100"], false);
    let inner = spawn(&["sleep", "100"], false);
    let (outer_pid, inner_pid) = (outer.id().unwrap() as i32, inner.id().unwrap() as i32);
    let mut groups = Groups::of(&outer, GRACE);
    groups.set_inner(inner_pid);
    assert_eq!(groups.inner(), Some(inner_pid));
    groups.terminate();
    assert!(gone(inner_pid).await, "the inner group got SIGTERM");
    assert!(alive(outer_pid), "the outer group is spared SIGTERM");
    groups.kill();
    assert!(gone(outer_pid).await, "the outer group got SIGKILL");
    groups.disarm();
    drop((outer, inner));
}
