//! `scale` (issue 29): the scale suite's lines (`clix_testkit::scale`) at
//! full size (30,000 files, 1,000,000-row files), through clix's Layer 1 in
//! process (`Engine::run_raw`, the OS tier on, as `clix run` has it) and
//! through `bash -c`, taking turns line by line so drift hits both alike.
//! For each line: the median wall time of each, their ratio, and whether
//! stdout and the exit code are the same. Then the same at a tenth of the
//! size, for the growth check (10× the input may cost at most 12× the time).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clix_engine::{Engine, ShellLimits};
use clix_testkit::scale::{LINES, Scale, write_workspace};

use crate::{fmt, stats};

/// One line's medians at one size.
struct Timed {
    clix: Duration,
    bash: Duration,
    same: bool,
}

pub(crate) fn scale(runs: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let tenth = Scale { dirs: Scale::FULL.dirs / 10, rows: Scale::FULL.rows / 10 };
    let small = runtime.block_on(measure(tenth, runs));
    let full = runtime.block_on(measure(Scale::FULL, runs));

    println!(
        "scale suite at {} files and {} rows ({runs} runs each, medians; growth: full size / a tenth)\n",
        Scale::FULL.dirs * 100,
        Scale::FULL.rows
    );
    println!("| line | bash -c | clix L1 | clix / bash | same stdout+exit | growth (10× input) |");
    println!("|---|---|---|---|---|---|");
    for ((line, f), s) in LINES.iter().zip(&full).zip(&small) {
        println!(
            "| `{}` | {} | {} | {:.2}x | {} | {:.1}x |",
            line.replace('|', "\\|"),
            fmt(f.bash),
            fmt(f.clix),
            ratio(f.clix, f.bash),
            if f.same { "yes" } else { "**no**" },
            ratio(f.clix, s.clix)
        );
    }
    let (clix, bash): (Duration, Duration) = (full.iter().map(|t| t.clix).sum(), full.iter().map(|t| t.bash).sum());
    let within = full.iter().filter(|t| ratio(t.clix, t.bash) <= 2.0).count();
    let differ = full.iter().filter(|t| !t.same).count();
    println!(
        "\nsuite: clix {} vs bash {} = {:.2}x; {within} of {} lines within 2x bash; {differ} differ from bash",
        fmt(clix),
        fmt(bash),
        ratio(clix, bash),
        LINES.len()
    );
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

async fn measure(scale: Scale, runs: usize) -> Vec<Timed> {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("canonical");
    write_workspace(&ws, scale).expect("the scale workspace");
    let state = tempfile::tempdir().expect("state");
    // Long enough for every line at full size: the time is what is measured.
    let limits = ShellLimits { timeout_secs: 600, ..ShellLimits::default() };
    let mut engine = Engine::new(crate::run_config(&ws, state.path(), limits)).await.expect("engine");
    let mut timed = Vec::with_capacity(LINES.len());
    for line in LINES {
        let (mut clix, mut bash, mut same) = (Vec::new(), Vec::new(), true);
        for _ in 0..runs {
            let t = Instant::now();
            let out = Command::new("bash")
                .args(["-c", line])
                .current_dir(&ws)
                .env("LC_ALL", "C")
                .stdin(Stdio::null())
                .output()
                .expect("bash");
            bash.push(t.elapsed());
            let t = Instant::now();
            let raw = engine.run_raw(line, None).await;
            clix.push(t.elapsed());
            same &= raw.stdout == out.stdout && Some(raw.exit_code) == out.status.code();
        }
        timed.push(Timed { clix: stats(clix).p50, bash: stats(bash).p50, same });
    }
    timed
}
