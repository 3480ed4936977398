//! Issue 6's figures: a hub call against a direct exec of the same program
//! through the same sandbox (interleaved call by call), and `hub search`
//! over a hub of 1,000 manifests.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clix_hub::{EnvLookup, HubConfig, HubRuntime, HubSource, LoadOptions};
use clix_sandbox::{AuditLog, Request, Sandbox, SandboxSettings};
use serde_json::{Map, json};

use crate::{fmt, stats};

/// A tool that prints a small JSON document, like a typical quick CLI.
const TOOL: &str = "#!/bin/sh\necho '{\"status\": \"ok\", \"items\": [1, 2, 3]}'\n";

fn write_tool(dir: &Path, name: &str, description: &str, self_test: bool) {
    std::fs::create_dir_all(dir).expect("tool dir");
    let program = dir.join("run");
    std::fs::write(&program, TOOL).expect("tool");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let manifest = json!({
        "name": name, "version": "1.0.0", "description": description, "command": "./run",
        "self_test": if self_test { json!(["--self-test"]) } else { json!(false) }, "version_args": false,
        "parameters": [
            {"name": "query", "type": "string", "required": true, "description": "what to look for"},
            {"name": "limit", "type": "integer", "default": 10, "description": "most results"}
        ],
        "output": {"format": "json", "schema": {"type": "object", "required": ["status"]}}
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).expect("manifest");
}

fn config(hub: &Path, state: &Path) -> HubConfig {
    let env: EnvLookup = Arc::new(|_| None);
    HubConfig {
        sources: vec![HubSource::explicit(hub)],
        load: LoadOptions::default(),
        domains: Vec::new(),
        state_dir: state.to_path_buf(),
        self_test_ttl: Duration::from_secs(600),
        env,
        audit_log: Some(AuditLog::new(state.join("audit.jsonl"))),
        shared: None,
        session: "bench".into(),
    }
}

fn canonical_temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = std::fs::canonicalize(dir.path()).expect("canonical");
    (dir, path)
}

/// Hub call vs direct sandboxed exec of the same argv, `n` calls each.
pub(crate) fn call_overhead(n: usize) {
    let (_ws_dir, ws) = canonical_temp();
    let (_hub_dir, hub) = canonical_temp();
    let (_state_dir, state) = canonical_temp();
    let tool_dir = hub.join("quick");
    write_tool(&tool_dir, "quick", "a quick tool", false);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let audit = Some(AuditLog::new(state.join("audit.jsonl")));
    let sandbox = Arc::new(Sandbox::new(SandboxSettings::default(), &ws, None, audit, "bench".into()));
    let hub_rt = runtime.block_on(HubRuntime::load(config(&hub, &state), Some(Arc::clone(&sandbox)), None));
    let mut args = Map::new();
    args.insert("query".into(), json!("timeout"));
    let argv: Vec<String> = [tool_dir.join("run").display().to_string(), "--query".into(), "timeout".into()]
        .into_iter()
        .chain(["--limit".to_string(), "10".to_string()])
        .collect();
    let read_only = [tool_dir.clone()];
    let (mut via_hub, mut direct) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        let r = runtime.block_on(hub_rt.call("quick", &args, None, &ws, Duration::from_secs(10)));
        via_hub.push(t.elapsed());
        assert_eq!(r.exit_code, 0, "{}", r.stderr);

        let t = Instant::now();
        let mut req = Request::new(&argv, &ws, None, Duration::from_secs(10));
        req.read_only = &read_only;
        req.network = Some(false);
        let o = runtime.block_on(sandbox.run(req)).expect("sandbox");
        direct.push(t.elapsed());
        assert_eq!(o.exit_code, 0);
    }
    let (h, d) = (stats(via_hub), stats(direct));
    println!("\n### Hub call vs direct sandboxed exec ({n} calls each, interleaved)\n");
    println!("| contender | p50 | p95 |\n|---|---|---|");
    println!("| direct exec in the sandbox | {} | {} |", fmt(d.p50), fmt(d.p95));
    println!("| hub call (argv, rate/serialize checks, contract, audit) | {} | {} |", fmt(h.p50), fmt(h.p95));
    println!("\nhub / direct at p50: {:.2}x (target ≤ 1.2x)", h.p50.as_secs_f64() / d.p50.as_secs_f64());
}

/// Loading a hub of `n` manifests, and `hub search` over it.
pub(crate) fn search(n: usize) {
    let (_hub_dir, hub) = canonical_temp();
    let (_state_dir, state) = canonical_temp();
    let (_ws_dir, ws) = canonical_temp();
    let words = [
        "log",
        "metric",
        "ticket",
        "invoice",
        "deploy",
        "queue",
        "backup",
        "cert",
        "dns",
        "user",
        "disk",
        "query",
        "report",
        "image",
        "translate",
        "calendar",
        "alert",
        "trace",
        "cache",
        "payment",
    ];
    for i in 0..n {
        let (a, b) = (words[i % words.len()], words[(i / words.len()) % words.len()]);
        let description = format!("{a} {b} tool number {i}: inspect {a} data and summarize {b} records");
        write_tool(&hub.join(format!("t{i:04}")), &format!("{a}-{b}-{i}"), &description, true);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let sandbox = Arc::new(Sandbox::new(SandboxSettings::default(), &ws, None, None, "bench".into()));
    let t = Instant::now();
    runtime.block_on(HubRuntime::load(config(&hub, &state), Some(Arc::clone(&sandbox)), None));
    let cold = t.elapsed();
    let t = Instant::now();
    let hub_rt = runtime.block_on(HubRuntime::load(config(&hub, &state), Some(sandbox), None));
    let load = t.elapsed();
    assert_eq!(hub_rt.ready().count(), n);
    let t = Instant::now();
    hub_rt.search("warm up the index", 5).expect("search");
    let build = t.elapsed();
    let queries = ["failed deploy logs", "unpaid invoice report", "certificate expiry alert", "slow dns query"];
    let samples: Vec<Duration> = (0..200)
        .map(|i| {
            let t = Instant::now();
            let found = hub_rt.search(queries[i % queries.len()], 5).expect("search");
            let elapsed = t.elapsed();
            assert!(!found.is_empty());
            elapsed
        })
        .collect();
    let s = stats(samples);
    println!("\n### hub search over {n} manifests\n");
    println!("| step | time |\n|---|---|");
    println!("| first load: validate {n} manifests, run {n} self-tests in the sandbox | {} |", fmt(cold));
    println!("| next load: validate, self-test results from the cache | {} |", fmt(load));
    println!("| build the FTS5 index (first search) | {} |", fmt(build));
    println!("| search, p50 | {} |", fmt(s.p50));
    println!("| search, p95 | {} |", fmt(s.p95));
}
