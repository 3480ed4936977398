//! Layer 1 at real scale, against GNU bash (issue 29): every line of `LINES`
//! runs through `clix run --raw` and through `bash -c`, each on its own copy
//! of one generated workspace (a 20,000-file tree, a 100,000-line text file,
//! a 100,000-row CSV, a 100,000-element JSON array), and stdout bytes and
//! exit codes must be equal: once as `clix run` has it (lines over big
//! files and big trees routed to the sandbox's GNU tools), and once with
//! routing off, so the in-process shell answers every line. Then the same
//! lines run in process with a small memory limit and time limit, and every
//! one must end non-zero with the limit's `[error]` line: a limit is an
//! error, never a shorter answer.
//!
//! The same table runs at full size in `clix-bench scale`, with the times.
//! Run: `cargo test -p clix --test scale`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::path::Path;

use clix_testkit::scale::{LINES, Scale, write_workspace};
use common::differ::{Outcome, run_bash, run_clix};

/// Each line through `run`, in order, on a fresh copy of the workspace.
fn run_all(run: impl Fn(&str, &Path) -> Outcome) -> Vec<Outcome> {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    write_workspace(&ws, Scale::CI).unwrap();
    LINES.iter().map(|line| run(line, &ws)).collect()
}

/// Routing off: no file is big enough and no tree holds enough entries.
const IN_PROCESS: [(&str, &str); 2] =
    [("CLIX_SANDBOX_BIG_FILE_MB", "1000000"), ("CLIX_SANDBOX_BIG_TREE_ENTRIES", "1000000000")];

#[test]
fn every_line_at_scale_gives_bashs_bytes_and_exit_code() {
    same_as_bash(&[]);
}

#[test]
fn every_line_in_process_gives_bashs_bytes_and_exit_code() {
    same_as_bash(&IN_PROCESS);
}

fn same_as_bash(env: &[(&str, &str)]) {
    let home = tempfile::tempdir().unwrap();
    let (clix, bash) = std::thread::scope(|s| {
        let clix = s.spawn(|| run_all(|line, ws| run_clix(line, ws, home.path(), env)));
        let bash = s.spawn(|| run_all(run_bash));
        (clix.join().unwrap(), bash.join().unwrap())
    });
    let failures: Vec<String> = LINES
        .iter()
        .zip(clix.iter().zip(&bash))
        .filter(|(_, (c, b))| c.stdout != b.stdout || c.code != b.code)
        .map(|(line, (c, b))| {
            format!(
                "--- {line}\nbash (exit {:?}):\n{}\nclix (exit {:?}):\n{}[stderr] {}",
                b.code,
                tail(&b.stdout),
                c.code,
                tail(&c.stdout),
                tail(&c.stderr)
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} lines differ from bash:\n{}",
        failures.len(),
        LINES.len(),
        failures.join("\n")
    );
}

/// With 2 KiB of memory per line and one second, every line of the table
/// (each needs more of one or the other in process) stops, and says which
/// limit stopped it: none passes off a cut output as its answer. (Routed to
/// GNU tools, which stream, a line holds only its output.)
#[test]
fn with_small_limits_every_line_fails_and_names_its_limit() {
    let home = tempfile::tempdir().unwrap();
    let small =
        [("CLIX_LIMITS_MAX_MEMORY_BYTES", "2048"), ("CLIX_LIMITS_TIMEOUT_SECS", "1"), IN_PROCESS[0], IN_PROCESS[1]];
    let outcomes = run_all(|line, ws| run_clix(line, ws, home.path(), &small));
    let failures: Vec<String> = LINES
        .iter()
        .zip(&outcomes)
        .filter(|(_, out)| !stopped_at_a_limit(out))
        .map(|(line, out)| format!("--- {line} (exit {:?}):\n{}[stderr] {}", out.code, tail(&out.stdout), out.stderr))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} lines did not stop at a limit:\n{}",
        failures.len(),
        LINES.len(),
        failures.join("\n")
    );
}

/// Ended by the memory limit, with its `[error]` line naming the setting,
/// or by the time limit (exit 124, as GNU `timeout`).
fn stopped_at_a_limit(out: &Outcome) -> bool {
    let memory = out.code.is_some_and(|c| c != 0)
        && out.stderr.contains("[error] stopped:")
        && out.stderr.contains("[limits] max_memory_bytes");
    memory || out.code == Some(124)
}

/// The last lines of an output, enough to see how two differ.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(6);
    let mut shown = lines[start..].join("\n");
    shown.push('\n');
    shown
}
