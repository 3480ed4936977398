//! OS-tier benchmarks: sandbox start overhead and big-file streaming (P2).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clix_sandbox::{Request, Sandbox, SandboxSettings};

use crate::{clix_binary, fmt, stats};

/// How long a session is idle between two runs in the "ready" case: an
/// agent's next call comes after the model's reply, seconds later; this is
/// only long enough for the next run's stub to be set up.
const IDLE: Duration = Duration::from_millis(100);

/// Judges every exec with the built-in policy rules, as a session's gate
/// does (security round 4's exec-time check), allowing what they allow.
struct BuiltInRules(clix_policy::Policy, clix_policy::Context);

impl clix_sandbox::ExecJudge for BuiltInRules {
    fn judge(&self, exec: &clix_sandbox::Exec) -> Result<(), String> {
        let verdict = self.0.decide(&exec.argv, &self.1);
        if verdict.decision == clix_policy::Decision::Allow { Ok(()) } else { Err(verdict.command) }
    }
}

/// `true` in bubblewrap vs `true` on the host, taking turns: in a sandbox
/// whose next run was set up while it was idle, the same with every exec
/// judged by the policy (the exec-time check), in one that sets each run
/// up when asked (`keep_ready = false`), and spawned on the host.
pub(crate) fn start_overhead(n: usize) {
    let ws = tempfile::tempdir().expect("temp dir");
    let ready = Sandbox::new(SandboxSettings::default(), ws.path(), None, None, "bench".into());
    let rules =
        BuiltInRules(clix_policy::Policy::defaults().expect("rules"), clix_policy::Context::new(ws.path(), "/"));
    let checked = Sandbox::new(SandboxSettings::default(), ws.path(), None, None, "bench".into())
        .with_exec_judge(std::sync::Arc::new(rules));
    let cold_settings = SandboxSettings { keep_ready: false, ..SandboxSettings::default() };
    let cold = Sandbox::new(cold_settings, ws.path(), None, None, "bench".into());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let argv = vec!["true".to_string()];
    let run = |sandbox: &Sandbox| {
        let t = Instant::now();
        let o = runtime
            .block_on(sandbox.run(Request::new(&argv, ws.path(), None, Duration::from_secs(10))))
            .expect("sandbox");
        assert_eq!(o.exit_code, 0, "{}", String::from_utf8_lossy(&o.stderr));
        t.elapsed()
    };
    let (mut warm, mut cold_times, mut host) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let mut judged = Vec::with_capacity(n);
    let idle = || runtime.block_on(async { tokio::time::sleep(IDLE).await });
    for _ in 0..n {
        // Each sandbox run after a pause, as in a session: the ready one
        // sets its next run up after each run, and the kernel tears a
        // sandbox's namespaces down after it ends; neither may land on the
        // other contender's start.
        idle();
        warm.push(run(&ready));
        idle();
        judged.push(run(&checked));
        idle();
        cold_times.push(run(&cold));
        let t = Instant::now();
        let status = Command::new("true").status().expect("true");
        host.push(t.elapsed());
        assert!(status.success());
    }
    let (warm, judged, cold, host) = (stats(warm), stats(judged), stats(cold_times), stats(host));
    println!(
        "\nsandbox start overhead: `true` ({n} runs each, interleaved; {} ms idle before each sandbox run)\n",
        IDLE.as_millis()
    );
    println!("| contender | p50 | p95 |\n|---|---|---|");
    println!("| `true` in bubblewrap, set up while idle (Sandbox::run) | {} | {} |", fmt(warm.p50), fmt(warm.p95));
    println!(
        "| the same, every exec judged by the policy (exec-time check) | {} | {} |",
        fmt(judged.p50),
        fmt(judged.p95)
    );
    println!(
        "| `true` in bubblewrap, set up when asked (keep_ready = false) | {} | {} |",
        fmt(cold.p50),
        fmt(cold.p95)
    );
    println!("| `true` spawned on the host | {} | {} |", fmt(host.p50), fmt(host.p95));
    println!(
        "\noverhead p50: {} set up while idle ({} with the exec-time check), {} set up when asked",
        fmt(warm.p50.saturating_sub(host.p50)),
        fmt(judged.p50.saturating_sub(host.p50)),
        fmt(cold.p50.saturating_sub(host.p50))
    );
}

/// P2: `grep -c ERROR` over a 120 MB log, clix vs GNU grep, wall and peak RSS.
pub(crate) fn big_file(n: usize) {
    let ws = tempfile::tempdir().expect("temp dir");
    let errors = write_log(&ws.path().join("big.log"), 120 << 20);
    let home = tempfile::tempdir().expect("home");
    let clix = clix_binary();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut engine = runtime.block_on(warm_engine(ws.path(), home.path()));
    let (mut clix_wall, mut warm_wall, mut grep_wall, mut clix_rss, mut grep_rss) = (vec![], vec![], vec![], 0, 0);
    for _ in 0..n {
        let t = Instant::now();
        let raw = runtime.block_on(engine.run_raw("grep -c ERROR big.log", None));
        warm_wall.push(t.elapsed());
        assert_eq!(raw.stdout, format!("{errors}\n").into_bytes(), "{}", String::from_utf8_lossy(&raw.stderr));

        let mut c = Command::new(&clix);
        c.args(["run", "--raw", "grep -c ERROR big.log"]).current_dir(ws.path()).env("CLIX_HOME", home.path());
        let (wall, rss, out) = measure(c);
        assert_eq!(out, format!("{errors}\n"), "clix gave a wrong count");
        clix_wall.push(wall);
        clix_rss = clix_rss.max(rss);

        let mut g = Command::new("grep");
        g.args(["-c", "ERROR", "big.log"]).current_dir(ws.path());
        let (wall, rss, out) = measure(g);
        assert_eq!(out, format!("{errors}\n"));
        grep_wall.push(wall);
        grep_rss = grep_rss.max(rss);
    }
    let (c, w, g) = (stats(clix_wall), stats(warm_wall), stats(grep_wall));
    println!("\nP2: `grep -c ERROR big.log` on a 120 MB log ({n} runs each, interleaved; {errors} matches)\n");
    println!("| contender | wall p50 | peak RSS |\n|---|---|---|");
    println!("| `clix run --raw` (cold process, incl. the sandbox) | {} | {} MB |", fmt(c.p50), clix_rss / 1024);
    println!("| warm `Engine::run_raw` (agent / MCP session) | {} | - |", fmt(w.p50));
    println!("| GNU grep | {} | {} MB |", fmt(g.p50), grep_rss / 1024);
    println!(
        "\nwall vs GNU grep: cold clix process {:.2}x, warm session {:.2}x",
        c.p50.as_secs_f64() / g.p50.as_secs_f64(),
        w.p50.as_secs_f64() / g.p50.as_secs_f64()
    );
}

async fn warm_engine(ws: &Path, state: &Path) -> clix_engine::Engine {
    let config = crate::run_config(ws, state, clix_engine::ShellLimits::default());
    clix_engine::Engine::new(config).await.expect("engine")
}

/// Writes a log of about `size` bytes; returns how many lines hold ERROR.
fn write_log(path: &Path, size: usize) -> usize {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("log"));
    let (mut written, mut errors, mut i) = (0, 0, 0usize);
    while written < size {
        let line = if i % 10 == 0 {
            errors += 1;
            format!("2024-05-01T12:00:{:02}Z ERROR request {i} failed: upstream timeout\n", i % 60)
        } else {
            format!("2024-05-01T12:00:{:02}Z INFO request {i} served in {}ms\n", i % 60, i % 97)
        };
        file.write_all(line.as_bytes()).expect("write");
        written += line.len();
        i += 1;
    }
    errors
}

/// Wall time, peak RSS in KB of the process (and what it waited for), and stdout.
fn measure(mut cmd: Command) -> (Duration, u64, String) {
    let t = Instant::now();
    // Reaped below by wait_with_peak_rss, which also gives the peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn");
    let pid = child.id();
    let mut stdout = child.stdout.expect("stdout");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).expect("read");
    let (_, kib) = clix_testkit::wait_with_peak_rss(pid);
    (t.elapsed(), kib, out)
}
