//! Benchmarks for the `run` engine, measured side by side in one process so
//! machine noise hits every contender alike. Run with
//! `cargo run --release -p clix-bench [-- ITERATIONS]`; it prints a table.
//!
//! It measures, for `cat f | grep x | wc -l` on a 10 KB file:
//! - bare bashkit (its own builtins, warm instance),
//! - clix Layer 1 (`Session::exec`: our commands and jail),
//! - clix Layers 1+2 (`Engine::run`: plus presentation),
//! - `bash -c` spawned per call,
//! and the cold `clix run` process time.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clix_engine::{Engine, EngineConfig, PresentOptions, ShellLimits};

const LINE: &str = "cat f | grep x | wc -l";

fn main() {
    let iterations: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let ws = tempfile::tempdir().expect("temp dir");
    let expected = write_fixture(ws.path());
    let expected = expected.as_bytes();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");

    // The in-process contenders take turns call by call, so drift in the
    // machine's speed hits all three alike.
    let (bare, layer1, layers12) = runtime.block_on(interleaved(ws.path(), iterations, expected));
    let bash = bench_bash_c(ws.path(), (iterations / 10).max(20), expected);
    let cold = bench_cold_clix(ws.path(), 30, expected);

    println!(
        "warm per-call latency of `{LINE}` on a 10 KB file ({iterations} calls; bash -c: {} calls)\n",
        (iterations / 10).max(20)
    );
    println!("| contender | p50 | p95 | vs bare bashkit | bash -c / this |");
    println!("|---|---|---|---|---|");
    for (name, s) in [
        ("bare bashkit", &bare),
        ("clix L1 (Session::exec)", &layer1),
        ("clix L1+L2 (Engine::run)", &layers12),
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
    println!("\ncold `clix run '{LINE}'` process: p50 {} p95 {} (30 runs)", fmt(cold.p50), fmt(cold.p95));
}

struct Stats {
    p50: Duration,
    p95: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats { p50: at(0.5), p95: at(0.95) }
}

fn fmt(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1}µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2}ms", d.as_secs_f64() * 1e3)
    }
}

/// Writes the 10 KB file and returns what the benchmarked line must print.
fn write_fixture(dir: &Path) -> String {
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

async fn interleaved(ws: &Path, n: usize, expected: &[u8]) -> (Stats, Stats, Stats) {
    let canonical = std::fs::canonicalize(ws).expect("canonical");
    let real = bashkit::RealFs::open(&canonical, bashkit::RealFsMode::ReadWrite).await.expect("realfs");
    let mut bash = bashkit::Bash::builder().cwd(&canonical).session_limits(bashkit::SessionLimits::unlimited()).build();
    bash.mount(&canonical, std::sync::Arc::new(bashkit::PosixFs::new(real))).expect("mount");
    let config = EngineConfig {
        workspace: ws.to_path_buf(),
        limits: ShellLimits::default(),
        present: PresentOptions::default(),
        os: None,
    };
    let mut layer1 = Engine::new(config.clone()).await.expect("engine");
    let mut layers12 = Engine::new(config).await.expect("engine");

    let mut samples = [Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n)];
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
    }
    let [a, b, c] = samples;
    (stats(a), stats(b), stats(c))
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

fn bench_cold_clix(ws: &Path, n: usize, expected: &[u8]) -> Stats {
    let exe = std::env::current_exe().expect("exe");
    let clix = exe.with_file_name("clix");
    assert!(clix.exists(), "build the clix binary first: cargo build --release -p clix");
    let home = tempfile::tempdir().expect("home");
    let samples = (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(&clix)
                .args(["run", "--raw", LINE])
                .current_dir(ws)
                .env("CLIX_HOME", home.path())
                .stdin(Stdio::null())
                .output()
                .expect("clix");
            let elapsed = t.elapsed();
            assert_eq!(out.stdout, expected);
            elapsed
        })
        .collect();
    stats(samples)
}
