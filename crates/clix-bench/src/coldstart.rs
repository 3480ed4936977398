//! `coldstart` (issue 52): a whole `clix run 'cat f | grep x | wc -l'`
//! process against `bash -c` on the same line and file, in interleaved
//! pairs so the machine's drift hits both alike: wall time and CPU time
//! (user + system, the process and its children), medians.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{LINE, clix_binary, fmt, write_fixture};

/// One whole process: its wall time and its CPU time.
struct Sample {
    wall: Duration,
    cpu: Duration,
}

/// The CPU time of every child waited for so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Runs `command` to its end; its output must start with `expected`.
fn sample(mut command: Command, expected: &[u8]) -> Sample {
    let cpu_before = children_cpu();
    let started = Instant::now();
    let out = command.stdin(Stdio::null()).output().expect("the process starts");
    let wall = started.elapsed();
    assert!(out.stdout.starts_with(expected), "{}", String::from_utf8_lossy(&out.stdout));
    Sample { wall, cpu: children_cpu().saturating_sub(cpu_before) }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// Prints the table for `pairs` interleaved pairs.
pub(crate) fn coldstart(pairs: usize) {
    let ws = tempfile::tempdir().expect("temp dir");
    let home = tempfile::tempdir().expect("home");
    let expected = write_fixture(ws.path());
    let (clix, bash) = measure(ws.path(), home.path(), pairs, expected.as_bytes());
    println!("\n### cold start: a whole `clix run '{LINE}'` vs `bash -c` ({pairs} interleaved pairs, 10 KB file)\n");
    println!("| | clix run | bash -c | clix / bash |");
    println!("|---|---|---|---|");
    let wall = |s: &[Sample]| median(s.iter().map(|s| s.wall).collect());
    let cpu = |s: &[Sample]| median(s.iter().map(|s| s.cpu).collect());
    for (what, c, b) in [("wall, median", wall(&clix), wall(&bash)), ("CPU, median", cpu(&clix), cpu(&bash))] {
        println!("| {what} | {} | {} | {:.2}x |", fmt(c), fmt(b), c.as_secs_f64() / b.as_secs_f64().max(1e-9));
    }
}

/// `pairs` runs of each, taking turns, after one of each to warm the
/// page cache.
fn measure(ws: &Path, home: &Path, pairs: usize, expected: &[u8]) -> (Vec<Sample>, Vec<Sample>) {
    let clix_run = || {
        let mut c = Command::new(clix_binary());
        c.args(["run", LINE]).current_dir(ws).env("CLIX_HOME", home);
        c
    };
    let bash_c = || {
        let mut c = Command::new("bash");
        c.args(["-c", LINE]).current_dir(ws);
        c
    };
    sample(clix_run(), expected);
    sample(bash_c(), expected);
    let (mut clix, mut bash) = (Vec::new(), Vec::new());
    for _ in 0..pairs {
        clix.push(sample(clix_run(), expected));
        bash.push(sample(bash_c(), expected));
    }
    (clix, bash)
}
