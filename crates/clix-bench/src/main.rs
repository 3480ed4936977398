//! Benchmarks, measured side by side in one process so machine noise hits every
//! contender alike; the figures and their ratios go to `docs/benchmarks.md`.
//! Run with
//! `cargo run --release -p clix-bench [-- NAME [N]]`
//! (no argument runs every one but `coldstart` and `justbash`); each prints a
//! markdown table. NAME is one of:
//!
//! - `engine`: warm per-call latency of `cat f | grep x | wc -l` on a 10 KB
//!   file for bare bashkit, clix Layer 1, clix Layers 1+2 and `bash -c`, plus
//!   the cold start below.
//! - `coldstart` (issue 52): a whole `clix run` process against `bash -c` on
//!   the same line, interleaved pairs, wall and CPU medians [pairs].
//! - `jail` (issue 11): the workspace capability handle vs bashkit's RealFs,
//!   warm, on the same `cat | grep | wc` line and on `grep -r` over 2,000
//!   files.
//! - `sandbox`: start overhead of one OS program, `true` in bubblewrap vs
//!   `true` spawned on the host.
//! - `bigfile` (Performance P2): `clix run 'grep -c ERROR big.log'` on a 120 MB
//!   log vs GNU grep, wall time and peak RSS.
//! - `hub` (issue 6): a hub call vs a direct exec of the same program through
//!   the same sandbox, and `hub search` over 1,000 manifests.
//! - `memory` (issues 7 and 32): at 100k memories, SQLite and PostgreSQL side
//!   by side: insert throughput, search p50/p95 for full text alone and hybrid
//!   (vectors of dimension 384) with brute-force cosine over the same vectors
//!   as the baseline, the vector step's recall@5, and 8 concurrent writers; on
//!   synthetic vectors and on real model2vec ones.
//! - `policy` (issue 14): the built-in rules vs no policy on the same line, and
//!   on a loop of 200 commands that each meet the gate.
//! - `clip` (issue 17): `clip <ssh env> 'echo hi'` warm (shared connection) vs
//!   plain `ssh` with the same options over a real sshd on 127.0.0.1, and the
//!   cold first call vs a plain ssh connecting by itself.
//! - `plan` (issue 15): a plan of 20 tasks whose agents answer at once, `-j 8`:
//!   wall time against the sum of the tasks' own, and the per-task start cost
//!   (namespace, confined engine with the OS tier).
//! - `checkpoints` (issue 51): what keeping every call's changes costs on the
//!   scale suite's tree, an engine with checkpoints and one without taking
//!   turns call by call; the first checkpoint of a fresh workspace, and the
//!   store's growth over 100 calls.
//! - `browser` (issue 16): warm `browser open` / `snapshot -i` / `click` / `get
//!   text` through `run` on a local page, the cold start of Chromium in
//!   bubblewrap, and snapshot bytes of three real-world-sized pages against the
//!   whole accessibility tree.
//! - `scale` (issue 29): the scale suite's everyday lines over 30,000 files and
//!   1,000,000-row files, clix's Layer 1 vs `bash -c`, with the growth from a
//!   tenth of the size.
//! - `mcp-scale` (issue 32): MCP `run` calls/s and per-call p50/p95 from 8 and
//!   32 concurrent sessions: one replica direct (SQLite, PostgreSQL), one via
//!   nginx, two on one PostgreSQL store behind nginx.
//! - `justbash DIR` (not in the default run): just-bash's 778 recorded bash
//!   comparison cases through Layer 1, the score and what fails.
//!
//! This crate is not shipped, and nothing depends on it. It measures and
//! prints; it asserts no behaviour (the tests do), and no test holds a speed
//! figure. To measure each layer alone it builds engines and capabilities
//! directly (`EngineConfig`, `Sandbox::new`, `HubRuntime::load`) besides
//! sessions from `clix-session`: the one front end that composes outside the
//! composition root. It depends on `clix-testkit` as a normal dependency, for
//! the same sshd and scale suite the tests use.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmarks stop loudly on a broken set-up

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use clix_config::Paths;
use clix_engine::{Engine, EngineConfig, ShellLimits};
use clix_session::{Parts, Session, Settings};

mod browser;
mod checkpoints;
mod clip;
mod coldstart;
mod hub;
mod jail;
mod justbash;
mod mcp_scale;
mod memory;
mod plan;
mod policy;
mod sandbox;
mod scale;

pub(crate) const LINE: &str = "cat f | grep x | wc -l";

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let n: Option<usize> = std::env::args().nth(2).and_then(|a| a.parse().ok());
    if matches!(which.as_str(), "all" | "engine") {
        engine(n.unwrap_or(2000));
    }
    if matches!(which.as_str(), "all" | "jail") {
        jail::jail(n.unwrap_or(1000));
    }
    if matches!(which.as_str(), "all" | "sandbox") {
        sandbox::start_overhead(n.unwrap_or(200));
    }
    if matches!(which.as_str(), "all" | "bigfile") {
        sandbox::big_file(n.unwrap_or(5));
    }
    if matches!(which.as_str(), "all" | "hub") {
        hub::call_overhead(n.unwrap_or(300));
        hub::search(1000);
    }
    if matches!(which.as_str(), "all" | "policy") {
        policy::policy(n.unwrap_or(2000));
    }
    if matches!(which.as_str(), "all" | "memory") {
        // Its own arguments: [N] and flags (see memory.rs).
        memory::memory(&std::env::args().skip(2).collect::<Vec<_>>());
    }
    if matches!(which.as_str(), "all" | "plan") {
        plan::plan(n.unwrap_or(10));
    }
    if matches!(which.as_str(), "all" | "browser") {
        browser::browser(n.unwrap_or(30));
    }
    if matches!(which.as_str(), "all" | "clip") {
        clip::clip_vs_ssh(n.unwrap_or(100));
    }
    if matches!(which.as_str(), "all" | "scale") {
        scale::scale(n.unwrap_or(3));
    }
    if which == "coldstart" {
        coldstart::coldstart(std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(30));
    }
    if matches!(which.as_str(), "all" | "checkpoints") {
        checkpoints::checkpoints(n.unwrap_or(50));
    }
    if matches!(which.as_str(), "all" | "mcp-scale") {
        // Its own arguments: [M] and flags (see mcp_scale.rs).
        mcp_scale::mcp_scale(&std::env::args().skip(2).collect::<Vec<_>>());
    }
    // Not in "all": its cases live in just-bash's repository.
    if which == "justbash" {
        let dir = std::env::args().nth(2).expect("usage: clix-bench justbash FIXTURES_DIR");
        justbash::justbash(Path::new(&dir));
    }
}

fn engine(iterations: usize) {
    let ws = tempfile::tempdir().expect("temp dir");
    let expected = write_fixture(ws.path());
    let expected = expected.as_bytes();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");

    // The in-process contenders take turns call by call, so drift in the
    // machine's speed hits all three alike.
    let (bare, layer1, layers12, with_os) = runtime.block_on(interleaved(ws.path(), iterations, expected));
    let bash = bench_bash_c(ws.path(), (iterations / 10).max(20), expected);

    println!(
        "warm per-call latency of `{LINE}` on a 10 KB file ({iterations} calls; bash -c: {} calls)\n",
        (iterations / 10).max(20)
    );
    println!("| contender | p50 | p95 | vs bare bashkit | bash -c / this |");
    println!("|---|---|---|---|---|");
    for (name, s) in [
        ("bare bashkit", &bare),
        ("clix L1 (Shell::exec)", &layer1),
        ("clix L1+L2 (Engine::run)", &layers12),
        ("clix L1+L2 with the OS tier on", &with_os),
        ("bash -c (spawn)", &bash),
    ] {
        println!(
            "| {name} | {} | {} | {:.2}x | {:.1}x |",
            fmt(s.p50),
            fmt(s.p95),
            s.p50.as_secs_f64() / bare.p50.as_secs_f64(),
            bash.p50.as_secs_f64() / s.p50.as_secs_f64()
        );
    }
    coldstart::coldstart(30);
}

pub(crate) struct Stats {
    pub p50: Duration,
    pub p95: Duration,
}

pub(crate) fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats { p50: at(0.5), p95: at(0.95) }
}

pub(crate) fn fmt(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1}µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2}ms", d.as_secs_f64() * 1e3)
    }
}

/// Writes the 10 KB file and returns what the benchmarked line must print.
pub(crate) fn write_fixture(dir: &Path) -> String {
    let mut text = String::new();
    let mut i = 0;
    let mut matching = 0;
    while text.len() < 10 * 1024 {
        let marker = if i % 7 == 0 { "x" } else { "y" };
        matching += usize::from(i % 7 == 0);
        text.push_str(&format!("line {i} value {marker} some padding words here\n"));
        i += 1;
    }
    std::fs::write(dir.join("f"), text).expect("fixture");
    format!("{matching}\n")
}

async fn interleaved(ws: &Path, n: usize, expected: &[u8]) -> (Stats, Stats, Stats, Stats) {
    let canonical = std::fs::canonicalize(ws).expect("canonical");
    let real = bashkit::RealFs::open(&canonical, bashkit::RealFsMode::ReadWrite).await.expect("realfs");
    let mut bash = bashkit::Bash::builder().cwd(&canonical).session_limits(bashkit::SessionLimits::unlimited()).build();
    bash.mount(&canonical, std::sync::Arc::new(bashkit::PosixFs::new(real))).expect("mount");
    let config = shell_config(ws, ShellLimits::default());
    let mut layer1 = Engine::new(config.clone()).await.expect("engine");
    let mut layers12 = Engine::new(config).await.expect("engine");
    // As `clix run` has it: the OS tier on, so each line is also analyzed for big-file routing.
    let state = tempfile::tempdir().expect("state");
    let mut with_os = Engine::new(run_config(ws, state.path(), ShellLimits::default())).await.expect("engine");

    let mut samples = [Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n)];
    for _ in 0..n {
        let t = Instant::now();
        let r = bash.exec(LINE).await.expect("bashkit");
        samples[0].push(t.elapsed());
        assert_eq!(r.stdout.as_bytes(), expected);

        let t = Instant::now();
        let raw = layer1.run_raw(LINE, None).await;
        samples[1].push(t.elapsed());
        assert_eq!(raw.stdout, expected);

        let t = Instant::now();
        let out = layers12.run(LINE, None).await;
        samples[2].push(t.elapsed());
        assert!(out.text.as_bytes().starts_with(expected), "{}", out.text);

        let t = Instant::now();
        let out = with_os.run(LINE, None).await;
        samples[3].push(t.elapsed());
        assert!(out.text.as_bytes().starts_with(expected), "{}", out.text);
    }
    let [a, b, c, d] = samples;
    (stats(a), stats(b), stats(c), stats(d))
}

fn bench_bash_c(ws: &Path, n: usize, expected: &[u8]) -> Stats {
    let samples = (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new("bash").args(["-c", LINE]).current_dir(ws).output().expect("bash");
            let elapsed = t.elapsed();
            assert_eq!(out.stdout, expected);
            elapsed
        })
        .collect();
    stats(samples)
}

/// The shell alone (no OS tier, memory, hub, policy or clip) on `ws`, under `limits`.
pub(crate) fn shell_config(ws: &Path, limits: ShellLimits) -> EngineConfig {
    EngineConfig { limits, ..EngineConfig::new(ws) }
}

/// A benchmark's session on `ws`, assembled as clix's own are: `home` as
/// its CLIX_HOME (the audit log in `home/state`), the default settings,
/// nothing from this process's environment, and only `parts`.
pub(crate) fn session(ws: &Path, home: &Path, parts: Parts) -> Session {
    Session::isolated(Paths::at_home(home), Settings::default(), ws).label("bench").parts(parts)
}

/// The session as `clix run` has it for the engine's concerns: the shell and
/// the OS tier (its audit log under `home`), so every line is also analyzed
/// for big-file routing.
pub(crate) fn run_config(ws: &Path, home: &Path, limits: ShellLimits) -> EngineConfig {
    let mut session = session(ws, home, Parts::SHELL);
    session.settings.limits = limits;
    session.engine_config().expect("engine config")
}

/// The machine's state for a benchmark's header: its cores, the load
/// average, and how fast its memory copies. A shared host can lose most of
/// its memory bandwidth, and a baseline that streams memory (brute-force
/// cosine over 150 MB of vectors) slows far more than an index lookup, so
/// runs are comparable only at a similar rate.
pub(crate) fn machine_load() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!("{cores} cores, load average {}, memory copy {:.1} GB/s", load.join(" "), copy_rate())
}

/// GB/s of copying 128 MB, the best of three.
fn copy_rate() -> f64 {
    const BYTES: usize = 128 << 20;
    let from = vec![1u8; BYTES];
    let mut to = vec![0u8; BYTES];
    let best = (0..3)
        .map(|_| {
            let started = std::time::Instant::now();
            to.copy_from_slice(std::hint::black_box(&from));
            std::hint::black_box(&to);
            started.elapsed()
        })
        .min()
        .unwrap_or_default();
    BYTES as f64 / best.as_secs_f64().max(1e-9) / 1e9
}

/// The `clix` binary built beside this one.
pub(crate) fn clix_binary() -> std::path::PathBuf {
    let clix = std::env::current_exe().expect("exe").with_file_name("clix");
    assert!(clix.exists(), "build the clix binary first: cargo build --release -p clix");
    clix
}
