//! Layer 1 at real scale, against GNU bash (issue 29): every line of `LINES`
//! runs through `clix run --raw` and through `bash -c`, each on its own copy
//! of one generated workspace (a 20,000-file tree, a 100,000-line text file,
//! a 100,000-row CSV, a 100,000-element JSON array), and stdout bytes and
//! exit codes must be equal. Then the same lines run with a small memory
//! limit and time limit, and every one must end non-zero with the limit's
//! `[error]` line: a limit is an error, never a shorter answer.
//!
//! The same table runs at full size in `clix-bench scale`, with the times.
//! Run: `cargo test -p clix --test scale`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use common::differ::{Outcome, run_bash, run_clix};

/// Everyday lines over a real repository's sizes. Lines run in this order
/// on both workspaces, so what one writes the next ones see alike.
const LINES: &[&str] = &[
    // Tree walks.
    "find . -type f | wc -l",
    "find src -name '*.txt' | sort | tail -3",
    "find src -type d | wc -l",
    "find . -type f -name '*.rs' | xargs grep -l 'fn f3()' | wc -l",
    "grep -rl TODO src | sort | head -3",
    "grep -rc TODO src | grep -vc ':0$'",
    "du -a src | wc -l",
    "ls -R src | wc -l",
    // Generated streams.
    "seq 1 300000 | tail -1",
    "seq 1 300000 > gen.txt; wc -l < gen.txt; tail -1 gen.txt",
    "yes | head -n 200000 | wc -l",
    "yes abc | head -c 3000000 | wc -c",
    "printf '%s\\n' {1..100000} | tail -1",
    "echo {1..200000} | wc -w",
    "seq 1 1000000 | awk '{s+=$1} END {printf \"%.0f\\n\", s}'",
    "awk 'BEGIN {for (i = 0; i < 500000; i++) a[i] = i; for (k in a) n++; print n}'",
    "for i in $(seq 1 100000); do :; done; echo $i",
    "seq 1 200000 | xargs -n 1000 echo | wc -l",
    // Large files.
    "wc -l big.txt data.csv",
    "grep -c ERROR big.txt",
    "sed -n '50000,50003p' big.txt",
    "sed 's/ok/OK/g' big.txt | grep -c OK",
    "sort -t, -k3 -n data.csv | tail -3",
    "cut -d, -f2 data.csv | sort | uniq -c | sort -rn | head -3",
    "awk -F, 'NR > 1 {s += $3} END {printf \"%.2f\\n\", s}' data.csv",
    "jq length items.json",
    "jq '[.[] | .amount] | add' items.json",
    // Loops over lines.
    "n=0; while read -r line; do n=$((n+1)); done < big.txt; echo $n",
    "while read -r a b c rest; do echo \"$c\"; done < big.txt | sort | uniq -c",
];

/// Files in the generated tree: `DIRS` folders of `FILES_PER_DIR`.
const DIRS: usize = 200;
const FILES_PER_DIR: usize = 100;
/// Lines of `big.txt`, rows of `data.csv`, elements of `items.json`.
const ROWS: usize = 100_000;

/// Writes the scale workspace into `dir`. Deterministic.
fn write_workspace(dir: &Path) {
    for d in 0..DIRS {
        let folder = dir.join(format!("src/mod{}/pkg{d}", d / 20));
        fs::create_dir_all(&folder).unwrap();
        for f in 0..FILES_PER_DIR {
            let ext = if f % 3 == 0 { "txt" } else { "rs" };
            let todo = if (d + f) % 7 == 0 { "// TODO fix\n" } else { "" };
            fs::write(folder.join(format!("f{f}.{ext}")), format!("fn f{f}() {{}}\n{todo}")).unwrap();
        }
    }
    let (mut big, mut csv, mut json) = (String::new(), String::from("id,name,amount\n"), String::from("["));
    for i in 0..ROWS {
        let level = if i % 13 == 0 { "ERROR" } else { "ok" };
        writeln!(big, "line {i} {level} value={}", i * 7 % 1000).unwrap();
        writeln!(csv, "{i},user{},{}.{:02}", i % 977, i % 1000, i % 100).unwrap();
        let sep = if i == 0 { "" } else { "," };
        write!(json, "{sep}{{\"id\":{i},\"amount\":{}}}", i % 1000).unwrap();
    }
    json.push_str("]\n");
    fs::write(dir.join("big.txt"), big).unwrap();
    fs::write(dir.join("data.csv"), csv).unwrap();
    fs::write(dir.join("items.json"), json).unwrap();
}

/// Each line through `run`, in order, on a fresh copy of the workspace.
fn run_all(run: impl Fn(&str, &Path) -> Outcome) -> Vec<Outcome> {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    write_workspace(&ws);
    LINES.iter().map(|line| run(line, &ws)).collect()
}

#[test]
fn every_line_at_scale_gives_bashs_bytes_and_exit_code() {
    let home = tempfile::tempdir().unwrap();
    let (clix, bash) = std::thread::scope(|s| {
        let clix = s.spawn(|| run_all(|line, ws| run_clix(line, ws, home.path(), &[])));
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

/// With 64 KiB of memory per line and one second, every line of the table
/// (each needs more of one or the other) stops, and says which limit
/// stopped it: none passes off a cut output as its answer.
#[test]
fn with_small_limits_every_line_fails_and_names_its_limit() {
    let home = tempfile::tempdir().unwrap();
    let small = [("CLIX_LIMITS_MAX_MEMORY_BYTES", "65536"), ("CLIX_LIMITS_TIMEOUT_SECS", "1")];
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
