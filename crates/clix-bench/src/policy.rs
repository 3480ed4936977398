//! Issue 14: what the policy costs. The same line through two engines with
//! the OS tier on (as `clix run` has it), one without a policy and one with
//! the built-in rules, taking turns call by call.

use std::time::Instant;

use clix_engine::Engine;
use clix_session::Parts;

use crate::{LINE, Stats, fmt, stats};

/// A line that runs 200 commands, each meeting the gate.
const LOOP: &str = "for i in $(seq 1 200); do echo $i; done | wc -l";

pub(crate) fn policy(iterations: usize) {
    let ws = tempfile::tempdir().expect("temp dir");
    let expected = crate::write_fixture(ws.path());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let rows = runtime.block_on(async {
        let state = tempfile::tempdir().expect("state");
        let engine = |policy: Option<clix_policy::PolicySettings>| {
            let mut session =
                crate::session(ws.path(), state.path(), Parts { policy: policy.is_some(), ..Parts::SHELL });
            session.settings.policy = policy.unwrap_or_default();
            async move { session.engine().await.expect("engine") }
        };
        let mut without = engine(None).await;
        let mut with = engine(Some(clix_policy::PolicySettings::default())).await;
        // The gate with no rules at all: what the hook itself costs.
        let mut hook_only = engine(Some(clix_policy::PolicySettings { defaults: false, ..Default::default() })).await;
        let mut rows = Vec::new();
        for (line, want) in [(LINE, expected.as_str()), (LOOP, "200\n")] {
            let [a, b, c] = interleaved([&mut without, &mut hook_only, &mut with], line, want, iterations).await;
            rows.push((line, a, b, c));
        }
        rows
    });
    println!("policy cost: the built-in rules vs no policy, OS tier on, {iterations} calls each, interleaved\n");
    println!("| line | no policy p50 | gate, no rules p50 | built-in rules p50 | built-in p95 | overhead (p50) |");
    println!("|---|---|---|---|---|---|");
    for (line, a, b, c) in rows {
        println!(
            "| `{line}` | {} | {} | {} | {} | {:+.1}% |",
            fmt(a.p50),
            fmt(b.p50),
            fmt(c.p50),
            fmt(c.p95),
            (c.p50.as_secs_f64() / a.p50.as_secs_f64() - 1.0) * 100.0
        );
    }
}

async fn interleaved(engines: [&mut Engine; 3], line: &str, want: &str, n: usize) -> [Stats; 3] {
    let mut samples: [Vec<_>; 3] = std::array::from_fn(|_| Vec::with_capacity(n));
    let mut engines = engines;
    for _ in 0..n {
        for (engine, samples) in engines.iter_mut().zip(samples.iter_mut()) {
            let t = Instant::now();
            let out = engine.run(line, None).await;
            samples.push(t.elapsed());
            assert!(out.text.starts_with(want), "{}", out.text);
        }
    }
    samples.map(stats)
}
